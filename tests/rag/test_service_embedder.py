"""A workspace remembers its embedding model: searching with another is refused, ingesting with another re-embeds."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from inference import models
from inference.errors import HearthError, UsageError
from rag.service import Hearth, HearthConfig
from tests.inference.tinybert import unigram_tokenizer, wordpiece_tokenizer, write_folder


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data folder with two small user embedders of different sizes (32 and 48 dims) already added."""
    root = tmp_path_factory.mktemp("switch")
    data = root / "data"
    a = write_folder(root / "model-a", tokenizer=wordpiece_tokenizer(), hidden=32)
    b = write_folder(root / "model-b", tokenizer=unigram_tokenizer(), hidden=48, seed=3,
                     prompts={"query": "query: ", "passage": "passage: "})
    models.add_embedder(a, data / "cache", int8=False)
    models.add_embedder(b, data / "cache", int8=False)
    return data


def _docs(tmp_path: Path) -> list[Path]:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "travel.txt").write_text("The meal allowance for travel abroad is sixty euros per day.\n")
    (docs / "leave.txt").write_text("Сколько дней отпуска положено новому сотруднику: двадцать восемь дней.\n")
    return [docs]


def _hearth(data: Path, embedder: str | None) -> Hearth:
    return Hearth(HearthConfig(data_dir=data, embedder=embedder, embed_threads=1))


def test_switching_models_reembeds_and_never_mixes(data_dir: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "cache").symlink_to(data_dir / "cache", target_is_directory=True)
    docs = _docs(tmp_path)

    first = _hearth(data, "model-a")
    report = first.ingest(docs, workspace="office")
    assert report.added == 2 and not report.failed
    key_a = first.manifest.workspace_embedder("office")
    assert key_a is not None and key_a.startswith("model-a-")

    # No embedder named: the workspace's own is used, whatever the default is.
    plain = _hearth(data, None)
    assert plain.embedder_for("office").name == key_a
    assert plain.search("meal allowance abroad", workspace="office")[0].source.endswith("travel.txt")

    # Another model for search alone: refused, the vectors cannot be compared.
    other = _hearth(data, "model-b")
    with pytest.raises(UsageError, match="was indexed with") as info:
        other.search("meal allowance", workspace="office")
    assert "ingest" in (info.value.hint or "")

    # Ingesting with it re-embeds every document (48 dims now; 32-dim vectors would not even fit).
    report = other.ingest([], workspace="office")
    assert report.added == 2 and not report.failed
    key_b = other.manifest.workspace_embedder("office")
    assert key_b is not None and key_b.startswith("model-b-")
    assert {len(e) for s in other.manifest.done_sources("office") for _, _, e in other.store.embeddings_of("office", s)} == {48}
    hits = _hearth(data, None).search("Сколько дней отпуска", workspace="office")
    assert hits and hits[0].source.endswith("leave.txt")


def test_other_workspaces_keep_their_model(data_dir: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "cache").symlink_to(data_dir / "cache", target_is_directory=True)
    docs = _docs(tmp_path)
    _hearth(data, "model-a").ingest(docs, workspace="one")
    _hearth(data, "model-b").ingest(docs, workspace="two")
    h = _hearth(data, None)
    assert h.embedder_for("one").dim == 32 and h.embedder_for("two").dim == 48
    assert h.search("meal allowance", workspace="one") and h.search("meal allowance", workspace="two")


def test_queries_get_the_query_prompt(data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "cache").symlink_to(data_dir / "cache", target_is_directory=True)
    h = _hearth(data, "model-b")
    h.ingest(_docs(tmp_path), workspace="w")
    emb = h.embedder_for("w")
    seen: list[list[str]] = []
    real = emb.embed_query

    def spy(texts):  # type: ignore[no-untyped-def]
        seen.append(list(texts))
        return real(texts)

    monkeypatch.setattr(emb, "embed_query", spy)
    h.search("meal allowance", workspace="w")
    assert seen == [["meal allowance"]]
    assert isinstance(real(["x"]), np.ndarray)


def test_reembed_switches_one_workspace_and_refuses_what_cannot_be(data_dir: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "cache").symlink_to(data_dir / "cache", target_is_directory=True)
    docs = _docs(tmp_path)
    h = _hearth(data, None)
    h.ingest(docs, workspace="office")
    h.ingest(docs, workspace="other")
    default_key = h.manifest.workspace_embedder("office")
    stages: list[str] = []
    report = h.reembed("model-b", workspace="office", progress=lambda p: stages.append(p.current or ""))
    assert report.added == 2 and not report.failed and stages
    assert h.manifest.workspace_embedder("office").startswith("model-b-")
    assert h.manifest.workspace_embedder("other") == default_key  # the other workspace keeps its model
    assert h.embedder_for("office").dim == 48 and h.embedder_for("other").dim != 48
    assert sorted(Path(s).name for s in h.manifest.done_sources("office")) == ["leave.txt", "travel.txt"]
    assert h.search("Сколько дней отпуска", workspace="office")[0].source.endswith("leave.txt")
    with pytest.raises(UsageError, match="already embedded"):
        h.reembed("model-b", workspace="office")
    with pytest.raises(UsageError, match="for every workspace"):
        _hearth(data, "model-a").reembed("model-b", workspace="other")
    with pytest.raises(HearthError):
        h.reembed("no-such-model", workspace="other")
    assert h.manifest.workspace_embedder("other") == default_key  # a refused switch changes nothing


def test_cli_embedder_use(data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                          monkeypatch: pytest.MonkeyPatch) -> None:
    import json

    from app.cli import main

    data = tmp_path / "data"
    data.mkdir()
    (data / "cache").symlink_to(data_dir / "cache", target_is_directory=True)
    monkeypatch.setenv("HEARTH_CACHE_DIR", str(data_dir / "cache"))  # the CLI's models cache: the machine's
    docs = [str(p) for p in _docs(tmp_path)]
    base = ["--data-dir", str(data), "--threads", "1"]
    assert main(base + ["--embedder", "model-a", "ingest", *docs, "--workspace", "w", "--json"]) == 0
    capsys.readouterr()
    assert main(base + ["embedder", "use", "model-b", "--workspace", "w", "--json"]) == 0
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["added"] == 2
    assert _hearth(data, None).embedder_for("w").dim == 48
    assert main(base + ["embedder", "use", "model-b", "--workspace", "w"]) == 2
    assert "already embedded with" in capsys.readouterr().err
