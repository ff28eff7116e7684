"""The keyword index's ranking: the planned query must rank as the one exact FTS5 query it replaces."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

import pytest

from rag.lexical import LexicalIndex, LexicalRow, QueryPlan, plan_query, query_terms

# Words by how often they occur: in most passages, in many, in a few.
COMMON = ["file", "system", "package", "server", "user"]
MIDDLE = ["backup", "printer", "kernel", "network", "mail", "quota", "firewall", "proxy", "driver", "archive"]
RARE = ["zebra", "quokka", "narwhal", "axolotl", "pangolin", "okapi", "tapir", "dugong"]
FILLER = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda omicron sigma omega".split()


def passages(n: int, seed: int = 0) -> list[str]:
    """Distinct passages of 20-60 words: common words in most, middle ones in some, rare ones in a few."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        words = [rng.choice(FILLER) for _ in range(rng.randint(20, 60))]
        words += [w for w in COMMON if rng.random() < 0.7] * rng.randint(1, 3)
        words += [w for w in MIDDLE if rng.random() < 0.15] * rng.randint(1, 2)
        words += [w for w in RARE if rng.random() < 0.03]
        rng.shuffle(words)
        out.append(f"passage{i} " + " ".join(words))
    return out


def build(path: Path, texts: list[str], workspace: str = "ws") -> LexicalIndex:
    idx = LexicalIndex(path)
    rows = [LexicalRow(f"{workspace}-{i}", f"/doc{i // 5}", None, "Backup" if i % 7 == 0 else None, 0, len(t), t)
            for i, t in enumerate(texts)]
    idx.add_rows(workspace, [(r.source, r) for r in rows])
    return idx


def before(path: Path, workspace: str, text: str, k: int) -> list[tuple[str, float]]:
    """The keyword query as rag/lexical.py wrote it before it planned queries, on a connection of its own."""
    match = " OR ".join('"' + t.replace('"', '""') + '"' for t in query_terms(text))
    db = sqlite3.connect(path)
    try:
        rows = db.execute(
            "SELECT c.chunk_id, bm25(chunks_fts, 2.0, 1.0) AS rank"
            " FROM chunks_fts JOIN chunks c ON c.rowid = chunks_fts.rowid"
            " WHERE chunks_fts MATCH ? AND c.workspace = ? ORDER BY rank LIMIT ?",
            (match, workspace, k),
        ).fetchall()
    finally:
        db.close()
    return [(cid, -rank) for cid, rank in rows]


QUESTIONS = [
    "Where is the zebra backup of the file server?",
    "printer driver for the user system",
    "How do I restore an archive with quota limits?",
    "quokka narwhal",
    "kernel network firewall proxy package",
    "file system package server user",  # common words only
    "mail",
    "What does the okapi tapir dugong mail archive hold?",
]


def test_small_index_ranks_exactly_as_before(tmp_path):
    path = tmp_path / "lex.sqlite"
    idx = build(path, passages(300))
    for q in QUESTIONS:
        assert idx.plan(q).exact  # 300 passages: every question is cheap enough for the one exact query
        got = [(r.chunk_id, score) for r, score in idx.search("ws", q, k=10)]
        want = before(path, "ws", q, 10)
        assert [c for c, _ in got] == [c for c, _ in want], q
        assert [s for _, s in got] == pytest.approx([s for _, s in want]), q


def test_planned_query_ranks_its_candidates_exactly(tmp_path):
    """With the plan forced, the results are the exact ranking (every word, scores as before) of the passages
    holding one of the question's rare words."""
    path = tmp_path / "lex.sqlite"
    idx = build(path, passages(300))
    idx.budget = 30
    planned = 0
    for q in QUESTIONS:
        plan = idx.plan(q)
        everything = before(path, "ws", q, 10_000)
        db = sqlite3.connect(path)
        holding = {r[0] for r in db.execute(
            "SELECT c.chunk_id FROM chunks_fts JOIN chunks c ON c.rowid = chunks_fts.rowid WHERE chunks_fts MATCH ?",
            (" OR ".join(f'"{t}"' for t in plan.selective),))}  # fmt: skip
        db.close()
        want = [(c, s) for c, s in everything if c in holding][:10]
        got = [(r.chunk_id, score) for r, score in idx.search("ws", q, k=10)]
        assert [c for c, _ in got] == [c for c, _ in want], q
        # Words in more than half the passages weigh 1e-6 each in FTS5's bm25 and are left out.
        assert [s for _, s in got] == pytest.approx([s for _, s in want], abs=1e-4), q
        planned += not plan.exact and bool(plan.rest)
    assert planned >= 4  # the candidates-and-rest path really ran


