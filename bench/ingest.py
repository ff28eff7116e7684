"""Ingestion benchmark on real documentation nobody on the project wrote: Debian's doc packages.

    python -m bench.ingest [--cache DIR] [--embed-sample N] [--workers N] [--pdf-compare] [--json]
    python -m bench.ingest --small-files N [--rounds R] [--write-batch N] [--skip-per-file] [--json]
    python -m bench.ingest --whole-process --naive-python PY [--rounds R] [--first-run] [--json]

Fetches (once) pinned Debian documentation packages with `apt-get download NAME=VERSION`, checks each
.deb against its pinned SHA-256, unpacks it with `dpkg-deb -x`, and keeps the PDFs and HTML pages in
`DIR/docs/` (default `.data/bench-ingest/`). Then it times each stage of Hearth's ingestion:

  read      every file through the loaders in this process, one core (pages/s, MB/s, per format)
  read ×N   the same through the worker pool of N processes (rag.parse_pool), wall time
  chunk     token-aware chunking with the real embedder's tokenizer (chunks/s)
  embed     the real default embedder (ONNX Runtime, CPU) on a sample of chunks (chunks/s)
  store     every chunk into a fresh Chroma + keyword index, one document at a time (chunks/s)
  ingest    the whole pipeline (hearth's ingest()) with a hash embedder, so it times everything but
            the embedding model: discovery, hashing, parallel reading, chunking, manifest and store

With --pdf-compare it also reads every PDF of at most --compare-max-pages pages with pypdf and with
pypdfium2, timing both and scoring each text against poppler's `pdftotext` (apt-get install
poppler-utils) by word-bag F1.

--small-files N makes N text files of about 1,000 words of the corpus's real text each (once, under
DIR/small-N/) and ingests them into a fresh index with the hash stand-in for the model, alternately
through Hearth's pipeline and with each file written on its own (`write_batch=0`, the path before the
pipeline), R rounds: seconds, chunks/s, ms per file, the stage split (read in the reader processes,
chunk, embed, write: seconds each, summed over threads, so they overlap) and the CPU used by the process
and its readers as a share of the machine's cores. The speed-up is best round against best round.

--whole-process times `hearth ingest` (a fresh process, a fresh index; the embedder converted beforehand,
as in an installed app) against the script a user would write (pypdf and BeautifulSoup, 1000-character
chunks, sentence-transformers, Chroma: `naive_ingest` here, run by PY, an interpreter that has them) on
the retrieval corpus (bench.corpus: the Debian Administrator's Handbook, 127 HTML pages, and the New
Maintainers' Guide PDF), alternating, R rounds; the ratio is of the medians, and each side reports the tokens it
embedded. Hearth runs with the machine's model cache prepared (HEARTH_CACHE_DIR), or with --first-run an empty
one, as on a new machine.

Every mode records the machine (CPUs, CPU model, load average before and after) and marks a run whose
baseline rounds spread more than 15 % (or whose load average was above 1.5) as noisy (bench.conditions).
Progress goes to stderr; the tables (or --json) to stdout.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CACHE = REPO_ROOT / ".data" / "bench-ingest"
STAMP = ".unpacked.json"


@dataclass(frozen=True)
class Package:
    """A pinned Debian documentation package and which of its files (by glob, under `folder`) to keep."""

    name: str
    version: str
    sha256: str  # of the .deb, as `apt-cache show NAME=VERSION` lists it
    folder: str
    patterns: tuple[str, ...]


PACKAGES = (
    Package("r-doc-pdf", "4.2.2.20221110-2", "beb104ad5818d261f280a868294645ca31d7c63365f2c9a55aa3ca9aad5aa71d",
            "usr/share/R/doc/manual", ("*.pdf",)),
    Package("gnuplot-doc", "5.4.4+dfsg1-2", "73fe1816a296594cf6a1d38528f8d740fd650f57a2cb62e029f7920fcd5b31f0",
            "usr/share/doc/gnuplot", ("gnuplot.pdf",)),
    Package("asymptote-doc", "2.85+ds-1", "b2ae6e97c64ede66c1e41cc913f790b01188d198557203a2b3c500ba3495e6ca",
            "usr/share/doc/asymptote", ("*.pdf",)),
    Package("debian-reference-en", "2.100", "9f31d3a17df505de09689ca255512ea58c1fc47c59bb1b0c7bf1c23362e9743f",
            "usr/share/debian-reference", ("*.pdf", "*.html")),
    Package("r-doc-html", "4.2.2.20221110-2", "2c615dd386993a440b80fd4e9060318386e31fbe47f5be65f295f5fb34002c5c",
            "usr/share/R/doc/manual", ("*.html",)),
)  # fmt: skip


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def fetch(cache: Path) -> list[Path]:
    """Download, check and unpack the packages once; return the corpus files (sorted)."""
    docs = cache / "docs"
    stamp = cache / STAMP
    wanted = {p.name: p.sha256 for p in PACKAGES}
    if not (stamp.is_file() and json.loads(stamp.read_text()) == wanted):
        if shutil.which("apt-get") is None or shutil.which("dpkg-deb") is None:
            sys.exit("bench.ingest needs apt-get and dpkg-deb (Debian or Ubuntu) to fetch its corpus.")
        shutil.rmtree(docs, ignore_errors=True)
        with tempfile.TemporaryDirectory() as tmp:
            for pkg in PACKAGES:
                log(f"fetching {pkg.name}={pkg.version}")
                r = subprocess.run(["apt-get", "download", f"{pkg.name}={pkg.version}"], cwd=tmp,
                                   capture_output=True, text=True)  # fmt: skip
                debs = list(Path(tmp).glob(f"{pkg.name}_*.deb"))
                if r.returncode != 0 or not debs:
                    sys.exit(f"apt-get download {pkg.name}={pkg.version} failed (run apt-get update?): {r.stderr}")
                digest = hashlib.sha256(debs[0].read_bytes()).hexdigest()
                if digest != pkg.sha256:
                    sys.exit(f"{debs[0].name}: SHA-256 {digest} is not the pinned {pkg.sha256}")
                unpacked = Path(tmp) / pkg.name
                subprocess.run(["dpkg-deb", "-x", str(debs[0]), str(unpacked)], check=True)
                target = docs / pkg.name
                target.mkdir(parents=True, exist_ok=True)
                for pattern in pkg.patterns:
                    for f in sorted((unpacked / pkg.folder).glob(pattern)):
                        if f.is_file() and not f.is_symlink():
                            shutil.copy2(f, target / f.name)
        stamp.write_text(json.dumps(wanted))
    return sorted(p for p in docs.rglob("*") if p.is_file())


# -- stages --------------------------------------------------------------------------------------------


def stage_read(files: list[Path]) -> tuple[dict[str, Any], dict[Path, Any]]:
    """Every file through the loaders in this process."""
    from rag.parse_pool import ParseJob, parse_file

    per_format: dict[str, Counter[str]] = defaultdict(Counter)
    parsed = {}
    for i, f in enumerate(files, 1):
        result = parse_file(ParseJob(f))
        fmt = f.suffix.lower().lstrip(".")
        c = per_format[fmt]
        c["files"] += 1
        c["bytes"] += result.size
        c["seconds_ms"] += int(result.seconds * 1000)
        if result.error:
            c["failed"] += 1
            log(f"  read failed: {f.name}: {result.error[1]}")
        else:
            c["pages"] += result.pages
            parsed[f] = result
        if i % 25 == 0 or i == len(files):
            log(f"  read {i}/{len(files)}")
    rows = {}
    for fmt, c in sorted(per_format.items()):
        s = c["seconds_ms"] / 1000
        rows[fmt] = {"files": c["files"], "pages": c["pages"], "mb": c["bytes"] / 2**20, "seconds": s,
                     "pages_per_s": c["pages"] / s if s else 0.0, "mb_per_s": c["bytes"] / 2**20 / s if s else 0.0,
                     "failed": c["failed"]}  # fmt: skip
    return rows, parsed


def stage_pool(files: list[Path], workers: int) -> float:
    from rag.parse_pool import ParseJob, ParsePool

    t0 = time.perf_counter()
    for _ in ParsePool(workers).run(ParseJob(f) for f in files):
        pass
    return time.perf_counter() - t0


def stage_chunk(parsed: dict[Path, Any], count_tokens: Callable[[str], int]) -> tuple[dict[str, Any], list]:
    from rag.chunking import chunk_sections

    t0 = time.perf_counter()
    all_chunks = []
    for result in parsed.values():
        all_chunks.append((result, chunk_sections(result.sections, count_tokens=count_tokens, max_tokens=200,
                                                  overlap_tokens=40)))  # fmt: skip
    seconds = time.perf_counter() - t0
    n = sum(len(c) for _, c in all_chunks)
    return {"chunks": n, "seconds": seconds, "chunks_per_s": n / seconds if seconds else 0.0}, all_chunks


def stage_embed(embedder: Any, texts: list[str]) -> dict[str, Any]:
    t0 = time.perf_counter()
    embedder.embed(texts)
    seconds = time.perf_counter() - t0
    return {"chunks": len(texts), "seconds": seconds, "chunks_per_s": len(texts) / seconds if seconds else 0.0}


def stage_store(all_chunks: list, dim: int) -> dict[str, Any]:
    import numpy as np

    from rag.lexical import LexicalIndex
    from rag.store import ChromaStore, HybridStore

    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        store = HybridStore(ChromaStore(Path(tmp) / "index"), LexicalIndex(Path(tmp) / "lexical.sqlite"))
        t0 = time.perf_counter()
        n = 0
        for result, chunks in all_chunks:
            vectors = rng.standard_normal((len(chunks), dim)).astype(np.float32)
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            store.replace_document("bench", str(result.path), chunks, vectors, version=result.sha256)
            n += len(chunks)
        seconds = time.perf_counter() - t0
    return {"chunks": n, "seconds": seconds, "chunks_per_s": n / seconds if seconds else 0.0}


def stage_ingest(folder: Path, count_tokens: Callable[[str], int], workers: int) -> dict[str, Any]:
    from bench.memory import HashEmbedder
    from rag.ingest import IngestOptions
    from rag.service import Hearth, HearthConfig

    with tempfile.TemporaryDirectory() as tmp:
        h = Hearth(HearthConfig(data_dir=Path(tmp), ingest=IngestOptions(workers=workers)),
                   embedder=HashEmbedder(count_tokens))  # fmt: skip
        first = h.ingest([folder], workspace="bench")
        again = h.ingest([folder], workspace="bench")
    return {
        "files": first.added, "pages": first.pages, "chunks": first.chunks, "reused": first.reused,
        "seconds": first.seconds, "pages_per_s": first.pages / first.seconds,
        "chunks_per_s": first.chunks / first.seconds, "reingest_seconds": again.seconds,
        "reingest_unchanged": again.unchanged, "failed": [f.to_json() for f in first.failed],
    }  # fmt: skip


# -- pypdf against pypdfium2 -----------------------------------------------------------------------------

_WORD = re.compile(r"\w+")


def word_f1(text: str, reference: str) -> float:
    """F1 of the bags of lower-cased words of a text against a reference text."""
    a, b = Counter(_WORD.findall(text.lower())), Counter(_WORD.findall(reference.lower()))
    common = sum((a & b).values())
    if not common:
        return 0.0
    precision, recall = common / sum(a.values()), common / sum(b.values())
    return 2 * precision * recall / (precision + recall)


def pdf_compare(pdfs: list[Path], max_pages: int) -> list[dict[str, Any]]:
    import logging

    import pypdf
    import pypdfium2

    logging.getLogger("pypdf").setLevel(logging.ERROR)
    have_reference = shutil.which("pdftotext") is not None
    rows = []
    for path in pdfs:
        doc = pypdfium2.PdfDocument(str(path))
        pages = len(doc)
        if pages > max_pages:
            doc.close()
            continue
        log(f"  comparing on {path.name} ({pages} pages)")
        t0 = time.perf_counter()
        texts = []
        for i in range(pages):
            page = doc[i]
            textpage = page.get_textpage()
            texts.append(textpage.get_text_range())
            textpage.close()
            page.close()
        doc.close()
        t_pdfium = time.perf_counter() - t0
        t0 = time.perf_counter()
        reader = pypdf.PdfReader(str(path))
        texts_pypdf = [p.extract_text() or "" for p in reader.pages]
        t_pypdf = time.perf_counter() - t0
        if have_reference:
            reference = subprocess.run(["pdftotext", "-q", "-enc", "UTF-8", str(path), "-"],
                                       capture_output=True, text=True).stdout  # fmt: skip
        else:
            reference = "\n".join(texts)  # no poppler: pypdf is scored against pypdfium2
        rows.append({
            "file": path.name, "pages": pages,
            "pypdfium2_s": t_pdfium, "pypdfium2_pages_per_s": pages / t_pdfium,
            "pypdfium2_f1": word_f1("\n".join(texts), reference),
            "pypdf_s": t_pypdf, "pypdf_pages_per_s": pages / t_pypdf,
            "pypdf_f1": word_f1("\n".join(texts_pypdf), reference),
            "reference": "pdftotext" if have_reference else "pypdfium2",
        })  # fmt: skip
    return rows


# -- many small files: the pipeline against writing each file on its own -------------------------------


def small_files(cache: Path, n: int, *, words: int = 1000, log_every: int = 2000) -> Path:
    """`n` text files of about `words` words of real text each (the corpus's HTML pages, cut at paragraph
    boundaries into overlapping windows), made once under `cache/small-N/`; returns the folder."""
    folder = cache / f"small-{n}"
    stamp = folder / ".made.json"
    want = {"files": n, "words": words, "version": 1}
    if stamp.is_file() and json.loads(stamp.read_text()) == want:
        return folder
    from rag.loaders import load

    paragraphs = []
    for path in fetch(cache):
        if path.suffix == ".html":
            for section in load(path):
                paragraphs += [p.strip() for p in re.split(r"\n\s*\n", section.text) if len(p.split()) >= 5]
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    for i in range(n):
        j, body, count = (i * 37) % len(paragraphs), [], 0  # a window starting 37 paragraphs after the last
        while count < words:
            body.append(paragraphs[j % len(paragraphs)])
            count += len(body[-1].split())
            j += 1
        (folder / f"doc{i:05d}.txt").write_text("\n\n".join(body) + "\n", encoding="utf-8")
        if (i + 1) % log_every == 0:
            log(f"  wrote {i + 1}/{n} small files")
    stamp.write_text(json.dumps(want))
    return folder


class TokenizerHashEmbedder:
    """bench.memory's hash stand-in for the model, counting tokens with the real tokenizer (so the chunks
    are the ones Hearth makes), itself picklable."""

    def __init__(self, tokenizer_json: Path) -> None:
        from tokenizers import Tokenizer

        from bench.memory import HashEmbedder

        self._tokenizer = Tokenizer.from_file(str(tokenizer_json))
        self._tokenizer.no_padding()
        self._tokenizer.no_truncation()
        self._hash = HashEmbedder()
        self.name, self.dim, self.max_tokens = self._hash.name, self._hash.dim, self._hash.max_tokens

    def count_tokens(self, text: str) -> int:
        return len(self._tokenizer.encode(text, add_special_tokens=False).ids)

    def embed(self, texts: Any) -> Any:
        return self._hash.embed(texts)


def _cpu_seconds() -> float:
    """CPU time of this process and of its children that have ended (the reader processes do, per run)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def ingest_round(folder: Path, embedder: Any, *, write_batch: int, workers: int | None) -> dict[str, Any]:
    """One fresh ingest of `folder`; its rate, stage split and CPU use (of the process and its readers)."""
    from bench.conditions import load_average
    from rag.ingest import IngestOptions
    from rag.service import Hearth, HearthConfig

    with tempfile.TemporaryDirectory(prefix="hearth-bench-") as tmp:
        h = Hearth(HearthConfig(data_dir=Path(tmp), ingest=IngestOptions(write_batch=write_batch, workers=workers)),
                   embedder=embedder)  # fmt: skip
        _ = h.store, h.manifest  # opened before the clock starts, as in a running app
        load, cpu0, t0 = load_average(), _cpu_seconds(), time.perf_counter()
        report = h.ingest([folder], workspace="bench")
        seconds, cpu = time.perf_counter() - t0, _cpu_seconds() - cpu0
        h.close()
    if report.failed or not report.added:
        raise SystemExit(f"bench.ingest: the ingest failed: {report.failed[:3]}")
    cpus = machine()["cpus"] or 1
    return {
        "files": report.added, "chunks": report.chunks, "seconds": seconds, "files_per_s": report.added / seconds,
        "chunks_per_s": report.chunks / seconds, "ms_per_file": seconds / report.added * 1000,
        "cpu_seconds": cpu, "utilisation": cpu / seconds / cpus, "load_before": load,
        "stages": {k: round(v, 2) for k, v in report.stages.items()},
    }  # fmt: skip


