from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from inference.errors import UsageError
from rag.lexical import LexicalIndex, LexicalRow, query_terms
from rag.retrieval import RetrievalOptions, _diversify, best_lines, contextualize, fuse, retrieve
from rag.service import Hearth, HearthConfig
from rag.store import Hit
from tests.fakes import HashEmbedder, ScriptedModel
from tests.notes import write_notes


def hit(cid: str, source: str = "/a", page: int | None = None, score: float = 0.5) -> Hit:
    return Hit(source, page, None, score, f"text {cid}", 0, 1, cid)


def test_query_terms_drop_stop_words_but_keep_numbers():
    assert query_terms("What is the allowance for 2 days?") == ["allowance", "2", "days"]
    assert query_terms("the of") == ["the", "of"]  # all stop words: keep them rather than nothing


def test_lexical_index_ranks_stems_and_replaces(tmp_path):
    idx = LexicalIndex(tmp_path / "lex.sqlite")
    idx.replace_document("ws", "/a", [LexicalRow("a1", "/a", 1, "Travel", 0, 10, "Employees travelling abroad get meals paid.")])
    idx.replace_document("ws", "/b", [LexicalRow("b1", "/b", None, None, 0, 10, "Printers need a badge.")])
    found = idx.search("ws", "travel meal", k=5)
    assert [r.chunk_id for r, _ in found] == ["a1"]  # porter stemming: travel ~ travelling, meal ~ meals
    assert idx.search("other", "travel", k=5) == []
    idx.replace_document("ws", "/a", [LexicalRow("a2", "/a", 1, None, 0, 10, "Nothing about that now.")])
    assert idx.search("ws", "travel", k=5) == []
    assert idx.count("ws") == 2
    idx.delete_document("ws", "/b")
    assert idx.sources("ws") == {"/a"}
    assert idx.search("ws", 'quote" OR "x', k=5) == []  # query syntax cannot be injected


def test_rrf_fusion_rewards_agreement():
    dense = [hit("x"), hit("y"), hit("z")]
    lexical = [hit("z"), hit("y"), hit("w")]
    fused = fuse(dense, lexical, RetrievalOptions(lexical_weight=1.0, rrf_k=60))
    assert set(fused[:2]) == {"y", "z"} and fused[2:] == ["x", "w"]
    only_dense = fuse(dense, lexical, RetrievalOptions(lexical_weight=0.0))
    assert only_dense[:3] == ["x", "y", "z"]


def test_diversify_caps_one_source_while_others_match():
    hits = [hit(f"a{i}", "/a", page=1) for i in range(5)] + [hit("b0", "/b"), hit("c0", "/c")]
    got = _diversify(hits, 4, RetrievalOptions(max_per_source=3, max_per_section=2))
    assert [h.chunk_id for h in got] == ["a0", "a1", "b0", "c0"]
    # When nothing else matches, the held-back hits fill the list in rank order.
    got = _diversify(hits[:5], 4, RetrievalOptions(max_per_source=3, max_per_section=2))
    assert [h.chunk_id for h in got] == ["a0", "a1", "a2", "a3"]


def test_follow_up_questions_are_searched_with_the_previous_one():
    history = ["How much is the hotel allowance for employees?"]
    assert contextualize("And for contractors?", history) == "How much is the hotel allowance for employees? And for contractors?"
    assert contextualize("а для подрядчиков?", history).startswith("How much")
    assert contextualize("What is the VPN address of the Hamburg office?", history).startswith("What is the VPN")
    assert contextualize("And for contractors?", []) == "And for contractors?"


@pytest.fixture
def hearth(tmp_path) -> Hearth:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "codes.md").write_text("# Codes\n\nThe door code for the server room is ZX-4481.\n")
    (docs / "garden.md").write_text("# Garden\n\nThe garden is watered every Tuesday by the facilities team.\n")
    (docs / "canteen.md").write_text("# Canteen\n\nLunch is served between noon and two in the canteen.\n")
    h = Hearth(HearthConfig(data_dir=tmp_path / "data"), embedder=HashEmbedder())
    assert h.ingest([docs]).added == 3
    return h


def test_modes_through_the_service(hearth):
    for mode in ("hybrid", "dense", "lexical"):
        hits = hearth.search("server room door code", k=2, mode=mode)
        assert Path(hits[0].source).name == "codes.md", mode
    assert hearth.search("ZX-4481", k=1, mode="lexical")[0].text.endswith("ZX-4481.")
    with pytest.raises(UsageError):
        hearth.search("x", mode="psychic")


def test_keyword_index_is_rebuilt_for_an_index_made_before_it(hearth):
    hearth.store.lexical.drop_workspace("default")
    hearth.store._synced.clear()
    assert Path(hearth.search("ZX-4481", k=1, mode="lexical")[0].source).name == "codes.md"
    assert hearth.store.lexical.count("default") == hearth.store.count("default")


