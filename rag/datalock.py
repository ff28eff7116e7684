"""One process per data folder: an advisory lock, so that two Hearth processes never write one index.

ChromaDB's persistent client keeps index state in memory and is not safe to share between processes,
so the first Hearth to open a folder's index takes DATA_DIR/.hearth.lock with `flock` (exclusive,
non-blocking). A second process is refused at once with `DataDirInUse`, whose message names the
holder (pid, command, since when), read from the lock file. The kernel drops the lock when its
process ends, however it ends (kill -9 included), so a stale lock never outlives its holder.

Inside one process every Hearth object on a folder shares one hold (counted; they share Chroma's
client too): `claim()` is re-entrant and the file is let go when the last claim is released.
Where `fcntl` does not exist the claim is counted but guards nothing.

The folder holds the office's documents as text, so it is private (`secure_data_dir`): created 0700; one
another user owns, or others may write to, is refused; one others may read is made private, with a notice.
The lock file is opened without following a link (a link planted there could point anywhere).
"""

from __future__ import annotations

import errno
import json
import logging
import os
import stat
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from inference.errors import DataDirInUse, UsageError

try:
    import fcntl
except ImportError:  # pragma: no cover - not a POSIX system
    fcntl = None  # type: ignore[assignment]

log = logging.getLogger(__name__)
LOCK_NAME = ".hearth.lock"

_mutex = threading.Lock()
_held: dict[str, _Hold] = {}  # lock-file path -> this process's hold on it
_pending: list[_Hold] = []  # releases waiting for the mutex (see _release)
_label: str | None = None  # what this process is, for other processes' messages (set_process_label)


@dataclass(frozen=True)
class Holder:
    """Who holds a data folder, as its lock file says (fields are None when it does not say)."""

    pid: int | None
    command: str | None
    since: float | None  # seconds since the epoch


class _Hold:
    def __init__(self, path: Path, fd: int | None) -> None:
        self.path = path
        self.fd = fd
        self.count = 0


class DataDirClaim:
    """This process's use of one data folder; `release()` it when done (again is harmless).

    `notices` says what making the folder private changed (empty when nothing needed changing)."""

    def __init__(self, hold: _Hold, notices: list[str] | None = None) -> None:
        self._hold: _Hold | None = hold
        self.notices = list(notices or [])

    @property
    def path(self) -> Path:
        """The lock file."""
        assert self._hold is not None, "released"
        return self._hold.path

    def release(self) -> None:
        """Stop using the folder; the last claim in this process lets other processes have it."""
        hold, self._hold = self._hold, None
        if hold is not None:
            _release(hold)


def set_process_label(label: str) -> None:
    """Name this process in other processes' messages ("hearth gui"); default: the program's file name."""
    global _label
    _label = label


