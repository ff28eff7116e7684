"""Per-workspace record of indexed files (SQLite): what is done, what was interrupted, with which model;
and the removal of documents, in the order that keeps a removal killed half-way from looking done."""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from inference.errors import UsageError
from rag.datalock import create_private
from rag.errors import StoreError

if TYPE_CHECKING:
    from rag.store import DocumentIndex

_SCHEMA = """
CREATE TABLE IF NOT EXISTS workspaces (
    name TEXT PRIMARY KEY,
    embedder TEXT NOT NULL,
    dim INTEGER NOT NULL,
    created REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS documents (
    workspace TEXT NOT NULL,
    source TEXT NOT NULL,
    sha256 TEXT NOT NULL,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('indexing', 'done')),
    chunks INTEGER NOT NULL DEFAULT 0,
    pages INTEGER,
    updated REAL NOT NULL,
    note TEXT,
    PRIMARY KEY (workspace, source)
);
"""


@dataclass(frozen=True)
class DocumentRecord:
    """What the manifest knows of one file."""

    source: str
    sha256: str
    size: int
    mtime_ns: int
    status: str
    chunks: int
    pages: int | None
    updated: float
    note: str | None = None  # what OCR read: "scanned", "scanned, low confidence (page 2)" (rag.loaders.ocr_note)


