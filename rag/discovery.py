"""Which files a list of files and folders stands for, and which of them cannot be indexed, before any is read.

    discover(paths)             files and folders -> (files to read, failures, skipped unsupported)
    source_id(path)             a file's identity in the index: its absolute path, links resolved
    leads_outside(path, folder) whether a path in a folder really lies outside it (a link)
    outside_link(path)          the failure reported for such a link: never read

A link in a folder being indexed that leads out of the folder is not read; a file named directly is (the user
chose it). Folders given with `within` (a watcher's) hold their rule for files named one by one too.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from rag.loaders import SUPPORTED_SUFFIXES
from rag.pinned import inside


@dataclass(frozen=True)
class Failure:
    """One input that could not be indexed, and why."""

    source: str
    error: str
    kind: str  # corrupt, encrypted, empty, no_text_layer, too_large, timeout, unsupported, unreadable, missing,
    # outside_link (a link in a folder that leads out of it), error

    def to_json(self) -> dict[str, str]:
        """The contract's failure object (plus its kind)."""
        return {"source": self.source, "error": self.error, "kind": self.kind}


@dataclass
class _Scan:
    files: list[Path] = field(default_factory=list)
    failures: list[Failure] = field(default_factory=list)
    skipped: int = 0
    roots: list[str] = field(default_factory=list)  # folders walked: documents under them not found are gone
    unlisted: list[str] = field(default_factory=list)  # folders that could not be listed: nothing under them is gone
    within: dict[Path, str] = field(default_factory=dict)  # file found in a folder -> that folder (resolved)
    links_out: list[str] = field(default_factory=list)  # links refused as leading out: what was under them is gone


def source_id(path: Path) -> str:
    """The stable identity of a file in the index: its absolute path with links resolved.

    For a file found in a folder this is always a path inside that folder: a link that leads out of
    the folder is never read (see `outside_link`)."""
    return str(path.resolve())


def leads_outside(path: Path, folder: str) -> bool:
    """Whether `path` (inside `folder`, a resolved path) resolves to a place outside that folder."""
    return not inside(os.path.realpath(path), folder)  # realpath: a link that loops is no error here


def outside_link(path: Path) -> Failure:
    """The report of a link in a folder being indexed whose target lies outside that folder: not read.

    An unpacked archive or a cloned share may hold `readme.txt -> ~/.ssh/id_rsa`; following it would make
    the key searchable. A file the user names directly is read even when it is a link: that is their choice.
    """
    shown = _shown(str(path.absolute()))
    why = f"{_shown(path.name)}: link leads outside the folder, so it was not read."
    return Failure(shown, why, "outside_link")


def discover(paths: Iterable[Path], *, include_hidden: bool = False) -> tuple[list[Path], list[Failure], int]:
    """Expand files and folders into readable files; returns (files, failures, skipped-unsupported)."""
    scan = _discover(paths, include_hidden=include_hidden)
    return scan.files, scan.failures, scan.skipped


def _discover(paths: Iterable[Path], *, include_hidden: bool, within: Sequence[str] = ()) -> _Scan:
    """`within`: resolved folders whose rule holds for files named one by one too (a watched folder's
    changed files): one of them that leads out is refused, and it is checked again when read."""
    scan = _Scan()
    files: dict[str, Path] = {}
    for path in paths:
        path = Path(path)
        home = next((f for f in within if inside(os.path.abspath(path), f)), None)
        if home is not None and not path.is_dir() and leads_outside(path, home):
            scan.failures.append(outside_link(path))
        elif not path.exists():
            scan.failures.append(Failure(str(path.absolute()), f"{path}: no such file or folder", "missing"))
        elif path.is_dir():
            top = source_id(path)
            scan.roots.append(top)

            def unlisted(exc: OSError) -> None:
                scan.unlisted.append(str(Path(exc.filename).resolve()) if exc.filename else scan.roots[-1])

            for root, dirs, names in os.walk(path, followlinks=False, onerror=unlisted):
                if not include_hidden:
                    dirs[:] = [d for d in dirs if not d.startswith(".")]
                dirs.sort()
                for d in dirs:  # os.walk lists linked folders but does not enter them
                    p = Path(root, d)
                    if p.is_symlink() and leads_outside(p, top):
                        scan.failures.append(outside_link(p))
                        scan.links_out.append(os.path.join(os.path.realpath(root), d))
                for name in sorted(names):
                    if not include_hidden and name.startswith("."):
                        continue
                    p = Path(root, name)
                    if p.suffix.lower() not in SUPPORTED_SUFFIXES:
                        scan.skipped += 1
                        continue
                    if leads_outside(p, top):  # checked before anything opens or stats the target
                        scan.failures.append(outside_link(p))
                        scan.links_out.append(os.path.join(os.path.realpath(root), name))  # as a source would be
                        continue
                    refused = _refusal(p)
                    if refused is not None:
                        scan.failures.append(refused)
                        continue
                    if files.setdefault(source_id(p), p) is p:
                        scan.within[p] = top
        elif path.suffix.lower() not in SUPPORTED_SUFFIXES:
            scan.failures.append(
                Failure(
                    source_id(path),
                    f"{path.name}: this file type ({path.suffix or 'none'}) is not supported",
                    "unsupported",
                )
            )
        elif (refused := _refusal(path)) is not None:
            scan.failures.append(refused)
        elif files.setdefault(source_id(path), path) is path and home is not None:
            scan.within[path] = home
    scan.files = list(files.values())
    return scan


def _refusal(path: Path) -> Failure | None:
    """Why a document-named entry cannot be indexed before anything reads it: a link that leads nowhere,
    a pipe or device (reading one would block), or a name the index cannot store; None if it can be."""
    shown = _shown(str(path.absolute()))
    name = _shown(path.name)
    if not path.is_file():  # follows links: False for a broken or looping one, a pipe, a device
        if path.is_symlink():
            why = f"{name} is a link that leads nowhere (its target is missing, or it loops)."
            return Failure(shown, why, "unreadable")
        return Failure(shown, f"{name} is not a regular file (a pipe, socket or device).", "unreadable")
    if shown != str(path.absolute()):
        return Failure(
            shown, f"{name}: the file's name is not valid UTF-8, which the index cannot store; rename the file.",
            "unsupported",
        )  # fmt: skip
    return None


def _shown(name: str) -> str:
    """A path or name as text that can be printed and stored: bytes that are not UTF-8 become U+FFFD."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
