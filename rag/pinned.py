"""A document opened once, then checked, hashed and read through that one handle.

Checking a path and then opening it by name again leaves a gap: another account that can write to a shared
folder swaps the file for a link to `~/.ssh/id_rsa` between the check and the read, and the key is indexed
under an innocent name. Here the file is opened first; what is checked is the file that was opened (where
it really lies, that it is a regular file, its size), the hash is read from that handle, and the readers
reach the same open file through a link in a private folder that carries the document's own name (so their
messages and format choice stay as they were). Nothing is read by name after the check.

    pinned(path, within=FOLDER)  context manager -> Pinned(path, size, mtime_ns, view); raises LoadError/OSError
    Pinned.sha256()              the content hash, read from the open handle
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from rag.errors import LoadError

_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)
_PROC_FD = Path("/proc/self/fd")
_HAVE_PROC_FD = _PROC_FD.is_dir()  # Linux: an open file can be named by its handle


@dataclass(frozen=True)
class Pinned:
    """An open document: `view` is a path (with the document's name) that leads to the very file opened."""

    path: Path
    fd: int
    size: int
    mtime_ns: int
    view: Path

    def sha256(self) -> str:
        """SHA-256 of the open file's content."""
        digest = hashlib.sha256()
        offset = 0
        while chunk := os.pread(self.fd, 1 << 20, offset):
            digest.update(chunk)
            offset += len(chunk)
        return digest.hexdigest()


def outside_error(path: Path) -> LoadError:
    """The LoadError for a file found in a folder that really lies outside it (a link, or one swapped in)."""
    return LoadError(f"{path.name}: link leads outside the folder, so it was not read.", kind="outside_link")


def inside(path: str, folder: str) -> bool:
    """Whether `path` is `folder` or lies under it (both resolved)."""
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


@contextlib.contextmanager
def pinned(path: Path, *, within: str | None = None) -> Iterator[Pinned]:
    """Open `path` once and check the opened file: a regular file, and inside `within` (a resolved folder)
    when given. Links are followed by the open (a link inside the folder is fine); the check is on what the
    handle really reached, so a swap after it changes nothing."""
    if within is not None and not _HAVE_PROC_FD and not inside(os.path.realpath(path), within):
        raise outside_error(path)  # no /proc: at least refuse before opening
    fd = os.open(path, _FLAGS)
    folder = None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise LoadError(f"{path.name} is not a regular file (a pipe, socket or device).", kind="unreadable")
        if within is not None and _HAVE_PROC_FD and not inside(os.readlink(_PROC_FD / str(fd)), within):
            raise outside_error(path)
        view = path
        if _HAVE_PROC_FD:
            folder = tempfile.mkdtemp(prefix="hearth-read-")  # 0700: nobody else can change the link in it
            view = Path(folder, path.name)
            view.symlink_to(f"/proc/{os.getpid()}/fd/{fd}")
        yield Pinned(path, fd, st.st_size, st.st_mtime_ns, view)
    finally:
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)
        os.close(fd)

