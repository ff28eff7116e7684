from __future__ import annotations

import os
from pathlib import Path

import pytest

from inference.errors import Cancelled
from rag.errors import StoreError
from rag.ingest import IngestOptions
from rag.service import Hearth, HearthConfig
from tests.fakes import HashEmbedder, ScriptedModel


def _write(root: Path, files: dict[str, str | bytes]) -> None:
    for name, content in files.items():
        p = root / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(content if isinstance(content, bytes) else content.encode())


@pytest.fixture
def docs(tmp_path) -> Path:
    root = tmp_path / "docs"
    _write(root, {
        "policy.md": "# Leave\n\nStaff get 28 days of annual leave.\n\n# Hours\n\nCore hours are 10 to 15.",
        "notes/readme.txt": "The printer on floor two needs a badge to release jobs.",
        "notes/page.html": "<html><body><h1>VPN</h1><p>Connect the VPN before opening the intranet.</p></body></html>",
        "notes/picture.gif": b"GIF89a",  # pictures other than PNG, JPEG, TIFF and WebP are skipped
        ".hidden/secret.txt": "should not be read",
    })
    return root


@pytest.fixture
def hearth(tmp_path) -> Hearth:
    return Hearth(HearthConfig(data_dir=tmp_path / "data"), embedder=HashEmbedder(), chat_model=ScriptedModel("ok"))


def test_ingest_folder_then_again_is_a_no_op(hearth, docs):
    r = hearth.ingest([docs])
    assert (r.added, r.updated, r.unchanged, r.failed, r.skipped) == (3, 0, 0, [], 1)
    assert r.chunks >= 4
    assert {Path(d.source).name for d in hearth.sources()} == {"policy.md", "readme.txt", "page.html"}
    calls = hearth.embedder.calls
    r2 = hearth.ingest([docs])
    assert (r2.added, r2.updated, r2.unchanged, r2.chunks) == (0, 0, 3, 0)
    assert hearth.embedder.calls == calls  # nothing re-embedded
    # Same content with a new modification time: hashed, still unchanged.
    os.utime(docs / "policy.md", ns=(1, 1))
    assert hearth.ingest([docs]).unchanged == 3


def test_changed_file_replaces_its_chunks(hearth, docs):
    hearth.ingest([docs])
    before = hearth.store.count("default")
    (docs / "policy.md").write_text("# Leave\n\nStaff now get 30 days of annual leave.")
    r = hearth.ingest([docs / "policy.md"])
    assert (r.added, r.updated) == (0, 1)
    assert hearth.store.count("default") == before - 1  # two sections became one
    texts = [h.text for h in hearth.search("annual leave days", k=10)]
    assert any("30 days" in t for t in texts) and not any("28 days" in t for t in texts)


def test_failures_are_reported_and_the_batch_goes_on(hearth, tmp_path, docs):
    bad = tmp_path / "bad"
    _write(bad, {"empty.txt": "", "broken.pdf": b"%PDF-1.4 garbage", "data.xyz": "x"})
    r = hearth.ingest([docs, bad / "empty.txt", bad / "broken.pdf", bad / "data.xyz", tmp_path / "missing.md"])
    assert r.added == 3
    kinds = {Path(f.source).name: f.kind for f in r.failed}
    assert kinds == {"empty.txt": "empty", "broken.pdf": "corrupt", "data.xyz": "unsupported", "missing.md": "missing"}
    assert all(f.error for f in r.failed)


def test_size_cap(tmp_path, docs):
    h = Hearth(HearthConfig(data_dir=tmp_path / "d", ingest=IngestOptions(max_file_bytes=60)), embedder=HashEmbedder())
    r = h.ingest([docs])
    assert {f.kind for f in r.failed} == {"too_large"}
    assert "limit" in r.failed[0].error


