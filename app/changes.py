"""`hearth compare`: what changed between two indexed documents, or a document and its earlier version.

    hearth compare OLD NEW [--workspace NAME] [--json]
    hearth compare PATH --previous [--version N] [--workspace NAME] [--json]

The comparison is the core's (`Hearth.compare`, rag/compare.py); this prints it: for reading, each change
with both sides cited (old page → new page) and the changed words marked [-old-]{+new+}, or as the JSON of
shared/DESIGN.md. A warning (a scan read with low confidence) goes to stderr.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from pathlib import Path
from typing import Any

from inference.errors import UsageError
from rag.compare import Comparison, word_changes

EXIT_OK = 0


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register `compare` on the CLI's subparsers (the caller adds --workspace and --json)."""
    sp = subparsers.add_parser("compare", help="what changed: two indexed documents, or one and its previous version",
                               description="hearth compare OLD NEW, or hearth compare PATH --previous [--version N]")
    sp.add_argument("paths", nargs="+", type=Path, metavar="PATH", help="OLD NEW, or PATH with --previous")
    sp.add_argument("--previous", action="store_true",
                    help="compare PATH's version indexed now with an earlier version Hearth kept")
    sp.add_argument("--version", type=int, default=None, metavar="N",
                    help="with --previous: the kept version to compare with (default: the one before)")
    return sp


def run(hearth: Any, args: argparse.Namespace) -> int:
    """`hearth compare OLD NEW` or `hearth compare PATH --previous [--version N]`; returns the exit code."""
    if args.previous and len(args.paths) != 1:
        raise UsageError("compare takes OLD NEW, or one PATH with --previous.")
    if not args.previous and len(args.paths) != 2:
        raise UsageError("compare takes two documents (OLD NEW), or one with --previous.")
    new = None if args.previous else args.paths[1]
    result = hearth.compare(args.paths[0], new, previous=args.previous, version=args.version,
                            workspace=args.workspace)
    for warning in result.warnings:
        print(f"hearth: warning: {warning}", file=sys.stderr)
    if args.json:
        print(json.dumps(result.to_json(), ensure_ascii=False))
        return EXIT_OK
    print(as_text(result))
    return EXIT_OK


def as_text(result: Comparison) -> str:
    """A comparison for reading in a terminal: each change with both sides cited, changed words marked."""
    def side(s: Any) -> str:
        when = ""
        if s.indexed_at:
            when = ", indexed " + dt.datetime.fromtimestamp(s.indexed_at).strftime("%Y-%m-%d %H:%M")
        return s.source + (f" (version {s.version}{when})" if s.version else f" ({when[2:]})" if when else "")

    lines = [f"old: {side(result.old)}", f"new: {side(result.new)}", "", result.summary]
    for n, c in enumerate(result.changes, 1):
        pages = [f"old p. {c.old_page}" if c.old_page else "", f"new p. {c.new_page}" if c.new_page else ""]
        cite = " → ".join(p for p in pages if p)
        what = "renamed" if c.renamed else c.kind
        lines.append(f"\n{n}. {what}" + (f" — {c.heading}" if c.heading else "") + (f"  [{cite}]" if cite else ""))
        if c.kind == "changed":
            marked = " ".join(f"[-{t}-]" if op == "-" else f"{{+{t}+}}" if op == "+" else t
                              for op, t in word_changes(c.old_text or "", c.new_text or ""))
            lines += [f"   old: {c.old_text}", f"   new: {c.new_text}", f"   words: {marked}"]
            figures = [f"{o or '(none)'} → {w or '(none)'}" for o, w in c.figures]
            if figures:
                lines.append("   figures: " + "; ".join(figures))
        else:
            text = c.old_text if c.kind == "removed" else c.new_text
            mark = {"added": "+", "removed": "-", "moved": ">"}[c.kind]
            lines += [f"   {mark} {line}" for line in (text or "").splitlines()]
    return "\n".join(lines)