def secure_data_dir(path: Path) -> list[str]:
    """Make the data folder private to this user; returns notices of what was changed (or nothing).

    Created 0700 when missing. Refused with a UsageError saying why: a folder owned by another user, or
    one that group or others may write to (they could replace the index or plant links in it). Made private
    (0755 becomes 0700), with a notice: one that group or others may read or enter. The links in the path the user
    named are followed once, to find the folder; the folder itself is then opened without following a
    link, so one swapped in meanwhile is not changed in its stead.
    """
    named = Path(path).expanduser()
    created = False
    try:
        named.mkdir(mode=0o700, parents=True)
        created = True
    except FileExistsError:
        pass
    except OSError as exc:
        raise UsageError(f"Cannot create the data folder {named}: {exc.strerror or exc}.",
                         hint="Choose another folder with --data-dir.") from exc
    if os.name != "posix":  # pragma: no cover - no owners or mode bits to check elsewhere
        return []
    real = named.resolve()
    try:
        fd = os.open(real, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise UsageError(f"The data folder {named} cannot be used: {exc.strerror or exc}.",
                         hint="Choose another folder with --data-dir.") from exc
    try:
        st = os.fstat(fd)
        mode = stat.S_IMODE(st.st_mode)
        if st.st_uid != os.geteuid():
            raise UsageError(
                f"The data folder {real} belongs to another user (uid {st.st_uid}); Hearth keeps its index "
                "only in a folder of your own, where no one else can read or change it.",
                hint="Choose another folder with --data-dir, or have the folder handed over to you (chown).",
            )
        if mode & 0o022:
            raise UsageError(
                f"The data folder {real} can be written by other users (mode {mode:o}): they could change or "
                "replace your index, so Hearth does not use it.",
                hint=f"Make it private (chmod 700 {real}) or choose another folder with --data-dir.",
            )
        if mode & 0o077:
            os.fchmod(fd, mode & ~0o077)
            if not created:
                return [f"The data folder {real} could be read by other users (mode {mode:o}); "
                        f"Hearth made it private (mode {mode & ~0o077:o})."]
    finally:
        os.close(fd)
    return []


def create_private(path: Path) -> None:
    """Create an empty file only this user may use (0600) unless it exists, whatever the umask; its folder,
    when missing, is made 0700. SQLite gives the files it makes beside a database (-wal, -shm, -journal)
    the database's own mode, so a database created through this stays private as a whole."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0)
    try:
        os.close(os.open(path, flags, 0o600))
    except FileExistsError:
        pass


def claim(data_dir: Path) -> DataDirClaim:
    """Take the data folder for this process; raises DataDirInUse when another process has it.

    The folder is made private first (`secure_data_dir`; a refusal is a UsageError); the claim's
    `notices` say what that changed, and they are logged as warnings.
    """
    path = data_dir.expanduser().resolve() / LOCK_NAME
    key = str(path)
    notices: list[str] = []
    try:
        with _mutex:
            hold = _held.get(key)
            if hold is None:
                notices = secure_data_dir(data_dir)
                hold = _Hold(path, _lock(path))
                _held[key] = hold
            hold.count += 1
    finally:
        _drain()  # releases that came in while the mutex was held
    for notice in notices:
        log.warning("%s", notice)
    return DataDirClaim(hold, notices)


def holder(data_dir: Path) -> Holder | None:
    """Who holds the folder now, or None when nobody does (a lock held by this process counts too)."""
    path = data_dir.expanduser().resolve() / LOCK_NAME
    if fcntl is None or not path.exists():
        return None
    with _mutex:
        ours = str(path) in _held
    _drain()
    if ours:
        return _read(path)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return _read(path)
    finally:
        os.close(fd)  # also drops the shared lock, if it was granted
    return None


def _lock(path: Path) -> int | None:
    """Open and lock the lock file, writing who we are into it; None when locking is not possible here."""
    if fcntl is None:
        return None
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        # Not O_TRUNC: the holder's details must stay readable until the lock is ours. O_NOFOLLOW: a link
        # planted as the lock file must not make Hearth write (or lock) whatever it points at.
        flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0)
        fd = os.open(path, flags, 0o600)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UsageError(f"{path} is a link, not Hearth's lock file; Hearth does not follow it.",
                             hint="Remove the link and start Hearth again.") from exc
        log.warning("cannot open %s (%s); another Hearth process could use this folder at the same time", path, exc)
        return None
    try:
        os.fchmod(fd, 0o600)  # a lock file left by an older Hearth may be readable by others
    except OSError:
        pass
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        os.close(fd)
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            raise in_use(path.parent, _read(path)) from None
        # ENOLCK and friends: a file system without locks (some network shares). Work on, unguarded.
        log.warning("cannot lock %s (%s); another Hearth process could use this folder at the same time", path, exc)
        return None
    me = {"pid": os.getpid(), "command": _label or _program(), "since": time.time()}
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(me).encode("utf-8"), 0)
    except OSError as exc:  # a full disk: the lock still holds, only the message is poorer
        log.debug("cannot write %s: %s", path, exc)
    return fd


def in_use(data_dir: Path, who: Holder | None) -> DataDirInUse:
    """The error a second process gets, naming the holder as far as its lock file tells."""
    parts = []
    if who is not None:
        if who.pid is not None:
            parts.append(f"pid {who.pid}")
        if who.command:
            parts.append(f"`{who.command}`")
        if who.since is not None:
            parts.append("since " + _clock(who.since))
    detail = f" ({', '.join(parts)})" if parts else ""
    return DataDirInUse(
        f"Another Hearth is using {data_dir}{detail}.",
        hint="Close it and try again, ask through its local API instead (`hearth serve`, or the window's "
             "API setting), or use another folder with --data-dir.",
    )


def _read(path: Path) -> Holder | None:
    try:
        data = json.loads(path.read_bytes()[:4096].decode("utf-8"))
    except (OSError, ValueError):
        return None  # not written yet, or by something else
    if not isinstance(data, dict):
        return None

    def typed(key: str, kind: type | tuple[type, ...]):
        value = data.get(key)
        return value if isinstance(value, kind) and not isinstance(value, bool) else None

    return Holder(pid=typed("pid", int), command=typed("command", str), since=typed("since", (int, float)))


def _release(hold: _Hold) -> None:
    # A release may come from a garbage-collection finalizer, at any allocation, even inside `claim` on
    # this very thread; so it never waits for the mutex: it queues, and whoever has the mutex drains.
    _pending.append(hold)
    _drain()


def _drain() -> None:
    while _pending and _mutex.acquire(blocking=False):
        try:
            while _pending:
                hold = _pending.pop()
                hold.count -= 1
                if hold.count > 0 or _held.get(str(hold.path)) is not hold:
                    continue
                del _held[str(hold.path)]
                if hold.fd is not None:
                    try:
                        os.ftruncate(hold.fd, 0)  # nobody is named once we let go
                    except OSError:
                        pass
                    os.close(hold.fd)  # closing the last descriptor drops the flock
        finally:
            _mutex.release()


def _after_fork_in_child() -> None:
    # A forked child shares the parent's lock (same open file description): it must not keep it alive
    # after the parent dies, nor release it for the parent. Close its copies and forget them.
    global _mutex
    _mutex = threading.Lock()
    for hold in _held.values():
        if hold.fd is not None:
            try:
                os.close(hold.fd)
            except OSError:
                pass
        hold.fd = None
    _held.clear()
    _pending.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _program() -> str:
    argv0 = sys.argv[0] if sys.argv and sys.argv[0] else "python"
    p = Path(argv0)
    if p.name == "__main__.py":  # python -m PACKAGE
        return "hearth" if p.parent.name == "app" else f"python -m {p.parent.name}"
    return p.name


def _clock(when: float) -> str:
    t = time.localtime(when)
    if time.strftime("%Y-%m-%d", t) == time.strftime("%Y-%m-%d"):
        return time.strftime("%H:%M", t)
    return time.strftime("%Y-%m-%d %H:%M", t)
