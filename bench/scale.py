"""Search at scale: how fast Hearth answers a search over 10,000 and 100,000 passages of real text.

    python -m bench.scale [--passages 100000] [--steps 10000,100000] [--build hash|real] [--query real|hash]
                          [--questions N] [--rounds N] [--per-document N] [--data DIR] [--reuse]
                          [--corpus DIR] [--threads N] [--json]

Text: every file of bench.corpus (The Debian Administrator's Handbook, the Debian New Maintainers' Guide)
and of bench.ingest (the R manuals, gnuplot's and Asymptote's manuals, the Debian Reference), fetched once
with apt-get (or every file under --corpus DIR), read by Hearth's loaders and cut by its chunker exactly as
ingestion cuts them: copy 0, about 31,000 passages. To reach the count, copy r (r = 1, 2, ...)
takes each passage's window of its document's text shifted r × 41 characters further (both ends moved on
to a word boundary), so every passage is real text read in a slightly different window; passages equal to
one already taken are dropped (the R reference manual comes twice, as refman.pdf and fullrefman.pdf, so
copy 0 gives about 22,000 distinct ones; 100,000 passages take copies 0 to 4). Passages are grouped, in document order, into documents of --per-document
passages (default 8: a memo of about 1,000 words), so the per-document work of the service (the set of
finished documents, the diversity caps) is as large as on an office share of that many files.

Build (each step in its own data folder, DIR/<passages>): passages are embedded, by the hashing stand-in
of bench.memory (--build hash, default: it keeps the vector index the same size at a fraction of the
time) or by the real default embedder (--build real), and written in batches of about 256 passages as a
batch of ingestion is: the documents marked begun in the manifest, their passages added to the keyword
index and the vector index (one call each), then marked done. The build rate counts embedding and
writes, not reading files. --reuse keeps each step's folder and measures a
folder built before with the same settings again without rebuilding it.

Search: the questions of bench/data/retrieval_questions.json, then sentences sampled from the passages,
--questions in all; each goes through Hearth.search (hybrid ranking, k=5, as `hearth search` does, less
the first passages' lines, whose cost does not grow with the index: bench.retrieval times them) with
the real default embedder for the question (--query hash: the stand-in, for tests). After one warm-up
question, --rounds rounds over all questions give p50/p95 per round and over all rounds; a step whose
rounds' p50 differ by more than 15 %, or that ran at a load average above 1.5, is marked noisy
(bench.conditions). Then each part is timed on its own over the same questions: the question's embedding,
the set of finished documents, the vector query, the keyword query, and the keyword query as it was
written before rag/lexical.py planned it (one FTS5 query over every word, joined to the passages), the
two alternating; how many questions' keyword top 5 stayed the same is counted. The load average
(1 minute) and the CPU count are recorded with every figure.

Progress goes to stderr; a table (or --json) to stdout.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import pickle
import random
import re
import shutil
import sqlite3
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.conditions import load_average, machine, noisy, spread

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = REPO_ROOT / ".data" / "bench-scale"
QUESTIONS_FILE = REPO_ROOT / "bench" / "data" / "retrieval_questions.json"
WORKSPACE = "scale"
SHIFT = 41  # characters each further copy's windows move on: coprime with common line lengths
TARGET_P95_MS = 100.0
_SENTENCE = re.compile(r"[A-Z][^.!?\n]{30,160}[.!?]")


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# -- the text -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Base:
    """One corpus file as ingestion reads it: its full text and its chunks (copy 0)."""

    path: Path
    text: str
    chunks: tuple[Any, ...]  # rag.chunking.Chunk


def corpus_files(folder: Path | None) -> list[Path]:
    """The benchmark's files: every supported file under `folder`, else the two Debian corpora (fetched once)."""
    from rag.loaders import SUPPORTED_SUFFIXES

    if folder is not None:
        return sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix.lower() in SUPPORTED_SUFFIXES)
    from bench import corpus, ingest

    return sorted(corpus.documents(log=log)) + ingest.fetch(ingest.DEFAULT_CACHE)


