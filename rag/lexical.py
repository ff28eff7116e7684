"""The lexical (BM25) index beside the vectors: SQLite FTS5, one row per chunk, kept in step with the store.

FTS5 scores every passage that holds any word of a question, so a question with a common word ("file",
"install") costs a score per passage of most of the index: 0.13 s (p50) to 0.26 s (p95) at 100,000
passages on 2 cores (bench/scale.py). A question whose words are rare enough is still ranked by that one
exact query; otherwise (see `plan_query`) only the passages holding its rarest words are candidates, and
a second query gives the candidates that also hold its other words their full score, the one the single
query gives them: 15 ms (p50) to 29 ms (p95) there, with the same top 5 for 145 of 150 questions.

Porter stems English only. Each passage's language is detected when it is written (rag/language.py) and
kept in `chunk_language`; a passage in another language is also written to `chunks_stems`, its words
already stemmed by that language's Snowball stemmer, so "командировках" finds "командировка". A question
is ranked in the table of its own language: English by `chunks_fts` exactly as before, any other by
`chunks_stems`, where each of its stems matches the words that begin with its first six letters and a
passage's score is scaled by the share of the question's stems it holds. An index from before has no languages: they are filled in when it is opened, from the
passages' stored text (nothing is embedded again).
"""

from __future__ import annotations

import re
import sqlite3
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from rag.errors import StoreError
from rag.language import DEFAULT as DEFAULT_LANGUAGE
from rag.language import detect, question_stems, stemmed_text

_TOKENIZE = "porter unicode61 remove_diacritics 2"
_STEMS_TOKENIZE = "unicode61 remove_diacritics 2"  # the words come stemmed already
_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS chunks (
    rowid INTEGER PRIMARY KEY,
    chunk_id TEXT NOT NULL UNIQUE,
    workspace TEXT NOT NULL,
    source TEXT NOT NULL,
    page INTEGER,
    heading TEXT,
    start INTEGER NOT NULL,
    "end" INTEGER NOT NULL,
    text TEXT NOT NULL,
    ocr_confidence REAL
);
CREATE INDEX IF NOT EXISTS chunks_by_source ON chunks (workspace, source);
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(
    heading, text, content='chunks', content_rowid='rowid', tokenize='{_TOKENIZE}'
);
CREATE TRIGGER IF NOT EXISTS chunks_ai AFTER INSERT ON chunks BEGIN
    INSERT INTO chunks_fts(rowid, heading, text) VALUES (new.rowid, coalesce(new.heading, ''), new.text);
END;
CREATE TRIGGER IF NOT EXISTS chunks_ad AFTER DELETE ON chunks BEGIN
    INSERT INTO chunks_fts(chunks_fts, rowid, heading, text)
    VALUES ('delete', old.rowid, coalesce(old.heading, ''), old.text);
END;
-- Each passage's language; a passage in any language but English also stemmed for it (see above).
CREATE TABLE IF NOT EXISTS chunk_language (rowid INTEGER PRIMARY KEY, language TEXT NOT NULL);
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_stems USING fts5(heading, text, tokenize='{_STEMS_TOKENIZE}');
CREATE TRIGGER IF NOT EXISTS chunks_ad_language AFTER DELETE ON chunks BEGIN
    DELETE FROM chunk_language WHERE rowid = old.rowid;
    DELETE FROM chunks_stems WHERE rowid = old.rowid;
