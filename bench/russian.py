"""Russian retrieval benchmark: Russian questions over the Russian edition of The Debian Administrator's Handbook.

    python -m bench.russian [--json] [--k 10] [--reuse DIR] [--details FILE] [--threads N]

Nobody on the project wrote the documents: the ru-RU HTML pages of the same pinned debian-handbook package
as bench/corpus.py's English corpus (the package holds 26 languages), those whose prose is mostly Russian
(42 pages: at least 60 % of their letters outside <pre> blocks are Cyrillic; the rest of the translation
is unfinished, English text under Russian titles). The questions of bench/data/russian_questions.json were
written from those pages, in Russian, in the words a reader would use rather than the section's own word
forms; tests/bench/test_russian_questions.py checks that each gold section exists and holds the answer.

Every question is ranked six ways in one run, in a fresh data folder (or DIR with --reuse):
  porter       the keyword index as before languages: FTS5 Porter over exact Russian word forms
  keywords     the language-aware keyword index: Russian Snowball stems (Hearth.search, mode "lexical")
  dense        the default embedder, all-MiniLM-L6-v2 (mode "dense")
  fused-porter dense and Porter keywords fused as before languages (dense weight 1, keywords 2)
  fused        Hearth's hybrid search now (mode "hybrid"): stems, and no dense weight for a question
               the embedder cannot read
  fused-d0.25  the same with a quarter of the dense weight left, and fused-d1 with all of it (the weights
               chosen against)
With --cross, each question's English version (an English question about Russian pages) is ranked too:
  english      as Hearth searched it before: the English question alone (mode "hybrid")
  translated   Hearth's search now (rag/crosslingual.py): also translated into Russian by the default chat
               model, the two rankings fused (about 2 s more a question on 2 cores)
A hit is the rule of bench/retrieval.py (gold file, and the gold section or one below it).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from bench import corpus
from bench.retrieval import Question, first_rank, index_corpus, load_questions, metrics

QUESTIONS_FILE = Path(__file__).resolve().parent / "data" / "russian_questions.json"
WORKSPACE = "bench"

RU_HANDBOOK = corpus.DebPackage(
    name=corpus.HANDBOOK.name,
    version=corpus.HANDBOOK.version,
    sha256=corpus.HANDBOOK.sha256,
    folder="usr/share/doc/debian-handbook/html/ru-RU",
    files=tuple(
        """
        advanced-administration.html basic-configuration.html case-study.html derivative-distributions.html
        network-infrastructure.html preface.html sect.administration-interfaces.html sect.after-first-boot.html
        sect.asynchronous-task-scheduling-anacron.html sect.automatic-upgrades.html sect.backup.html
        sect.becoming-package-maintainer.html sect.book-structure.html sect.building-first-package.html
        sect.coexistence-with-other-packaging-systems.html sect.computer-layers.html sect.config-misc.html
        sect.creating-accounts.html sect.filesystem-hierarchy.html sect.hostname-name-service.html
        sect.hotplug.html sect.installation-steps.html sect.kernel-role-and-tasks.html sect.master-plan.html
        sect.monitoring.html sect.network-diagnosis-tools.html sect.power-management.html sect.quotas.html
        sect.role-of-distributions.html sect.rtc-clients.html sect.selected-approach.html
        sect.setup-apt-package-repository.html sect.syslog.html sect.task-scheduling-cron-atd.html
        sect.user-group-databases.html sect.user-space.html sect.virtualization.html
        sect.who-is-this-book-for.html sect.why-debian.html sect.why-gnu-linux.html security.html
        short-remedial-course.html
        """.split()
    ),
)
RUSSIAN = corpus.Corpus((RU_HANDBOOK,), "docs-ru")
RANKINGS = ("porter", "keywords", "dense", "fused-porter", "fused", "fused-d0.25", "fused-d1")


def english_versions(path: Path = QUESTIONS_FILE) -> dict[str, str]:
    """Each question's English version, by id."""
    return {q["id"]: q["english"] for q in json.loads(path.read_text(encoding="utf-8"))["questions"]}


