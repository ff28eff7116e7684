"""The command line's `ingest` and `ingest --watch`: the progress line, the report, the whole process's time."""

from __future__ import annotations

import argparse
import gc
import json
import os
import shutil
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from inference.errors import UsageError

EXIT_OK, EXIT_FAILED = 0, 1
_IMPORTED = time.perf_counter()


def ingest(hearth, args: argparse.Namespace) -> int:
    if args.watch:
        return _watch(hearth, args)
    bar = ProgressLine()
    started = _since_start()
    t0 = time.perf_counter()
    report = hearth.ingest(args.paths, workspace=args.workspace, progress=bar)
    bar.close()
    _whole_process(report, hearth, startup=started, ingest=time.perf_counter() - t0)
    print_ingest(report, args.json)
    return EXIT_FAILED if report.failed else EXIT_OK


def _whole_process(report, hearth, *, startup: float, ingest: float) -> None:
    """The report's stages made to account for the process's wall time until now (#68): `startup` (the
    interpreter, imports, settings), `model` (the embedder loaded or prepared), the reading, chunking, embedding
    and writing, `other` (what else ingest did: listing, hashing unchanged files, pruning, keeping versions) and
    `close` (the stores let go of). `wall` is the time measured: the stages add up to it, except that with many
    files the reader processes' `read` runs beside the embedding (then `other` is 0 and they add up to more)."""
    t0 = time.perf_counter()
    hearth.close()
    gc.collect()  # the index's handles are let go of here, not at the interpreter's exit
    stages = report.stages
    stages["other"] = max(0.0, ingest - sum(stages.values()))
    stages["startup"], stages["close"] = startup, time.perf_counter() - t0
    report.wall = startup + ingest + stages["close"]


def _since_start() -> float:
    """Seconds since this process started (its start time in /proc, else since this module was imported)."""
    try:
        with open("/proc/self/stat", "rb") as fh:
            started = int(fh.read().rsplit(b")", 1)[1].split()[19]) / os.sysconf("SC_CLK_TCK")
        with open("/proc/uptime", "rb") as fh:
            return max(0.0, float(fh.read().split()[0]) - started)
    except (OSError, ValueError, IndexError):
        return time.perf_counter() - _IMPORTED


def print_ingest(report, as_json: bool, forgotten: Sequence[str] = ()) -> None:
    if as_json:
        print(json.dumps(report.to_json(), ensure_ascii=False), flush=True)
    else:
        removed = report.removed + len(forgotten)
        print(
            f"Indexed {report.added} new and {report.updated} changed documents ({report.chunks} passages"
            + (f", {report.reused} reused" if report.reused else "")
            + f"); {report.unchanged} unchanged; "
            + (f"{removed} removed; " if removed else "")
            + f"{len(report.failed)} failed; {report.seconds:.1f} s.",
            flush=True,
        )
        if report.skipped:
            print(f"Skipped {report.skipped} files of types Hearth does not read.")
    for f in report.failed:
        print(f"failed: {f.source}: {f.error}", file=sys.stderr)


def _watch(hearth, args: argparse.Namespace) -> int:
    folders = [p for p in args.paths if p.is_dir()]
    if len(folders) != len(args.paths):
        raise UsageError("--watch takes folders only.")
    stop = threading.Event()
    bar = ProgressLine()

    def on_update(update) -> None:
        bar.close()
        if update.initial or update.changed:
            print_ingest(update.report, args.json, update.forgotten)
            for source in update.forgotten:
                print(f"removed: {source}", file=sys.stderr)
        if update.initial and not args.json:
            print("Watching " + ", ".join(map(str, folders)) + " for changes; Ctrl-C stops.", file=sys.stderr)

    try:
        hearth.watch(folders, stop=stop, on_update=on_update, workspace=args.workspace, progress=bar,
                     force_polling=True if args.poll else None)  # fmt: skip
    except KeyboardInterrupt:
        stop.set()
    return EXIT_OK


class ProgressLine:
    """A progress bar on stderr when it is a terminal (files, pages, passages, rate, ETA); silent otherwise."""

    WIDTH = 24

    def __init__(self) -> None:
        self.tty = sys.stderr.isatty()
        self.shown = False

    def __call__(self, p) -> None:
        if not self.tty or p.files_total == 0:
            return
        # Work is measured in bytes still to read and embed (unchanged files cost nothing).
        frac = p.bytes_done / p.bytes_total if p.bytes_total else p.files_done / p.files_total
        frac = min(1.0, max(0.0, frac))
        filled = frac * self.WIDTH
        bar = "█" * int(filled) + ("▌" if filled - int(filled) >= 0.5 else "")
        eta = f" ETA {duration(p.eta)}" if p.eta is not None and frac < 1 else ""
        rate = f", {p.rate:.1f}/s" if p.chunks else ""
        name = Path(p.current).name[:32] if p.current else ""
        line = (
            f"\r|{bar:<{self.WIDTH}}| {frac:4.0%} {p.files_done}/{p.files_total} files, {p.pages} pages, "
            f"{p.chunks} passages{rate}{eta} {name}"
        )
        width = shutil.get_terminal_size((100, 20)).columns - 1
        sys.stderr.write(line[: width + 1].ljust(width + 1) if len(line) > 1 else line)
        sys.stderr.flush()
        self.shown = True

    def close(self) -> None:
        if self.shown:
            sys.stderr.write("\n")
            sys.stderr.flush()
            self.shown = False


def duration(seconds: float) -> str:
    seconds = int(seconds)
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
