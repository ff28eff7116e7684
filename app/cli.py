"""The `hearth` command line: the contract in shared/DESIGN.md (results on stdout, progress on stderr)."""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from app import changes, indexing
from rag.answer import NOT_FOUND_MODES
from app.config import hearth_config, requested_from_args
from app.terminal import plain_output
from inference.engines import CHOICES
from inference.errors import Cancelled, HearthError, UsageError

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def build_parser() -> argparse.ArgumentParser:
    """The argument parser for every subcommand."""
    p = argparse.ArgumentParser(prog="hearth", description="Private, offline answers from your own documents.")
    p.add_argument("--data-dir", type=Path, default=None, help="where Hearth keeps its index (default: %(default)s)")
    p.add_argument("--threads", type=int, default=None, help="CPU threads for the models (default: automatic)")
    p.add_argument("--embedder", dest="embedder_spec", default=None, metavar="NAME",
                   help="embedding model (see `hearth embedder list`); ingesting with a new one re-embeds the "
                        "workspace (default: the workspace's own, else all-MiniLM-L6-v2)")
    p.add_argument("--chroma-url", default=None, metavar="URL",
                   help="shared office: keep the index on this Chroma server (`chroma run`), e.g. http://HOST:8000 "
                        "(env HEARTH_CHROMA_URL; its token in HEARTH_CHROMA_TOKEN)")
    p.add_argument("--llm-url", default=None, metavar="URL",
                   help="shared office: answers come from this OpenAI-compatible server (llama-server, vLLM, "
                        "Lemonade), e.g. http://HOST:8080/v1 (env HEARTH_LLM_URL; its key in HEARTH_LLM_API_KEY)")
    p.add_argument("--llm-model", default=None, metavar="NAME",
                   help="the model to ask that server for (env HEARTH_LLM_MODEL; default: the first it lists)")
    p.add_argument("--model-ranking", action=argparse.BooleanOptionalAction, default=None,
                   help="answers: the chat model reads the first passages with the question to put the one that "
                        "answers first, some seconds more on a CPU before the answer starts (env "
                        "HEARTH_MODEL_RANKING=1; default: off)")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    def scope(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--in", dest="scope", action="append", type=Path, default=[], metavar="PATH",
                        help="only these indexed files or folders (repeatable)")

    def common(sp: argparse.ArgumentParser, *, json_flag: bool = True) -> None:
        sp.add_argument("--workspace", default="default", help="workspace name (default: %(default)s)")
        if json_flag:
            sp.add_argument("--json", action="store_true", help="print the result as JSON")

    sp = sub.add_parser("ingest", help="index files and folders")
    sp.add_argument("paths", nargs="+", type=Path, metavar="PATH")
    sp.add_argument("--watch", action="store_true", help="then keep the folders in sync until Ctrl-C")
    sp.add_argument("--poll", action="store_true", help="with --watch: poll for changes (network drives)")
    common(sp)
    sp = sub.add_parser("search", help="find the passages that best match a query")
    sp.add_argument("query")
    sp.add_argument("-k", type=int, default=5, help="how many passages (default: %(default)s)")
    sp.add_argument("--mode", choices=("hybrid", "dense", "lexical"), default="hybrid",
                    help="ranking: keywords and meaning fused (default), meaning only, keywords only")
    sp.add_argument("--plain", action="store_true",
                    help="rank passages as wholes, without reading the first ones' lines (some 0.7 s sooner on "
                         "2 CPU cores; the first passage is right less often)")
    scope(sp)
    common(sp)
    sp = sub.add_parser("ask", help="answer a question from the documents, with sources")
    sp.add_argument("question")
    sp.add_argument("-k", type=int, default=5, help="how many passages to give the model (default: %(default)s)")
    sp.add_argument("--model", default=None, help="built-in model name or path to a .gguf file")
    sp.add_argument("--ctx", type=int, default=4096, help="context size in tokens (default: %(default)s)")
    sp.add_argument("--conversation", default=None, metavar="ID",
                    help="continue stored conversation ID, or 'new' to start one (its id goes to stderr)")
    sp.add_argument("--query", default=None, metavar="TEXT",
                    help="search for TEXT instead of the question (e.g. a corrected `searched_for`)")
    sp.add_argument("--not-found", dest="not_found", choices=NOT_FOUND_MODES, default=None,
                    help="when the documents don't seem to answer: strict (say so), balanced (say so when unsure; "
                         "the default, or HEARTH_NOT_FOUND), off (always show the model's answer)")
    scope(sp)
    common(sp)
    engine_flag(sp)
    sp = sub.add_parser("summarize", help="summarise a whole indexed document, section by section")
    sp.add_argument("path", type=Path, metavar="PATH")
    common(sp)
    engine_flag(sp)
    common(changes.add_parser(sub))
    sp = sub.add_parser("eval", help="self-test: can search find passages from questions the model writes?")
    sp.add_argument("-n", type=int, default=20, help="passages to sample (default: %(default)s)")
    sp.add_argument("-k", type=int, default=5, help="results searched per question (default: %(default)s)")
    sp.add_argument("--seed", type=int, default=0, help="sampling seed (default: %(default)s)")
    sp.add_argument("--model", default=None, help="built-in model name or path to a .gguf file")
    common(sp)
    engine_flag(sp)
    sp = sub.add_parser("sources", help="list the indexed documents")
    common(sp)
    sp = sub.add_parser("forget", help="remove documents (or everything under folders) from the index")
    sp.add_argument("paths", nargs="+", type=Path, metavar="PATH")
    common(sp, json_flag=False)
    sp = sub.add_parser("models", help="list the chat models: built-in, in DATA_DIR/models, and added by path")
    sp.add_argument("--add", type=Path, default=None, metavar="GGUF", help="add a .gguf file kept elsewhere")
    sp.add_argument("--json", action="store_true", help="print the result as JSON")
    sp = sub.add_parser("conversations", help="list, show, export or delete stored conversations")
    sp.add_argument("action", nargs="?", choices=("list", "show", "export", "delete"), default="list")
    sp.add_argument("id", nargs="?", type=int, default=None, metavar="ID")
    common(sp)
    sp = sub.add_parser("serve", help="serve the OpenAI-compatible local API (a key is required by default, "
                                      "shown once; loopback only unless --host)")
    sp.add_argument("--host", default="127.0.0.1", help="address to listen on (default: %(default)s)")
    sp.add_argument("--port", type=int, default=8642, help="port (default: %(default)s)")
    sp.add_argument("--model", default=None, help="the chat model answers come from (default: the built-in one)")
    sp.add_argument("--ctx", type=int, default=4096, help="context size in tokens (default: %(default)s)")
    sp.add_argument("--new-key", action="store_true", help="replace the API key with a new one (shown once)")
    sp.add_argument("--no-key", action="store_true",
                    help="on loopback only: answer without an API key (refused where the policy requires one)")
    sp.add_argument("--cors-origin", action="append", default=[], metavar="ORIGIN",
                    help="let web pages from ORIGIN call the API (repeatable; off by default)")
    common(sp, json_flag=False)
    engine_flag(sp)
    sp = sub.add_parser("mcp", help="serve the documents to MCP clients over stdio")
    sp.add_argument("--model", default=None, help="the chat model answers come from (default: the built-in one)")
    sp.add_argument("--ctx", type=int, default=4096, help="context size in tokens (default: %(default)s)")
    common(sp, json_flag=False)
    engine_flag(sp)
    from app import hw

    engine_flag(hw.add_parser(sub))
    sp = sub.add_parser("embedder", help="add, list and check embedding models")
    esub = sp.add_subparsers(dest="embedder_command", metavar="ACTION", required=True)
    ep = esub.add_parser("add", help="convert a sentence-transformers folder (BERT family) for Hearth; no network")
    ep.add_argument("folder", type=Path, metavar="FOLDER")
    ep.add_argument("--name", default=None, help="the name to use it by (default: the folder's name)")
    ep.add_argument("--query-prompt", default=None, help='text put before questions (e5 models: "query: ")')
    ep.add_argument("--passage-prompt", default=None, help='text put before passages (e5 models: "passage: ")')
    ep.add_argument("--no-int8", action="store_true", help="keep only the fp32 graph (no int8 copy)")
    ep.add_argument("--json", action="store_true", help="print the result as JSON")
    ep = esub.add_parser("list", help="list the converted embedding models")
    ep.add_argument("--json", action="store_true", help="print the result as JSON")
    ep = esub.add_parser("use", help="embed a workspace's documents again with another model, which it then "
                                      "searches with")
    ep.add_argument("name", help="model name (see `hearth embedder list`)")
    ep.add_argument("--workspace", default="default", help="workspace to switch (default: default)")
    ep.add_argument("--json", action="store_true", help="print the result as JSON")
    ep = esub.add_parser("check", help="load an embedding model and say where it runs (GPU or CPU, and why)")
    ep.add_argument("name", nargs="?", default=None, help="model name or key (default: the default model)")
    ep.add_argument("--json", action="store_true", help="print the result as JSON")
    sp = sub.add_parser("gui", help="open the desktop app (also: `hearth` with no command)")
    sp.add_argument("--workspace", default=None, help="workspace to open (default: the last one used)")
    engine_flag(sp)
    sp.add_argument("--screenshot", type=Path, default=None, metavar="PNG",
                    help="wait until the window is idle, save a picture of it to PNG and exit")
    sp.add_argument("--add", type=Path, action="append", default=[], metavar="PATH",
                    help="with --screenshot: index PATH first (repeatable)")
    sp.add_argument("--ask", default=None, metavar="QUESTION", help="with --screenshot: ask QUESTION first")
    sp.add_argument("--panel", choices=("library", "hardware"), default=None,
                    help="with --screenshot: the side panel to show")
    sp.add_argument("--during-ingest", action="store_true",
                    help="with --screenshot and --add: take it half-way through indexing")
    sp.add_argument("--size", default="1360x860", metavar="WxH", help="with --screenshot: window size")
    return p


