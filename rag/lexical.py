"""The lexical (BM25) index beside the vectors: SQLite FTS5, one row per chunk, kept in step with the store."""

from __future__ import annotations

import re
import sqlite3
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from rag.errors import StoreError

_SCHEMA = """
CREATE TABLE IF NOT EXISTS chunks (
    rowid INTEGER PRIMARY KEY,
    chunk_id TEXT NOT NULL UNIQUE,
    workspace TEXT NOT NULL,
    source TEXT NOT NULL,
    page INTEGER,
    heading TEXT,
    start INTEGER NOT NULL,
    "end" INTEGER NOT NULL,
    text TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS chunks_by_source ON chunks (workspace, source);
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(
    heading, text, content='chunks', content_rowid='rowid',
    tokenize='porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER IF NOT EXISTS chunks_ai AFTER INSERT ON chunks BEGIN
    INSERT INTO chunks_fts(rowid, heading, text) VALUES (new.rowid, coalesce(new.heading, ''), new.text);
END;
CREATE TRIGGER IF NOT EXISTS chunks_ad AFTER DELETE ON chunks BEGIN
    INSERT INTO chunks_fts(chunks_fts, rowid, heading, text)
    VALUES ('delete', old.rowid, coalesce(old.heading, ''), old.text);
END;
"""

# Words that carry no meaning for ranking; FTS5 has no stop-word list of its own.
_STOP = frozenset(
    "a an and are as at be by can do does for from how i if in is it of on or should the there this to "
    "what when where which who why will with you your my me we our they their was were has have had "
    "not no any all about into than then so also may must".split()
)
_TERM = re.compile(r"\w+", re.UNICODE)


@dataclass(frozen=True)
class LexicalRow:
    """One chunk as the lexical index holds it."""

    chunk_id: str
    source: str
    page: int | None
    heading: str | None
    start: int
    end: int
    text: str


def query_terms(text: str) -> list[str]:
    """The words of a question that matter for lexical ranking, lower-cased, stop words removed."""
    terms = [t.lower() for t in _TERM.findall(text)]
    kept = [t for t in terms if t not in _STOP and (len(t) > 1 or t.isdigit())]
    return list(dict.fromkeys(kept or terms))


class LexicalIndex:
    """BM25 ranking over chunk text and headings, with SQLite FTS5 (porter stemming, Unicode folding)."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._db = sqlite3.connect(str(path), timeout=30, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.executescript(_SCHEMA)
        except sqlite3.Error as exc:
            raise StoreError(f"Cannot open the keyword index {path}: {exc}") from exc
        self._lock = threading.Lock()

    def close(self) -> None:
        """Close the database."""
        self._db.close()

    def replace_document(self, workspace: str, source: str, rows: Sequence[LexicalRow]) -> None:
        """Swap a document's rows for new ones in one transaction."""
        try:
            with self._lock, self._db:
                self._db.execute("DELETE FROM chunks WHERE workspace=? AND source=?", (workspace, source))
                self._db.executemany(
                    'INSERT OR REPLACE INTO chunks (chunk_id, workspace, source, page, heading, start, "end", text)'
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    [(r.chunk_id, workspace, source, r.page, r.heading, r.start, r.end, r.text) for r in rows],
                )
        except sqlite3.Error as exc:
            raise StoreError(f"Cannot write {source} to the keyword index: {exc}") from exc

    def delete_document(self, workspace: str, source: str) -> None:
        """Remove a document's rows."""
        try:
            with self._lock, self._db:
                self._db.execute("DELETE FROM chunks WHERE workspace=? AND source=?", (workspace, source))
        except sqlite3.Error as exc:
            raise StoreError(f"Cannot remove {source} from the keyword index: {exc}") from exc

    def drop_workspace(self, workspace: str) -> None:
        """Remove every row of a workspace."""
        with self._lock, self._db:
            self._db.execute("DELETE FROM chunks WHERE workspace=?", (workspace,))

    def count(self, workspace: str) -> int:
        """Rows held for a workspace."""
        return int(self._db.execute("SELECT count(*) FROM chunks WHERE workspace=?", (workspace,)).fetchone()[0])

    def sources(self, workspace: str) -> set[str]:
        """Documents that have rows."""
        return {r[0] for r in self._db.execute("SELECT DISTINCT source FROM chunks WHERE workspace=?", (workspace,))}

    def search(self, workspace: str, text: str, *, k: int) -> list[tuple[LexicalRow, float]]:
        """The k best chunks by BM25 for a free-text query (any term may match), best first."""
        terms = query_terms(text)
        if not terms:
            return []
        match = " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)
        try:
            with self._lock:
                rows = self._db.execute(
                    # bm25() is lower-is-better; headings weigh twice the body text.
                    'SELECT c.chunk_id, c.source, c.page, c.heading, c.start, c."end", c.text,'
                    " bm25(chunks_fts, 2.0, 1.0) AS rank"
                    " FROM chunks_fts JOIN chunks c ON c.rowid = chunks_fts.rowid"
                    " WHERE chunks_fts MATCH ? AND c.workspace = ? ORDER BY rank LIMIT ?",
                    (match, workspace, k),
                ).fetchall()
        except sqlite3.Error as exc:
            raise StoreError(f"Cannot search the keyword index: {exc}") from exc
        return [(LexicalRow(*r[:7]), -float(r[7])) for r in rows]

    def all_rows(self, workspace: str) -> list[LexicalRow]:
        """Every chunk of a workspace, in insertion order."""
        rows = self._db.execute(
            'SELECT chunk_id, source, page, heading, start, "end", text FROM chunks WHERE workspace=? ORDER BY rowid',
            (workspace,),
        )
        return [LexicalRow(*r) for r in rows]

    def add_rows(self, workspace: str, rows: Iterable[tuple[str, LexicalRow]]) -> None:
        """Bulk insert (source, row) pairs, used to rebuild the index from the vector store."""
        with self._lock, self._db:
            self._db.executemany(
                'INSERT OR REPLACE INTO chunks (chunk_id, workspace, source, page, heading, start, "end", text)'
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [(r.chunk_id, workspace, s, r.page, r.heading, r.start, r.end, r.text) for s, r in rows],
            )
