"""API keys for the local HTTP API: when one is needed, how it is made, stored and checked.

Hearth's API answers from the office's private documents, so it listens on the loopback address unless
told otherwise. Listening anywhere else needs a key: generated from the system's secure random source,
shown to the user once, and stored only as its SHA-256 digest in a file readable by its owner alone
(mode 0600), so the file cannot leak the key itself. A lost key is replaced, never recovered.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import os
import secrets
from pathlib import Path

from inference.errors import UsageError

KEY_PREFIX = "hearth-"
KEY_FILE_NAME = "api-key.sha256"


def is_loopback(host: str) -> bool:
    """True for addresses only this machine can reach: 127.0.0.0/8, ::1 and "localhost"."""
    name = host.strip().strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False  # any other host name may resolve to an address others can reach


def needs_api_key(host: str) -> bool:
    """The policy: binding any address other than loopback requires every request to carry a key."""
    return not is_loopback(host)


def key_digest(key: str) -> str:
    """The hex SHA-256 of a key, which is all Hearth stores."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def key_matches(presented: str | None, digest: str) -> bool:
    """Whether a presented key is the one whose digest is stored (constant-time comparison)."""
    if not presented:
        return False
    return hmac.compare_digest(key_digest(presented), digest)


class ApiKeyFile:
    """The stored digest of the API key, in a 0600 file."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    def digest(self) -> str | None:
        """The stored digest, or None when no key was made yet (or the file is unreadable junk)."""
        try:
            text = self.path.read_text("ascii").strip()
        except (OSError, UnicodeDecodeError):
            return None
        if len(text) != 64 or any(c not in "0123456789abcdef" for c in text):
            return None
        if self.path.stat().st_mode & 0o077:
            os.chmod(self.path, 0o600)  # someone widened it; the digest is only the owner's business
        return text

    def create(self) -> str:
        """Make a new key, replacing any old one; returns the key, which is never stored and never shown again."""
        key = KEY_PREFIX + secrets.token_urlsafe(32)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(self.path.name + f".{os.getpid()}.tmp")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w", encoding="ascii") as fh:
                fh.write(key_digest(key) + "\n")
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, self.path)
        except OSError as exc:
            tmp.unlink(missing_ok=True)
            raise UsageError(f"Cannot store the API key in {self.path}: {exc.strerror or exc}.") from exc
        return key

    def ensure(self) -> tuple[str, str | None]:
        """The stored digest, making a key first if there is none: (digest, the new key or None)."""
        digest = self.digest()
        if digest is not None:
            return digest, None
        key = self.create()
        return key_digest(key), key