def test_plan_takes_rare_words_as_candidates_and_drops_weightless_ones():
    counts = {"zebra": 3, "backup": 40, "printer": 45, "file": 700, "system": 300}
    terms = list(counts)
    assert plan_query(terms, counts, 1000, budget=2000).exact
    plan = plan_query(terms, counts, 1000, budget=100)
    assert not plan.exact
    assert plan.selective == ("zebra", "backup", "printer")  # rarest first, 88 passages within the budget
    assert plan.rest == ("system",)  # "file" is in 70 % of the passages: it would weigh nothing
    # No word rare enough: the rarest alone gives the candidates.
    assert plan_query(["file", "system"], counts, 1000, budget=100) == plan_query(["system", "file"], counts, 1000,
                                                                                   budget=100)
    assert plan_query(["file", "system"], counts, 1000, budget=100).selective == ("system",)
    # The other words count rarest first while their passages number at most rest_budget.
    many = {"zebra": 3, "backup": 40, "printer": 45, "proxy": 200, "kernel": 250, "system": 300}
    assert plan_query(list(many), many, 1000, budget=100, rest_budget=450).rest == ("proxy", "kernel")
    # Only weightless words: they all count, the rarest giving the candidates.
    assert plan_query(["file", "system"], counts, 500, budget=100) == QueryPlan(("system",), ("file",), False)


def test_other_workspaces_cannot_crowd_out_a_workspaces_passages(tmp_path):
    path = tmp_path / "lex.sqlite"
    idx = LexicalIndex(path)
    crowd = [LexicalRow(f"b{i}", f"/b{i}", None, None, 0, 1, "zebra zebra zebra stripes") for i in range(200)]
    idx.add_rows("b", [(r.source, r) for r in crowd])
    idx.replace_document("a", "/a", [LexicalRow("a1", "/a", None, None, 0, 1, "one zebra among many other words here")])
    for budget in (5_000, 1):
        idx.budget = budget
        assert [r.chunk_id for r, _ in idx.search("a", "zebra", k=3)] == ["a1"]


def test_word_counts_follow_writes_here_and_in_other_connections(tmp_path):
    path = tmp_path / "lex.sqlite"
    idx = build(path, passages(100))
    idx.budget = 20
    assert idx.plan("walrus printer").selective[0] == "walrus"  # in no passage yet
    idx.replace_document("ws", "/walrus", [LexicalRow(f"w{i}", "/walrus", None, None, 0, 1, f"walrus {i} walrus")
                                           for i in range(60)])
    assert "walrus" not in idx.plan("walrus printer").selective  # now in 60 passages: beyond the budget
    other = LexicalIndex(path)
    other.delete_document("ws", "/walrus")
    other.close()
    assert idx.plan("walrus printer").selective[0] == "walrus"  # another connection's delete is seen
    assert idx.search("ws", "walrus", k=3) == []


def test_words_are_counted_as_the_index_tokenizes_them(tmp_path):
    idx = LexicalIndex(tmp_path / "lex.sqlite")
    idx.replace_document("ws", "/a", [LexicalRow("a1", "/a", None, None, 0, 1, "Travelling naïve foo_bar")])
    idx.budget = 0  # always planned: the counts decide the candidates
    assert [r.chunk_id for r, _ in idx.search("ws", "travels naive", k=3)] == ["a1"]  # stemmed, accents folded
    assert [r.chunk_id for r, _ in idx.search("ws", "foo_bar", k=3)] == ["a1"]  # two tokens, one phrase
    assert idx.search("ws", 'quote" OR "x', k=5) == []  # query syntax cannot be injected
