"""The `hearth` command line: the contract in shared/DESIGN.md (results on stdout, progress on stderr)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from inference.errors import Cancelled, HearthError, UsageError

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def default_data_dir() -> Path:
    """HEARTH_DATA_DIR, else the platform's user data folder."""
    env = os.environ.get("HEARTH_DATA_DIR")
    if env:
        return Path(env).expanduser()
    import platformdirs

    return Path(platformdirs.user_data_dir("hearth", appauthor=False))


def build_parser() -> argparse.ArgumentParser:
    """The argument parser for every subcommand."""
    p = argparse.ArgumentParser(prog="hearth", description="Private, offline answers from your own documents.")
    p.add_argument("--data-dir", type=Path, default=None, help="where Hearth keeps its index (default: %(default)s)")
    p.add_argument("--threads", type=int, default=None, help="CPU threads for the models (default: automatic)")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    def common(sp: argparse.ArgumentParser, *, json_flag: bool = True) -> None:
        sp.add_argument("--workspace", default="default", help="workspace name (default: %(default)s)")
        if json_flag:
            sp.add_argument("--json", action="store_true", help="print the result as JSON")

    sp = sub.add_parser("ingest", help="index files and folders")
    sp.add_argument("paths", nargs="+", type=Path, metavar="PATH")
    common(sp)
    sp = sub.add_parser("search", help="find the passages that best match a query")
    sp.add_argument("query")
    sp.add_argument("-k", type=int, default=5, help="how many passages (default: %(default)s)")
    sp.add_argument("--mode", choices=("hybrid", "dense", "lexical"), default="hybrid",
                    help="ranking: keywords and meaning fused (default), meaning only, keywords only")
    common(sp)
    sp = sub.add_parser("ask", help="answer a question from the documents, with sources")
    sp.add_argument("question")
    sp.add_argument("-k", type=int, default=5, help="how many passages to give the model (default: %(default)s)")
    sp.add_argument("--model", default=None, help="built-in model name or path to a .gguf file")
    sp.add_argument("--ctx", type=int, default=4096, help="context size in tokens (default: %(default)s)")
    common(sp)
    sp = sub.add_parser("eval", help="self-test: can search find passages from questions the model writes?")
    sp.add_argument("-n", type=int, default=20, help="passages to sample (default: %(default)s)")
    sp.add_argument("-k", type=int, default=5, help="results searched per question (default: %(default)s)")
    sp.add_argument("--seed", type=int, default=0, help="sampling seed (default: %(default)s)")
    sp.add_argument("--model", default=None, help="built-in model name or path to a .gguf file")
    common(sp)
    sp = sub.add_parser("sources", help="list the indexed documents")
    common(sp)
    sp = sub.add_parser("forget", help="remove documents (or everything under folders) from the index")
    sp.add_argument("paths", nargs="+", type=Path, metavar="PATH")
    common(sp, json_flag=False)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns the exit code (0 ok, 1 some inputs failed, 2 usage error)."""
    # Nothing Hearth runs may reach the network; these keep third-party libraries from trying.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        return _run(args)
    except Cancelled as exc:
        print(str(exc), file=sys.stderr)
        return EXIT_FAILED
    except UsageError as exc:
        _print_error(exc)
        return EXIT_USAGE
    except HearthError as exc:
        _print_error(exc)
        return EXIT_FAILED
    except KeyboardInterrupt:
        print("Interrupted.", file=sys.stderr)
        return 130


def _print_error(exc: HearthError) -> None:
    print(f"hearth: error: {exc}", file=sys.stderr)
    if exc.hint:
        print(f"hint: {exc.hint}", file=sys.stderr)


def _run(args: argparse.Namespace) -> int:
    from rag.service import Hearth, HearthConfig

    if args.threads is not None and args.threads < 1:
        raise UsageError("--threads must be at least 1.")
    threads = args.threads or (int(os.environ["HEARTH_THREADS"]) if os.environ.get("HEARTH_THREADS") else None)
    config = HearthConfig(
        data_dir=(args.data_dir or default_data_dir()).expanduser(),
        chat_model=getattr(args, "model", None),
        n_ctx=getattr(args, "ctx", 4096),
        n_threads=threads,
        embed_threads=threads,
        reranker_dir=Path(os.environ["HEARTH_RERANKER_DIR"]) if os.environ.get("HEARTH_RERANKER_DIR") else None,
    )
    hearth = Hearth(config)
    return {
        "ingest": _ingest,
        "search": _search,
        "ask": _ask,
        "sources": _sources,
        "eval": _eval,
        "forget": _forget,
    }[args.command](hearth, args)


def _ingest(hearth, args: argparse.Namespace) -> int:
    bar = _ProgressLine()
    report = hearth.ingest(args.paths, workspace=args.workspace, progress=bar)
    bar.close()
    if args.json:
        print(json.dumps(report.to_json(), ensure_ascii=False))
    else:
        print(
            f"Indexed {report.added} new and {report.updated} changed documents ({report.chunks} passages); "
            f"{report.unchanged} unchanged; {len(report.failed)} failed; {report.seconds:.1f} s."
        )
        if report.skipped:
            print(f"Skipped {report.skipped} files of types Hearth does not read.")
    for f in report.failed:
        print(f"failed: {f.error}", file=sys.stderr)
    return EXIT_FAILED if report.failed else EXIT_OK


def _search(hearth, args: argparse.Namespace) -> int:
    hits = hearth.search(args.query, k=args.k, workspace=args.workspace, mode=args.mode)
    if args.json:
        print(json.dumps({"hits": [h.to_json() for h in hits]}, ensure_ascii=False))
        return EXIT_OK
    if not hits:
        print("Nothing found.")
    for i, h in enumerate(hits, 1):
        print(f"[{i}] {_place(h)}  (score {h.score:.3f})")
        print("    " + " ".join(h.text.split())[:300])
    return EXIT_OK


def _ask(hearth, args: argparse.Namespace) -> int:
    stream = not args.json

    def on_token(piece: str) -> None:
        sys.stdout.write(piece)
        sys.stdout.flush()

    result = hearth.ask(args.question, k=args.k, workspace=args.workspace, on_token=on_token if stream else None)
    if args.json:
        print(json.dumps(result.to_json(), ensure_ascii=False))
        return EXIT_OK
    print()
    if result.sources:
        print("\nSources:")
        for i, h in enumerate(result.sources, 1):
            mark = "*" if i in result.cited else " "
            print(f" {mark}[{i}] {_place(h)}  (score {h.score:.2f})")
    return EXIT_OK


def _eval(hearth, args: argparse.Namespace) -> int:
    def progress(done: int, total: int) -> None:
        if sys.stderr.isatty():
            sys.stderr.write(f"\rself-test: {done}/{total} questions")
            sys.stderr.flush()

    report = hearth.self_test(workspace=args.workspace, n=args.n, k=args.k, seed=args.seed, progress=progress)
    if sys.stderr.isatty():
        sys.stderr.write("\n")
    if args.json:
        print(json.dumps(report.to_json(), ensure_ascii=False))
        return EXIT_OK
    if not report.items:
        print("No passages to test: index some documents first.")
        return EXIT_OK
    for item in report.items:
        where = f"#{item.rank}" if item.rank else "not found"
        print(f"{where:>10}  {item.question}  <- {_place(item)}")
    print(
        f"\nFound the passage first for {report.rate(1):.0%} of {len(report.items)} questions, "
        f"in the top {report.k} for {report.rate(report.k):.0%} (MRR {report.mrr:.2f})."
    )
    return EXIT_OK


def _sources(hearth, args: argparse.Namespace) -> int:
    docs = hearth.sources(workspace=args.workspace)
    if args.json:
        print(json.dumps({"sources": [
            {"source": d.source, "status": d.status, "chunks": d.chunks, "pages": d.pages, "sha256": d.sha256,
             "size": d.size, "indexed": d.updated} for d in docs]}, ensure_ascii=False))
        return EXIT_OK
    if not docs:
        print("No documents in this workspace.")
    for d in docs:
        status = "" if d.status == "done" else f"  [{d.status}: interrupted, will be redone]"
        pages = f", {d.pages} pages" if d.pages else ""
        print(f"{d.source}  ({d.chunks} passages{pages}){status}")
    return EXIT_OK


def _forget(hearth, args: argparse.Namespace) -> int:
    removed = hearth.forget(args.paths, workspace=args.workspace)
    for s in removed:
        print(f"forgot {s}")
    if not removed:
        print("hearth: nothing indexed under " + ", ".join(map(str, args.paths)), file=sys.stderr)
        return EXIT_FAILED
    return EXIT_OK


def _place(hit) -> str:
    place = hit.source
    if hit.page is not None:
        place += f", page {hit.page}"
    if hit.heading:
        place += f" — {hit.heading}"
    return place


class _ProgressLine:
    """A one-line progress bar on stderr when it is a terminal; silent otherwise."""

    def __init__(self) -> None:
        self.tty = sys.stderr.isatty()
        self.shown = False

    def __call__(self, p) -> None:
        if not self.tty or p.files_total == 0:
            return
        frac = p.files_done / p.files_total
        bar = "#" * int(frac * 24)
        eta = ""
        if p.files_done and frac < 1:
            eta = f" ETA {p.elapsed / p.files_done * (p.files_total - p.files_done):.0f}s"
        name = Path(p.current).name[:40] if p.current else ""
        sys.stderr.write(
            f"\r[{bar:<24}] {p.files_done}/{p.files_total} files, {p.chunks} passages{eta} {name:<40}"
        )
        sys.stderr.flush()
        self.shown = True

    def close(self) -> None:
        if self.shown:
            sys.stderr.write("\n")
            sys.stderr.flush()