def run_small_files(args: argparse.Namespace) -> dict[str, Any]:
    """Hearth's pipeline against writing each file on its own (the path before it), alternating rounds."""
    from bench.conditions import load_average, verdict
    from inference.models import default_embedder_dir

    folder = small_files(args.cache, args.small_files)
    embedder = TokenizerHashEmbedder(default_embedder_dir(args.cache / "models") / "tokenizer.json")
    before = load_average()
    rounds: dict[str, list[dict[str, Any]]] = {"per_file": [], "pipeline": []}
    for r in range(args.rounds):
        for name, batch in (("per_file", 0), ("pipeline", args.write_batch)):
            if name == "per_file" and args.skip_per_file:
                continue
            log(f"round {r + 1}/{args.rounds}: {name} ({args.small_files} files)")
            result = ingest_round(folder, embedder, write_batch=batch, workers=None)
            log(f"  {result['seconds']:.1f} s, {result['chunks_per_s']:.0f} chunks/s, {result['ms_per_file']:.1f} ms/file, "
                f"CPU {result['utilisation']:.0%} of {machine()['cpus']} cores, stages {result['stages']}")  # fmt: skip
            rounds[name].append(result)
    best = {name: min(rs, key=lambda x: x["seconds"]) for name, rs in rounds.items() if rs}
    out: dict[str, Any] = {"files": args.small_files, "machine": machine(), "rounds": rounds, "best": best}
    base = [x["seconds"] for x in rounds["per_file"]] or [x["seconds"] for x in rounds["pipeline"]]
    out.update(verdict(base, load_before=before, load_after=load_average()))
    if "per_file" in best:
        out["speedup"] = best["per_file"]["seconds"] / best["pipeline"]["seconds"]
    return out


