"""The hostile corpus at soak scale through the real ingest path, with the figures the issue asks for.

    python -m bench.hostile [--scale soak|ci] [--folder DIR] [--workers N] [--timeout S] [--memory-mb N] [--json]

Writes tests/hostile_corpus.py's corpus (soak: the 10,000-page PDF with text on every page, the 1 GB
single line, a 1 GB content-stream bomb...) into a temporary folder (or --folder), ingests it with
Hearth's ingest() and the reader worker pool into a fresh ChromaDB, with the hash embedder (the model is
not what is tested), and prints: files tried, indexed, failed by kind, crashes (must be 0), timeouts,
files whose outcome broke their expectation (must be 0), max worker RSS, this process's peak RSS and the
wall time. The file-size cap is raised to 2 GiB so that the 1 GB line is read and the memory cap, not
the size check, has to stop it; the page cap to 20,000 so that the 10,000-page PDFs are read, not refused.
Exit status 1 on any crash or broken expectation. The folder is removed
afterwards unless --folder was given.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import rag.ingest
from rag.ingest import IngestOptions
from rag.parse_pool import DEFAULT_MEMORY_LIMIT, ParsePool
from rag.service import Hearth, HearthConfig
from tests.fakes import HashEmbedder
from tests.hostile_corpus import make_hostile_corpus, unmet


def run(folder: Path, *, scale: str, workers: int, timeout: float, memory: int) -> dict:
    """Write the corpus, ingest it, and return the figures."""
    t0 = time.monotonic()
    expect = make_hostile_corpus(folder / "corpus", scale=scale)
    written = time.monotonic() - t0
    # The soak corpus has a 10,000-page PDF to read whole; the ci one expects its 6,000 pages over the default cap.
    max_pages = 20_000 if scale == "soak" else IngestOptions().max_pages
    options = IngestOptions(
        workers=workers, parse_timeout=timeout, parse_memory_bytes=memory, max_file_bytes=2 << 30, max_pages=max_pages
    )
    hearth = Hearth(HearthConfig(data_dir=folder / "data", ingest=options), embedder=HashEmbedder())
    peaks: list[int] = []

    class RecordingPool(ParsePool):  # the real pool; it only notes each worker's peak memory (VmHWM)
        def run(self, jobs):  # type: ignore[no-untyped-def]
            for parsed in super().run(jobs):
                peaks.append(parsed.peak_rss)
                yield parsed

    rag.ingest.ParsePool = RecordingPool  # type: ignore[misc]
    try:
        t0 = time.monotonic()
        report = hearth.ingest([folder / "corpus"])
        seconds = time.monotonic() - t0
    finally:
        rag.ingest.ParsePool = ParsePool  # type: ignore[misc]
    root = str((folder / "corpus").resolve())
    failed = {os.path.relpath(f.source, root): f for f in report.failed}
    indexed = {os.path.relpath(d.source, root) for d in hearth.sources() if d.status == "done"}
    broken = [f"{name!r}: {what}" for name, what in unmet(expect, failed, indexed).items()]
    return {
        "scale": scale,
        "files_tried": len(expect),
        "indexed": report.added,
        "skipped": report.skipped,
        "failed_by_kind": dict(sorted(Counter(f.kind for f in report.failed).items())),
        "crashes": sum("crashed" in f.error for f in report.failed),
        "timeouts": sum(f.kind == "timeout" for f in report.failed),
        "broken_expectations": broken,
        "memory_cap_mib": memory >> 20,
        # Of the workers that returned a result; one killed mid-file (timeout, crash) reports nothing.
        "max_worker_rss_mib": max(peaks, default=0) >> 20,
        "parent_peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss >> 10,
        "corpus_seconds": round(written, 1),
        "ingest_seconds": round(seconds, 1),
        "chunks": report.chunks,
    }


def main(argv: list[str] | None = None) -> int:
    """Run the hostile-corpus soak and print its table."""
    p = argparse.ArgumentParser(prog="python -m bench.hostile", description=__doc__.split("\n\n")[0])
    p.add_argument("--scale", choices=("soak", "ci"), default="soak")
    p.add_argument("--folder", type=Path, help="where to write the corpus and index (default: a temporary folder)")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--timeout", type=float, default=120.0, help="seconds one file may take to read (default 120)")
    p.add_argument("--memory-mb", type=int, default=DEFAULT_MEMORY_LIMIT >> 20, help="memory cap per reader process")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)

    folder = args.folder or Path(tempfile.mkdtemp(prefix="hearth-hostile-"))
    try:
        figures = run(folder, scale=args.scale, workers=args.workers, timeout=args.timeout, memory=args.memory_mb << 20)
    finally:
        if args.folder is None:
            shutil.rmtree(folder, ignore_errors=True)
    if args.json:
        print(json.dumps(figures, indent=2))
    else:
        rows = [
            ("files tried", figures["files_tried"]),
            ("indexed", figures["indexed"]),
            ("skipped (not documents)", figures["skipped"]),
            *((f"failed: {kind}", n) for kind, n in figures["failed_by_kind"].items()),
            ("crashes", figures["crashes"]),
            ("hangs (timeouts)", figures["timeouts"]),
            ("broken expectations", len(figures["broken_expectations"])),
            ("memory cap per worker", f"{figures['memory_cap_mib']} MiB"),
            ("max worker RSS", f"{figures['max_worker_rss_mib']} MiB"),
            ("parent peak RSS", f"{figures['parent_peak_rss_mib']} MiB"),
            ("writing the corpus", f"{figures['corpus_seconds']} s"),
            ("ingest wall time", f"{figures['ingest_seconds']} s"),
        ]
        for label, value in rows:
            print(f"{label:<26}{value:>12}")
        for line in figures["broken_expectations"]:
            print("  broken:", line)
    return 1 if figures["crashes"] or figures["broken_expectations"] else 0


if __name__ == "__main__":
    sys.exit(main())
