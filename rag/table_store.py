"""The table store: each workspace's tables with their typed rows, in SQLite beside the manifest.

Kept in step with the documents through the manifest: a document's tables are written under its content
hash before the manifest marks it done, and only tables whose hash is the one of a done document are read.
A document's tables are swapped in one transaction, so a kill leaves the old ones or the new ones, never a
half table; tables left behind by an interrupted run or a document that is gone are pruned.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from rag.errors import StoreError
from rag.tables import Row, Table

_SCHEMA = """
CREATE TABLE IF NOT EXISTS tables (
    id INTEGER PRIMARY KEY,
    workspace TEXT NOT NULL,
    source TEXT NOT NULL,
    version TEXT NOT NULL,
    ordinal INTEGER NOT NULL,
    sheet TEXT,
    page INTEGER,
    title TEXT,
    columns TEXT NOT NULL,
    types TEXT NOT NULL,
    decimals TEXT NOT NULL,
    start INTEGER NOT NULL,
    "end" INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS tables_by_source ON tables (workspace, source);
CREATE TABLE IF NOT EXISTS table_rows (
    table_id INTEGER NOT NULL REFERENCES tables (id) ON DELETE CASCADE,
    number INTEGER NOT NULL,
    cells TEXT NOT NULL,
    "values" TEXT NOT NULL,
    start INTEGER NOT NULL,
    "end" INTEGER NOT NULL,
    PRIMARY KEY (table_id, number)
) WITHOUT ROWID;
"""
_VERSION = 1


class TableStore:
    """Typed tables of indexed documents, per workspace; safe to use from several threads of one process."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._cache: dict[int, Table] = {}  # tables never change once written: read each once
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(str(self.path), timeout=30, check_same_thread=False, isolation_level=None)
            self._db.execute("PRAGMA journal_mode = WAL")
            self._db.execute("PRAGMA foreign_keys = ON")
            self._db.executescript(_SCHEMA)
            self._db.execute(f"PRAGMA user_version = {_VERSION}")
        except sqlite3.Error as exc:
            raise StoreError(f"Cannot open the table store {self.path}: {exc}") from exc

    def close(self) -> None:
        """Close the database."""
        with self._lock:
            self._db.close()

    def write(self, workspace: str, documents: Iterable[tuple[str, str, Sequence[Table]]]) -> None:
        """Swap the tables of documents (source, content hash, tables) for new ones, all in one transaction."""
        with self._lock:
            try:
                self._db.execute("BEGIN IMMEDIATE")
                for source, version, tables in documents:
                    self._delete(workspace, source)
                    for t in tables:
                        cur = self._db.execute(
                            'INSERT INTO tables (workspace, source, version, ordinal, sheet, page, title, columns, '
                            'types, decimals, start, "end") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
                            (workspace, source, version, t.ordinal, t.sheet, t.page, t.title, _dump(t.columns),
                             _dump(t.types), _dump(t.decimals), t.start, t.end),
                        )
                        rows = [(r.number, r) for r in t.rows] + [(-i, r) for i, r in enumerate(t.total_rows, 1)]
                        self._db.executemany(
                            'INSERT INTO table_rows (table_id, number, cells, "values", start, "end") '
                            "VALUES (?, ?, ?, ?, ?, ?)",
                            [(cur.lastrowid, n, _dump(r.cells), _dump(r.values), r.start, r.end) for n, r in rows],
                        )
                self._db.execute("COMMIT")
            except sqlite3.Error as exc:
                self._db.execute("ROLLBACK")
                raise StoreError(f"Cannot write tables to {self.path}: {exc}") from exc
            except BaseException:
                self._db.execute("ROLLBACK")
                raise

    def delete(self, workspace: str, sources: Iterable[str]) -> None:
        """Remove the tables of documents."""
        with self._lock:
            try:
                self._db.execute("BEGIN IMMEDIATE")
                for source in sources:
                    self._delete(workspace, source)
                self._db.execute("COMMIT")
            except sqlite3.Error as exc:
                self._db.execute("ROLLBACK")
                raise StoreError(f"Cannot remove tables from {self.path}: {exc}") from exc

    def prune(self, workspace: str, current: Mapping[str, str]) -> int:
        """Remove tables whose document is not in `current` (source -> content hash) under that hash: left by
        a document that is gone, or by a run killed before the manifest marked the new version done."""
        rows = self._read("SELECT id, source, version FROM tables WHERE workspace = ?", (workspace,))
        stale = [tid for tid, source, version in rows if current.get(source) != version]
        if stale:
            with self._lock:
                self._db.executemany("DELETE FROM tables WHERE id = ?", [(tid,) for tid in stale])
                for tid in stale:
                    self._cache.pop(tid, None)
        return len(stale)

    def drop_workspace(self, workspace: str) -> None:
        """Remove every table of a workspace."""
        with self._lock:
            self._db.execute("DELETE FROM tables WHERE workspace = ?", (workspace,))

    def tables(self, workspace: str, current: Mapping[str, str]) -> list[Table]:
        """The tables of the documents in `current` (source -> content hash of its done version)."""
        found = []
        for row in self._read('SELECT id, source, version, ordinal, sheet, page, title, columns, types, decimals, '
                              'start, "end" FROM tables WHERE workspace = ? ORDER BY source, ordinal', (workspace,)):
            tid, source, version = row[0], row[1], row[2]
            if current.get(source) != version:
                continue
            table = self._cache.get(tid)
            if table is None:
                table = self._load(row)
                with self._lock:
                    self._cache[tid] = table
            found.append(table)
        return found

    def count(self, workspace: str) -> int:
        """Tables held for a workspace (any version)."""
        return int(self._read("SELECT count(*) FROM tables WHERE workspace = ?", (workspace,))[0][0])

    def _load(self, row: tuple) -> Table:
        tid, source, _version, ordinal, sheet, page, title, columns, types, decimals, start, end = row
        rows, totals = [], []
        for number, cells, values, r_start, r_end in self._read(
                'SELECT number, cells, "values", start, "end" FROM table_rows WHERE table_id = ? ORDER BY number',
                (tid,)):
            r = Row(max(number, 0), tuple(json.loads(cells)), tuple(json.loads(values)), r_start, r_end)
            (totals if number < 0 else rows).append(r)
        return Table(source, ordinal, sheet, page, title, tuple(json.loads(columns)), tuple(json.loads(types)),
                     tuple(rows), start, end, tuple(reversed(totals)), tuple(json.loads(decimals)))

    def _delete(self, workspace: str, source: str) -> None:
        ids = [r[0] for r in self._db.execute("SELECT id FROM tables WHERE workspace = ? AND source = ?",
                                              (workspace, source))]
        self._db.execute("DELETE FROM tables WHERE workspace = ? AND source = ?", (workspace, source))
        for tid in ids:
            self._cache.pop(tid, None)

    def _read(self, sql: str, args: tuple = ()) -> list[tuple]:
        with self._lock:
            try:
                return self._db.execute(sql, args).fetchall()
            except sqlite3.Error as exc:
                raise StoreError(f"Cannot read the table store {self.path}: {exc}") from exc


def _dump(value: Sequence[object]) -> str:
    return json.dumps(list(value), ensure_ascii=False)