# -- whole process: `hearth ingest` against the script a user would write ---------------------------------

NAIVE = "--naive-worker"


def naive_ingest(folder: Path, model_dir: Path, db: Path) -> dict[str, Any]:
    """The ingest script a user would write: pypdf and BeautifulSoup, 1000-character chunks,
    sentence-transformers, Chroma. Run in an interpreter that has them (--naive-python)."""
    t0 = time.perf_counter()
    import chromadb
    from bs4 import BeautifulSoup
    from pypdf import PdfReader
    from sentence_transformers import SentenceTransformer

    stages = dict.fromkeys(("start", "read", "embed", "write"), 0.0)
    embedded: list[str] = []
    model = SentenceTransformer(str(model_dir), device="cpu")
    collection = chromadb.PersistentClient(path=str(db)).get_or_create_collection("docs")
    stages["start"] = time.perf_counter() - t0
    chunks = 0
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        t = time.perf_counter()
        if path.suffix == ".pdf":
            text = "\n".join(page.extract_text() or "" for page in PdfReader(path).pages)
        elif path.suffix in (".html", ".htm"):
            text = BeautifulSoup(path.read_bytes(), "html.parser").get_text(" ")
        else:
            text = path.read_text(encoding="utf-8", errors="replace")
        pieces = [p for p in (text[i : i + 1000].strip() for i in range(0, len(text), 1000)) if p]
        stages["read"] += time.perf_counter() - t
        if not pieces:
            continue
        t = time.perf_counter()
        vectors = model.encode(pieces, batch_size=32, normalize_embeddings=True)
        stages["embed"] += time.perf_counter() - t
        t = time.perf_counter()
        collection.add(ids=[f"{path}:{i}" for i in range(len(pieces))], embeddings=vectors.tolist(),
                       documents=pieces, metadatas=[{"source": str(path)}] * len(pieces))  # fmt: skip
        stages["write"] += time.perf_counter() - t
        chunks += len(pieces)
        embedded += pieces
    # The tokens embedded, counted after the work and timed apart: the caller takes this off the process's time.
    t = time.perf_counter()
    tokens = sum(len(ids) for ids in model.tokenizer(embedded, truncation=True,
                                                       max_length=model.max_seq_length)["input_ids"])
    return {"chunks": chunks, "tokens_embedded": tokens, "counting_s": round(time.perf_counter() - t, 2),
            "stages": {k: round(v, 2) for k, v in stages.items()}}


