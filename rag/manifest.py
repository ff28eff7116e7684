"""Per-workspace record of indexed files (SQLite): what is done, what was interrupted, with which model."""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path

from inference.errors import UsageError
from rag.datalock import create_private
from rag.errors import StoreError

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


class Manifest:
    """The SQLite manifest; a document counts as indexed only once its status is 'done'."""

    def __init__(self, path: Path) -> None:
        try:
            create_private(path)  # 0600, and so are SQLite's -wal and -shm beside it
            self._db = sqlite3.connect(str(path), timeout=30, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            self._db.executescript(_SCHEMA)
        except (sqlite3.Error, OSError) as exc:
            raise StoreError(f"Cannot open the document list {path}: {exc}") from exc

    def close(self) -> None:
        """Close the database."""
        self._db.close()

    def bind_workspace(self, workspace: str, *, embedder: str, dim: int) -> None:
        """Record the workspace's embedding model, or refuse one that differs from what indexed it."""
        row = self._db.execute("SELECT embedder, dim FROM workspaces WHERE name=?", (workspace,)).fetchone()
        if row is None:
            with self._db:
                self._db.execute(
                    "INSERT INTO workspaces VALUES (?, ?, ?, ?)", (workspace, embedder, dim, time.time())
                )
        elif (row[0], row[1]) != (embedder, dim):
            raise UsageError(
                f"Workspace {workspace!r} was indexed with the embedding model {row[0]!r}, not {embedder!r}.",
                hint="Use the same embedding model, or re-index the workspace with the new one.",
            )

    def rebind_workspace(self, workspace: str, *, embedder: str, dim: int) -> None:
        """Bind an emptied workspace to another embedding model; refused while it still lists documents."""
        with self._db:
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
        row = self._db.execute("SELECT embedder FROM workspaces WHERE name=?", (workspace,)).fetchone()
        return None if row is None else str(row[0])

    def workspaces(self) -> list[str]:
        """All workspace names, sorted."""
        return [r[0] for r in self._db.execute("SELECT name FROM workspaces ORDER BY name")]

    def get(self, workspace: str, source: str) -> DocumentRecord | None:
        """The record of one file, if any."""
        row = self._db.execute(
            "SELECT source, sha256, size, mtime_ns, status, chunks, pages, updated FROM documents"
            " WHERE workspace=? AND source=?",
            (workspace, source),
        ).fetchone()
        return None if row is None else DocumentRecord(*row)

    def documents(self, workspace: str, *, status: str | None = None) -> list[DocumentRecord]:
        """All records of a workspace (optionally of one status), sorted by source."""
        sql = "SELECT source, sha256, size, mtime_ns, status, chunks, pages, updated FROM documents WHERE workspace=?"
        args: tuple = (workspace,)
        if status is not None:
            sql += " AND status=?"
            args += (status,)
        return [DocumentRecord(*r) for r in self._db.execute(sql + " ORDER BY source", args)]

    def done_sources(self, workspace: str) -> set[str]:
        """Sources whose indexing finished."""
        rows = self._db.execute("SELECT source FROM documents WHERE workspace=? AND status='done'", (workspace,))
        return {r[0] for r in rows}

    def begin(self, workspace: str, source: str, *, sha256: str, size: int, mtime_ns: int) -> None:
        """Mark a file as being indexed (it stops counting as done until `finish`)."""
        with self._db:
            self._db.execute(
                "INSERT INTO documents (workspace, source, sha256, size, mtime_ns, status, chunks, updated)"
                " VALUES (?, ?, ?, ?, ?, 'indexing', 0, ?)"
                " ON CONFLICT(workspace, source) DO UPDATE SET sha256=excluded.sha256, size=excluded.size,"
                " mtime_ns=excluded.mtime_ns, status='indexing', updated=excluded.updated",
                (workspace, source, sha256, size, mtime_ns, time.time()),
            )

    def finish(self, workspace: str, source: str, *, chunks: int, pages: int | None) -> None:
        """Mark a file as fully indexed."""
        with self._db:
            self._db.execute(
                "UPDATE documents SET status='done', chunks=?, pages=?, updated=? WHERE workspace=? AND source=?",
                (chunks, pages, time.time(), workspace, source),
            )

    def touch(self, workspace: str, source: str, *, mtime_ns: int) -> None:
        """Remember a new modification time for a file whose content did not change."""
        with self._db:
            self._db.execute(
                "UPDATE documents SET mtime_ns=? WHERE workspace=? AND source=?", (mtime_ns, workspace, source)
            )

    def unfinish(self, workspace: str, source: str) -> None:
        """Stop counting a file as indexed before its chunks are deleted (a crash then leaves it to redo)."""
        with self._db:
            self._db.execute(
                "UPDATE documents SET status='indexing', updated=? WHERE workspace=? AND source=?",
                (time.time(), workspace, source),
            )

    def remove(self, workspace: str, source: str) -> None:
        """Forget a file."""
        with self._db:
            self._db.execute("DELETE FROM documents WHERE workspace=? AND source=?", (workspace, source))
