"""Conversations per workspace in SQLite: each question, its answer and the sources it was given.

One database file for all workspaces; a conversation belongs to one workspace. Answers are stored with
their passages (source, page, heading, text) and which of them were cited, so a reopened conversation
shows the same sources even after the documents changed. A document removed from the index takes its
text out of the stored conversations too (`redact_sources`): its passages and quotes are replaced by
REMOVED; the entries stay, so the answers' citation numbers still point at the right places.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from inference.errors import UsageError
from rag.datalock import create_private
from rag.errors import StoreError
from rag.answer import Answer
from rag.answer import Turn as HistoryTurn
from rag.quotes import Quote, Support
from rag.store import Hit
from rag.table_result import TableResult

_SCHEMA = """
CREATE TABLE IF NOT EXISTS conversations (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    workspace TEXT NOT NULL,
    title TEXT NOT NULL,
    created REAL NOT NULL,
    updated REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS conversations_by_workspace ON conversations (workspace, updated);
CREATE TABLE IF NOT EXISTS turns (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    conversation INTEGER NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    question TEXT NOT NULL,
    text TEXT NOT NULL,            -- the reply as shown (also a partial one, when it was stopped)
    error TEXT,                    -- why there is no full answer, if there is none
    sources TEXT NOT NULL,         -- JSON: the passages given, numbered from 1
    cited TEXT NOT NULL,           -- JSON: the numbers of the cited passages
    timings TEXT NOT NULL,         -- JSON
    created REAL NOT NULL,
    support TEXT,                  -- JSON: supporting quotes and per-sentence support (rag/quotes.py)
    searched_for TEXT,             -- the query searched for the question (a follow-up made standalone)
    table_result TEXT              -- JSON: what a table computed for the answer (rag/table_result.py)
);
CREATE INDEX IF NOT EXISTS turns_by_conversation ON turns (conversation, id);
"""
_VERSION = 4  # 2: turns.support; 3: turns.searched_for; 4: turns.table_result
REMOVED = "[removed: the document was removed from the index]"  # stands for a forgotten document's text
# Stands for a stored reply (an answer, a summary) drawn from a document that was removed since.
REMOVED_REPLY = "[removed: this reply was drawn from a document that was removed from the index]"


@dataclass
class Turn:
    """One question and its answer (None when it was stopped or failed; `text` is what was shown)."""

    question: str
    answer: Answer | None = None
    text: str = ""
    error: str | None = None
    created: float = field(default_factory=time.time)
    searched_for: str | None = None  # what was searched for the question (a follow-up made standalone)


@dataclass
class Conversation:
    """A titled list of turns in one workspace; `turns` is empty in listings (see `turn_count`)."""

    id: int
    workspace: str
    title: str
    created: float = field(default_factory=time.time)
    updated: float = field(default_factory=time.time)
    turns: list[Turn] = field(default_factory=list)
    turn_count: int = 0

    def questions(self) -> list[str]:
        """The earlier questions that were answered, for follow-up search."""
        return [t.question for t in self.turns if t.answer is not None]

    def history(self) -> list[HistoryTurn]:
        """The answered turns as the model's conversation history."""
        return [HistoryTurn(t.question, t.text) for t in self.turns if t.answer is not None and t.text]


class ConversationStore:
    """Conversations in an SQLite file; safe to use from several threads of one process."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        try:
            create_private(self.path)  # 0600, and so are SQLite's -wal and -shm beside it
            self._db = sqlite3.connect(str(self.path), check_same_thread=False, isolation_level=None)
            self._db.execute("PRAGMA foreign_keys = ON")
            self._db.execute("PRAGMA journal_mode = WAL")
            self._db.executescript(_SCHEMA)
            columns = {row[1] for row in self._db.execute("PRAGMA table_info(turns)")}
            if "support" not in columns:  # a history written by version 1: its turns have no quotes
                self._db.execute("ALTER TABLE turns ADD COLUMN support TEXT")
            if "searched_for" not in columns:  # versions 1 and 2 did not keep what was searched
                self._db.execute("ALTER TABLE turns ADD COLUMN searched_for TEXT")
            if "table_result" not in columns:  # versions 1 to 3 answered nothing from tables
                self._db.execute("ALTER TABLE turns ADD COLUMN table_result TEXT")
            self._db.execute(f"PRAGMA user_version = {_VERSION}")
        except (sqlite3.Error, OSError) as exc:
            raise StoreError(f"Cannot open the conversation history {self.path}: {exc}") from exc

    def close(self) -> None:
        """Close the database."""
        with self._lock:
            self._db.close()

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            try:
                self._db.execute("BEGIN IMMEDIATE")
                yield self._db
                self._db.execute("COMMIT")
            except sqlite3.Error as exc:
                self._db.execute("ROLLBACK")
                raise StoreError(f"Cannot update the conversation history: {exc}") from exc
            except BaseException:
                self._db.execute("ROLLBACK")
                raise

    def list(self, workspace: str) -> list[Conversation]:
        """The workspace's conversations, most recently used first (without their turns)."""
        with self._lock:
            rows = self._db.execute(
                "SELECT c.id, c.workspace, c.title, c.created, c.updated, "
                "(SELECT COUNT(*) FROM turns t WHERE t.conversation = c.id) "
                "FROM conversations c WHERE c.workspace = ? ORDER BY c.updated DESC, c.id DESC",
                (workspace,),
            ).fetchall()
        return [Conversation(r[0], r[1], r[2], r[3], r[4], [], r[5]) for r in rows]

    def create(self, workspace: str, title: str) -> Conversation:
        """A new, empty conversation."""
        now = time.time()
        title = " ".join(title.split())[:80] or "New conversation"
        with self._tx() as db:
            cur = db.execute(
                "INSERT INTO conversations (workspace, title, created, updated) VALUES (?, ?, ?, ?)",
                (workspace, title, now, now),
            )
        return Conversation(int(cur.lastrowid or 0), workspace, title, now, now)

    def get(self, conv_id: int) -> Conversation | None:
        """A conversation with all its turns, or None."""
        with self._lock:
            row = self._db.execute(
                "SELECT id, workspace, title, created, updated FROM conversations WHERE id = ?", (conv_id,)
            ).fetchone()
            if row is None:
                return None
            turns = self._db.execute(
                "SELECT question, text, error, sources, cited, timings, created, support, searched_for, table_result "
                "FROM turns "
                "WHERE conversation = ? ORDER BY id",
                (conv_id,),
            ).fetchall()
        conv = Conversation(row[0], row[1], row[2], row[3], row[4])
        conv.turns = [_turn(*t, conv_id=conv_id) for t in turns]
        conv.turn_count = len(conv.turns)
        return conv

    def require(self, conv_id: int, workspace: str | None = None) -> Conversation:
        """Like `get`, but a missing conversation (or one of another workspace) is a UsageError."""
        conv = self.get(conv_id)
        if conv is None or (workspace is not None and conv.workspace != workspace):
            where = f" in workspace {workspace!r}" if workspace is not None else ""
            raise UsageError(f"There is no conversation {conv_id}{where}.",
                             hint="`hearth conversations` lists them.")
        return conv

    def add_turn(
        self,
        conv_id: int,
        question: str,
        answer: Answer | None,
        *,
        text: str | None = None,
        error: str | None = None,
        searched_for: str | None = None,
    ) -> Turn:
        """Append a question and its answer (or the partial text and the error when there is none, with what
        was searched for it)."""
        shown = answer.text if answer is not None and text is None else (text or "")
        sources = [h.to_json() | {"start": h.start, "end": h.end, "chunk_id": h.chunk_id}
                   for h in (answer.sources if answer else [])]
        support = answer.support if answer is not None else None
        now = time.time()
        with self._tx() as db:
            if db.execute("SELECT 1 FROM conversations WHERE id = ?", (conv_id,)).fetchone() is None:
                raise UsageError(f"There is no conversation {conv_id}.")
            db.execute(
                "INSERT INTO turns (conversation, question, text, error, sources, cited, timings, created, support, "
                "searched_for, table_result) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (conv_id, question, shown, error, json.dumps(sources, ensure_ascii=False),
                 json.dumps(answer.cited if answer else []), json.dumps(answer.timings if answer else {}), now,
                 json.dumps(support.to_json(), ensure_ascii=False) if support is not None else None,
                 answer.searched_for if answer is not None else searched_for,
                 json.dumps(answer.table.to_json(), ensure_ascii=False)
                 if answer is not None and answer.table is not None else None),
            )
            db.execute("UPDATE conversations SET updated = ? WHERE id = ?", (now, conv_id))
        return Turn(question, answer, shown, error, now,
                    answer.searched_for if answer is not None else searched_for)

    def rename(self, conv_id: int, title: str) -> None:
        """Give a conversation a new title."""
        with self._tx() as db:
            db.execute("UPDATE conversations SET title = ? WHERE id = ?", (" ".join(title.split())[:80], conv_id))

    def delete(self, conv_id: int) -> bool:
        """Remove a conversation and its turns; True if it existed."""
        with self._tx() as db:
            return db.execute("DELETE FROM conversations WHERE id = ?", (conv_id,)).rowcount > 0

    def delete_workspace(self, workspace: str) -> int:
        """Remove every conversation of a workspace; returns how many."""
        with self._tx() as db:
            return db.execute("DELETE FROM conversations WHERE workspace = ?", (workspace,)).rowcount

    def redact_sources(self, workspace: str, sources: Sequence[str]) -> int:
        """Take forgotten documents' text out of a workspace's stored turns; returns how many turns changed.

        Their passages and quotes keep their place and number but their text becomes REMOVED and their
        heading is dropped; a reply drawn from them (one citing their passages, a summary of the document,
        or one that cites nothing and was given their passages) becomes REMOVED_REPLY, with its sentences.
        """
        gone = set(sources)
        if not gone:
            return 0
        with self._tx() as db:
            rows = db.execute(
                "SELECT t.id, t.sources, t.support, t.cited, t.text FROM turns t "
                "JOIN conversations c ON c.id = t.conversation WHERE c.workspace = ?",
                (workspace,),
            ).fetchall()
            changed: set[int] = set()
            for turn_id, sources_json, support_json, cited_json, text in rows:
                hits = json.loads(sources_json)
                drawn = _drawn_from(gone, hits, json.loads(cited_json)) and text != REMOVED_REPLY
                hits, support = _redacted(gone, hits, support_json, reply=drawn)
                if hits is None and support is None and not drawn:
                    continue
                db.execute(
                    "UPDATE turns SET sources = COALESCE(?, sources), support = COALESCE(?, support), "
                    "text = COALESCE(?, text) WHERE id = ?",
                    (None if hits is None else json.dumps(hits, ensure_ascii=False),
                     None if support is None else json.dumps(support.to_json(), ensure_ascii=False),
                     REMOVED_REPLY if drawn else None, turn_id),
                )
                changed.add(turn_id)
            for turn_id, table_json in db.execute(
                    "SELECT t.id, t.table_result FROM turns t JOIN conversations c ON c.id = t.conversation "
                    "WHERE c.workspace = ? AND t.table_result IS NOT NULL", (workspace,)).fetchall():
                if json.loads(table_json).get("source") in gone:  # the rows it showed are the document's text
                    db.execute("UPDATE turns SET table_result = NULL WHERE id = ?", (turn_id,))
                    changed.add(turn_id)
        return len(changed)

    def export_markdown(self, conv: Conversation | int) -> str:
        """The conversation as Markdown, each answer followed by its sources (cited ones marked)."""
        if isinstance(conv, int):
            conv = self.require(conv)
        lines = [f"# {conv.title}", "", f"*Workspace: {conv.workspace} · "
                 f"{time.strftime('%Y-%m-%d %H:%M', time.localtime(conv.created))}*", ""]
        for turn in conv.turns:
            support = turn.answer.support if turn.answer is not None else None
            # A reply replaced by the quotes (it was empty, a refusal or unsupported) is exported as shown.
            shown = support.text if support is not None and support.fallback else turn.text
            lines += [f"## {turn.question}", "", shown or "", ""]
            if turn.error:
                lines += [f"*{turn.error}*", ""]
            quotes = support.quotes if support is not None else []
            if quotes:
                lines += ["Supporting quotes:", ""]
                lines += [f"> {' '.join(q.text.split())}\n> — {_place(q)}\n" for q in quotes]
            if turn.answer is not None and turn.answer.sources:
                lines.append("Sources:")
                lines.append("")
                for i, h in enumerate(turn.answer.sources, 1):
                    mark = "cited" if i in turn.answer.cited else "not cited"
                    lines.append(f"- [{i}] {_place(h)} ({mark})")
                lines.append("")
        return "\n".join(lines).rstrip() + "\n"