def test_forget_removes_from_both_indexes(hearth, tmp_path):
    hearth.forget([tmp_path / "docs" / "codes.md"])
    assert hearth.search("ZX-4481", k=3, mode="lexical") == []
    assert hearth.store.lexical.count("default") == hearth.store.count("default") == 2


def test_configured_reranker_reorders_hybrid_results(tmp_path):
    from tests.inference.test_reranker import write_cross_encoder

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text("garden garden garden when when")
    (docs / "b.txt").write_text("fire alarm tested monday")
    cfg = HearthConfig(data_dir=tmp_path / "data", reranker_dir=write_cross_encoder(tmp_path / "ce"))
    h = Hearth(cfg, embedder=HashEmbedder())
    h.ingest([docs])
    assert Path(h.search("garden when fire", k=2, mode="dense")[0].source).name == "a.txt"
    assert Path(h.search("garden when fire", k=2)[0].source).name == "b.txt"  # the cross-encoder prefers b


def test_default_weights_favour_keywords_at_equal_rank():
    # Chosen on bench/retrieval.py: keywords weigh double, a small rank constant.
    fused = fuse([hit("x"), hit("y")], [hit("y"), hit("w")], RetrievalOptions())
    assert fused == ["y", "w", "x"]


class _Rankings:
    """A document index whose two rankings are given: the dense one with similarities, the keyword one."""

    def __init__(self, dense: list[Hit], lexical: list[Hit], similarity: dict[str, float]) -> None:
        self.dense, self.lexical, self.similarity = dense, lexical, similarity

    def query(self, workspace, vector, *, k):
        return self.dense[:k]

    def lexical_query(self, workspace, text, *, k):
        return self.lexical[:k]

    def hits_by_id(self, workspace, ids, vector):
        return {cid: hit(cid, f"/{cid}", score=self.similarity[cid]) for cid in ids}


def test_a_passage_both_rankings_place_high_beats_one_only_the_keywords_found():
    # The keyword ranking's first passage shares the question's words but little of its meaning (similarity
    # 0.2, not among the dense ranking's candidates); the dense ranking's first is the keyword ranking's eighth.
    answer = hit("answer", "/answer", score=0.47)
    others = [hit(f"d{i}", f"/d{i}", score=0.3) for i in range(4)]
    lexical = [hit("keywords", "/keywords", score=0.0), *(hit(f"l{i}", f"/l{i}", score=0.0) for i in range(6)), answer]
    index = _Rankings([answer, *others], lexical, {"keywords": 0.2} | {f"l{i}": 0.1 for i in range(6)})

    def first(options: RetrievalOptions) -> str:
        return retrieve("which passage", workspace="ws", embedder=HashEmbedder(), store=index, done=set(
            f"/{h.chunk_id}" for h in [*lexical, *others]), k=3,
            options=options)[0].chunk_id

    assert first(RetrievalOptions(similarity_weight=0.0)) == "keywords"  # ranks alone
    assert first(RetrievalOptions()) == "answer"  # the default adds each passage's similarity
    # A question the embedder cannot read: its similarities say nothing, so ranks alone decide again.
    assert first(RetrievalOptions(dense_weight=0.0)) == "keywords"


def test_the_similarity_does_not_crowd_a_section_out_with_its_documents_title(tmp_path):
    # Five alike project sheets (bench/data/followups/docs): a section's text never names its project, the
    # sheet's title passage does. Weighed too much (0.7), the similarity filled the sheet's three places
    # with its title, ownership and summary, and the supplier section fell out of the first five.
    docs = Path(__file__).resolve().parents[2] / "bench" / "data" / "followups" / "docs"
    h = Hearth(HearthConfig(data_dir=tmp_path / "data", embed_threads=2))
    h.ingest([docs])
    hits = h.search("Who is the supplier for Project Kestrel?", k=5)
    assert Path(hits[0].source).name == "project-kestrel.md"
    assert any(Path(x.source).name == "project-kestrel.md" and "Supplier" in (x.heading or "") for x in hits), \
        [(Path(x.source).name, x.heading) for x in hits]


HOLIDAY_NOTES = {
    # The handbook's one line on carrying holiday over sits among lines on other things; the calendar is all
    # about holidays and next year, and answers nothing about carrying days over.
    "handbook.md": "# Staff handbook\n\n## Working here\n\nOur office opens at 8:00 and closes at 18:00 on weekdays. "
                   "Staff badges are issued by reception on the first day. The kitchen is cleaned every evening; "
                   "please leave it tidy. Bicycles go in the yard behind the building, never in the corridors. "
                   "Unused holiday days may be carried over until the end of March of the following year. Parking "
                   "spaces are shared and cannot be reserved. The printer on the second floor prints in colour.\n",
    "calendar.md": "# Holiday calendar\n\n## Next year\n\nThe holiday calendar for next year is published every "
                   "December. The office is closed on public holidays and between Christmas and New Year. Holidays "
                   "are planned with your team so that someone is always in. Holiday requests for the summer are "
                   "collected in April.\n",
    "leave.md": "# Leave\n\n## Annual leave\n\nEvery employee gets 28 days of paid annual leave a year. Requests go "
                "to the line manager two weeks ahead.\n",
}


