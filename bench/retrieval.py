"""Retrieval benchmark: how often BM25, dense and Hearth's hybrid ranking put the gold passage on top.

    python -m bench.retrieval [--json] [--k 10] [--limit N] [--reuse DIR] [--details FILE] [--threads N]
                              [--chunk-tokens N] [--overlap N]
                              [--questions FILE | --eval tune|tune2|heldout|heldout2|heldout3|all]
                              [--rankings NAME,...]

Builds a workspace in a fresh temporary data folder (or in DIR with --reuse, kept and reused: unchanged
documents are not indexed again), ingests the corpus of bench/corpus.py with the real default embedder,
then asks every question of bench/data/retrieval_questions.json five times through `Hearth.search`:
mode "lexical" (reported as bm25), "dense", and "hybrid" without and with each passage's similarity added
to its fused score, lines off (reported as ranks and hearth; ranks is hearth's baseline), with the first ten
passages' best lines weighed too (`lines=True`, reported as lines, as `hearth search` ranks since lines
became its default; hearth, the search before, is its baseline), and as `ask` searches, the
first five then ordered again by the question's likelihood after each under the default chat model
(`likely=True`, rag/likely.py, reported as ask; lines is its baseline; --threads also sets the chat
model's). --eval
asks that half of the evaluation's answerable questions instead, over the corpus with the Debian FAQ
(bench.corpus.EVAL). --rankings runs only those (say "hearth,lines": ask reads with the chat model, some
7 s a question on 2 cores).

A returned passage is a hit for a question when all of these hold:
  - its source path ends with the gold file (whole path components: "a/b.html" never matches "xa/b.html");
  - if the gold names a page, the passage's page equals it (the loader's 1-based PDF page);
  - if the gold names a section, the passage's heading path equals it or lies below it, i.e. the heading is
    the gold section or starts with the gold section followed by " › " (a passage of a subsection counts).
A question's rank is the position (1-based) of its first hit among the k results. hit@1 and hit@5 are the
share of questions ranked within 1 and 5; mrr@k is the mean of 1/rank (0 when not ranked within k).

Results go to stdout (JSON with --json, else a table); the table and progress go to stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path, PurePath
from typing import Any

from bench import corpus
from rag.loaders import HEADING_SEPARATOR

QUESTIONS_FILE = Path(__file__).resolve().parent / "data" / "retrieval_questions.json"
# The evaluation's parts (bench/data/eval_*.json "split"), and "all": --eval here and in bench.quotes.
EVAL_SPLITS = ("tune", "tune2", "heldout", "heldout2", "heldout3", "all")
WORKSPACE = "bench"
# Report name -> the `mode` passed to Hearth.search.
RANKINGS: tuple[tuple[str, str], ...] = (
    ("bm25", "lexical"), ("dense", "dense"), ("ranks", "hybrid"), ("hearth", "hybrid"), ("lines", "hybrid"),
    ("ask", "hybrid"),
)
# "ranks" is the fusion before each passage's similarity was added to its fused score: the baseline of "hearth".
OPTIONS: dict[str, dict[str, Any]] = {"ranks": {"similarity_weight": 0.0}}
LINES = {"lines", "ask"}  # searched with the passages' best lines (Hearth.search(lines=True)); the others without
LIKELY = {"ask"}  # ...and the question's likelihood after each (likely=True): as `ask` searches


@dataclass(frozen=True)
class Gold:
    """Where the answer to a question lies."""

    file: str  # relative to the corpus root, "/"-separated
    page: int | None
    section: str | None  # a heading path as the loaders report it ("Parent › Child")


@dataclass(frozen=True)
class Question:
    """One benchmark question and its gold reference."""

    id: str
    question: str
    gold: Gold
    paraphrased: bool


def load_questions(path: Path = QUESTIONS_FILE) -> list[Question]:
    """The question set, in file order."""
    doc = json.loads(path.read_text(encoding="utf-8"))
    return [
        Question(
            id=q["id"],
            question=q["question"],
            gold=Gold(file=q["gold"]["file"], page=q["gold"]["page"], section=q["gold"]["section"]),
            paraphrased=bool(q["paraphrased"]),
        )
        for q in doc["questions"]
    ]


def eval_half(split: str) -> list[Question]:
    """The evaluation's answerable questions of one part (one of EVAL_SPLITS, 'all' for every part;
    bench/data/eval_*.json)."""
    path = QUESTIONS_FILE.parent / "eval_answerable.json"
    halves = {q["id"]: q["split"] for q in json.loads(path.read_text(encoding="utf-8"))["questions"]}
    return [q for q in load_questions(path) if split in ("all", halves[q.id])]


def section_matches(heading: str | None, section: str) -> bool:
    """Whether a passage's heading path is the gold section or one of its subsections."""
    return heading is not None and (heading == section or heading.startswith(section + HEADING_SEPARATOR))