class Manifest:
    """The SQLite manifest; a document counts as indexed only once its status is 'done'.

    One connection serves every thread (ingestion writes from its writer thread while searches read);
    a lock keeps one thread's transaction from being committed or read half-way by another.
    """

    def __init__(self, path: Path) -> None:
        try:
            create_private(path)  # 0600, and so are SQLite's -wal and -shm beside it
            self._db = sqlite3.connect(str(path), timeout=30, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            self._db.executescript(_SCHEMA)
            if "note" not in {row[1] for row in self._db.execute("PRAGMA table_info(documents)")}:
                self._db.execute("ALTER TABLE documents ADD COLUMN note TEXT")  # manifests from before notes
        except (sqlite3.Error, OSError) as exc:
            raise StoreError(f"Cannot open the document list {path}: {exc}") from exc
        self._lock = threading.RLock()
        self._done: dict[str, tuple[tuple[int, int], frozenset[str]]] = {}  # workspace -> (state, done)

    def close(self) -> None:
        """Close the database."""
        with self._lock:
            self._db.close()

    def _read(self, sql: str, args: tuple = ()) -> list[tuple]:
        with self._lock:
            return self._db.execute(sql, args).fetchall()

    def bind_workspace(self, workspace: str, *, embedder: str, dim: int) -> None:
        """Record the workspace's embedding model, or refuse one that differs from what indexed it."""
        with self._lock:
            row = self._db.execute("SELECT embedder, dim FROM workspaces WHERE name=?", (workspace,)).fetchone()
            if row is None:
                with self._db:
                    self._db.execute(
                        "INSERT INTO workspaces VALUES (?, ?, ?, ?)", (workspace, embedder, dim, time.time())
                    )
        if row is not None and (row[0], row[1]) != (embedder, dim):
            raise UsageError(
                f"Workspace {workspace!r} was indexed with the embedding model {row[0]!r}, not {embedder!r}.",
                hint="Use the same embedding model, or re-index the workspace with the new one.",
            )

    def rebind_workspace(self, workspace: str, *, embedder: str, dim: int) -> None:
        """Bind an emptied workspace to another embedding model; refused while it still lists documents."""
        with self._lock, self._db:
            left = self._db.execute("SELECT COUNT(*) FROM documents WHERE workspace=?", (workspace,)).fetchone()[0]
            if left:
                raise UsageError(
                    f"Workspace {workspace!r} still holds {left} documents indexed with another embedding model."
                )
            self._db.execute(
                "INSERT INTO workspaces VALUES (?, ?, ?, ?)"
                " ON CONFLICT(name) DO UPDATE SET embedder=excluded.embedder, dim=excluded.dim",
                (workspace, embedder, dim, time.time()),
            )

    def workspace_embedder(self, workspace: str) -> str | None:
        """The embedding model a workspace was indexed with, if any."""
        rows = self._read("SELECT embedder FROM workspaces WHERE name=?", (workspace,))
        return str(rows[0][0]) if rows else None

    def workspaces(self) -> list[str]:
        """All workspace names, sorted."""
        return [r[0] for r in self._read("SELECT name FROM workspaces ORDER BY name")]

    def get(self, workspace: str, source: str) -> DocumentRecord | None:
        """The record of one file, if any."""
        rows = self._read(
            "SELECT source, sha256, size, mtime_ns, status, chunks, pages, updated, note FROM documents"
            " WHERE workspace=? AND source=?",
            (workspace, source),
        )
        return DocumentRecord(*rows[0]) if rows else None

    def documents(self, workspace: str, *, status: str | None = None) -> list[DocumentRecord]:
        """All records of a workspace (optionally of one status), sorted by source."""
        sql = ("SELECT source, sha256, size, mtime_ns, status, chunks, pages, updated, note FROM documents"
               " WHERE workspace=?")
        args: tuple = (workspace,)
        if status is not None:
            sql += " AND status=?"
            args += (status,)
        return [DocumentRecord(*r) for r in self._read(sql + " ORDER BY source", args)]

    def done_sources(self, workspace: str) -> set[str]:
        """Sources whose indexing finished (a copy: every search asks, and at 12,500 documents reading them
        cost 25 ms, so they are read again only when this connection or another one has written since)."""
        with self._lock:
            state = (self._db.total_changes, int(self._db.execute("PRAGMA data_version").fetchone()[0]))
            cached = self._done.get(workspace)
            if cached is None or cached[0] != state:
                rows = self._db.execute(
                    "SELECT source FROM documents WHERE workspace=? AND status='done'", (workspace,)).fetchall()
                cached = self._done[workspace] = (state, frozenset(r[0] for r in rows))
            return set(cached[1])

    def begin(self, workspace: str, source: str, *, sha256: str, size: int, mtime_ns: int) -> None:
        """Mark a file as being indexed (it stops counting as done until `finish`)."""
        self._begin(workspace, [(source, sha256, size, mtime_ns)])

    def begin_many(self, workspace: str, files: Sequence[tuple[str, str, int, int]]) -> None:
        """Mark files, given as (source, sha256, size, mtime_ns), as being indexed, in one transaction."""
        self._begin(workspace, files)

    def _begin(self, workspace: str, files: Sequence[tuple[str, str, int, int]]) -> None:
        now = time.time()
        with self._lock, self._db:
            self._db.executemany(
                "INSERT INTO documents (workspace, source, sha256, size, mtime_ns, status, chunks, updated)"
                " VALUES (?, ?, ?, ?, ?, 'indexing', 0, ?)"
                " ON CONFLICT(workspace, source) DO UPDATE SET sha256=excluded.sha256, size=excluded.size,"
                " mtime_ns=excluded.mtime_ns, status='indexing', updated=excluded.updated",
                [(workspace, source, sha, size, mtime_ns, now) for source, sha, size, mtime_ns in files],
            )

    def finish(self, workspace: str, source: str, *, chunks: int, pages: int | None,
               note: str | None = None) -> None:  # fmt: skip
        """Mark a file as fully indexed, with a warning about what was read if there is one."""
        self._finish(workspace, [(source, chunks, pages, note)])

    def finish_many(self, workspace: str, files: Sequence[tuple[str, int, int | None] | tuple[str, int, int | None,
                    str | None]]) -> None:  # fmt: skip
        """Mark files, given as (source, chunks, pages[, note]), as fully indexed, in one transaction."""
        self._finish(workspace, files)

    def _finish(self, workspace: str, files: Sequence[tuple]) -> None:
        now = time.time()
        with self._lock, self._db:
            self._db.executemany(
                "UPDATE documents SET status='done', chunks=?, pages=?, note=?, updated=?"
                " WHERE workspace=? AND source=?",
                [(f[1], f[2], f[3] if len(f) > 3 else None, now, workspace, f[0]) for f in files],
            )

    def touch(self, workspace: str, source: str, *, mtime_ns: int) -> None:
        """Remember a new modification time for a file whose content did not change."""
        with self._lock, self._db:
            self._db.execute(
                "UPDATE documents SET mtime_ns=? WHERE workspace=? AND source=?", (mtime_ns, workspace, source)
            )

    def unfinish(self, workspace: str, source: str) -> None:
        """Stop counting a file as indexed before its chunks are deleted (a crash then leaves it to redo)."""
        with self._lock, self._db:
            self._db.execute(
                "UPDATE documents SET status='indexing', updated=? WHERE workspace=? AND source=?",
                (time.time(), workspace, source),
            )

    def remove(self, workspace: str, source: str) -> None:
        """Forget a file."""
        with self._lock, self._db:
            self._db.execute("DELETE FROM documents WHERE workspace=? AND source=?", (workspace, source))


def forget(paths: Iterable[Path], *, workspace: str, store: DocumentIndex, manifest: Manifest) -> list[str]:
    """Remove files, or every file under folders, from a workspace; returns the sources removed."""
    known = [r.source for r in manifest.documents(workspace)]
    removed: list[str] = []
    for path in paths:
        target = str(path.absolute().resolve()) if path.exists() else str(path.absolute())
        for source in known:
            if (source == target or source.startswith(target.rstrip(os.sep) + os.sep)) and source not in removed:
                _remove(source, workspace=workspace, store=store, manifest=manifest)
                removed.append(source)
    return removed


def _remove(source: str, *, workspace: str, store: DocumentIndex, manifest: Manifest) -> None:
    """Remove one document's chunks, then its record; killed half-way, it no longer counts as done."""
    manifest.unfinish(workspace, source)
    store.delete_document(workspace, source)
    manifest.remove(workspace, source)