def read_corpus(files: Sequence[Path], count_tokens: Callable[[str], int], *, cache: Path | None = None,
                tokenizer: str = "") -> list[Base]:
    """Load and chunk every file as ingestion does (its default chunk size and overlap); unreadable files are skipped.

    With `cache`, the result is kept there (a pickle this benchmark wrote) and reused while the files, their
    sizes and times, the chunk settings and the tokenizer are the same.
    """
    from rag.chunking import TokenCounter, chunk_sections
    from rag.errors import LoadError
    from rag.ingest import IngestOptions
    from rag.loaders import full_text, load

    options = IngestOptions()
    key = hashlib.sha256(json.dumps(
        [[str(p), p.stat().st_size, p.stat().st_mtime_ns] for p in files]
        + [options.chunk_tokens, options.overlap_tokens, tokenizer]
    ).encode()).hexdigest()  # fmt: skip
    if cache is not None and cache.is_file():
        try:
            with cache.open("rb") as f:
                kept = pickle.load(f)
            if kept["key"] == key:
                return [Base(Path(path), text, chunks) for path, text, chunks in kept["bases"]]
        except Exception as exc:  # noqa: BLE001 - an unreadable cache is read again from the files
            log(f"corpus cache not used: {exc}")
    counter = TokenCounter(count_tokens)
    out = []
    for path in files:
        try:
            sections = load(path)
        except LoadError as exc:
            log(f"skipped {path.name}: {exc}")
            continue
        chunks = chunk_sections(sections, count_tokens=counter, max_tokens=options.chunk_tokens,
                                overlap_tokens=options.overlap_tokens)  # fmt: skip
        out.append(Base(path, full_text(sections), tuple(chunks)))
    if cache is not None:
        cache.parent.mkdir(parents=True, exist_ok=True)
        with cache.open("wb") as f:
            kept = {"key": key, "bases": [(str(b.path), b.text, b.chunks) for b in out]}
            pickle.dump(kept, f, protocol=pickle.HIGHEST_PROTOCOL)
    return out


def _window(text: str, start: int, end: int) -> tuple[int, int]:
    """start and end moved on to word boundaries: start to a word's first character, end past a word's last."""
    n = len(text)
    while 0 < start < n and not (text[start - 1].isspace() and not text[start].isspace()):
        start += 1
    while end < n and not text[end].isspace():
        end += 1
    return start, min(end, n)


def passages(bases: Sequence[Base], target: int) -> Iterator[tuple[Base, Any]]:
    """(file, chunk) pairs, copy 0 then shifted copies, every passage's text distinct, until `target` are given."""
    from rag.chunking import Chunk

    seen: set[bytes] = set()
    given = 0
    for copy in range(10_000):
        fresh = 0
        for base in bases:
            for c in base.chunks:
                if copy:
                    start, end = _window(base.text, c.start + copy * SHIFT, c.end + copy * SHIFT)
                    if end - start < 40:
                        continue
                    c = Chunk(text=base.text[start:end], page=c.page, heading=c.heading, start=start, end=end,
                              index=c.index)  # fmt: skip
                key = hashlib.blake2b(c.passage.encode("utf-8", "surrogateescape"), digest_size=16).digest()
                if key in seen:
                    continue
                seen.add(key)
                yield base, c
                given += 1
                fresh += 1
                if given == target:
                    return
        if not fresh:
            raise SystemExit(f"bench.scale: the corpus gives only {given} distinct passages, fewer than {target}.")


def documents(bases: Sequence[Base], target: int, per_document: int) -> Iterator[tuple[str, list[Any]]]:
    """(source, chunks) for documents of `per_document` consecutive passages of one file, `target` passages in all."""
    from rag.chunking import Chunk

    group: list[Any] = []
    owner: Base | None = None
    number = 0

    def flush() -> tuple[str, list[Any]]:
        nonlocal number
        number += 1
        assert owner is not None
        source = f"{owner.path}#part-{number:06d}"
        return source, [Chunk(c.text, c.page, c.heading, c.start, c.end, i, c.context) for i, c in enumerate(group)]

    for base, chunk in passages(bases, target):
        if group and (base is not owner or len(group) == per_document):
            yield flush()
            group = []
        owner = base
        group.append(chunk)
    if group:
        yield flush()


def questions(bases: Sequence[Base], n: int, *, seed: int = 0) -> list[str]:
    """The benchmark's real questions first, then sentences sampled from the passages, `n` in all."""
    asked = [q["question"] for q in json.loads(QUESTIONS_FILE.read_text(encoding="utf-8"))["questions"]][:n]
    rng = random.Random(seed)
    pool = [c.text for b in bases for c in b.chunks]
    for _ in range(50 * n):
        if len(asked) >= n or not pool:
            break
        found = _SENTENCE.findall(rng.choice(pool))
        if found:
            asked.append(" ".join(rng.choice(found).split()))
    return asked


# -- building -------------------------------------------------------------------------------------------


def folder_size(path: Path) -> int:
    """Bytes of all files under a folder (or of one file)."""
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.exists() else 0


