"""Watched folders: one full sync, then every change on disk applied to the index until told to stop.

Changes come from watchfiles (inotify on Linux, polling where asked, e.g. for network shares), in
debounced batches. A batch is applied as: files and folders that appeared or changed are ingested
(additions first, so a moved file finds the vectors of its old path and re-embeds nothing), then
paths that vanished are forgotten. A watched folder that itself vanishes (an unmounted share) is not
taken as emptied: nothing under it is forgotten until it is back and rescanned. A link that appears in
a watched folder and leads out of it is not read, as when the folder is indexed (rag.ingest): it is
reported as a failed input instead.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from rag.ingest import Failure, IngestReport, leads_outside, outside_link
from rag.loaders import SUPPORTED_SUFFIXES

# Lock and temporary files that office programs write beside a document being edited.
_TEMPORARY_PREFIXES = ("~$", ".~lock.", "~WRL")


@dataclass
class WatchUpdate:
    """What one batch of changes did: the ingest report for what appeared or changed, and what was forgotten."""

    report: IngestReport
    forgotten: list[str] = field(default_factory=list)
    initial: bool = False  # the full sync at the start

    @property
    def changed(self) -> bool:
        """Whether the index changed (or something failed)."""
        r = self.report
        return bool(r.added or r.updated or r.removed or r.failed or self.forgotten)


def relevant(path: Path, roots: Sequence[Path], *, include_hidden: bool = False) -> bool:
    """Whether a changed path can matter to the index: not hidden, not a lock file, a readable type or a folder."""
    name = path.name
    if name.startswith(_TEMPORARY_PREFIXES):
        return False
    if not include_hidden:
        for root in roots:
            try:
                parts = path.relative_to(root).parts
            except ValueError:
                continue
            if any(p.startswith(".") for p in parts):
                return False
    if path.is_dir():
        return True
    return path.suffix.lower() in SUPPORTED_SUFFIXES


def watch(
    paths: Sequence[Path],
    *,
    ingest: Callable[[list[Path]], IngestReport],
    forget: Callable[[list[Path]], list[str]],
    on_update: Callable[[WatchUpdate], None],
    stop: threading.Event,
    include_hidden: bool = False,
    debounce_ms: int = 1000,
    force_polling: bool | None = None,
) -> None:
    """Sync the folders, then keep them in sync until `stop` is set (returns then)."""
    import watchfiles

    # With raise_interrupt=False it logs a warning on Ctrl-C; stopping is the caller's business, not news.
    logging.getLogger("watchfiles.main").setLevel(logging.ERROR)
    roots = [Path(p).resolve() for p in paths]
    on_update(WatchUpdate(ingest(list(roots)), initial=True))
    caught_up = False
    for changes in watchfiles.watch(
        *[r for r in roots if r.exists()],
        watch_filter=None,  # our own filter below; watchfiles' default ignores names Hearth reads
        debounce=debounce_ms,
        stop_event=stop,
        force_polling=force_polling,
        raise_interrupt=False,
        ignore_permission_denied=True,
        rust_timeout=200,
        yield_on_timeout=True,
    ):
        if not caught_up:
            # The watcher is running only from its first yield: files that changed while the first sync
            # ran (or before the watcher started) are caught by one more sync, cheap for unchanged files.
            caught_up = True
            catch_up = WatchUpdate(ingest(list(roots)))
            if catch_up.changed:
                on_update(catch_up)
        if not changes:
            if stop.is_set():
                break
            continue
        update = apply_changes({Path(p) for _, p in changes}, roots, ingest=ingest, forget=forget,
                               include_hidden=include_hidden)  # fmt: skip
        if update is not None:
            on_update(update)
        if stop.is_set():
            break


def apply_changes(
    changed: set[Path],
    roots: Sequence[Path],
    *,
    ingest: Callable[[list[Path]], IngestReport],
    forget: Callable[[list[Path]], list[str]],
    include_hidden: bool = False,
) -> WatchUpdate | None:
    """Apply one batch of changed paths: ingest what exists, forget what is gone; None if nothing mattered.

    A path that leads out of the watched folder it is in (a link, or a file inside a linked folder) is
    not ingested but reported: ingesting it by name would read what the folder rule keeps out.
    """
    present = sorted(p for p in changed if p.exists() and relevant(p, roots, include_hidden=include_hidden))
    links_out: list[Failure] = []
    kept: list[Path] = []
    for p in present:
        home = [r for r in roots if _inside(p, r)]
        if home and all(leads_outside(p, str(r)) for r in home):
            links_out.append(outside_link(p))
        else:
            kept.append(p)
    present = kept
    # A folder that was ingested whole covers the files in it.
    folders = [p for p in present if p.is_dir()]
    present = [p for p in present if p.is_dir() or not any(_inside(p, f) for f in folders)]
    gone = sorted(
        p for p in changed
        if not p.exists() and any(_inside(p, r) and r.exists() for r in roots)
        and not p.name.startswith(_TEMPORARY_PREFIXES)
    )  # fmt: skip
    if not present and not gone and not links_out:
        return None
    report = ingest(present) if present else IngestReport()
    report.failed.extend(links_out)
    forgotten = forget(gone) if gone else []
    return WatchUpdate(report, forgotten)


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or str(path).startswith(str(folder).rstrip(os.sep) + os.sep)
