"""Ingestion benchmark on real documentation nobody on the project wrote: Debian's doc packages.

    python -m bench.ingest [--cache DIR] [--embed-sample N] [--workers N] [--pdf-compare] [--json]

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

Progress goes to stderr; the tables (or --json) to stdout.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import shutil
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
        print(f"\n| PDF | pages | pypdfium2 s | pypdfium2 pages/s | pypdfium2 F1 | pypdf s | pypdf pages/s | pypdf F1 |"
              "\n|---|---:|---:|---:|---:|---:|---:|---:|")  # fmt: skip
        for x in rows:
            print(f"| {x['file']} | {x['pages']} | {x['pypdfium2_s']:.2f} | {x['pypdfium2_pages_per_s']:.0f} | "
                  f"{x['pypdfium2_f1']:.3f} | {x['pypdf_s']:.2f} | {x['pypdf_pages_per_s']:.0f} | {x['pypdf_f1']:.3f} |")
        pages = sum(x["pages"] for x in rows)
        a, b = sum(x["pypdfium2_s"] for x in rows), sum(x["pypdf_s"] for x in rows)
        print(f"| **all** | {pages} | {a:.2f} | {pages / a:.0f} | | {b:.2f} | {pages / b:.0f} | |")
        print(f"(F1: word-bag F1 against {ref}; pypdfium2 is {b / a:.1f}× faster)")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.ingest", description=__doc__.split("\n")[0])
    p.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="where the corpus is kept (default: %(default)s)")
    p.add_argument("--embed-sample", type=int, default=256, help="chunks the real embedder embeds (default: %(default)s)")
    p.add_argument("--workers", type=int, default=2, help="reader processes for the pool stages (default: %(default)s)")
    p.add_argument("--threads", type=int, default=None, help="ONNX Runtime threads for the embedder")
    p.add_argument("--pdf-compare", action="store_true", help="also compare pypdf with pypdfium2")
    p.add_argument("--compare-max-pages", type=int, default=400, help="skip larger PDFs in the comparison")
    p.add_argument("--json", action="store_true", help="print the results as JSON")
    args = p.parse_args(argv)

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
    sys.exit(main())