def _timed_process(cmd: list[str], **kwargs: Any) -> tuple[float, float, subprocess.CompletedProcess[str]]:
    """Run a command; (wall seconds, CPU seconds of it and its children, the result)."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, **kwargs)
    seconds = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[:3])}… failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return seconds, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, proc


def run_whole_process(args: argparse.Namespace) -> dict[str, Any]:
    """`hearth ingest` and the naive script, each a fresh process on a fresh index, alternating rounds."""
    from bench.conditions import load_average, verdict
    from bench.corpus import corpus_root, documents
    from inference.models import DEFAULT_EMBEDDER, _module_dir, default_embedder_dir

    documents()
    folder = corpus_root()
    model_dir = _module_dir(DEFAULT_EMBEDDER.module, DEFAULT_EMBEDDER.package) / DEFAULT_EMBEDDER.folder
    prepared = args.cache / "whole-process-cache"
    default_embedder_dir(prepared)  # converted once: each round's data folder gets a copy, as an installed app has
    cpus = machine()["cpus"] or 1
    before = load_average()
    rounds: dict[str, list[dict[str, Any]]] = {"naive": [], "hearth": []}
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    for r in range(args.rounds):
        with tempfile.TemporaryDirectory(prefix="hearth-bench-") as tmp:
            log(f"round {r + 1}/{args.rounds}: the naive script")
            seconds, cpu, proc = _timed_process([args.naive_python, str(Path(__file__).resolve()), NAIVE, str(folder),
                                                 str(model_dir), str(Path(tmp) / "naive-db")], env=env)  # fmt: skip
            result = json.loads(proc.stdout.strip().splitlines()[-1])
            seconds -= result.get("counting_s", 0.0)  # counting its tokens is not the script's work
            rounds["naive"].append({"seconds": seconds, "cpu_seconds": cpu, "utilisation": cpu / seconds / cpus,
                                    **result})  # fmt: skip
            log(f"  {seconds:.1f} s, {result['chunks']} chunks, CPU {cpu / seconds / cpus:.0%}, stages {result['stages']}")
            data = Path(tmp) / "hearth"
            # The machine's model cache as an installed app has it (converted beforehand), or, with --first-run,
            # an empty one: the embedder's conversion and quantisation are then part of this process.
            cache = Path(tmp) / "machine-cache" if args.first_run else prepared
            log(f"round {r + 1}/{args.rounds}: hearth ingest" + (" (an empty model cache)" if args.first_run else ""))
            cmd = [sys.executable, "-m", "app", "--data-dir", str(data), "ingest", str(folder), "--json"]
            seconds, cpu, proc = _timed_process(cmd, env=dict(env, HEARTH_CACHE_DIR=str(cache)), cwd=REPO_ROOT)
            report = json.loads(proc.stdout)
            rounds["hearth"].append({"seconds": seconds, "cpu_seconds": cpu, "utilisation": cpu / seconds / cpus,
                                     "chunks": report["chunks"], "stages": report.get("stages"),
                                     "tokens_embedded": report.get("tokens_embedded"),
                                     "ingest_seconds": report["seconds"]})  # fmt: skip
            log(f"  {seconds:.1f} s, {report['chunks']} passages, CPU {cpu / seconds / cpus:.0%}, "
                f"stages {report.get('stages')} (ingest itself {report['seconds']:.1f} s)")  # fmt: skip
    best = {name: min(rs, key=lambda x: x["seconds"]) for name, rs in rounds.items()}
    median = {name: statistics.median(x["seconds"] for x in rs) for name, rs in rounds.items()}
    out = {"corpus": str(folder), "machine": machine(), "rounds": rounds, "best": best, "first_run": args.first_run,
           "median_seconds": median, "ratio": median["naive"] / median["hearth"],
           "best_ratio": best["naive"]["seconds"] / best["hearth"]["seconds"]}  # fmt: skip
    out.update(verdict([x["seconds"] for x in rounds["naive"]], load_before=before, load_after=load_average()))
    return out


def machine() -> dict[str, Any]:
    from bench.conditions import machine as conditions

    return conditions()


# -- report ----------------------------------------------------------------------------------------------


def print_tables(result: dict[str, Any]) -> None:
    print(f"corpus: {result['corpus']['files']} files, {result['corpus']['mb']:.1f} MB "
          f"({', '.join(p.name for p in PACKAGES)})")  # fmt: skip
    print("\n| stage | format | files | pages | MB | seconds | pages/s | MB/s |\n|---|---|---:|---:|---:|---:|---:|---:|")
    for fmt, r in result["read"].items():
        print(f"| read (1 process) | {fmt} | {r['files']} | {r['pages']} | {r['mb']:.1f} | {r['seconds']:.2f} "
              f"| {r['pages_per_s']:.0f} | {r['mb_per_s']:.1f} |")  # fmt: skip
    total_pages = sum(r["pages"] for r in result["read"].values())
    pool = result["read_pool"]
    print(f"| read ({pool['workers']} processes) | all | {result['corpus']['files']} | {total_pages} | "
          f"{result['corpus']['mb']:.1f} | {pool['seconds']:.2f} | {total_pages / pool['seconds']:.0f} | "
          f"{result['corpus']['mb'] / pool['seconds']:.1f} |")  # fmt: skip
    print("\n| stage | chunks | seconds | chunks/s |\n|---|---:|---:|---:|")
    for name in ("chunk", "embed", "store"):
        r = result[name]
        label = {"chunk": "chunk (real tokenizer)", "embed": f"embed ({result['embedder']}, sample)",
                 "store": "store (Chroma + keyword index)"}[name]  # fmt: skip
        print(f"| {label} | {r['chunks']} | {r['seconds']:.2f} | {r['chunks_per_s']:.1f} |")
    r = result["ingest"]
    print(f"| ingest() minus the model ({r['files']} files, {r['pages']} pages) | {r['chunks']} | {r['seconds']:.2f} "
          f"| {r['chunks_per_s']:.1f} |")  # fmt: skip
    print(f"\nre-ingest of the unchanged corpus: {r['reingest_unchanged']} files unchanged in {r['reingest_seconds']:.2f} s")
    if r["reused"]:
        print(f"vectors reused for identical chunks (duplicate files): {r['reused']}")
    if "pdf_compare" in result:
        rows = result["pdf_compare"]
        ref = rows[0]["reference"] if rows else "pdftotext"
        print("\n| PDF | pages | pypdfium2 s | pypdfium2 pages/s | pypdfium2 F1 | pypdf s | pypdf pages/s | pypdf F1 |"
              "\n|---|---:|---:|---:|---:|---:|---:|---:|")  # fmt: skip
        for x in rows:
            print(f"| {x['file']} | {x['pages']} | {x['pypdfium2_s']:.2f} | {x['pypdfium2_pages_per_s']:.0f} | "
                  f"{x['pypdfium2_f1']:.3f} | {x['pypdf_s']:.2f} | {x['pypdf_pages_per_s']:.0f} | {x['pypdf_f1']:.3f} |")
        pages = sum(x["pages"] for x in rows)
        a, b = sum(x["pypdfium2_s"] for x in rows), sum(x["pypdf_s"] for x in rows)
        print(f"| **all** | {pages} | {a:.2f} | {pages / a:.0f} | | {b:.2f} | {pages / b:.0f} | |")
        print(f"(F1: word-bag F1 against {ref}; pypdfium2 is {b / a:.1f}× faster)")


def print_comparison(out: dict[str, Any]) -> str:
    """The --small-files or --whole-process result as a Markdown table, with its conditions."""
    m = out["machine"]
    lines = [f"machine: {m['cpus']} CPUs ({m['cpu_model']}), load average {out['load_before']} before, "
             f"{out['load_after']} after; baseline spread {out['baseline_spread']:.0%}"
             + (" — NOISY: do not quote" if out["noisy"] else ""), "",
             "| run | round | seconds | chunks | chunks/s | CPU (share of cores) | stages (s) |",
             "|---|---:|---:|---:|---:|---:|---|"]  # fmt: skip
    for name, rounds in out["rounds"].items():
        for i, r in enumerate(rounds, 1):
            stages = ", ".join(f"{k} {v:.1f}" for k, v in (r.get("stages") or {}).items())
            lines.append(f"| {name} | {i} | {r['seconds']:.1f} | {r['chunks']} | {r['chunks'] / r['seconds']:.0f} "
                         f"| {r['utilisation']:.0%} | {stages} |")  # fmt: skip
    if "speedup" in out:
        lines.append(f"\npipeline against per-file writes, best rounds: {out['speedup']:.2f}×")
    if "ratio" in out:
        lines.append(f"\nhearth ingest against the naive script, medians: {out['ratio']:.2f}× "
                     f"(best rounds {out['best_ratio']:.2f}×)")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.ingest", description=__doc__.split("\n")[0])
    p.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="where the corpus is kept (default: %(default)s)")
    p.add_argument("--embed-sample", type=int, default=256, help="chunks the real embedder embeds (default: %(default)s)")
    p.add_argument("--workers", type=int, default=2, help="reader processes for the pool stages (default: %(default)s)")
    p.add_argument("--threads", type=int, default=None, help="ONNX Runtime threads for the embedder")
    p.add_argument("--pdf-compare", action="store_true", help="also compare pypdf with pypdfium2")
    p.add_argument("--compare-max-pages", type=int, default=400, help="skip larger PDFs in the comparison")
    p.add_argument("--small-files", type=int, default=0, metavar="N", help="the many-small-files benchmark")
    p.add_argument("--whole-process", action="store_true", help="hearth ingest against the naive script")
    p.add_argument("--naive-python", default=os.environ.get("HEARTH_BENCH_PYTHON"),
                   help="an interpreter with pypdf, bs4, sentence-transformers and chromadb")
    p.add_argument("--first-run", action="store_true",
                   help="--whole-process: hearth starts with an empty model cache, as on a new machine")
    p.add_argument("--rounds", type=int, default=1, help="rounds of each side, alternating (default: %(default)s)")
    p.add_argument("--write-batch", type=int, default=1024, help="passages written together (default: %(default)s)")
    p.add_argument("--skip-per-file", action="store_true", help="only the pipeline (no per-file baseline)")
    p.add_argument("--json", action="store_true", help="print the results as JSON")
    args = p.parse_args(argv)
    if args.small_files or args.whole_process:
        if args.whole_process and not args.naive_python:
            p.error("--whole-process needs --naive-python (or HEARTH_BENCH_PYTHON)")
        out = run_small_files(args) if args.small_files else run_whole_process(args)
        print(json.dumps(out, indent=2) if args.json else print_comparison(out))
        return 0

    files = fetch(args.cache)
    result: dict[str, Any] = {"corpus": {"files": len(files), "mb": sum(f.stat().st_size for f in files) / 2**20}}
    log(f"corpus: {len(files)} files")

    from inference.embedder import OnnxEmbedder
    from inference.models import default_embedder_dir

    embedder = OnnxEmbedder(default_embedder_dir(args.cache / "models"), threads=args.threads)
    result["embedder"] = embedder.name

    log("read (one process)")
    result["read"], parsed = stage_read(files)
    log(f"read ({args.workers} processes)")
    result["read_pool"] = {"workers": args.workers, "seconds": stage_pool(files, args.workers)}
    log("chunk")
    result["chunk"], all_chunks = stage_chunk(parsed, embedder.count_tokens)
    log(f"embed {args.embed_sample} chunks")
    from rag.ingest import embedding_text

    sample = [embedding_text(c) for _, chunks in all_chunks for c in chunks][: args.embed_sample]
    result["embed"] = stage_embed(embedder, sample)
    log("store")
    result["store"] = stage_store(all_chunks, embedder.dim)
    log("ingest() with a hash embedder")
    result["ingest"] = stage_ingest(args.cache / "docs", embedder.count_tokens, args.workers)
    if args.pdf_compare:
        log("pypdf vs pypdfium2")
        result["pdf_compare"] = pdf_compare([f for f in files if f.suffix == ".pdf"], args.compare_max_pages)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print_tables(result)
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == NAIVE:  # the naive script, in the interpreter that has its packages
        print(json.dumps(naive_ingest(Path(sys.argv[2]), Path(sys.argv[3]), Path(sys.argv[4]))))
        sys.exit(0)
    sys.exit(main())