def test_interrupted_document_is_hidden_then_redone(tmp_path, docs):
    class FailingStore:
        def __init__(self, inner):
            self.inner, self.fail = inner, True

        def replace_document(self, *a, **kw):
            self.inner.replace_document(*a, **kw)
            if self.fail:  # as if the process died after writing vectors, before the manifest said done
                raise StoreError("disk vanished")

        def __getattr__(self, name):
            return getattr(self.inner, name)

    from rag.lexical import LexicalIndex
    from rag.store import ChromaStore, HybridStore

    data = tmp_path / "data"
    store = FailingStore(HybridStore(ChromaStore(data / "index"), LexicalIndex(data / "lexical.sqlite")))
    h = Hearth(HearthConfig(data_dir=tmp_path / "data"), embedder=HashEmbedder(), store=store)
    r = h.ingest([docs / "policy.md"])
    assert r.added == 0 and r.failed[0].kind == "error"
    assert h.sources()[0].status == "indexing"
    assert h.search("annual leave") == []  # vectors exist but the document is not done
    store.fail = False
    r = h.ingest([docs / "policy.md"])
    assert r.added == 1
    assert h.search("annual leave")[0].source.endswith("policy.md")


def test_cancel_keeps_what_was_done(hearth, docs):
    seen = []
    with pytest.raises(Cancelled):
        hearth.ingest([docs], progress=seen.append, cancel=lambda: any(p.files_done >= 1 for p in seen))
    assert len([d for d in hearth.sources() if d.status == "done"]) == 1


def test_forget_file_and_folder(hearth, docs):
    hearth.ingest([docs])
    assert [Path(s).name for s in hearth.forget([docs / "policy.md"])] == ["policy.md"]
    assert sorted(Path(s).name for s in hearth.forget([docs / "notes"])) == ["page.html", "readme.txt"]
    assert hearth.sources() == [] and hearth.store.count("default") == 0
    assert hearth.forget([docs]) == []


def test_ask_grounds_numbers_and_cites(hearth, docs):
    hearth.ingest([docs])
    hearth._chat_model = model = ScriptedModel("Staff get 28 days [1] and more [9].")
    tokens = []
    a = hearth.ask("How many days of annual leave?", k=3, on_token=tokens.append)
    assert "".join(tokens) == "Staff get 28 days [1] and more [9]."
    assert a.text == "Staff get 28 days [1] and more ."  # [9] pointed at no passage
    assert a.cited == [1] and a.sources[0].source.endswith("policy.md")
    user = model.prompts[0][1]["content"]
    assert "[1] (policy.md, Leave)" in user and "Question: How many days of annual leave?" in user
    assert a.to_json()["sources"][0]["cited"] is True


def test_ask_with_nothing_relevant_says_so_without_the_model(tmp_path, docs):
    h = Hearth(HearthConfig(data_dir=tmp_path / "d", min_score=0.99), embedder=HashEmbedder())
    h.ingest([docs])
    a = h.ask("quantum chromodynamics lecture")
    assert a.sources == [] and "could not find" in a.text
    assert h._chat_model is None  # no model was loaded for it


def test_a_text_repeated_across_files_is_embedded_once_per_run(tmp_path):
    """A footer every file repeats, or one attachment in several e-mails: embedded once in a run (#68), its
    vector shared, the others counted as reused; each file keeps its own passage, and searching finds all."""
    from tests.fakes import HashEmbedder

    class Counting(HashEmbedder):
        def __init__(self) -> None:
            super().__init__()
            self.texts: list[str] = []

        def embed(self, texts):
            self.texts += list(texts)
            return super().embed(texts)

    footer = "Confidential: this memo is for Alder and Finch staff only and may not be forwarded outside the firm."
    docs = tmp_path / "docs"
    docs.mkdir()
    for n, topic in enumerate(("parking permits", "printer toner", "holiday rota")):
        (docs / f"memo{n}.md").write_text(f"# Memo {n}\n\nThis memo is about {topic}.\n\n# Footer\n\n{footer}\n")
    embedder = Counting()
    hearth = Hearth(HearthConfig(data_dir=tmp_path / "data", ingest=IngestOptions(workers=0)), embedder=embedder)
    report = hearth.ingest([docs])
    assert report.added == 3 and report.reused == 2
    assert sum(footer in t for t in embedder.texts) == 1  # one embedding for three files' footer
    assert len(embedder.texts) == report.chunks - report.reused
    assert {Path(h.source).name for h in hearth.search("forwarded outside the firm", k=10)} == {
        "memo0.md", "memo1.md", "memo2.md"}