def _place(h: Hit | Quote) -> str:
    place = Path(h.source).name
    if h.page is not None:
        place += f", page {h.page}"
    if h.heading:
        place += f" — {h.heading}"
    return place


def _drawn_from(gone: set[str], hits: list[dict[str, Any]], cited: list[int]) -> bool:
    """Whether a stored reply was drawn from a document in `gone`: it cites one of its passages, or it cites
    nothing and was given one."""
    used = [hits[i - 1] for i in cited if 0 < i <= len(hits)] if cited else hits
    return any(h.get("source") in gone for h in used)


def _redacted(gone: set[str], hits: list[dict[str, Any]], support_json: str | None, *, reply: bool = False
              ) -> tuple[list[dict[str, Any]] | None, Support | None]:
    """A turn's stored passages and support without the text of the documents in `gone` (None: unchanged);
    with `reply` (the reply was drawn from them), the reply's text in the support and its sentences go too."""
    changed_hits = False
    for h in hits:
        if h.get("source") in gone and (h.get("text") != REMOVED or h.get("heading") is not None):
            h["text"], h["heading"] = REMOVED, None
            changed_hits = True
    support = Support.from_json(json.loads(support_json)) if support_json else None
    whole = reply and support is not None and not support.fallback  # a fallback reply is its quotes: see below
    if whole:
        support = replace(support, text=REMOVED_REPLY, sentences=[replace(s, text=REMOVED) for s in support.sentences])
    if support is None or not any(q.source in gone and q.text != REMOVED for q in support.quotes):
        return (hits if changed_hits else None), support if whole else None
    removed = {i for i, q in enumerate(support.quotes) if q.source in gone}
    text = support.text
    sentences = list(support.sentences)
    for i in sorted(removed):
        quote = support.quotes[i]
        if support.fallback:  # the shown reply is these quotes themselves
            text = text.replace(quote.text, REMOVED)
            sentences = [replace(s, text=REMOVED) if s.support == i else s for s in sentences]
    quotes = [replace(q, text=REMOVED, heading=None) if i in removed else q for i, q in enumerate(support.quotes)]
    return (hits if changed_hits else None), replace(support, text=text, sentences=sentences, quotes=quotes)


def _turn(question: str, text: str, error: str | None, sources: str, cited: str, timings: str,
          created: float, support: str | None, searched_for: str | None, table_result: str | None = None, *,
          conv_id: int) -> Turn:
    hits = [Hit.from_json(s) for s in json.loads(sources)]
    answer = None
    if error is None:
        answer = Answer(text, hits, [int(n) for n in json.loads(cited)],
                        {k: float(v) for k, v in json.loads(timings).items()}, conversation_id=conv_id,
                        support=Support.from_json(json.loads(support)) if support else None,
                        searched_for=searched_for,
                        table=TableResult.from_json(json.loads(table_result)) if table_result else None)
    return Turn(question, answer, text, error, created, searched_for)