def source_matches(source: str, file: str) -> bool:
    """Whether a passage's source path ends with the gold file, compared by whole path components."""
    want = PurePath(file).parts
    have = PurePath(source).parts
    return len(have) >= len(want) and have[len(have) - len(want) :] == want


def is_hit(hit: Any, gold: Gold) -> bool:
    """Whether a returned passage (anything with source, page, heading) answers from the gold place."""
    if not source_matches(hit.source, gold.file):
        return False
    if gold.page is not None and hit.page != gold.page:
        return False
    return gold.section is None or section_matches(hit.heading, gold.section)


def first_rank(hits: Sequence[Any], gold: Gold) -> int | None:
    """The 1-based position of the first hit, or None when no passage matches."""
    for position, hit in enumerate(hits, 1):
        if is_hit(hit, gold):
            return position
    return None


def metrics(ranks: Sequence[int | None], k: int) -> dict[str, float]:
    """hit@1, hit@5 and mrr@k over the ranks of a set of questions (None: not found within k)."""
    n = len(ranks)
    if n == 0:
        return {"hit@1": 0.0, "hit@5": 0.0, f"mrr@{k}": 0.0}
    found = [r for r in ranks if r is not None and r <= k]
    return {
        "hit@1": round(sum(1 for r in found if r <= 1) / n, 4),
        "hit@5": round(sum(1 for r in found if r <= 5) / n, 4),
        f"mrr@{k}": round(sum(1.0 / r for r in found) / n, 4),
    }


def index_corpus(
    hearth: Any, documents: Sequence[Path], questions: Sequence[Question], *, log: Callable[[str], None]
) -> tuple[Any, int, float]:
    """Ingest the corpus into the bench workspace (unchanged files are skipped); returns (report, passages, seconds).

    Logs failures, and warns for each question whose gold document failed to index.
    """
    t0 = time.perf_counter()
    report = hearth.ingest(documents, workspace=WORKSPACE, progress=_IngestLog(log))
    ingest_s = time.perf_counter() - t0
    for failure in report.failed:
        log(f"ingest failed: {failure.error}")
    chunks = hearth.store.count(WORKSPACE)
    log(
        f"ingest: {report.added + report.updated} documents indexed, {report.unchanged} unchanged, "
        f"{len(report.failed)} failed; {chunks} passages in the workspace; {ingest_s:.1f} s"
    )
    failed_sources = {PurePath(f.source) for f in report.failed}
    for q in questions:
        if any(source_matches(str(s), q.gold.file) for s in failed_sources):
            log(f"warning: the gold document of {q.id} ({q.gold.file}) failed to index; it cannot be found.")
    return report, chunks, ingest_s