def build(hearth: Any, bases: Sequence[Base], passages_n: int, *, per_document: int, embedder: Any) -> dict[str, Any]:
    """Embed and write `passages_n` passages into the hearth's workspace; the build's figures.

    Each batch of about 256 passages (whole documents) is written as ingestion writes a batch: its documents
    marked as being indexed, their passages into the keyword index and then the vector index (one call
    each), then marked done.
    """
    from rag.chunking import embedding_text
    from rag.lexical import LexicalRow
    from rag.store import chunk_ids

    store, manifest = hearth.store, hearth.manifest
    docs = list(documents(bases, passages_n, per_document))
    t0 = time.perf_counter()
    embed_s = 0.0
    written = 0

    def write(batch: list[tuple[str, list[Any]]]) -> None:
        nonlocal embed_s, written
        t = time.perf_counter()
        vectors = embedder.embed([embedding_text(c) for _, chunks in batch for c in chunks])
        embed_s += time.perf_counter() - t
        marks, rows, versions = [], [], []
        for source, chunks in batch:
            version = hashlib.sha256("\n".join(c.text for c in chunks).encode("utf-8", "surrogateescape")).hexdigest()
            marks.append((source, version, sum(len(c.text) for c in chunks), 0))
            for cid, c in zip(chunk_ids(source, version, chunks), chunks, strict=True):
                rows.append(LexicalRow(cid, source, c.page, c.heading, c.start, c.end, c.text))
                versions.append(version)
        manifest.begin_many(WORKSPACE, marks)
        store.lexical.add_rows(WORKSPACE, ((r.source, r) for r in rows))
        store.vectors.add_rows(WORKSPACE, rows, vectors, versions=versions)
        manifest.finish_many(WORKSPACE, [(source, len(chunks), None) for source, chunks in batch])
        written += len(rows)

    batch: list[tuple[str, list[Any]]] = []
    next_log = 10_000
    for doc in docs:
        batch.append(doc)
        if sum(len(c) for _, c in batch) >= 256:
            write(batch)
            batch = []
            if written >= next_log:
                next_log += 10_000
                log(f"  {written:>7} passages  {time.perf_counter() - t0:6.1f} s  load {load_average()}")
    if batch:
        write(batch)
    seconds = time.perf_counter() - t0
    return {
        "passages": written,
        "documents": len(docs),
        "seconds": round(seconds, 2),
        "embed_seconds": round(embed_s, 2),
        "passages_per_s": round(written / seconds, 1),
        "load_average": load_average(),
    }


def disk(data: Path) -> dict[str, float]:
    """MiB on disk: the vector index, the keyword index, the manifest."""
    mib = 1024 * 1024
    return {
        "vectors_mib": round(folder_size(data / "index") / mib, 1),
        "keywords_mib": round(sum(folder_size(p) for p in data.glob("lexical.sqlite*")) / mib, 1),
        "manifest_mib": round(sum(folder_size(p) for p in data.glob("manifest.sqlite*")) / mib, 1),
    }


# -- measuring ------------------------------------------------------------------------------------------


def percentiles(seconds: Sequence[float]) -> dict[str, float]:
    """p50 and p95 in milliseconds (nearest rank)."""
    ordered = sorted(seconds)
    if not ordered:
        return {"p50_ms": 0.0, "p95_ms": 0.0}
    pick = lambda q: ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))]  # noqa: E731
    return {"p50_ms": round(pick(0.50) * 1000, 1), "p95_ms": round(pick(0.95) * 1000, 1)}


def timed(call: Callable[[], Any]) -> float:
    t = time.perf_counter()
    call()
    return time.perf_counter() - t


# The keyword query before the plan of rag/lexical.py: one FTS5 query over every word, joined to the passages.
BEFORE_SQL = (
    'SELECT c.chunk_id, bm25(chunks_fts, 2.0, 1.0) AS rank FROM chunks_fts JOIN chunks c ON c.rowid = chunks_fts.rowid'
    " WHERE chunks_fts MATCH ? AND c.workspace = ? ORDER BY rank LIMIT ?"
)


def keyword_before(db: sqlite3.Connection, question: str, k: int) -> list[str]:
    """Chunk ids of the k best passages by the keyword query as it was written before (the baseline)."""
    from rag.lexical import query_terms

    match = " OR ".join('"' + t.replace('"', '""') + '"' for t in query_terms(question))
    return [r[0] for r in db.execute(BEFORE_SQL, (match, WORKSPACE, k))] if match else []


