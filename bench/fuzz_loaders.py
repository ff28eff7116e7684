"""Long fuzzing of every loader: mutated seed files by the thousand, through the reader worker pool.

    python -m bench.fuzz_loaders [--examples N] [--seed S] [--timeout SECONDS] [--workers N] [--json]

The same mutations as tests/rag/test_fuzz_loaders.py (tests/hostile_corpus.py: bytes flipped, cut,
inserted, deleted, repeated, and the XML inside office zips damaged), N per suffix, drawn from a seeded
RNG. Files are read by rag.parse_pool workers, so a reader that crashes in C code or hangs costs one
example and is counted, not the run. Prints one row per suffix: examples, loaded, LoadErrors, other
exceptions (a reader let an untranslated exception through), crashes and timeouts (all three must be 0),
and the slowest example's seconds. Exit status 1 when any of the three is not 0; the first few such
examples are kept in --keep DIR for a test to be written from.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

from rag.loaders import _REGISTRY
from rag.parse_pool import ParseJob, ParsePool
from tests.hostile_corpus import mutate, random_ops, seed_files

_UNTRANSLATED = re.compile(r"could not be read \(\w+: ")


def fuzz(suffix: str, *, examples: int, seed: int, timeout: float, workers: int, folder: Path) -> dict:
    """Write `examples` mutants of the suffix's seed file and read them all; returns the row's counts."""
    rng = random.Random(f"{seed}{suffix}")
    base = seed_files()[suffix]
    jobs = []
    for i in range(examples):
        path = folder / f"{i:06d}{suffix}"
        path.write_bytes(mutate(base, suffix, random_ops(rng)))
        jobs.append(ParseJob(path))
    row = {"suffix": suffix, "examples": examples, "loaded": 0, "load_errors": 0, "other": 0, "crashes": 0,
           "timeouts": 0, "max_seconds": 0.0, "bad": []}  # fmt: skip
    t0 = time.perf_counter()
    for parsed in ParsePool(workers, timeout=timeout).run(jobs):
        row["max_seconds"] = max(row["max_seconds"], parsed.seconds)
        if parsed.error is None:
            row["loaded"] += 1
            continue
        kind, message = parsed.error
        if kind == "timeout":
            row["timeouts"] += 1
        elif "crashed" in message:
            row["crashes"] += 1
        elif _UNTRANSLATED.search(message):
            row["other"] += 1
        else:
            row["load_errors"] += 1
            continue
        row["bad"].append((str(parsed.path), message))
    row["seconds"] = time.perf_counter() - t0
    return row


def main(argv: list[str] | None = None) -> int:
    """Run the fuzzing session and print its table."""
    p = argparse.ArgumentParser(prog="python -m bench.fuzz_loaders", description=__doc__.split("\n\n")[0])
    p.add_argument("--examples", type=int, default=2000, help="mutants per suffix (default 2000)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--timeout", type=float, default=30.0, help="seconds one example may take (default 30)")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--suffix", action="append", help="only these suffixes (repeatable)")
    p.add_argument("--keep", type=Path, default=Path(".data/fuzz-failures"), help="where failing examples are kept")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)

    rows = []
    with tempfile.TemporaryDirectory(prefix="hearth-fuzz-") as name:
        for suffix in args.suffix or sorted(_REGISTRY):
            folder = Path(name, suffix.lstrip("."))
            folder.mkdir()
            row = fuzz(suffix, examples=args.examples, seed=args.seed, timeout=args.timeout, workers=args.workers,
                       folder=folder)  # fmt: skip
            for path, _ in row["bad"][:5]:
                args.keep.mkdir(parents=True, exist_ok=True)
                shutil.copy(path, args.keep / Path(path).name)
            print(f"{suffix}: {row['examples']} examples in {row['seconds']:.0f} s", file=sys.stderr)
            rows.append(row)
            shutil.rmtree(folder)
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        print(f"{'loader':<10}{'examples':>9}{'loaded':>8}{'LoadErrors':>11}{'other exc.':>11}{'crashes':>8}"
              f"{'timeouts':>9}{'max s':>8}")  # fmt: skip
        for r in rows:
            print(f"{r['suffix']:<10}{r['examples']:>9}{r['loaded']:>8}{r['load_errors']:>11}{r['other']:>11}"
                  f"{r['crashes']:>8}{r['timeouts']:>9}{r['max_seconds']:>8.2f}")  # fmt: skip
        for r in rows:
            for path, message in r["bad"][:5]:
                print(f"  {r['suffix']}: {message}")
    return 1 if any(r["other"] or r["crashes"] or r["timeouts"] for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
