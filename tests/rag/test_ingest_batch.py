"""The pipelined path of rag/ingest.py: many small files read in worker processes, embedded together and
written in batches (one manifest transaction, one keyword-index transaction, one Chroma call) by a writer
thread, keeping the promise of the per-file path: a document counts only once all its passages are
stored. Real ChromaDB and keyword index; the hash embedder of tests/fakes.py."""

from __future__ import annotations

import random
import shutil
import threading
from pathlib import Path

import pytest

from inference.errors import Cancelled, EmbedderError
from rag.errors import StoreError
from rag.ingest import IngestOptions
from rag.retrieval import RetrievalOptions
from rag.service import Hearth, HearthConfig
from tests.crash_driver import WORKSPACE, Driver, differences, problems, state
from tests.fakes import CountingEmbedder

WORDS = "leave badge printer travel invoice meal hotel vpn laptop budget policy office parking".split()
N = 24  # enough files for the pipeline (rag.ingest._PIPELINE_FILES)


def marker(i: int) -> str:
    return f"zq{i:03d}marker"


def write_notes(folder: Path, n: int = N, *, seed: int = 1, version: str = "") -> list[str]:
    """n notes of a few paragraphs each, every paragraph opening with the note's own marker word."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        paragraphs = [f"{marker(i)} {version}" + " ".join(rng.choice(WORDS) for _ in range(rng.randint(20, 40)))
                      for _ in range(4)]  # fmt: skip
        (folder / f"note{i:03d}.md").write_text(f"# Note {i}\n\n" + "\n\n".join(paragraphs) + "\n")
    return [str((folder / f"note{i:03d}.md").resolve()) for i in range(n)]


def hearth(data: Path, embedder: CountingEmbedder | None = None, **options) -> Hearth:
    opts = {"chunk_tokens": 24, "overlap_tokens": 4, "workers": 1, "write_batch": 64, **options}
    # The fake embedder's similarities are hash collisions: the keywords alone rank (no similarity added).
    return Hearth(HearthConfig(data_dir=data, ingest=IngestOptions(**opts), min_score=0.0,
                               retrieval=RetrievalOptions(similarity_weight=0.0)), embedder=embedder or CountingEmbedder())


def count_calls(obj, name: str, calls: list) -> None:
    original = getattr(obj, name)

    def counted(*args, **kwargs):
        calls.append(args)
        return original(*args, **kwargs)

    setattr(obj, name, counted)


def test_many_small_files_are_written_in_batches_and_index_what_one_by_one_does(tmp_path):
    sources = write_notes(tmp_path / "docs")
    h = hearth(tmp_path / "data", write_batch=1000)
    begins, adds, replaces = [], [], []
    count_calls(h.manifest, "begin_many", begins)
    count_calls(h.store.vectors, "add_rows", adds)
    count_calls(h.store, "replace_document", replaces)
    r = h.ingest([tmp_path / "docs"], workspace=WORKSPACE)
    assert (r.added, r.failed) == (N, []) and r.chunks > 3 * N
    # All 24 documents went through far fewer writes than one each (and none through the per-file write).
    assert replaces == [] and 1 <= len(begins) <= 4 and len(adds) <= 4
    assert sum(len(args[1]) for args in begins) == N
    assert set(r.stages) == {"read", "chunk", "embed", "write", "model"} and r.stages["write"] > 0

    got = state(h, ids=True)
    assert problems(got) == [] and {s["status"] for s in got.values()} == {"done"} and set(got) == set(sources)
    hits = h.search(f"{marker(7)} note", k=3, workspace=WORKSPACE)
    assert hits[0].source == sources[7]

    # The same files written one by one give the same index, chunk for chunk.
    one_by_one = hearth(tmp_path / "serial", write_batch=0)
    assert one_by_one.ingest([tmp_path / "docs"], workspace=WORKSPACE).added == N
    assert differences(got, state(one_by_one, ids=True)) == []


def test_reingest_after_a_batch_changes_nothing_and_a_changed_batch_replaces_its_chunks(tmp_path):
    docs = tmp_path / "docs"
    sources = write_notes(docs)
    h = hearth(tmp_path / "data")
    h.ingest([docs], workspace=WORKSPACE)
    before = state(h, ids=True)
    embedded = len(h.embedder.texts)
    again = h.ingest([docs], workspace=WORKSPACE)
    assert (again.added, again.updated, again.unchanged, again.chunks) == (0, 0, N, 0)
    assert len(h.embedder.texts) == embedded and state(h, ids=True) == before

    # Every note rewritten, its first paragraph changed: updated in batches, the old versions gone,
    # the unchanged paragraphs keeping their vectors.
    for i, path in enumerate(sorted(docs.glob("*.md"))):
        path.write_text(path.read_text().replace(f"{marker(i)} ", f"{marker(i)} revised ", 1))
    h.embedder.texts.clear()
    r = h.ingest([docs], workspace=WORKSPACE)
    assert (r.added, r.updated, r.failed) == (0, N, [])
    assert 0 < r.reused < r.chunks and len(h.embedder.texts) == r.chunks - r.reused
    after = state(h, ids=True)
    assert problems(after) == [] and {s["status"] for s in after.values()} == {"done"} and set(after) == set(sources)
    assert all(after[s]["sha256"] != before[s]["sha256"] for s in sources)


def test_a_copy_read_later_in_the_same_run_reuses_the_vectors_of_one_still_being_written(tmp_path):
    docs = tmp_path / "docs"
    sources = write_notes(docs)
    shutil.copy(sources[3], docs / "zz-copy.md")  # read after the original, which may not be stored yet
    h = hearth(tmp_path / "data", write_batch=100_000)  # nothing is written before the end unless asked
    r = h.ingest([docs], workspace=WORKSPACE)
    copies = state(h)[sources[3]]["chunks"]
    assert r.added == N + 1 and r.reused == copies and len(h.embedder.texts) == r.chunks - copies


def test_a_failure_in_the_middle_of_a_batch_costs_only_the_bad_document(tmp_path):
    sources = write_notes(tmp_path / "docs")
    bad = sources[11]
    h = hearth(tmp_path / "data", write_batch=1000)
    vectors = h.store.vectors
    add_rows, replace_document = vectors.add_rows, vectors.replace_document

    def refuse_bad_add(workspace, rows, vecs, *, versions):
        if any(row.source == bad for row in rows):
            raise StoreError("disk full (simulated)")
        return add_rows(workspace, rows, vecs, versions=versions)

    def refuse_bad_replace(workspace, source, chunks, vecs, *, version):
        if source == bad:
            raise StoreError("disk full (simulated)")
        return replace_document(workspace, source, chunks, vecs, version=version)

    vectors.add_rows, vectors.replace_document = refuse_bad_add, refuse_bad_replace
    r = h.ingest([tmp_path / "docs"], workspace=WORKSPACE)
    assert r.added == N - 1 and [(f.source, f.kind) for f in r.failed] == [(bad, "error")]
    assert "disk full" in r.failed[0].error
    got = state(h)
    assert problems(got) == []  # no document looks complete that is not
    assert got[bad]["status"] == "indexing" and all(got[s]["status"] == "done" for s in sources if s != bad)
    assert bad not in {x.source for x in h.search(f"{marker(11)} note", k=5, workspace=WORKSPACE)}

    vectors.add_rows, vectors.replace_document = add_rows, replace_document  # the disk has room again
    r = h.ingest([tmp_path / "docs"], workspace=WORKSPACE)
    assert (r.added, r.unchanged, r.failed) == (1, N - 1, [])
    assert problems(state(h)) == [] and h.search(f"{marker(11)} note", k=1, workspace=WORKSPACE)[0].source == bad


def test_a_text_the_embedder_refuses_costs_only_its_file(tmp_path):
    sources = write_notes(tmp_path / "docs")
    bad = sources[7]

    class Refusing(CountingEmbedder):
        """Refuses any call holding the bad note's text; remembers the files of each call."""

        files_by_call: list[set[str]] = []

        def embed(self, texts):
            self.files_by_call.append({m for i in range(N) if (m := marker(i)) in " ".join(texts)})
            if marker(7) in " ".join(texts):
                raise EmbedderError("this text cannot be embedded (simulated)")
            return super().embed(texts)

    embedder = Refusing()
    h = hearth(tmp_path / "data", embedder, embed_batch=8)
    r = h.ingest([tmp_path / "docs"], workspace=WORKSPACE)
    assert r.added == N - 1 and [(f.source, f.kind) for f in r.failed] == [(bad, "error")]
    assert "cannot be embedded" in r.failed[0].error
    # The batch holding it failed, and was embedded again file by file: the bad note alone failed once more.
    failed = [c for c in embedder.files_by_call if marker(7) in c]
    assert len(failed) == 2 and len(failed[0]) > 1 and failed[1] == {marker(7)}
    got = state(h)
    assert problems(got) == [] and (bad not in got or got[bad]["status"] != "done")
    assert all(got[s]["status"] == "done" for s in sources if s != bad)