def measure(hearth: Any, asked: Sequence[str], *, rounds: int, k: int = 5) -> dict[str, Any]:
    """Search latency over rounds of all questions, then each part's on its own, and the keyword query against
    its baseline (the query before, on its own read-only connection), the two alternating question by question."""
    from inference.embedder import query_vectors

    load_before = load_average()
    # The index's part of a search, what grows with it: the first passages' lines (Hearth.search's default)
    # cost the same at any size, some 0.25 s on 2 cores, and bench.retrieval times them.
    # Warm-up: loads the embedder, fills the keyword index.
    hearth.search(asked[0], k=k, workspace=WORKSPACE, lines=False)
    per_round = []
    for _ in range(rounds):
        per_round.append([timed(lambda q=q: hearth.search(q, k=k, workspace=WORKSPACE, lines=False)) for q in asked])
    everything = [s for r in per_round for s in r]
    p50s = [percentiles(r)["p50_ms"] for r in per_round]

    store, manifest = hearth.store, hearth.manifest
    embedder = hearth.embedder_for(WORKSPACE)
    n = max(hearth.config.retrieval.candidates, k * 3)
    vectors = [query_vectors(embedder, [q])[0] for q in asked]
    parts = {
        "embed_query": [timed(lambda q=q: query_vectors(embedder, [q])) for q in asked],
        "finished_documents": [timed(lambda: store.finished_sources(WORKSPACE, manifest)) for _ in asked],
        "vector_query": [timed(lambda v=v: store.query(WORKSPACE, v, k=n)) for v in vectors],
        "keyword_query": [],
        "keyword_query_before": [],
    }
    same_top = 0
    before_db = sqlite3.connect(f"file:{hearth.config.data_dir / 'lexical.sqlite'}?mode=ro", uri=True)
    try:
        for i, q in enumerate(asked):
            runs: dict[str, list[str]] = {}
            order = ("keyword_query", "keyword_query_before") if i % 2 else ("keyword_query_before", "keyword_query")
            for name in order:
                t = time.perf_counter()
                if name == "keyword_query":
                    runs[name] = [h.chunk_id for h in store.lexical_query(WORKSPACE, q, k=n)]
                else:
                    runs[name] = keyword_before(before_db, q, n)
                parts[name].append(time.perf_counter() - t)
            same_top += set(runs["keyword_query"][:k]) == set(runs["keyword_query_before"][:k])
    finally:
        before_db.close()
    load_after = load_average()
    loads = [x for x in (load_before, load_after) if x is not None]
    return {
        "questions": len(asked),
        "rounds": rounds,
        "search": percentiles(everything),
        "round_p50_ms": p50s,
        "round_spread": round(spread(p50s), 3),
        "noisy": noisy(p50s, load=max(loads) if loads else None),
        "parts": {name: percentiles(s) for name, s in parts.items()},
        "keyword_same_top": same_top,
        "load_before": load_before,
        "load_after": load_after,
    }


# -- the run --------------------------------------------------------------------------------------------


def step(count: int, bases: Sequence[Base], asked: Sequence[str], args: argparse.Namespace,
         embedders: dict[str, Any]) -> dict[str, Any]:
    """Build (or reuse) the index of `count` passages in its own folder and measure search over it."""
    from rag.service import Hearth, HearthConfig

    data = args.data / str(count)
    settings = {"passages": count, "per_document": args.per_document, "build": args.build,
                "corpus": [str(b.path) for b in bases], "shift": SHIFT}  # fmt: skip
    stamp = data / "bench-scale.json"
    reused = args.reuse and stamp.is_file() and json.loads(stamp.read_text())["settings"] == settings
    if not reused:
        shutil.rmtree(data, ignore_errors=True)
    hearth = Hearth(HearthConfig(data_dir=data, embed_threads=args.threads), embedder=embedders[args.query])
    if reused:
        built = json.loads(stamp.read_text())["build"]
        log(f"{count} passages: reusing the index in {data}")
    else:
        log(f"{count} passages: building in {data}")
        builder = embedders[args.build]
        if args.build == "real":
            hearth.manifest.bind_workspace(WORKSPACE, embedder=builder.name, dim=builder.dim)
        built = build(hearth, bases, count, per_document=args.per_document, embedder=builder)
        stamp.write_text(json.dumps({"settings": settings, "build": built}))
    log(f"{count} passages: searching ({len(asked)} questions × {args.rounds} rounds)")
    try:
        return {"passages": count, "build": built, "reused": bool(reused), "disk": disk(data),
                **measure(hearth, asked, rounds=args.rounds)}  # fmt: skip
    finally:
        hearth.close()