def documents(cache_dir: Path | None = None, *, log: Callable[[str], None] | None = None) -> list[Path]:
    """The Russian corpus files, fetched (the .deb is shared with the English corpus) and unpacked once."""
    return corpus.documents(cache_dir, log=log, which=RUSSIAN)


class _PorterKeywords:
    """A document index whose keyword ranking is the one before languages (Porter for every question)."""

    def __init__(self, store: Any) -> None:
        self._store = store

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def lexical_query(self, workspace: str, text: str, *, k: int) -> list[Any]:
        from rag.store import Hit

        return [Hit(r.source, r.page, r.heading, score, r.text, r.start, r.end, r.chunk_id)
                for r, score in self._store.lexical.search(workspace, text, k=k, language="en")]


def run(
    questions: Sequence[Question],
    *,
    data_dir: Path,
    documents: Sequence[Path],
    k: int = 10,
    threads: int | None = None,
    cross: bool = False,
    log: Callable[[str], None] = lambda msg: print(msg, file=sys.stderr),
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Index the documents and rank every question each way; returns (summary, per-question details)."""
    from rag.retrieval import RetrievalOptions, retrieve
    from rag.service import Hearth, HearthConfig

    hearth = Hearth(HearthConfig(data_dir=data_dir, embed_threads=threads, n_threads=threads))
    report, chunks, ingest_s = index_corpus(hearth, documents, questions, log=log)
    languages = hearth.store.lexical.languages(WORKSPACE)
    done = hearth.store.finished_sources(WORKSPACE, hearth.manifest)
    embedder = hearth.embedder_for(WORKSPACE)
    porter_store = _PorterKeywords(hearth.store)
    options = RetrievalOptions()

    def rank(question: str, name: str) -> list[Any]:
        if name == "porter":
            return retrieve(question, workspace=WORKSPACE, embedder=embedder, store=porter_store, done=done, k=k,
                            options=replace(options, mode="lexical"))
        if name in ("keywords", "dense", "fused"):
            mode = {"keywords": "lexical", "dense": "dense", "fused": "hybrid"}[name]
            return hearth.search(question, k=k, workspace=WORKSPACE, mode=mode)
        if name == "fused-porter":
            return retrieve(question, workspace=WORKSPACE, embedder=embedder, store=porter_store, done=done, k=k,
                            options=replace(options, unread_dense_weight=1.0))
        weight = float(name.removeprefix("fused-d"))
        return retrieve(question, workspace=WORKSPACE, embedder=embedder, store=hearth.store, done=done, k=k,
                        options=replace(options, unread_dense_weight=weight))

    for name in RANKINGS:  # loads the embedder and the index's tables before the timing starts
        rank("проверка", name)
    seconds: dict[str, float] = {}
    ranks: dict[str, list[int | None]] = {}
    details: list[dict[str, Any]] = [{"id": q.id, "question": q.question, "rank": {}} for q in questions]
    for name in RANKINGS:
        t0 = time.perf_counter()
        results = [rank(q.question, name) for q in questions]
        seconds[name] = time.perf_counter() - t0
        ranks[name] = [first_rank(hits, q.gold) for hits, q in zip(results, questions, strict=True)]
        for detail, r in zip(details, ranks[name], strict=True):
            detail["rank"][name] = r
    if cross:
        from rag.crosslingual import search_across_languages

        def english(question: str, translated: bool) -> list[Any]:
            if not translated:
                return hearth.search(question, k=k, workspace=WORKSPACE)
            return search_across_languages(
                question, search=lambda q: hearth.search(q, k=k, workspace=WORKSPACE), passages=lambda: languages,
                model=lambda: hearth.chat_model, k=k).hits

        for name, translated in (("english", False), ("translated", True)):
            t0 = time.perf_counter()
            results = [english(english_versions()[q.id], translated) for q in questions]
            seconds[name] = time.perf_counter() - t0
            ranks[name] = [first_rank(hits, q.gold) for hits, q in zip(results, questions, strict=True)]
            for detail, r in zip(details, ranks[name], strict=True):
                detail["rank"][name] = r
    summary: dict[str, Any] = {name: metrics(r, k) for name, r in ranks.items()}
    summary.update({
        "n": len(questions),
        "k": k,
        "corpus": {"package": f"{RU_HANDBOOK.name} {RU_HANDBOOK.version} (ru-RU)", "documents": len(documents),
                   "chunks": chunks, "languages": languages, "failed": len(report.failed)},
        "seconds": {"ingest": round(ingest_s, 1), **{name: round(s, 3) for name, s in seconds.items()}},
        "load_average": [round(x, 2) for x in os.getloadavg()],
    })
    return summary, details


def format_table(summary: dict[str, Any]) -> str:
    """The summary as a plain-text table."""
    k = summary["k"]
    mrr = f"mrr@{k}"
    c = summary["corpus"]
    lines = [
        f"Russian retrieval benchmark: {summary['n']} questions, k={k}; {c['documents']} documents, {c['chunks']} "
        f"passages ({c['package']}; passages by language {c['languages']})",
        "",
        f"{'ranking':<14}{'hit@1':>7}{'hit@5':>7}{mrr:>8}{'ms/query':>10}",
    ]
    for name in [n for n in (*RANKINGS, "english", "translated") if n in summary]:
        m = summary[name]
        ms = summary["seconds"][name] / max(1, summary["n"]) * 1000
        lines.append(f"{name:<14}{m['hit@1']:7.3f}{m['hit@5']:7.3f}{m[mrr]:8.3f}{ms:10.1f}")
    lines += ["", f"ingest {summary['seconds']['ingest']:.1f} s; load average {summary['load_average']}"]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark; 0, or 1 when the corpus cannot be had or some of it failed to index."""
    parser = argparse.ArgumentParser(prog="python -m bench.russian", description=__doc__.split("\n")[0])
    parser.add_argument("--json", action="store_true", help="print the summary as JSON on stdout (table on stderr)")
    parser.add_argument("--k", type=int, default=10, help="passages retrieved per question (default: %(default)s)")
    parser.add_argument("--reuse", type=Path, default=None, metavar="DIR", help="data folder to build in and keep")
    parser.add_argument("--corpus-cache", type=Path, default=None, metavar="DIR",
                        help=f"where the corpus is downloaded and unpacked (default: {corpus.DEFAULT_CACHE_DIR})")
    parser.add_argument("--details", type=Path, default=None, metavar="FILE", help="each question's ranks, JSON lines")
    parser.add_argument("--threads", type=int, default=None, help="embedder and chat model CPU threads")
    parser.add_argument("--cross", action="store_true", help="also rank the English versions, with and without "
                        "translation by the default chat model")
    args = parser.parse_args(argv)
    if not 5 <= args.k <= 100:
        parser.error("--k must be between 5 and 100 (hit@5 needs at least 5 passages)")

    from inference.errors import HearthError

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    questions = load_questions(QUESTIONS_FILE)
    try:
        docs = documents(args.corpus_cache, log=log)
        if args.reuse is not None:
            args.reuse.mkdir(parents=True, exist_ok=True)
            summary, details = run(questions, data_dir=args.reuse, documents=docs, k=args.k, threads=args.threads,
                                   cross=args.cross, log=log)
        else:
            with tempfile.TemporaryDirectory(prefix="hearth-bench-ru-", ignore_cleanup_errors=True) as tmp:
                summary, details = run(questions, data_dir=Path(tmp), documents=docs, k=args.k,
                                       threads=args.threads, cross=args.cross, log=log)
    except (corpus.CorpusError, HearthError) as exc:
        log(f"bench.russian: error: {exc}")
        return 1
    if args.details is not None:
        args.details.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in details), encoding="utf-8")
    table = format_table(summary)
    if args.json:
        log(table)
        print(json.dumps(summary, ensure_ascii=False))
    else:
        print(table)
    return 1 if summary["corpus"]["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
