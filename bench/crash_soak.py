"""Crash-consistency soak: kill -9 a real ingest (real ChromaDB) at random moments, dozens of times, over
a few hundred files of mixed formats that change between runs; then check the index to the chunk.

    python -m bench.crash_soak [--files 300] [--kills 60] [--seed 1] [--embedder hash|real]
                               [--workers 1] [--work DIR] [--json]

Each round changes the folder (after the first: files rewritten, deleted, added, renamed, touched), starts
`python -m tests.crash_driver` on it and sends it SIGKILL after a random delay (seeded; the range adapts so
that most runs die before they finish). Every restart checks the index the killed run left behind
(tests/crash_driver.py `problems`: a document marked done is complete, of one version, without duplicates,
and the same in the manifest, Chroma and the keyword index; no index holds chunks the manifest does not
list). The driver traces every manifest and store write, so each kill is placed: inside a write call,
between a document's begin and finish, or between documents.

After the last kill one run goes to the end; then every file must be `done`, the chunk ids the manifest
implies must be exactly Chroma's and the keyword index's, and every document must equal a fresh ingest of
the same files into a clean data folder: same chunk ids, texts, metadata, and vectors (vectors of unchanged
chunks are reused across versions, so this also checks the reuse). A last run must change nothing.

--embedder hash (default) is the fast deterministic fake; real is the default ONNX embedder (converted
once into WORK/cache). Progress goes to stderr; the table (or --json) to stdout. Exit code 0 when there
is no mismatch and the kills reached --kills.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from tests.crash_driver import Driver, differences, problems

WORDS = (
    "leave badge printer travel invoice meal hotel vpn laptop budget policy office parking contract "
    "salary holiday manager report quarter revenue meeting deadline project server backup password "
    "network desk phone expense receipt approval training safety fire drill visitor canteen coffee "
    "pension insurance doctor sick child care remote home train flight taxi mileage allowance limit"
).split()


def _text(rng: random.Random, tag: str, paragraphs: tuple[int, int] = (3, 8)) -> list[str]:
    # Numbered words make documents (and versions) differ; common words make chunks collide across them.
    return [" ".join(rng.choice(WORDS) if rng.random() < 0.85 else f"{tag}w{rng.randint(0, 999)}"
                     for _ in range(rng.randint(20, 60))) + "." for _ in range(rng.randint(*paragraphs))]


def write_document(path: Path, rng: random.Random, version: int) -> None:
    """Write one document of the format its suffix names, with text that depends on rng and version."""
    tag = f"{path.stem}v{version}"
    title = f"{path.stem.replace('-', ' ').title()} (version {version})"
    paragraphs = _text(rng, tag)
    suffix = path.suffix
    if suffix == ".md":
        body = "\n\n".join(f"## Part {i}\n\n{p}" if i % 3 == 2 else p for i, p in enumerate(paragraphs))
        path.write_text(f"# {title}\n\n{body}\n", encoding="utf-8")
    elif suffix == ".txt":
        path.write_text(f"{title}\n\n" + "\n\n".join(paragraphs) + "\n", encoding="utf-8")
    elif suffix == ".html":
        body = "".join(f"<h2>Part {i}</h2><p>{p}</p>" if i % 2 else f"<p>{p}</p>" for i, p in enumerate(paragraphs))
        path.write_text(f"<html><head><title>{title}</title></head><body><h1>{title}</h1>{body}</body></html>",
                        encoding="utf-8")
    elif suffix == ".pdf":
        from fpdf import FPDF

        pdf = FPDF()
        pdf.set_font("Helvetica", size=11)
        for i in range(0, len(paragraphs), 3):
            pdf.add_page()
            pdf.multi_cell(0, 6, "\n\n".join(paragraphs[i : i + 3]), new_x="LMARGIN", new_y="NEXT")
        pdf.output(str(path))
    elif suffix == ".docx":
        import docx

        d = docx.Document()
        d.add_heading(title, 0)
        for i, p in enumerate(paragraphs):
            if i % 3 == 1:
                d.add_heading(f"Part {i}", 1)
            d.add_paragraph(p)
        d.save(str(path))
    else:
        raise ValueError(suffix)


def formats() -> list[tuple[str, int]]:
    """(suffix, weight) of the formats this environment can write."""
    out = [(".md", 30), (".txt", 25), (".html", 15)]
    for module, suffix, weight in (("fpdf", ".pdf", 18), ("docx", ".docx", 12)):
        try:
            __import__(module)
            out.append((suffix, weight))
        except ImportError:
            print(f"crash_soak: {module} is not installed; no {suffix} files", file=sys.stderr)
    return out


class Corpus:
    """The folder being indexed, and the changes made to it between runs."""

    def __init__(self, folder: Path, rng: random.Random, n: int) -> None:
        self.folder, self.rng = folder, rng
        self.kinds = formats()
        self.version: Counter[str] = Counter()
        self.serial = 0
        folder.mkdir(parents=True)
        for _ in range(n):
            self.add()
        (folder / "broken-1.pdf").write_bytes(b"%PDF-1.4 damaged")
        (folder / "broken-2.docx").write_bytes(b"PK\x03\x04 not really a zip")
        self.broken = {"broken-1.pdf", "broken-2.docx"}

    def files(self) -> list[Path]:
        return sorted(p for p in self.folder.iterdir() if p.name not in self.broken)

    def add(self) -> Path:
        suffix = self.rng.choices([s for s, _ in self.kinds], weights=[w for _, w in self.kinds])[0]
        self.serial += 1
        path = self.folder / f"doc-{self.serial:04d}{suffix}"
        write_document(path, self.rng, 0)
        return path

    def change(self, share: float) -> Counter[str]:
        """Rewrite about `share` of the files, delete and add a few, rename one, touch one."""
        done: Counter[str] = Counter()
        files = self.files()
        for path in self.rng.sample(files, max(2, int(len(files) * share))):
            self.version[path.name] += 1
            write_document(path, self.rng, self.version[path.name])
            done["rewritten"] += 1
        for path in self.rng.sample(self.files(), 2):
            path.unlink()
            done["deleted"] += 1
        for _ in range(2):
            self.add()
            done["added"] += 1
        moved = self.rng.choice(self.files())
        self.serial += 1
        moved.rename(moved.with_name(f"doc-{self.serial:04d}{moved.suffix}"))  # same bytes: vectors reused
        done["renamed"] += 1
        touched = self.rng.choice(self.files())
        st = touched.stat()
        os.utime(touched, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))  # new time, same content
        done["touched"] += 1
        return done


def compare_indexes(data: Path, fresh: Path, *, atol: float) -> tuple[list[str], int]:
    """Chunk by chunk, the killed index against the fresh one: ids, texts, metadata, vectors, keyword rows.

    Returns (differences, chunks compared). Run only when no driver process is left.
    """
    import numpy as np

    from rag.lexical import LexicalIndex
    from rag.store import ChromaStore

    def read(folder: Path) -> tuple[dict[str, Any], dict[str, Any]]:
        got = ChromaStore(folder / "index")._collection("default").get(
            include=["documents", "metadatas", "embeddings"])
        chroma = {cid: (text, meta, np.asarray(vec, dtype=np.float32))
                  for cid, text, meta, vec in zip(got["ids"], got["documents"], got["metadatas"], got["embeddings"],
                                                  strict=True)}
        lexical = LexicalIndex(folder / "lexical.sqlite")
        rows = {r.chunk_id: r for r in lexical.all_rows("default")}
        lexical.close()
        return chroma, rows

    (a, a_rows), (b, b_rows) = read(data), read(fresh)
    found = []
    if set(a) != set(b):
        found.append(f"chunk ids: {len(set(a) - set(b))} only in the killed index, {len(set(b) - set(a))} only fresh")
    if set(a_rows) != set(b_rows) or set(a_rows) != set(a):
        found.append("the keyword index's chunk ids differ")
    for cid in sorted(set(a) & set(b)):
        (ta, ma, va), (tb, mb, vb) = a[cid], b[cid]
        if ta != tb or ma != mb:
            found.append(f"{cid}: text or metadata differs")
        elif not np.allclose(va, vb, atol=atol):
            found.append(f"{cid}: vector differs by {float(np.abs(va - vb).max()):.2g}")
        row = a_rows.get(cid)
        if row is not None and (row.text != ta or row.source != ma["source"]):
            found.append(f"{cid}: keyword row differs from Chroma's chunk")
    return found, len(a)


REBUILT = "repaired the vector index"  # what tests/crash_driver.py says on stderr after a rebuild


def soak(args: argparse.Namespace) -> dict[str, Any]:
    t0 = time.perf_counter()
    rng = random.Random(args.seed)
    work = Path(args.work or tempfile.mkdtemp(prefix="hearth-soak-"))
    docs, data, fresh = work / "docs", work / "data", work / "fresh"
    for folder in (docs, data, fresh):
        shutil.rmtree(folder, ignore_errors=True)
    corpus = Corpus(docs, rng, args.files)
    extra = ["--workers", str(args.workers), "--embedder", args.embedder]
    if args.embedder == "real":
        from inference.models import default_embedder_dir

        cache = work / "cache"
        print("crash_soak: preparing the real embedder…", file=sys.stderr)
        default_embedder_dir(cache)  # converted once, shared by every run
        extra += ["--cache", str(cache)]

    stats: Counter[str] = Counter()
    where: Counter[str] = Counter()
    restart_problems: list[str] = []
    max_delay = args.max_delay
    rounds = 0
    while stats["kills"] < args.kills:
        if rounds:
            stats.update(corpus.change(args.change))
        rounds += 1
        run = Driver(data, docs, "--ids", "--trace", *extra)
        found = problems(run.found)
        restart_problems += [f"round {rounds}: {p}" for p in found]
        stats["indexing at restart"] += sum(s["status"] == "indexing" for s in run.found.values())
        end = run.kill_after(rng.uniform(0.05, max_delay))
        stats["rebuilt"] += REBUILT in run.err  # ChromaDB's files were unreadable after the last kill
        place = f"in {end.in_write}" if end.in_write else "mid-document" if end.in_document else "between"
        if end.killed:
            stats["kills"] += 1
            where[place] += 1
            stats["mid-write"] += end.in_write is not None
            stats["mid-document"] += end.in_document
            max_delay = min(args.max_delay * 2, max_delay * 1.05)
        else:
            stats["completed"] += 1
            max_delay = max(0.3, max_delay * 0.8)  # it finished first: aim earlier
        print(f"crash_soak: round {rounds}: {'killed' if end.killed else 'finished'} after {end.progress} "
              f"progress reports{f' ({place})' if end.killed else ''}; kills {stats['kills']}, "
              f"problems {len(restart_problems)}", file=sys.stderr)

    print("crash_soak: the final run, then a fresh ingest to compare with…", file=sys.stderr)
    run = Driver(data, docs, "--ids", *extra)
    restart_problems += [f"final restart: {p}" for p in problems(run.found)]
    report, state = run.finish()
    stats["rebuilt"] += REBUILT in run.err
    final = problems(state)
    expected = {str(p.resolve()) for p in corpus.files()}
    if set(state) != expected:
        final.append(f"documents: {len(expected - set(state))} missing, {len(set(state) - expected)} not in the folder")
    final += [f"{Path(s).name}: {v['status']}" for s, v in state.items() if v["status"] != "done"]
    failed = sorted(Path(f["source"]).name for f in report["failed"])
    if failed != sorted(corpus.broken):
        final.append(f"failures: {failed}, expected {sorted(corpus.broken)}")
    _, fresh_state = Driver(fresh, docs, "--ids", *extra).finish()
    fresh_diffs = differences(state, fresh_state)
    chunk_diffs, chunks = compare_indexes(data, fresh, atol=1e-6 if args.embedder == "hash" else 2e-3)

    again = Driver(data, docs, "--ids", *extra)
    rerun, after = again.finish()
    if (rerun["added"], rerun["updated"], rerun["removed"]) != (0, 0, 0) or after != state:
        final.append(f"a further run changed the index: {rerun}")

    mismatches = restart_problems + final + fresh_diffs + chunk_diffs
    if not args.keep and not args.work:
        shutil.rmtree(work, ignore_errors=True)
    return {
        "embedder": args.embedder, "seed": args.seed, "rounds": rounds + 1, "kills": stats["kills"],
        "kills_mid_write": stats["mid-write"], "kills_mid_document": stats["mid-document"],
        "kill_places": dict(where), "completed_rounds": stats["completed"],
        "indexing_found_at_restart": stats["indexing at restart"], "index_rebuilds": stats["rebuilt"],
        "changes": {k: stats[k] for k in ("rewritten", "deleted", "added", "renamed", "touched")},
        "files": len(expected), "broken_files": len(corpus.broken), "chunks": chunks,
        "restart_mismatches": len(restart_problems), "final_mismatches": len(final),
        "fresh_ingest_differences": len(fresh_diffs) + len(chunk_diffs),
        "mismatches": len(mismatches), "mismatch_details": mismatches[:50],
        "seconds": round(time.perf_counter() - t0, 1), "work": str(work),
    }  # fmt: skip


def print_table(r: dict[str, Any]) -> None:
    rows = [
        ("embedder", r["embedder"]), ("seed", r["seed"]),
        ("rounds (runs started)", r["rounds"]), ("kills (SIGKILL)", r["kills"]),
        ("  inside a manifest/store write", r["kills_mid_write"]),
        ("  inside a document (begin…finish)", r["kills_mid_document"]),
        ("  by place", ", ".join(f"{k} {v}" for k, v in sorted(r["kill_places"].items()))),
        ("runs that finished first", r["completed_rounds"]),
        ("interrupted documents found", r["indexing_found_at_restart"]),
        ("vector index rebuilt (ChromaDB damaged)", r["index_rebuilds"]),
        ("changes between runs", ", ".join(f"{k} {v}" for k, v in r["changes"].items())),
        ("files (+ broken ones)", f"{r['files']} (+{r['broken_files']})"), ("chunks", r["chunks"]),
        ("mismatches at restarts", r["restart_mismatches"]), ("mismatches at the end", r["final_mismatches"]),
        ("differences from a fresh ingest", r["fresh_ingest_differences"]),
        ("MISMATCHES (must be 0)", r["mismatches"]), ("time", f"{r['seconds']} s"),
    ]  # fmt: skip
    width = max(len(k) for k, _ in rows)
    for k, v in rows:
        print(f"{k:<{width}}  {v}")
    for line in r["mismatch_details"]:
        print(f"  mismatch: {line}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.crash_soak", description=__doc__.split("\n\n")[0])
    p.add_argument("--files", type=int, default=300, help="documents in the folder (default: %(default)s)")
    p.add_argument("--kills", type=int, default=60, help="kills to survive (default: %(default)s)")
    p.add_argument("--seed", type=int, default=1, help="seeds the corpus, its changes and the kill delays")
    p.add_argument("--embedder", choices=("hash", "real"), default="hash")
    p.add_argument("--workers", type=int, default=1, help="reader processes of each ingest (default: %(default)s)")
    p.add_argument("--change", type=float, default=0.03, help="share of files rewritten between runs")
    p.add_argument("--max-delay", type=float, default=3.0, help="initial upper bound of the kill delay, s")
    p.add_argument("--work", type=Path, default=None, help="work folder, kept (default: a temporary one)")
    p.add_argument("--keep", action="store_true", help="keep the temporary work folder")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    result = soak(args)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print_table(result)
    return 0 if result["mismatches"] == 0 and result["kills"] >= args.kills else 1


if __name__ == "__main__":
    sys.exit(main())