def test_cancel_during_a_batch_write_finishes_that_batch_and_begins_nothing_more(tmp_path):
    docs = tmp_path / "docs"
    sources = write_notes(docs)
    h = hearth(tmp_path / "data", write_batch=40)  # several batches of a few notes each
    add_rows = h.store.vectors.add_rows
    in_write = threading.Event()
    searched: dict[str, set[str]] = {}

    def parked_add(workspace, rows, vecs, *, versions):
        if not in_write.is_set():  # the first batch, between its keyword and its vector write
            searched["during"] = {x.source for x in h.search("note", k=50, workspace=WORKSPACE)}
            searched["batch"] = {row.source for row in rows}
            searched["before"] = h.manifest.done_sources(WORKSPACE)  # a one-file batch before it, if any
            in_write.set()  # the user presses Stop now, while this batch is being written
        return add_rows(workspace, rows, vecs, versions=versions)

    def cancel() -> bool:  # asked by the ingesting thread and by the writer, before each batch
        return in_write.is_set()

    h.store.vectors.add_rows = parked_add
    with pytest.raises(Cancelled):
        h.ingest([docs], workspace=WORKSPACE, cancel=cancel)
    h.store.vectors.add_rows = add_rows
    assert searched["during"] == set()  # its keywords were stored, but none of it counted yet
    got = state(h, ids=True)
    assert problems(got) == []
    done = {s for s, v in got.items() if v["status"] == "done"}
    # The batch being written was finished (with any written before it)...
    assert done == searched["batch"] | searched["before"] and searched["batch"] and len(done) < N
    assert {v["status"] for v in got.values()} == {"done"}  # ...and nothing after it was begun

    r = h.ingest([docs], workspace=WORKSPACE)
    assert (r.added, r.unchanged, r.failed) == (N - len(done), len(done), [])
    final = state(h, ids=True)
    assert problems(final) == [] and set(final) == set(sources) and {v["status"] for v in final.values()} == {"done"}


@pytest.mark.parametrize("point", ["begin-batch", "lexical-add", "vectors-add"])
def test_a_kill_inside_a_batch_write_leaves_its_documents_hidden_and_redone(tmp_path, point):
    docs = tmp_path / "docs"
    sources = write_notes(docs)
    data = tmp_path / "data"
    run = Driver(data, docs, "--ids", "--write-batch", "64", "--die-after", point)
    assert run.died()
    found = Driver(data, docs, "--ids", "--state-only").found
    assert problems(found) == []
    assert "indexing" in {s["status"] for s in found.values()}  # the batch killed mid-write: hidden, to redo
    _, final = Driver(data, docs, "--ids").finish()
    assert problems(final) == [] and set(final) == set(sources) and {s["status"] for s in final.values()} == {"done"}
    _, fresh = Driver(tmp_path / "clean", docs, "--ids", "--workers", "0").finish()
    assert differences(final, fresh) == []
