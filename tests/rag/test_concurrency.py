"""Questions while a large ingest runs in another thread of the same service (as the window does it):
answers come back during the ingest, never from a document whose indexing has not finished, and the
index is consistent at the end. The real ChromaDB and keyword index; fast fakes for the two models."""

from __future__ import annotations

import random
import threading
import time
from pathlib import Path

from rag.ingest import IngestOptions
from rag.service import Hearth, HearthConfig
from tests.crash_driver import WORKSPACE, problems, state
from tests.fakes import HashEmbedder, ScriptedModel

WORDS = "leave badge printer travel invoice meal hotel vpn laptop budget policy office parking".split()
N_DOCS = 60
PARKED = 20  # the ingest stops inside this document's write (chunks stored, manifest not yet done)
REPLY = "It is in the handbook [1]."


class SlowEmbedder(HashEmbedder):
    """Takes 15 ms per batch, so that the ingest lasts several seconds."""

    def embed(self, texts):
        time.sleep(0.015)
        return super().embed(texts)


def keyword(i: int) -> str:
    return f"zq{i:03d}marker"


def write_docs(folder: Path) -> list[Path]:
    rng = random.Random(5)
    folder.mkdir()
    paths = []
    for i in range(N_DOCS):
        words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(120, 180)))
        path = folder / f"doc{i:03d}.md"
        # The document's own keyword opens every paragraph, so every chunk of it can be found by it.
        path.write_text(f"# Document {i}\n\n" + "\n\n".join(f"{keyword(i)} {p}" for p in words.split(" leave ")))
        paths.append(path)
    return paths


def test_questions_are_answered_during_a_large_ingest_from_finished_documents_only(tmp_path):
    paths = write_docs(tmp_path / "docs")
    sources = [str(p.resolve()) for p in paths]
    options = IngestOptions(chunk_tokens=24, overlap_tokens=4, embed_batch=4, workers=0)
    h = Hearth(HearthConfig(data_dir=tmp_path / "data", ingest=options, min_score=0.0),
               embedder=SlowEmbedder(), chat_model=ScriptedModel(REPLY))
    store = h.store

    # Park the ingest right after the chunks of one document are written to both indexes, before the
    # manifest marks it done: the moment a search could see half of what is being written.
    parked, go = threading.Event(), threading.Event()
    write = store.replace_document
    answered: list[tuple[float, int]] = []  # (when, documents done at that moment) per answer
    gate = {"answers": 0}

    def replace_document(workspace, source, chunks, vectors, *, version):
        # Each document waits for one answer about those before it: the questions and the ingest
        # interleave whatever the machine's load, instead of by the luck of the scheduler.
        if h.manifest.done_sources(WORKSPACE):
            deadline = time.monotonic() + 60
            while len(answered) <= gate["answers"] and "failed" not in gate:
                assert time.monotonic() < deadline, "no answer came while the ingest waited for one"
                time.sleep(0.002)
            gate["answers"] = len(answered)
        write(workspace, source, chunks, vectors, version=version)
        if source == sources[PARKED]:
            parked.set()
            assert go.wait(60), "the test never let the ingest go on"

    store.replace_document = replace_document
    outcome: dict = {}

    def run_ingest() -> None:
        try:
            outcome["report"] = h.ingest([tmp_path / "docs"], workspace=WORKSPACE)
        except BaseException as exc:  # noqa: BLE001 - handed to the test thread
            outcome["error"] = exc
        finally:
            outcome["ended"] = time.perf_counter()

    def ask_about_finished_documents(rng: random.Random) -> None:
        done_before = h.manifest.done_sources(WORKSPACE)
        if not done_before:
            time.sleep(0.01)
            return
        i = sources.index(rng.choice(sorted(done_before)))
        hits = h.search(f"what does {keyword(i)} say", k=5, workspace=WORKSPACE)
        reply = h.ask(f"What is said about {keyword(i)}?", k=3, workspace=WORKSPACE)
        done_after = h.manifest.done_sources(WORKSPACE)
        assert sources[i] in {x.source for x in hits}  # a finished document is found by its keyword
        assert {x.source for x in hits} <= done_after, "a hit from a document still being indexed"
        assert reply.text == REPLY and reply.sources and {x.source for x in reply.sources} <= done_after
        answered.append((time.perf_counter(), len(done_after)))

    rng = random.Random(11)
    ingest = threading.Thread(target=run_ingest, name="ingest")
    ingest.start()
    try:
        while not parked.is_set() and ingest.is_alive():
            ask_about_finished_documents(rng)
        assert parked.wait(30), outcome.get("error")
        before_park = len(answered)

        # Parked: the document's chunks are in Chroma and in the keyword index, and it is 'indexing'.
        target = sources[PARKED]
        assert h.manifest.get(WORKSPACE, target).status == "indexing"
        assert target in store.lexical.sources(WORKSPACE)
        assert store.vectors.embeddings_of(WORKSPACE, target)
        for mode in ("hybrid", "dense", "lexical"):
            hits = h.search(f"{keyword(PARKED)} document {PARKED}", k=10, workspace=WORKSPACE, mode=mode)
            assert hits and target not in {x.source for x in hits}, mode  # found others, never the half one
        reply = h.ask(f"What is said about {keyword(PARKED)}?", k=5, workspace=WORKSPACE)
        assert target not in {x.source for x in reply.sources}
        go.set()

        while ingest.is_alive():
            ask_about_finished_documents(rng)
    finally:
        gate["failed"] = True  # a failed question must not leave the ingest waiting for the next one
        go.set()
        ingest.join(60)
    assert "error" not in outcome, outcome.get("error")
    report = outcome["report"]
    assert (report.added, report.failed) == (N_DOCS, [])

    during = [(t, n) for t, n in answered if t < outcome["ended"]]
    assert before_park >= 3 and len(during) - before_park >= 3, (before_park, len(during))
    # The answers were interleaved with the ingest: they saw the index grow, not only its start or end
    # (one may come after the last document is done, while the ingest finishes up).
    assert len({n for _, n in during if n < N_DOCS}) >= 5

    # At the end: every document done, and the manifest, Chroma and the keyword index agree chunk by chunk.
    final = state(h, ids=True)
    assert problems(final) == []
    assert set(final) == set(sources) and {s["status"] for s in final.values()} == {"done"}
    hits = h.search(f"{keyword(PARKED)} document {PARKED}", k=3, workspace=WORKSPACE)
    assert hits[0].source == sources[PARKED]