def run(
    questions: Sequence[Question],
    *,
    data_dir: Path,
    documents: Sequence[Path],
    k: int = 10,
    threads: int | None = None,
    log: Callable[[str], None] = lambda msg: print(msg, file=sys.stderr),
    which: corpus.Corpus = corpus.ENGLISH,
    rankings: Sequence[tuple[str, str]] = RANKINGS,
    chunking: dict[str, int] | None = None,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Index the documents into data_dir and rank every question each way of `rankings` (all of RANKINGS by
    default), the documents chunked as Hearth does or with `chunking`'s IngestOptions (chunk_tokens,
    overlap_tokens); returns (summary, per-question)."""
    from rag.ingest import IngestOptions
    from rag.service import Hearth, HearthConfig

    ingest = IngestOptions(**(chunking or {}))
    hearth = Hearth(HearthConfig(data_dir=data_dir, embed_threads=threads, n_threads=threads, ingest=ingest))
    report, chunks, ingest_s = index_corpus(hearth, documents, questions, log=log)
    modes = dict(rankings)
    base = hearth.config.retrieval
    configs = {name: replace(hearth.config, retrieval=replace(base, mode=mode, **OPTIONS.get(name, {})))
               for name, mode in rankings}

    def search(question: str, name: str) -> list:
        hearth.config = configs[name]
        return hearth.search(question, k=k, workspace=WORKSPACE, lines=name in LINES, likely=name in LIKELY)

    # One query per ranking first, timed apart: it loads the embedder and any lazily built index.
    t0 = time.perf_counter()
    for name, _ in rankings:
        search("warm-up query", name)
    warmup_s = time.perf_counter() - t0

    seconds: dict[str, float] = {}
    ranks: dict[str, list[int | None]] = {}
    details: list[dict[str, Any]] = [
        {"id": q.id, "paraphrased": q.paraphrased, "gold": _gold_json(q.gold), "rank": {}, "top": {}} for q in questions
    ]
    for name, _ in rankings:
        t0 = time.perf_counter()
        results = [search(q.question, name) for q in questions]
        seconds[name] = time.perf_counter() - t0
        ranks[name] = [first_rank(hits, q.gold) for hits, q in zip(results, questions, strict=True)]
        for detail, hits, rank in zip(details, results, ranks[name], strict=True):
            detail["rank"][name] = rank
            detail["top"][name] = [_place(h) for h in hits[:3]]

    def block(indices: list[int]) -> dict[str, Any]:
        out: dict[str, Any] = {"n": len(indices)}
        for name, _ in rankings:
            out[name] = metrics([ranks[name][i] for i in indices], k)
        return out

    everyone = list(range(len(questions)))
    summary: dict[str, Any] = block(everyone)
    summary.update(
        {
            "k": k,
            "modes": modes,
            "subsets": {
                "literal": block([i for i in everyone if not questions[i].paraphrased]),
                "paraphrased": block([i for i in everyone if questions[i].paraphrased]),
            },
            "corpus": {
                "packages": [f"{p.name} {p.version}" for p in which.packages],
                "documents": len(documents),
                "chunks": chunks,
                "failed": len(report.failed),
            },
            "seconds": {
                "ingest": round(ingest_s, 3),
                "warmup": round(warmup_s, 3),
                **{name: round(s, 3) for name, s in seconds.items()},
            },
        }
    )
    return summary, details


def format_table(summary: dict[str, Any]) -> str:
    """The summary as a plain-text table."""
    k = summary["k"]
    corpus_info = summary["corpus"]
    lines = [
        f"Retrieval benchmark: {summary['n']} questions "
        f"({summary['subsets']['paraphrased']['n']} paraphrased), k={k}; corpus {corpus_info['documents']} documents, "
        f"{corpus_info['chunks']} passages ({', '.join(corpus_info['packages'])})",
    ]
    mrr = f"mrr@{k}"
    lines.append("")
    lines.append(f"{'questions':<18}{'ranking':<9}{'mode':<9}{'hit@1':>7}{'hit@5':>7}{mrr:>8}{'ms/query':>10}")
    n = max(1, summary["n"])
    for title, block in (
        ("all", summary),
        ("literal", summary["subsets"]["literal"]),
        ("paraphrased", summary["subsets"]["paraphrased"]),
    ):
        for i, (name, _) in enumerate(summary["modes"].items()):
            label = f"{title} ({block['n']})" if i == 0 else ""
            m = block[name]
            ms = f"{summary['seconds'][name] / n * 1000:10.1f}" if title == "all" else ""
            lines.append(
                f"{label:<18}{name:<9}{summary['modes'][name]:<9}{m['hit@1']:7.3f}{m['hit@5']:7.3f}{m[mrr]:8.3f}{ms}"
            )
    s = summary["seconds"]
    lines.append("")
    lines.append(
        f"seconds: ingest {s['ingest']:.1f}, warm-up {s['warmup']:.2f}, "
        + ", ".join(f"{name} {s[name]:.2f}" for name in summary["modes"])
    )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark; returns 0, or 1 when some corpus documents failed to index, 2 on usage errors."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
    parser = argparse.ArgumentParser(prog="python -m bench.retrieval", description=__doc__.split("\n")[0])
    parser.add_argument("--json", action="store_true", help="print the summary as JSON on stdout")
    parser.add_argument("--k", type=int, default=10, help="passages retrieved per question (default: %(default)s)")
    parser.add_argument("--limit", type=int, default=None, metavar="N", help="only the first N questions")
    parser.add_argument(
        "--reuse",
        type=Path,
        default=None,
        metavar="DIR",
        help="data folder to build the index in and keep; a later run reuses it",
    )
    parser.add_argument("--questions", type=Path, default=QUESTIONS_FILE, help="question file (default: %(default)s)")
    parser.add_argument("--eval", choices=EVAL_SPLITS, default=None,
                        help="instead: that part of the evaluation's answerable questions (bench/data/"
                             "eval_answerable.json) over the corpus with the Debian FAQ")
    parser.add_argument(
        "--corpus-cache",
        type=Path,
        default=None,
        metavar="DIR",
        help=f"where the corpus is downloaded and unpacked (default: {corpus.DEFAULT_CACHE_DIR})",
    )
    parser.add_argument(
        "--details",
        type=Path,
        default=None,
        metavar="FILE",
        help="also write each question's ranks and top passages as JSON lines",
    )
    parser.add_argument("--threads", type=int, default=None, help="embedder CPU threads (default: all cores)")
    parser.add_argument("--chunk-tokens", type=int, default=None, metavar="N",
                        help="chunk the corpus into N-token passages (default: Hearth's)")
    parser.add_argument("--overlap", type=int, default=None, metavar="N",
                        help="tokens a passage repeats of the one before (default: Hearth's)")
    parser.add_argument("--rankings", default=None, metavar="NAME,...",
                        help="only these rankings, comma-separated (default: all of "
                             + ", ".join(name for name, _ in RANKINGS) + ")")
    args = parser.parse_args(argv)
    known = dict(RANKINGS)
    chosen = [n.strip() for n in args.rankings.split(",") if n.strip()] if args.rankings is not None else list(known)
    unknown = [n for n in chosen if n not in known]
    if unknown or not chosen:
        parser.error(f"--rankings takes names among {', '.join(known)}; not {', '.join(unknown) or 'none'}")
    rankings = tuple((n, known[n]) for n in known if n in chosen)
    if not 5 <= args.k <= 100:
        parser.error("--k must be between 5 and 100 (hit@5 needs at least 5 passages)")
    if args.limit is not None and args.limit < 1:
        parser.error("--limit must be at least 1")

    from inference.errors import HearthError

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    chunking = {k: v for k, v in (("chunk_tokens", args.chunk_tokens), ("overlap_tokens", args.overlap))
                if v is not None}
    which = corpus.EVAL if args.eval is not None else corpus.ENGLISH
    questions = (eval_half(args.eval) if args.eval is not None else load_questions(args.questions))[: args.limit]
    try:
        documents = corpus.documents(args.corpus_cache, log=log, which=which)
    except corpus.CorpusError as exc:
        log(f"bench.retrieval: error: {exc}")
        return 1
    try:
        if args.reuse is not None:
            args.reuse.mkdir(parents=True, exist_ok=True)
            summary, details = run(
                questions, data_dir=args.reuse, documents=documents, k=args.k, threads=args.threads, log=log,
                which=which, rankings=rankings, chunking=chunking,
            )
        else:
            with tempfile.TemporaryDirectory(prefix="hearth-bench-", ignore_cleanup_errors=True) as tmp:
                summary, details = run(
                    questions, data_dir=Path(tmp), documents=documents, k=args.k, threads=args.threads, log=log,
                    which=which, rankings=rankings, chunking=chunking,
                )
    except HearthError as exc:
        log(f"bench.retrieval: error: {exc}")
        if exc.hint:
            log(f"hint: {exc.hint}")
        return 1
    if args.details is not None:
        with args.details.open("w", encoding="utf-8") as f:
            for detail in details:
                f.write(json.dumps(detail, ensure_ascii=False) + "\n")
    table = format_table(summary)
    if args.json:
        log(table)
        print(json.dumps(summary, ensure_ascii=False))
    else:
        print(table)
    return 1 if summary["corpus"]["failed"] else 0


def _gold_json(gold: Gold) -> dict[str, Any]:
    return {"file": gold.file, "page": gold.page, "section": gold.section}


def _place(hit: Any) -> str:
    place = "/".join(PurePath(hit.source).parts[-2:])
    if hit.page is not None:
        place += f" p{hit.page}"
    if hit.heading:
        place += f" — {hit.heading.split(HEADING_SEPARATOR)[-1]}"
    return place


class _IngestLog:
    """Ingest progress on stderr every 15 files or 20 seconds, terminal or not (a run takes minutes)."""

    def __init__(self, log: Callable[[str], None]) -> None:
        self.log = log
        self.last_files = 0
        self.last_time = 0.0

    def __call__(self, p: Any) -> None:
        if p.files_total == 0 or p.files_done == 0:
            return
        finished = p.files_done == p.files_total and self.last_files != p.files_done
        if finished or p.files_done - self.last_files >= 15 or p.elapsed - self.last_time >= 20:
            self.last_files, self.last_time = p.files_done, p.elapsed
            self.log(f"ingest: {p.files_done}/{p.files_total} files, {p.chunks} passages, {p.elapsed:.0f} s")


if __name__ == "__main__":
    sys.exit(main())