def format_table(result: dict[str, Any]) -> str:
    """The result as plain text."""
    m, c = result["machine"], result["corpus"]
    lines = [
        f"Search at scale: {m['cpus']} CPUs ({m['cpu_model']}), load {m['load_average']} at the start; "
        f"{c['files']} files, {c['copy0_passages']} passages in copy 0; built with the {result['build_embedder']} "
        f"embedder, questions embedded with the {result['query_embedder']} one",
        "",
        f"{'passages':>9}{'build/s':>9}{'disk MiB':>10}{'p50 ms':>8}{'p95 ms':>8}   p50/p95 ms of the parts  load",
    ]
    for s in result["steps"]:
        size = sum(s["disk"].values())
        noisy = "  NOISY" if s["noisy"] else ""
        lines.append(f"{s['passages']:>9}{s['build']['passages_per_s']:>9.0f}{size:>10.1f}{s['search']['p50_ms']:>8.1f}"
                     f"{s['search']['p95_ms']:>8.1f}   {s['load_before']}→{s['load_after']}{noisy}")
        for name, p in s["parts"].items():
            lines.append(f"{'':>44}{name:<22}{p['p50_ms']:>7.1f}{p['p95_ms']:>7.1f}")
        lines.append(f"{'':>44}keyword top-5 as before: {s['keyword_same_top']} of {s['questions']} questions")
    lines.append("")
    lines.append(f"target p95 ≤ {TARGET_P95_MS:.0f} ms at {result['steps'][-1]['passages']} passages: "
                 + ("met" if result["met"] else "NOT met"))
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark; returns 0 (2 on usage errors)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
    parser = argparse.ArgumentParser(prog="python -m bench.scale", description=__doc__.split("\n")[0])
    parser.add_argument("--passages", type=int, default=100_000, help="passages in the largest index")
    parser.add_argument("--steps", default=None, help="comma-separated passage counts to measure (default: 10000 and --passages)")
    parser.add_argument("--build", choices=("hash", "real"), default="hash", help="embedder that builds the index")
    parser.add_argument("--query", choices=("real", "hash"), default="real", help="embedder for the questions")
    parser.add_argument("--questions", type=int, default=150, help="questions asked per round")
    parser.add_argument("--rounds", type=int, default=3, help="rounds over all questions")
    parser.add_argument("--per-document", type=int, default=8, help="passages per document")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="folder for the indexes (default: %(default)s)")
    parser.add_argument("--reuse", action="store_true", help="measure an index built before with the same settings")
    parser.add_argument("--corpus", type=Path, default=None, help="use the files under this folder as the text")
    parser.add_argument("--threads", type=int, default=None, help="embedder threads (default: all cores)")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    args = parser.parse_args(argv)
    steps = sorted({int(s) for s in args.steps.split(",")} if args.steps else {min(10_000, args.passages), args.passages})
    if steps[0] < 1 or args.per_document < 1 or args.questions < 1 or args.rounds < 1:
        parser.error("counts must be positive")
    args.data = args.data.resolve()
    conditions = machine()
    from rag.service import Hearth, HearthConfig

    from bench.memory import HashEmbedder

    t0 = time.perf_counter()
    embedders: dict[str, Any] = {"hash": HashEmbedder()}
    if "real" in (args.query, args.build):
        # Converted once into DIR/cache and shared by every step's folder.
        args.data.mkdir(parents=True, exist_ok=True)
        embedders["real"] = Hearth(HearthConfig(data_dir=args.data, embed_threads=args.threads)).embedder_named(None)
        log(f"embedder {embedders['real'].name} loaded in {time.perf_counter() - t0:.1f} s")
    counter = embedders["real" if "real" in embedders else "hash"]
    bases = read_corpus(corpus_files(args.corpus), counter.count_tokens, cache=args.data / "corpus.pickle",
                        tokenizer=counter.name)  # fmt: skip
    log(f"corpus: {len(bases)} files, {sum(len(b.chunks) for b in bases)} passages in copy 0, "
        f"read in {time.perf_counter() - t0:.1f} s")
    asked = questions(bases, args.questions)
    result: dict[str, Any] = {
        "machine": conditions,
        "corpus": {"files": len(bases), "copy0_passages": sum(len(b.chunks) for b in bases), "shift_chars": SHIFT,
                   "per_document": args.per_document},
        "build_embedder": args.build,
        "query_embedder": args.query,
        "target_p95_ms": TARGET_P95_MS,
        "steps": [step(n, bases, asked, args, embedders) for n in steps],
    }
    result["machine"]["load_average_end"] = load_average()
    result["met"] = result["steps"][-1]["search"]["p95_ms"] <= TARGET_P95_MS
    print(json.dumps(result, indent=2) if args.json else format_table(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