END;
"""

# Words that carry no meaning for ranking; FTS5 has no stop-word list of its own.
_STOP = frozenset(
    "a an and are as at be by can do does for from how i if in is it of on or should the there this to "
    "what when where which who why will with you your my me we our they their was were has have had "
    "not no any all about into than then so also may must".split()
)
_TERM = re.compile(r"\w+", re.UNICODE)
# Per connection: the index's own words with their document counts, and a scratch table that turns a
# question's words into the index's tokens (the same tokenizer: stemmed, case- and accent-folded).
_TEMP = f"""
CREATE VIRTUAL TABLE IF NOT EXISTS temp.hearth_vocab USING fts5vocab(main, chunks_fts, row);
CREATE VIRTUAL TABLE IF NOT EXISTS temp.hearth_words USING fts5(word, tokenize='{_TOKENIZE}');
CREATE VIRTUAL TABLE IF NOT EXISTS temp.hearth_word_tokens USING fts5vocab(temp, hearth_words, instance);
CREATE VIRTUAL TABLE IF NOT EXISTS temp.hearth_stems_vocab USING fts5vocab(main, chunks_stems, row);
CREATE VIRTUAL TABLE IF NOT EXISTS temp.hearth_stem_words USING fts5(word, tokenize='{_STEMS_TOKENIZE}');
CREATE VIRTUAL TABLE IF NOT EXISTS temp.hearth_stem_tokens USING fts5vocab(temp, hearth_stem_words, instance);
"""
# A question whose words occur in at most this many passages in all is ranked by one exact query; the
# candidates of a larger one are the passages of its rarest words, up to this many (about 10 ms).
EXACT_ROWS = 5_000
# Its other words add to the candidates' scores, rarest first, while they occur in at most this many
# passages in all: FTS5 reads each of their passage lists in full for bm25's idf (~10 ms per 100,000).
REST_ROWS = 100_000
# A stemmed (non-English) question's BM25 score is multiplied by (share of its stems a passage holds) ** this.
COORDINATION = 1.0
# A stemmed question's words match any word beginning with their first ROOT_CHARS letters (stems of at least
# ROOT_MIN letters; shorter ones match whole).
ROOT_CHARS = 6
ROOT_MIN = 4
_WEIGHTS = "2.0, 1.0"  # bm25() column weights: headings weigh twice the body text


@dataclass(frozen=True)
class _Table:
    """One FTS5 ranking table with the scratch tables that count and tokenize words as it does."""

    fts: str
    rows: str  # the table whose rows count as the passages it ranks
    vocab: str  # fts5vocab "row" table over it: in how many passages each token occurs
    words: str  # scratch FTS5 table with its tokenizer
    word_tokens: str  # fts5vocab "instance" table over the scratch table


_PORTER = _Table("chunks_fts", "chunks", "temp.hearth_vocab", "temp.hearth_words", "temp.hearth_word_tokens")
_STEMS = _Table("chunks_stems", "chunks_stems", "temp.hearth_stems_vocab", "temp.hearth_stem_words",
                "temp.hearth_stem_tokens")
_BACKFILL_BATCH = 2_000  # passages given a language per transaction when an older index is upgraded


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
    ocr_confidence: float | None = None  # of the page, when OCR read it; None for text read as text


def query_terms(text: str) -> list[str]:
    """The words of a question that matter for lexical ranking, lower-cased, stop words removed."""
    terms = [t.lower() for t in _TERM.findall(text)]
    kept = [t for t in terms if t not in _STOP and (len(t) > 1 or t.isdigit())]
    return list(dict.fromkeys(kept or terms))


@dataclass(frozen=True)
class QueryPlan:
    """How a question's words are ranked: one exact query, or candidates from its rarest words rescored."""

    selective: tuple[str, ...]  # words whose passages are the candidates (all of them when `exact`)
    rest: tuple[str, ...]  # other words that add to a candidate's score when it holds them
    exact: bool  # the ranking of one query over every word, as if no plan were made


def plan_query(terms: Sequence[str], passages: Mapping[str, int], total: int, *, budget: int = EXACT_ROWS,
               rest_budget: int = REST_ROWS) -> QueryPlan:
    """Plan the ranking of `terms`, given in how many of the index's `total` passages each occurs.

    When all together occur in at most `budget` passages, one exact query ranks them. Otherwise the
    candidates are the passages of the rarest words, taken while their passages number at most `budget`
    (the rarest one at least); the other words then only add to the score of candidates that hold them.
    A passage that holds none of the rare words is left out: BM25 gives common words little weight, so
    such a passage ranks low anyway. Words in more than half of the passages are dropped there, as they
    weigh nothing (FTS5 floors a negative idf at 1e-6) and their passage lists are the longest to read;
    unless all words are such, when all count. The other words count rarest first while their passages
    number at most `rest_budget` (the commonest, weighing least, go first when a question has many).
    """
    if sum(passages.get(t, 0) for t in terms) <= budget:
        return QueryPlan(tuple(terms), (), True)
    weighing = [t for t in terms if 2 * passages.get(t, 0) <= total] or list(terms)
    chosen: list[str] = []
    held = 0
    for term in sorted(weighing, key=lambda t: passages.get(t, 0)):
        if chosen and held + passages.get(term, 0) > budget:
            break
        chosen.append(term)
        held += passages.get(term, 0)
    rest: list[str] = []
    held = 0
    for term in sorted((t for t in weighing if t not in chosen), key=lambda t: passages.get(t, 0)):
        held += passages.get(term, 0)
        if held > rest_budget:
            break
        rest.append(term)
    return QueryPlan(tuple(chosen), tuple(t for t in weighing if t in rest), False)


