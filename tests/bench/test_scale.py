"""bench.scale end to end at a tiny size, on the demo documents, with the hashing stand-in embedder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import scale
from bench.memory import HashEmbedder

DEMO = Path(__file__).resolve().parents[2] / "assets" / "demo"


def test_runs_end_to_end_at_a_tiny_size(tmp_path, capsys):
    argv = ["--corpus", str(DEMO), "--passages", "120", "--steps", "60,120", "--per-document", "4",
            "--questions", "6", "--rounds", "2", "--build", "hash", "--query", "hash", "--data", str(tmp_path),
            "--json"]  # fmt: skip
    assert scale.main(argv) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["machine"]["cpus"] >= 1 and "load_average" in result["machine"]
    assert [s["passages"] for s in result["steps"]] == [60, 120]
    for step in result["steps"]:
        assert step["build"]["passages"] == step["passages"] and not step["reused"]
        assert step["build"]["documents"] >= step["passages"] // 4
        assert step["disk"]["vectors_mib"] > 0 and step["disk"]["keywords_mib"] > 0
        assert 0 < step["search"]["p50_ms"] <= step["search"]["p95_ms"]
        assert len(step["round_p50_ms"]) == 2 and isinstance(step["noisy"], bool)
        assert set(step["parts"]) == {"embed_query", "finished_documents", "vector_query", "keyword_query",
                                      "keyword_query_before"}
        assert 0 <= step["keyword_same_top"] <= step["questions"] == 6
    assert isinstance(result["met"], bool)

    # --reuse measures the indexes built above again without building them.
    assert scale.main([*argv, "--reuse"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert all(s["reused"] for s in again["steps"])
    assert [s["build"] for s in again["steps"]] == [s["build"] for s in result["steps"]]


def test_copies_are_shifted_windows_of_real_text_and_all_distinct(tmp_path):
    bases = scale.read_corpus(scale.corpus_files(DEMO), HashEmbedder().count_tokens)
    copy0 = sum(len(b.chunks) for b in bases)
    taken = list(scale.passages(bases, 3 * copy0))
    texts = [c.passage for _, c in taken]
    assert len(texts) == len(set(texts)) == 3 * copy0
    for base, chunk in taken:
        assert base.text[chunk.start : chunk.end] == chunk.text  # a window of the document's own text
    with pytest.raises(SystemExit):
        list(scale.passages(bases[:1], 10**7))  # more than the text can give
    docs = list(scale.documents(bases, 50, 4))
    assert sum(len(chunks) for _, chunks in docs) == 50 and max(len(chunks) for _, chunks in docs) <= 4
    assert len({source for source, _ in docs}) == len(docs)
