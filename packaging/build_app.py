"""Build Hearth's one-folder app with PyInstaller, then prove it starts with no Python and no network.

    python packaging/build_app.py [--skip-build] [--ask] [--archive]        (make app-folder)

Output: build/app-dist/hearth/ — `hearth` (the executable: CLI and desktop app) beside `_internal/`
(the Python runtime, every library, the default models); copy the folder anywhere and run it.

Why PyInstaller: it freezes the environment Hearth is tested in (same wheels, no recompiling), has
maintained hooks for PySide6 and ONNX Runtime, works offline from the local environment, and its
one-folder mode starts fast. Briefcase targets per-distribution system packages built in containers
and Nuitka recompiles everything to C (an hour on two cores); neither adds anything here.

The check runs the built `hearth` with an empty environment (PATH=/nonexistent: no Python to fall back
on) in a network namespace without interfaces: `ingest` of the demo documents and `search`, and with
--ask also `ask` (two minutes of CPU for the default model).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "packaging" / "pyinstaller" / "hearth.spec"
DIST = ROOT / "build" / "app-dist"
WORK = ROOT / "build" / "pyinstaller"


def build() -> float:
    """Run PyInstaller on the spec; returns the seconds it took."""
    t0 = time.monotonic()
    try:
        import PyInstaller  # noqa: F401
    except ImportError:
        raise SystemExit("build_app: PyInstaller is not installed: pip install 'pyinstaller>=6.10'") from None
    cmd = [sys.executable, "-m", "PyInstaller", "--noconfirm", "--clean", "--log-level", "WARN",
           "--distpath", str(DIST), "--workpath", str(WORK), str(SPEC)]
    r = subprocess.run(cmd, cwd=ROOT)
    if r.returncode != 0:
        raise SystemExit(f"build_app: PyInstaller failed (exit {r.returncode})")
    return time.monotonic() - t0


def check(app: Path, *, ask: bool) -> dict[str, object]:
    """Run the frozen app without Python or network on the demo documents; returns what it printed."""
    work = Path(tempfile.mkdtemp(prefix="hearth-app-check-"))
    prefix = []
    unshare = shutil.which("unshare")  # found here: the app itself runs with PATH=/nonexistent
    if unshare:
        prefix = [unshare, "-n", "--"] if os.geteuid() == 0 else [unshare, "-rn", "--"]
    env = {"PATH": "/nonexistent", "HOME": str(work), "LANG": "C.UTF-8"}
    exe = app / "hearth"
    out: dict[str, object] = {"offline": bool(prefix)}
    try:
        def run(*args: str) -> dict:
            t0 = time.monotonic()
            r = subprocess.run([*prefix, str(exe), "--data-dir", str(work / "data"), "--threads", "2", *args],
                               env=env, cwd=work, capture_output=True, text=True, timeout=1800)
            if r.returncode != 0:
                raise SystemExit(f"build_app: `hearth {args[0]}` failed in the frozen app:\n{r.stderr[-3000:]}")
            out[f"{args[0]}_seconds"] = round(time.monotonic() - t0, 1)
            return json.loads(r.stdout)

        report = run("ingest", str(ROOT / "assets" / "demo"), "--json")
        assert report["added"] == 3 and not report["failed"], report
        hits = run("search", "meal allowance abroad", "--json")["hits"]
        assert hits and hits[0]["source"].endswith("travel-policy.pdf"), hits
        out["top_hit"] = f"{Path(hits[0]['source']).name} p.{hits[0]['page']}"
        if ask:
            answer = run("ask", "What is the daily meal allowance for travel abroad?", "--json")
            out["answer"] = answer["answer"]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return out


def main(argv: list[str] | None = None) -> int:
    """Build (unless --skip-build), check, and print a JSON summary."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--skip-build", action="store_true", help="check the app built before")
    p.add_argument("--ask", action="store_true", help="also answer a question with the default model")
    p.add_argument("--archive", action="store_true", help="also write build/app-dist/hearth.tar")
    args = p.parse_args(argv)
    summary: dict[str, object] = {}
    if not args.skip_build:
        summary["build_seconds"] = round(build(), 1)
    app = DIST / "hearth"
    summary["app"] = str(app)
    summary["size"] = sum(f.stat().st_size for f in app.rglob("*") if f.is_file())
    summary.update(check(app, ask=args.ask))
    if args.archive:
        with tarfile.open(DIST / "hearth.tar", "w") as fh:
            fh.add(app, arcname="hearth")
        summary["archive"] = str(DIST / "hearth.tar")
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