def engine_flag(sp: argparse.ArgumentParser) -> None:
    """`--engine` on a command that runs llama.cpp (inference/engines.py)."""
    sp.add_argument("--engine", choices=CHOICES, default=None,
                    help="llama.cpp engine: auto (default, or HEARTH_ENGINE), cpu, vulkan (make vulkan builds "
                         "it) or hip")


def start_engine(args: argparse.Namespace) -> None:
    """Choose the command's llama.cpp engine and make it the one llama_cpp loads, before anything imports it."""
    if not hasattr(args, "engine"):
        return
    from inference import engines

    flag = args.engine
    if flag is None and args.command == "gui" and args.screenshot is None:
        flag = _saved_engine()  # the engine chosen in the app's Settings, under the flag, over HEARTH_ENGINE
    engines.start(engines.choose(engines.requested_engine(flag)))


def _saved_engine() -> str | None:
    """The engine saved in the app's Settings, if one was and the app can be loaded."""
    try:
        from app.gui.prefs import Prefs, default_path
    except ImportError:
        return None  # the window cannot start either; _gui says why
    saved = Prefs(default_path()).engine
    return saved if saved in CHOICES else None


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns the exit code (0 ok, 1 some inputs failed, 2 usage error)."""
    # Everything Hearth writes (index, keyword index, conversations, logs, keys) is for this user alone.
    os.umask(0o077)
    _show_preparing()
    # Importing `inference` (above) already switched off the runtimes' telemetry and hub access.
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:  # `hearth` alone opens the desktop app, where there is a screen for it
        if not _has_display():
            parser.print_help(sys.stderr)
            return EXIT_USAGE
        args = parser.parse_args([*(sys.argv[1:] if argv is None else argv), "gui"])
    # `mcp` speaks its protocol on stdout; every other command's output is for a terminal or a script.
    guard = plain_output() if args.command not in ("gui", "mcp") else contextlib.nullcontext()
    with guard:
        return _main(args)


def _main(args: argparse.Namespace) -> int:
    try:
        start_engine(args)
        if args.command == "gui":
            return _gui(args)
        if args.command == "hw":  # needs no data folder and no service
            from app import hw

            return hw.run(args)
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


class _ToStderr(logging.Handler):
    """Writes each record's message to the sys.stderr of the moment (the CLI's filtered stream included)."""

    def emit(self, record: logging.LogRecord) -> None:
        print(self.format(record), file=sys.stderr, flush=True)


def _show_preparing() -> None:
    """The one-time preparation of a model in the machine's cache (inference.models.notice) shows on stderr:
    a first run waits some seconds for it, and says why."""
    from inference.models import notice

    if not any(isinstance(h, _ToStderr) for h in notice.handlers):
        notice.addHandler(_ToStderr())
        notice.setLevel(logging.INFO)
        notice.propagate = False


def _has_display() -> bool:
    """Whether a window can be shown: a desktop session, another OS, or a Qt platform chosen explicitly."""
    if sys.platform != "linux" or os.environ.get("QT_QPA_PLATFORM"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def _gui(args: argparse.Namespace) -> int:
    if not _has_display():
        raise UsageError("There is no display to open the window on.",
                         hint="Use the commands (hearth --help), run it in a desktop session, or add "
                              "QT_QPA_PLATFORM=offscreen for --screenshot.")
    try:
        from app.gui.launch import ScreenshotPlan, parse_size, run
    except ImportError as exc:  # PySide6 missing or a system library Qt needs is absent
        raise HearthError(f"The desktop app cannot start: {exc}.",
                          hint="pip install pyside6-essentials pyside6-pdf (and on Debian: apt-get install "
                               "libxcb-cursor0 libxkbcommon-x11-0 libegl1)") from exc
    requested = requested_from_args(args)  # checks --threads; the window adds its saved choices under these
    shot = None
    if args.screenshot is not None:
        try:
            size = parse_size(args.size)
        except ValueError:
            raise UsageError(f"--size takes WIDTHxHEIGHT, not {args.size!r}.") from None
        shot = ScreenshotPlan(args.screenshot, add=list(args.add), ask=args.ask, panel=args.panel,
                              during_ingest=args.during_ingest, size=size)
    elif args.add or args.ask or args.during_ingest:
        raise UsageError("--add, --ask and --during-ingest go with --screenshot.")
    from rag.datalock import set_process_label

    set_process_label("hearth gui")  # how another process's refusal names this window
    return run(requested, workspace=args.workspace, screenshot=shot)


def _print_error(exc: HearthError) -> None:
    print(f"hearth: error: {exc}", file=sys.stderr)
    if exc.hint:
        print(f"hint: {exc.hint}", file=sys.stderr)


def _run(args: argparse.Namespace) -> int:
    from rag.service import Hearth

    # The administrator's policy wins over flags and variables; a conflict is an error, not a silent change.
    hearth = Hearth(hearth_config(requested_from_args(args)))
    if args.command in _INDEX_COMMANDS:
        from rag.datalock import set_process_label

        set_process_label(f"hearth {args.command}" + (" --watch" if getattr(args, "watch", False) else ""))
        hearth.claim_data_dir()  # another process using the folder is refused now, before a model loads
    return {
        "ingest": indexing.ingest,
        "search": _search,
        "ask": _ask,
        "models": _models,
        "conversations": _conversations,
        "sources": _sources,
        "summarize": _summarize,
        "compare": changes.run,
        "eval": _eval,
        "forget": _forget,
        "serve": _serve,
        "mcp": _mcp,
        "embedder": _embedder,
    }[args.command](hearth, args)


# Commands that open the document index, which one process at a time may use (rag.datalock).
_INDEX_COMMANDS = frozenset({"ingest", "search", "ask", "summarize", "compare", "eval", "forget", "serve", "mcp"})


def _embedder(hearth, args: argparse.Namespace) -> int:
    """`hearth embedder add|list|check`."""
    from inference import models

    cache = hearth.config.cache_dir
    if args.embedder_command == "add":
        print(f"Converting {args.folder} (this takes a minute)…", file=sys.stderr)
        info = models.add_embedder(args.folder, cache, name=args.name, query_prompt=args.query_prompt,
                                   passage_prompt=args.passage_prompt, int8=not args.no_int8)
        if args.json:
            print(json.dumps(info.to_json(), ensure_ascii=False))
        else:
            check = f" (int8 check: mean cosine {info.check['mean_cosine']:.4f} to fp32)" if info.check else ""
            print(f"Added {info.name} as {info.key}, {info.precision}{check}.")
            if not args.no_int8 and info.precision == "fp32":
                print("The int8 copy stayed too far from fp32 on the check texts; the fp32 graph is used.")
            print(f"Use it with: hearth --embedder {info.name} ingest PATH --workspace NAME")
        return EXIT_OK
    if args.embedder_command == "list":
        infos = models.list_embedders(cache)
        if args.json:
            print(json.dumps({"embedders": [i.to_json() for i in infos]}, ensure_ascii=False))
            return EXIT_OK
        if not any(i.builtin for i in infos):
            print(f"{models.DEFAULT_EMBEDDER.name}  (built-in; converted on first use)")
        for i in infos:
            check = f", mean cosine {i.check['mean_cosine']:.4f} to fp32" if i.check else ""
            print(f"{i.name}  [{i.key}]  {i.precision}{' built-in' if i.builtin else ''}{check}")
        return EXIT_OK
    if args.embedder_command == "use":
        bar = indexing.ProgressLine()
        report = hearth.reembed(args.name, workspace=args.workspace, progress=bar)
        bar.close()
        indexing.print_ingest(report, args.json)
        return EXIT_FAILED if report.failed else EXIT_OK
    from inference.embedder import onnxruntime_distributions

    emb = hearth.embedder_named(args.name or hearth.config.embedder)
    import onnxruntime

    result = {
        "embedder": emb.name, "precision": emb.precision, "dim": emb.dim, "provider": emb.provider,
        "note": emb.provider_note, "placement": emb.placement.to_json() if emb.placement else None,
        "available_providers": onnxruntime.get_available_providers(),
        "onnxruntime_distributions": onnxruntime_distributions(),
    }
    if args.json:
        print(json.dumps(result, ensure_ascii=False))
    else:
        print(f"{emb.name} ({emb.precision}, {emb.dim} dims): {emb.provider_note}")
        if emb.placement is not None and emb.placement.note != emb.provider_note:
            print(f"placement: {emb.placement.note}")
        print(f"ONNX Runtime offers: {', '.join(result['available_providers'])}")
    if len(result["onnxruntime_distributions"]) > 1:
        print(f"hearth: warning: several onnxruntime packages are installed ({', '.join(result['onnxruntime_distributions'])}); "
              "they overwrite each other's files.", file=sys.stderr)
        print("hint: python packaging/install_onnxruntime.py VARIANT  (or: make venv-rocm, venv-migraphx, venv-cuda)",
              file=sys.stderr)
        return EXIT_FAILED
    return EXIT_OK


def _serve(hearth, args: argparse.Namespace) -> int:
    from app.server import serve_command

    return serve_command(hearth, args)


def _mcp(hearth, args: argparse.Namespace) -> int:
    from app.mcp_server import mcp_command

    return mcp_command(hearth, args)


def _search(hearth, args: argparse.Namespace) -> int:
    hits = hearth.search(args.query, k=args.k, workspace=args.workspace, mode=args.mode, scope=args.scope,
                         lines=False if args.plain else None)
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

    conversation = None
    if args.conversation == "new":
        conversation = hearth.new_conversation(args.question, workspace=args.workspace)
        print(f"conversation {conversation}", file=sys.stderr)
    elif args.conversation is not None:
        if not args.conversation.isdigit():
            raise UsageError(f"--conversation takes a number or 'new', not {args.conversation!r}.")
        conversation = int(args.conversation)
    hearth.warm_up()  # load the model while the passages are searched
    result = hearth.ask(args.question, k=args.k, workspace=args.workspace, on_token=on_token if stream else None,
                        conversation=conversation, scope=args.scope, query=args.query)
    if stream:
        print(flush=True)  # the streamed answer's line ends before anything else is written
    if result.searched_for and result.searched_for != " ".join(args.question.split()):
        print(f"searched for: {result.searched_for}", file=sys.stderr)
    if args.json:
        print(json.dumps(result.to_json(), ensure_ascii=False))
        return EXIT_OK
    support = result.support
    if support is not None and support.abstained:
        print("\nThat reply is only the model's guess: nothing in the passages bears it out. " + support.text)
        if support.why:
            print(f"Why: {support.why}")
    elif support is not None and support.fallback:
        print("\nThat reply is not borne out by the passages. " + support.text)
    if support is not None and support.quotes:
        print("\nClosest passages:" if support.abstained else "\nSupporting quotes:")
        for q in support.quotes:
            print(f'  [{q.passage}] "{" ".join(q.text.split())}"  ({_place(q)})')
    shown = support.sentences if support and not (support.fallback or support.abstained) else []
    unsupported = [s.text for s in shown if s.support is None]
    for text in unsupported:
        print(f'  not found in your documents: "{text}"')
    if result.sources:
        print("\nSources:")
        for i, h in enumerate(result.sources, 1):
            # * cited by the model; ~ not cited, but holds what the answer states (matched by Hearth)
            mark = "*" if i in result.cited else "~" if i in result.supported else " "
            print(f" {mark}[{i}] {_place(h)}  (score {h.score:.2f})")
    return EXIT_OK


def _summarize(hearth, args: argparse.Namespace) -> int:
    def progress(p) -> None:
        left = f", about {indexing.duration(p.seconds_left)} left" if p.seconds_left else ""
        where = f": {p.heading}" if p.heading else ""
        print(f"\rsummarising {p.done}/{p.total}{left}{where}"[:150].ljust(150), end="", file=sys.stderr, flush=True)

    hearth.warm_up()
    summary = hearth.summarize(args.path, workspace=args.workspace, progress=progress)
    print(file=sys.stderr)
    if args.json:
        print(json.dumps(summary.to_json(), ensure_ascii=False))
        return EXIT_OK
    print(summary.summary)
    print("\nSources:")
    for i, h in enumerate(summary.sources, 1):
        print(f"  [{i}] {_place(h)}")
    return EXIT_OK


def _models(hearth, args: argparse.Namespace) -> int:
    if args.add is not None:
        entry = hearth.library.add(args.add)
        print(f"added {entry.key}", file=sys.stderr)
    models = hearth.models()
    if args.json:
        print(json.dumps({"models": [m.to_json() for m in models]}, ensure_ascii=False))
        return EXIT_OK
    for m in models:
        tags = ", ".join(t for t, on in (("default", m.default), ("built-in", m.builtin)) if on)
        print(f"{m.key}" + (f"  [{tags}]" if tags else ""))
        if m.card is not None:
            c = m.card
            print(f"    {c.name} · {c.architecture} · {c.parameters / 1e9:.2f}B parameters · {c.quantisation} · "
                  f"context {c.context_length or '?'} · template {c.template} · licence {c.licence or 'not stated'}")
        if m.error:
            print(f"    unusable: {m.error}")
    return EXIT_OK


def _conversations(hearth, args: argparse.Namespace) -> int:
    store = hearth.conversations
    if args.action == "list":
        convs = store.list(args.workspace)
        if args.json:
            print(json.dumps({"conversations": [
                {"id": c.id, "title": c.title, "created": c.created, "updated": c.updated, "turns": c.turn_count}
                for c in convs]}, ensure_ascii=False))
        for c in [] if args.json else convs:
            print(f"{c.id:>5}  {c.title}  ({c.turn_count} questions)")
        return EXIT_OK
    if args.id is None:
        raise UsageError(f"conversations {args.action} needs a conversation ID.")
    if args.action == "delete":
        store.require(args.id, args.workspace)
        store.delete(args.id)
        return EXIT_OK
    conv = store.require(args.id, args.workspace)
    if args.json:
        print(json.dumps({"id": conv.id, "title": conv.title, "turns": [
            {"question": t.question, "text": t.text, "error": t.error,
             **({"sources": t.answer.to_json()["sources"]} if t.answer else {})} for t in conv.turns]},
            ensure_ascii=False))
    else:
        print(store.export_markdown(conv), end="")
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
             "size": d.size, "indexed": d.updated, "note": d.note} for d in docs]}, ensure_ascii=False))
        return EXIT_OK
    if not docs:
        print("No documents in this workspace.")
    for d in docs:
        status = "" if d.status == "done" else f"  [{d.status}: interrupted, will be redone]"
        pages = f", {d.pages} pages" if d.pages else ""
        note = f"  [{d.note}]" if d.note else ""
        print(f"{d.source}  ({d.chunks} passages{pages}){status}{note}")
    return EXIT_OK


def _forget(hearth, args: argparse.Namespace) -> int:
    removed = hearth.forget(args.paths, workspace=args.workspace)
    for s in removed:
        print(f"forgot {s}")
    if not removed:
        print("hearth: nothing indexed under " + ", ".join(map(str, args.paths)), file=sys.stderr)
        return EXIT_FAILED
    if hearth.last_redacted:
        print(f"Their passages were also taken out of {hearth.last_redacted} answer(s) in stored conversations.",
              file=sys.stderr)
    return EXIT_OK


def _place(hit) -> str:
    place = hit.source
    if hit.page is not None:
        place += f", page {hit.page}"
    if hit.heading:
        place += f" — {hit.heading}"
    if getattr(hit, "low_confidence", False):
        place += " [scanned, low confidence]"
    return place