@pytest.fixture(scope="module")
def holiday_hearth(tmp_path_factory) -> Hearth:
    root = tmp_path_factory.mktemp("lines")
    h = Hearth(HearthConfig(data_dir=root / "data", embed_threads=2))
    assert h.ingest([write_notes(root / "notes", HOLIDAY_NOTES)]).added == 3
    return h


def test_the_passage_whose_one_line_answers_comes_first_when_lines_weigh(holiday_hearth):
    q = "Can unused holiday be carried over into next year?"
    plain = holiday_hearth.search(q, k=2, lines=False)
    assert [Path(h.source).name for h in plain] == ["calendar.md", "handbook.md"]  # the whole passage's vector
    assert plain[0].score > plain[1].score + 0.1
    # Its best line ("Unused holiday days may be carried over …") lifts the handbook; scores stay similarities.
    lined = holiday_hearth.search(q, k=2, lines=True)
    assert [Path(h.source).name for h in lined] == ["handbook.md", "calendar.md"]
    assert {h.chunk_id: h.score for h in lined} == {h.chunk_id: h.score for h in plain}
    # A search that does not say weighs them (the command line's and MCP's), unless the configuration says not.
    assert [h.chunk_id for h in holiday_hearth.search(q, k=2)] == [h.chunk_id for h in lined]
    unsaid = replace(holiday_hearth.config, retrieval=RetrievalOptions(search_lines=False))
    holiday_hearth.config, saved = unsaid, holiday_hearth.config
    try:
        assert [h.chunk_id for h in holiday_hearth.search(q, k=2)] == [h.chunk_id for h in plain]
        assert [h.chunk_id for h in holiday_hearth.search(q, k=2, lines=True)] == [h.chunk_id for h in lined]
    finally:
        holiday_hearth.config = saved
    # Off, the option changes nothing.
    off = replace(holiday_hearth.config, retrieval=RetrievalOptions(line_weight=0.0))
    holiday_hearth.config, saved = off, holiday_hearth.config
    try:
        assert [h.chunk_id for h in holiday_hearth.search(q, k=2, lines=True)] == [h.chunk_id for h in plain]
    finally:
        holiday_hearth.config = saved


def test_the_command_lines_search_weighs_lines_and_plain_does_not(holiday_hearth, capsys):
    from app.cli import main

    def first(*extra: str) -> list[str]:
        argv = ["--data-dir", str(holiday_hearth.config.data_dir), "search",
                "Can unused holiday be carried over into next year?", "-k", "2", "--json", *extra]
        assert main(argv) == 0
        return [Path(h["source"]).name for h in json.loads(capsys.readouterr().out)["hits"]]

    assert first() == ["handbook.md", "calendar.md"]
    assert first("--plain") == ["calendar.md", "handbook.md"]


def test_ask_weighs_lines_for_a_question_as_asked_but_not_for_a_follow_up_made_standalone(holiday_hearth,
                                                                                           monkeypatch):
    seen: list[tuple[str, bool]] = []
    search = holiday_hearth.search

    def spy(query, **kw):
        seen.append((query, kw.get("lines", False)))
        return search(query, **kw)

    monkeypatch.setattr(holiday_hearth, "search", spy)
    monkeypatch.setattr(holiday_hearth, "_chat_model", ScriptedModel("Until the end of March."))
    holiday_hearth.ask("Can unused holiday be carried over into next year?")
    assert seen == [("Can unused holiday be carried over into next year?", True)]
    seen.clear()
    follow_up = "Until when can I do that?"
    answer = holiday_hearth.ask(follow_up, history=["Can unused holiday be carried over into next year?"])
    assert answer.searched_for.endswith(follow_up) and answer.searched_for != follow_up  # made standalone
    assert seen and not any(lines for _, lines in seen)


def test_a_line_that_only_repeats_a_heading_is_not_a_passages_best_line():
    emb = HashEmbedder()
    q = emb.embed(["Project Heron sheet"])[0]
    text = "Project Heron sheet\nThe sheet is kept by the office team."
    sheet = Hit("/p.md", None, "Project Heron sheet", 0.3, text, 0, 40, "a")
    plain = Hit("/q.md", None, None, 0.3, text, 0, 40, "b")
    best = best_lines(q, [sheet, plain], emb)
    assert best["b"] == pytest.approx(1.0, abs=1e-5)  # the same line, no heading: it is the best line
    # With the heading, that line is skipped; the other is read under its heading, as the passage is.
    under = float(emb.embed(["Project Heron sheet\nThe sheet is kept by the office team."])[0] @ q)
    assert best["a"] == pytest.approx(under, abs=1e-5) and under < 0.99
    assert best_lines(q, [Hit("/r.md", None, None, 0.42, "Two words", 0, 9, "c")], emb) == {"c": 0.42}  # no line
