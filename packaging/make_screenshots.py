"""Retake the user guide's screenshots (docs/screenshots/*.png) from the current app.

    python packaging/make_screenshots.py [--only chat|library|hardware|vulkan]... [--out DIR] [--data DIR]

Each picture is one `hearth gui --screenshot` run in a data folder of its own (under --data, a temporary
folder by default), so nothing of yours is read or changed:

- chat.png:     the demo documents indexed, then the demo's question asked with the built-in chat model
                (a few minutes on 2 CPU cores: the answer is really written and checked);
- library.png:  the demo documents and this guide's task pages being indexed, taken half-way through;
- hardware.png: the hardware panel over a fixture copy of a Strix Halo machine's /sys
                (HEARTH_SYSFS_ROOT=tests/fixtures/sysfs/strix-halo), so it looks the same on every machine;
- vulkan.png:   the hardware panel with the Vulkan engine (`make vulkan`) on this machine's Vulkan device, its heap
                capped at 700 MiB (HEARTH_VULKAN_HEAP) so the model is partly offloaded.

The window is drawn offscreen (QT_QPA_PLATFORM=offscreen) unless a display is set; under Xvfb run it as
`xvfb-run -a python packaging/make_screenshots.py`. Exit code 0 when every picture was saved.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "assets" / "demo"
OUT = ROOT / "docs" / "screenshots"
FIXTURE_SYSFS = ROOT / "tests" / "fixtures" / "sysfs" / "strix-halo"
QUESTION = "What is the daily meal allowance for travel abroad?"
SIZE = "1360x860"
# The library's documents besides the demo: the guide's task pages, 14 files in all. Under 16 files Hearth indexes
# file by file (from 16 on, in batches), so the picture shows files done, one being read and the rest queued.
GUIDE_PAGES = tuple(ROOT / "docs" / f"{name}.md" for name in (
    "desktop-app", "answers", "command-line", "api-and-mcp", "scans-and-pictures", "tables", "languages",
    "models-and-gpus", "offline-install", "shared-office", "security-and-privacy"))


@dataclass(frozen=True)
class Shot:
    """One picture: the `hearth gui` arguments that stage it and the environment it needs."""

    name: str
    gui_args: tuple[str, ...]
    env: dict[str, str] = field(default_factory=dict)
    documents: tuple[Path, ...] = ()  # copied into the data folder's own documents folder, then added


def shots() -> dict[str, Shot]:
    """Every picture the guide shows, by name."""
    return {
        "chat": Shot("chat", ("--ask", QUESTION), documents=(DEMO,)),
        "library": Shot("library", ("--panel", "library", "--during-ingest"), documents=(DEMO, *GUIDE_PAGES)),
        "hardware": Shot("hardware", ("--panel", "hardware"), env={"HEARTH_SYSFS_ROOT": str(FIXTURE_SYSFS)}),
        # The Vulkan engine on this machine's own Vulkan device (lavapipe where there is no GPU), with a heap capped
        # so that the plan offloads part of the model: planned and actual layers side by side.
        "vulkan": Shot("vulkan", ("--panel", "hardware", "--engine", "vulkan"), env={"HEARTH_VULKAN_HEAP": str(700 << 20)}),
    }


def command(shot: Shot, *, png: Path, data: Path, documents: Path | None) -> list[str]:
    """The `hearth` command line that takes `shot` into `png`, over the data folder `data`."""
    cmd = [sys.executable, "-m", "app", "--data-dir", str(data), "gui", "--screenshot", str(png), "--size", SIZE]
    if documents is not None:
        cmd += ["--add", str(documents)]
    return [*cmd, *shot.gui_args]


def environment(shot: Shot) -> dict[str, str]:
    """This process's environment for one shot: offscreen unless there is a display, English, the shot's own."""
    env = dict(os.environ)
    if not (env.get("DISPLAY") or env.get("WAYLAND_DISPLAY")):
        env.setdefault("QT_QPA_PLATFORM", "offscreen")
    env.pop("HEARTH_DATA_DIR", None)
    env.pop("HEARTH_SYSFS_ROOT", None)
    env["HEARTH_LANG"] = "en"
    env.update(shot.env)
    return env


def _stage_documents(shot: Shot, folder: Path) -> Path | None:
    """Copy the shot's documents into one folder (its name shows in the library), or None when it has none."""
    if not shot.documents:
        return None
    folder.mkdir(parents=True, exist_ok=True)
    for item in shot.documents:
        if item.is_dir():
            shutil.copytree(item, folder, dirs_exist_ok=True)
        else:
            shutil.copy2(item, folder / item.name)
    return folder


def take(shot: Shot, *, out: Path, work: Path) -> int:
    """Take one picture; returns the app's exit code."""
    data = work / shot.name / "data"
    documents = _stage_documents(shot, work / shot.name / "office-documents")
    png = out / f"{shot.name}.png"
    cmd = command(shot, png=png, data=data, documents=documents)
    print(f"{shot.name}: {' '.join(cmd[1:])}", file=sys.stderr)
    return subprocess.run(cmd, cwd=ROOT, env=environment(shot), check=False).returncode


def main(argv: Sequence[str] | None = None) -> int:
    """Take the pictures asked for (all by default)."""
    parser = argparse.ArgumentParser(prog="python packaging/make_screenshots.py", description=__doc__.splitlines()[0])
    parser.add_argument("--only", action="append", choices=sorted(shots()), default=[],
                        help="take only this picture (repeatable)")
    parser.add_argument("--out", type=Path, default=OUT, help="where the PNG files go (default: docs/screenshots)")
    parser.add_argument("--data", type=Path, default=None,
                        help="keep the data folders here (default: a temporary folder, removed afterwards)")
    args = parser.parse_args(argv)
    work = args.data or Path(tempfile.mkdtemp(prefix="hearth-screenshots-"))
    failed = []
    try:
        for name in args.only or list(shots()):
            if take(shots()[name], out=args.out, work=work) != 0:
                failed.append(name)
    finally:
        if args.data is None:
            shutil.rmtree(work, ignore_errors=True)
    if failed:
        print(f"not saved: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