def _any_of(terms: Iterable[str], *, roots: bool = False) -> str:
    """An FTS5 query matching any of the words, each quoted so that no query syntax can be injected; with
    `roots`, any word beginning with a word's root (see `root`)."""
    if not roots:
        return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)
    return " OR ".join('"' + root(t).replace('"', '""') + '"' + ("*" if len(t) >= ROOT_MIN else "") for t in terms)


# Snowball leaves a verb's forms and a word's derivations apart ("передава" from передавать, "переда" from
# передаётся; "паркова", "парковк"): their first letters join them. On bench/russian.py: keyword hit@1 0.90 -> 0.95.
def root(stem: str) -> str:
    """The first ROOT_CHARS letters of a stem, or all of a short one."""
    return stem[:ROOT_CHARS] if len(stem) >= ROOT_MIN else stem


class LexicalIndex:
    """BM25 ranking over chunk text and headings, with SQLite FTS5 (porter stemming, Unicode folding)."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._db = sqlite3.connect(str(path), timeout=30, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            # A chunk replaced by INSERT OR REPLACE fires the delete triggers too, so no stale words remain.
            self._db.execute("PRAGMA recursive_triggers=ON")
            self._db.executescript(_SCHEMA)
            if "ocr_confidence" not in {row[1] for row in self._db.execute("PRAGMA table_info(chunks)")}:
                self._db.execute("ALTER TABLE chunks ADD COLUMN ocr_confidence REAL")  # an index from before OCR
            self._db.executescript(_TEMP)
        except sqlite3.Error as exc:
            raise StoreError(f"Cannot open the keyword index {path}: {exc}") from exc
        self._lock = threading.Lock()
        self.budget = EXACT_ROWS
        self.rest_budget = REST_ROWS
        # Passage counts of index tokens, read from the index once per state of it: `_writes` counts this
        # object's writes, SQLite's data_version other connections'.
        self._writes = 0
        self._counted_at: tuple[int, int] | None = None
        self._passages: dict[tuple[str, str], int] = {}  # (table, token) -> passages holding it
        self._totals: dict[str, int] = {}  # table -> its passages
        self._tokens: dict[tuple[str, str], tuple[str, ...]] = {}  # (table, question word) -> its index tokens
        self._languages: dict[str, tuple[tuple[int, int], dict[str, int]]] = {}  # workspace -> (state, counts)
        try:
            self.upgraded = self._fill_languages()
        except sqlite3.Error as exc:
            raise StoreError(f"Cannot upgrade the keyword index {path}: {exc}") from exc

    def _fill_languages(self) -> int:
        """Give every passage without one its language (and stems): an index written before languages were
        kept, or rows an older Hearth wrote into this one. Returns how many passages were upgraded."""
        done = 0
        while True:
            with self._db:
                rows = self._db.execute(
                    "SELECT c.rowid, c.heading, c.text FROM chunks c LEFT JOIN chunk_language l ON l.rowid = c.rowid"
                    " WHERE l.rowid IS NULL LIMIT ?", (_BACKFILL_BATCH,)).fetchall()
                if not rows:
                    return done
                self._write_languages(rows)
                done += len(rows)

    def _write_languages(self, rows: Sequence[tuple[int, str | None, str]]) -> None:
        """Detect and store (rowid, heading, text) passages' languages, stemming those not in English."""
        languages = [(rowid, detect(text)) for rowid, _, text in rows]
        self._db.executemany("INSERT OR REPLACE INTO chunk_language (rowid, language) VALUES (?, ?)", languages)
        stemmed = [(rowid, stemmed_text(heading or "", lang), stemmed_text(text, lang))
                   for (rowid, heading, text), (_, lang) in zip(rows, languages, strict=True)
                   if lang != DEFAULT_LANGUAGE]
        if stemmed:
            self._db.executemany("DELETE FROM chunks_stems WHERE rowid = ?", [(r[0],) for r in stemmed])
            self._db.executemany("INSERT INTO chunks_stems (rowid, heading, text) VALUES (?, ?, ?)", stemmed)

    def _write_languages_of(self, chunk_ids: Sequence[str]) -> None:
        """`_write_languages` for chunks just inserted, found by id."""
        for i in range(0, len(chunk_ids), 500):
            part = list(chunk_ids[i : i + 500])
            rows = self._db.execute(
                f"SELECT rowid, heading, text FROM chunks WHERE chunk_id IN ({','.join('?' * len(part))})", part
            ).fetchall()
            self._write_languages(rows)

    def languages(self, workspace: str) -> dict[str, int]:
        """How many of a workspace's passages are written in each language (ISO 639-1 codes)."""
        try:
            with self._lock:
                # Every `ask` reads this; counting is a scan of the workspace, so it is done once per state.
                state = (self._writes, int(self._db.execute("PRAGMA data_version").fetchone()[0]))
                held = self._languages.get(workspace)
                if held is not None and held[0] == state:
                    return dict(held[1])
                rows = self._db.execute(
                    "SELECT l.language, count(*) FROM chunks c JOIN chunk_language l ON l.rowid = c.rowid"
                    " WHERE c.workspace = ? GROUP BY l.language", (workspace,))
                counts = {lang: int(n) for lang, n in rows}
                self._languages[workspace] = (state, counts)
                return dict(counts)
        except sqlite3.Error as exc:
            raise StoreError(f"Cannot read the keyword index: {exc}") from exc

    def close(self) -> None:
        """Close the database."""
        self._db.close()

    def replace_document(self, workspace: str, source: str, rows: Sequence[LexicalRow]) -> None:
        """Swap a document's rows for new ones in one transaction."""
        try:
            with self._lock, self._db:
                self._writes += 1
                self._db.execute("DELETE FROM chunks WHERE workspace=? AND source=?", (workspace, source))
                self._db.executemany(
                    'INSERT OR REPLACE INTO chunks (chunk_id, workspace, source, page, heading, start, "end", text,'
                    " ocr_confidence) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    [(r.chunk_id, workspace, source, r.page, r.heading, r.start, r.end, r.text, r.ocr_confidence)
                     for r in rows],
                )
                self._write_languages_of([r.chunk_id for r in rows])
        except sqlite3.Error as exc:
            raise StoreError(f"Cannot write {source} to the keyword index: {exc}") from exc

    def delete_document(self, workspace: str, source: str) -> None:
        """Remove a document's rows."""
        try:
            with self._lock, self._db:
                self._writes += 1
                self._db.execute("DELETE FROM chunks WHERE workspace=? AND source=?", (workspace, source))
        except sqlite3.Error as exc:
            raise StoreError(f"Cannot remove {source} from the keyword index: {exc}") from exc

    def drop_workspace(self, workspace: str) -> None:
        """Remove every row of a workspace."""
        with self._lock, self._db:
            self._writes += 1
            self._db.execute("DELETE FROM chunks WHERE workspace=?", (workspace,))

    def count(self, workspace: str) -> int:
        """Rows held for a workspace."""
        return int(self._db.execute("SELECT count(*) FROM chunks WHERE workspace=?", (workspace,)).fetchone()[0])

    def sources(self, workspace: str) -> set[str]:
        """Documents that have rows."""
        return {r[0] for r in self._db.execute("SELECT DISTINCT source FROM chunks WHERE workspace=?", (workspace,))}

    def search(self, workspace: str, text: str, *, k: int,
               language: str | None = None) -> list[tuple[LexicalRow, float]]:
        """The k best chunks by BM25 for a free-text query (any term may match), best first.

        The query is ranked in its language (detected unless `language` names it): English with Porter
        over every passage, any other language with its Snowball stems over the passages not in English.
        """
        table, terms = self._table_and_terms(text, language)
        if not terms or k < 1:
            return []
        try:
            with self._lock:
                plan = self._plan(terms, table)
                limit = k
                while True:
                    ranked = self._ranked(plan, limit, table)
                    if table is _STEMS:
                        ranked = self._coordinated(ranked, terms)
                    rows = self._rows(workspace, [rowid for rowid, _ in ranked])
                    found = [(rows[rowid], score) for rowid, score in ranked if rowid in rows]
                    # Other workspaces' passages share the index: look further while they crowd these out.
                    if len(found) >= k or len(ranked) < limit:
                        return found[:k]
                    limit *= 4
        except sqlite3.Error as exc:
            raise StoreError(f"Cannot search the keyword index: {exc}") from exc

    def plan(self, text: str, *, language: str | None = None) -> QueryPlan:
        """How `search` ranks a free-text query (for tests and benchmarks)."""
        table, terms = self._table_and_terms(text, language)
        try:
            with self._lock:
                return self._plan(terms, table)
        except sqlite3.Error as exc:
            raise StoreError(f"Cannot search the keyword index: {exc}") from exc

    def rarity(self, text: str) -> dict[str, float]:
        """The words of a question that matter, each weighted by how rare it is among the index's passages
        (rag.abstain.rarity; a word no passage holds weighs most)."""
        from rag.abstain import rarity

        terms = query_terms(text)
        try:
            with self._lock:
                passages, total = self._term_passages(terms)
        except sqlite3.Error as exc:
            raise StoreError(f"Cannot read the keyword index: {exc}") from exc
        return rarity(terms, passages, total)

    @staticmethod
    def _table_and_terms(text: str, language: str | None) -> tuple[_Table, list[str]]:
        language = language or detect(text)
        if language == DEFAULT_LANGUAGE:
            return _PORTER, query_terms(text)
        return _STEMS, question_stems(text, language)

    def _plan(self, terms: Sequence[str], table: _Table = _PORTER) -> QueryPlan:
        passages, total = self._term_passages(terms, table)
        return plan_query(terms, passages, total, budget=self.budget, rest_budget=self.rest_budget)

    def _ranked(self, plan: QueryPlan, limit: int, table: _Table) -> list[tuple[int, float]]:
        """(rowid, BM25 score) of the `limit` best passages under a plan, best first."""
        roots = table is _STEMS
        scores = dict(self._bm25(_any_of(plan.selective, roots=roots), limit, table))
        if plan.rest:
            # Each word once in the query, so a candidate holding others too gets exactly its full score.
            both = f"({_any_of(plan.selective, roots=roots)}) AND ({_any_of(plan.rest, roots=roots)})"
            for rowid, score in self._bm25(both, limit, table):
                scores[rowid] = max(score, scores.get(rowid, score))
        return sorted(scores.items(), key=lambda item: (-item[1], item[0]))[:limit]

    def _coordinated(self, ranked: Sequence[tuple[int, float]], terms: Sequence[str]) -> list[tuple[int, float]]:
        """Scores scaled by the share of the question's stems each passage holds, best first.

        An inflected language's question shares only its stems with the passage that answers it, while
        another passage may repeat some of its words many times; BM25 alone lets the repeats win.
        """
        if len(terms) < 2 or not ranked:
            return list(ranked)
        wanted = set(terms)
        held: dict[int, int] = {}
        ids = [rowid for rowid, _ in ranked]
        for i in range(0, len(ids), 500):
            part = ids[i : i + 500]
            for rowid, heading, text in self._db.execute(
                f"SELECT rowid, heading, text FROM chunks_stems WHERE rowid IN ({','.join('?' * len(part))})", part
            ):
                words = set(f"{heading} {text}".split())
                held[rowid] = sum(1 for t in wanted if t in words or any(w.startswith(root(t)) for w in words))
        scaled = [(rowid, score * (held.get(rowid, 0) / len(wanted)) ** COORDINATION) for rowid, score in ranked]
        return sorted(scaled, key=lambda item: (-item[1], item[0]))

    def _bm25(self, match: str, limit: int, table: _Table) -> list[tuple[int, float]]:
        rows = self._db.execute(
            # bm25() is lower-is-better; rowid orders equal scores the same way every time.
            f"SELECT rowid, bm25({table.fts}, {_WEIGHTS}) AS rank FROM {table.fts} WHERE {table.fts} MATCH ?"
            " ORDER BY rank, rowid LIMIT ?",
            (match, limit),
        )
        return [(rowid, -float(rank)) for rowid, rank in rows]

    def _rows(self, workspace: str, rowids: Sequence[int]) -> dict[int, LexicalRow]:
        """The workspace's passages among some rowids."""
        found: dict[int, LexicalRow] = {}
        for i in range(0, len(rowids), 500):
            part = rowids[i : i + 500]
            rows = self._db.execute(
                # `+workspace`: look the rows up by rowid, never by scanning the workspace's index entries.
                'SELECT rowid, chunk_id, source, page, heading, start, "end", text, ocr_confidence FROM chunks'
                f" WHERE rowid IN ({','.join('?' * len(part))}) AND +workspace = ?",
                (*part, workspace),
            )
            found.update((r[0], LexicalRow(*r[1:])) for r in rows)
        return found

    def _term_passages(self, terms: Sequence[str], table: _Table = _PORTER) -> tuple[dict[str, int], int]:
        """In how many passages each word occurs (a word of several tokens: its rarest), and the passages in all."""
        state = (self._writes, int(self._db.execute("PRAGMA data_version").fetchone()[0]))
        if state != self._counted_at:
            self._passages.clear()
            self._totals.clear()
            self._counted_at = state
        if table.fts not in self._totals:
            self._totals[table.fts] = int(self._db.execute(f"SELECT count(*) FROM {table.rows}").fetchone()[0])
        new = [t for t in terms if (table.fts, t) not in self._tokens]
        if new:
            if len(self._tokens) > 100_000:
                self._tokens.clear()
            self._tokens.update(((table.fts, t), v) for t, v in self._tokenize(new, table).items())
        counts = {}
        for term in terms:
            tokens = self._tokens.get((table.fts, term), ())
            counts[term] = min((self._token_passages(t, table) for t in tokens), default=0)
        return counts, self._totals[table.fts]

    def _tokenize(self, terms: Sequence[str], table: _Table) -> dict[str, tuple[str, ...]]:
        """Each word's tokens as the index holds them, from the index's own tokenizer (a scratch FTS5 table)."""
        with self._db:
            self._db.executemany(f"INSERT INTO {table.words} (rowid, word) VALUES (?, ?)", enumerate(terms))
            rows = self._db.execute(f"SELECT doc, term FROM {table.word_tokens} ORDER BY doc, offset").fetchall()
            self._db.execute(f"DELETE FROM {table.words}")
        tokens: dict[str, list[str]] = {t: [] for t in terms}
        for doc, token in rows:
            tokens[terms[doc]].append(token)
        return {t: tuple(v) for t, v in tokens.items()}

    def _token_passages(self, token: str, table: _Table) -> int:
        n = self._passages.get((table.fts, token))
        if n is None:
            row = self._db.execute(f"SELECT doc FROM {table.vocab} WHERE term = ?", (token,)).fetchone()
            n = self._passages[(table.fts, token)] = int(row[0]) if row else 0
        return n

    def rows_by_id(self, workspace: str, chunk_ids: Sequence[str]) -> dict[str, LexicalRow]:
        """The workspace's passages among some chunk ids."""
        found: dict[str, LexicalRow] = {}
        try:
            with self._lock:
                for i in range(0, len(chunk_ids), 500):
                    part = list(chunk_ids[i : i + 500])
                    rows = self._db.execute(
                        'SELECT chunk_id, source, page, heading, start, "end", text, ocr_confidence FROM chunks'
                        f" WHERE chunk_id IN ({','.join('?' * len(part))}) AND +workspace = ?",
                        (*part, workspace),
                    )
                    found.update((r[0], LexicalRow(*r)) for r in rows)
        except sqlite3.Error as exc:
            raise StoreError(f"Cannot read the keyword index: {exc}") from exc
        return found

    def all_rows(self, workspace: str) -> list[LexicalRow]:
        """Every chunk of a workspace, in insertion order."""
        rows = self._db.execute(
            'SELECT chunk_id, source, page, heading, start, "end", text, ocr_confidence FROM chunks'
            " WHERE workspace=? ORDER BY rowid",
            (workspace,),
        )
        return [LexicalRow(*r) for r in rows]

    def add_rows(self, workspace: str, rows: Iterable[tuple[str, LexicalRow]]) -> None:
        """Bulk insert (source, row) pairs, used to rebuild the index from the vector store."""
        values = [(r.chunk_id, workspace, s, r.page, r.heading, r.start, r.end, r.text, r.ocr_confidence)
                  for s, r in rows]
        with self._lock, self._db:
            self._writes += 1
            self._db.executemany(
                'INSERT OR REPLACE INTO chunks (chunk_id, workspace, source, page, heading, start, "end", text,'
                " ocr_confidence) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                values,
            )
            self._write_languages_of([v[0] for v in values])
