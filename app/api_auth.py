"""Who may call Hearth's local API: the key, the addresses, and the guard in front of every request.

Hearth's API answers from the office's private documents, so, as Jupyter does with its token, **every
address needs a key by default**, loopback included: any other account, container or sandboxed app on the
machine can reach 127.0.0.1. The key is made from the system's secure random source, shown to the user
once, and stored only as its SHA-256 digest in a file its owner alone may read (mode 0600), so the file
cannot leak the key itself; a presented key is compared in constant time. A lost key is replaced, never
recovered. Going without a key (`hearth serve --no-key`) is allowed on loopback only.

On loopback the guard also checks the Host header against the loopback names, so a web page that rebinds
its own DNS name to 127.0.0.1 is refused even when it somehow holds the key.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.openai_format import ApiError, error_response
from inference.errors import UsageError
from rag.service import DEFAULT_WORKSPACE, check_workspace

KEY_PREFIX = "hearth-"
KEY_FILE_NAME = "api-key.sha256"
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8642
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})


@dataclass(frozen=True)
class ServerConfig:
    """How the API listens and what it accepts (`secure_config` makes one that follows the key rules)."""

    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    workspace: str = DEFAULT_WORKSPACE  # what `hearth-rag` and the embeddings answer from
    api_key_sha256: str | None = None  # every request must carry the key; None only on loopback, when asked
    cors_origins: tuple[str, ...] = ()  # browser origins allowed to call the API; none by default
    max_body_bytes: int = 1 << 20
    max_waiting: int = 64  # requests queued or running per lane before new ones get 503
    max_messages: int = 256
    max_embedding_inputs: int = 256
    default_max_tokens: int = 512  # reply length for plain chat when the request names none


# Addresses and keys ---------------------------------------------------------------------------------


def is_loopback(host: str) -> bool:
    """True for addresses only this machine can reach: 127.0.0.0/8, ::1 and "localhost"."""
    name = host.strip().strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False  # any other host name may resolve to an address others can reach


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


# The rules ------------------------------------------------------------------------------------------


def check_config(config: ServerConfig) -> ServerConfig:
    """`config` if it keeps the key rules; UsageError naming the rule it breaks."""
    check_workspace(config.workspace)
    if config.api_key_sha256 is None and not is_loopback(config.host):
        raise UsageError(f"Listening on {config.host} makes the API reachable from other machines, so it needs "
                         "an API key.", hint="Leave out --no-key (a key is made and shown once), or listen on "
                                             "127.0.0.1.")
    if config.api_key_sha256 is None and "*" in config.cors_origins:
        raise UsageError("--cors-origin '*' lets every web page call the API, so it needs an API key.",
                         hint="Leave out --no-key, or name the pages' origins, e.g. --cors-origin "
                              "http://localhost:3000.")
    return config


def secure_config(
    data_dir: Path,
    *,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    workspace: str = DEFAULT_WORKSPACE,
    new_key: bool = False,
    no_key: bool = False,
    cors_origins: tuple[str, ...] | list[str] = (),
) -> tuple[ServerConfig, str | None]:
    """A config that requires the key (made now if there is none), and the new key when one was made (show it once).

    `no_key` serves without one: loopback only, and never with `new_key` (a key nothing requires).
    UsageError for either, for a bad port and for `*` among the CORS origins without a key. The
    administrator's policy is applied above this, by `app.policy.api_server_config`.
    """
    if not 0 <= port <= 65535:
        raise UsageError(f"{port} is not a port number.")
    if no_key and new_key:
        raise UsageError("--new-key makes a key that --no-key would not require; use one or the other.")
    if no_key and not is_loopback(host):
        raise UsageError(f"--no-key is for the loopback address only: on {host} other machines reach the API, so "
                         "every request must carry the key.", hint="Leave out --no-key, or listen on 127.0.0.1.")
    digest, key = None, None
    if not no_key:
        keys = ApiKeyFile(Path(data_dir) / KEY_FILE_NAME)
        if new_key:
            key = keys.create()
            digest = key_digest(key)
        else:
            digest, key = keys.ensure()
    config = ServerConfig(host=host, port=port, workspace=workspace, api_key_sha256=digest,
                          cors_origins=tuple(cors_origins))
    return check_config(config), key


# The guard ------------------------------------------------------------------------------------------


class RequestGuard:
    """ASGI middleware: loopback host names when on loopback, then the API key when one is configured."""

    def __init__(self, app: Any, *, key_sha256: str | None, host: str) -> None:
        self.app = app
        self.key_sha256 = key_sha256
        self.loopback = is_loopback(host)
        self.hosts = LOOPBACK_NAMES | {host.strip("[]").lower()}

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        error = None
        host = headers.get("host")
        if self.loopback and host is not None and host_name(host) not in self.hosts:
            # A web page that rebinds its own name to 127.0.0.1 still sends its name here.
            error = ApiError(403, "This server only answers requests addressed to localhost.", code="invalid_host")
        elif self.key_sha256 is not None:
            scheme, _, presented = headers.get("authorization", "").partition(" ")
            if not presented.strip():
                error = ApiError(401, "You didn't provide an API key. Send it as 'Authorization: Bearer KEY'.",
                                 code="invalid_api_key")
            elif scheme.lower() != "bearer" or not key_matches(presented.strip(), self.key_sha256):
                error = ApiError(401, "Incorrect API key provided.", code="invalid_api_key")
        if error is None:
            await self.app(scope, receive, send)
        else:
            await error_response(error)(scope, receive, send)


def host_name(host: str) -> str:
    """The name in a Host header, without its port or IPv6 brackets, lower-cased."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1:].partition("]")[0]
    return host.rpartition(":")[0] if host.count(":") == 1 else host
