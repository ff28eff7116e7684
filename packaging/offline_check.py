"""Prove the offline bundle: build it, then install and use it where no network exists.

    python packaging/offline_check.py [--bundle DIR] [--out DIR] [--keep]      (make offline-check)

1. Build the CPU bundle (skipped with --bundle DIR, which checks an existing one).
2. In a network namespace with no interfaces (`unshare -n`; `unshare -rn` when not root), with an empty
   environment (PATH=/usr/bin:/bin, a fresh HOME: the system's Python, no pip configuration, no caches):
   - prove that nothing can be reached (a TCP connection out fails);
   - `install.sh --user`, which verifies every hash and installs into a fresh virtual environment;
   - `hearth ingest` the demo documents and `hearth ask` a question about them, each in its own
     namespace, from a folder outside the checkout (so nothing is imported from the source tree);
   - `hearth ingest` a scanned page (tests/fixtures/scans/invoice.png, a picture of two typed lines) and
     `hearth search` a number on it: the installed OCR models must read it.
3. Check the results (3 documents indexed, none failed; a cited answer from the travel policy; the scan's
   number found on it, read with confidence) and print a summary with sizes and times as JSON. Exit 0 only
   if every step passed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bundle as bundle_mod  # noqa: E402

QUESTION = "What is the daily meal allowance for travel abroad?"
SCAN = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "scans" / "invoice.png"
SCAN_QUERY, SCAN_WORD = "invoice 4471 paid", "4471"  # the page reads "Invoice 4471 was paid on 3 May 2024."
_NO_NETWORK_PROBE = (
    "import socket, sys\n"
    "for host in ('1.1.1.1', '8.8.8.8', 'pypi.org'):\n"
    "    try:\n"
    "        socket.create_connection((host, 443), timeout=3).close()\n"
    "    except OSError:\n"
    "        continue\n"
    "    sys.exit('reached ' + host)\n"
    "print('no network')\n"
)


class CheckFailed(Exception):
    """One step of the check did not do what it must."""


def unshare_prefix() -> list[str]:
    """The command prefix that runs a program in a new network namespace without interfaces."""
    if shutil.which("unshare") is None:
        raise CheckFailed("unshare (util-linux) is not installed.")
    root = hasattr(os, "geteuid") and os.geteuid() == 0
    return ["unshare", "-n", "--"] if root else ["unshare", "-rn", "--"]


def offline(cmd: list[str], *, env: dict[str, str], cwd: Path, log: Path, timeout: float = 1800) -> tuple[str, float]:
    """Run `cmd` with no network; returns (stdout, seconds). Its stderr goes to `log`."""
    t0 = time.monotonic()
    with log.open("a", encoding="utf-8") as err:
        err.write(f"\n$ {' '.join(cmd)}\n")
        err.flush()
        r = subprocess.run([*unshare_prefix(), *cmd], env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=err,
                           text=True, timeout=timeout)
    seconds = time.monotonic() - t0
    if r.returncode != 0:
        tail = log.read_text(encoding="utf-8", errors="replace")[-3000:]
        raise CheckFailed(f"{' '.join(cmd[:3])}… exited {r.returncode} after {seconds:.0f} s:\n{tail}")
    return r.stdout, seconds


def check(bundle: Path, work: Path) -> dict[str, object]:
    """Install `bundle` and use it with no network; returns the measurements."""
    home, prefix, data = work / "home", work / "prefix", work / "data"
    home.mkdir(parents=True)
    log = work / "offline.log"
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8", "XDG_DATA_HOME": str(home / ".local/share"),
           "TMPDIR": str(work)}
    python = shutil.which("python3", path=env["PATH"])
    if python is None:
        raise CheckFailed("There is no /usr/bin/python3 to install with.")
    out, _ = offline([python, "-c", _NO_NETWORK_PROBE], env=env, cwd=work, log=log)
    if out.strip() != "no network":
        raise CheckFailed(f"The namespace is not offline: {out.strip()}")
    _, t_install = offline([str(bundle / "install.sh"), "--user", "--prefix", str(prefix)], env=env, cwd=work, log=log)
    hearth = prefix / "bin" / "hearth"
    where, _ = offline([str(prefix / "venv" / "bin" / "python"), "-I", "-c", "import app; print(app.__file__)"],
                       env=env, cwd=work, log=log)
    if not where.strip().startswith(str(prefix)):
        raise CheckFailed(f"Hearth was imported from {where.strip()}, not from the installation.")
    common = [str(hearth), "--data-dir", str(data), "--threads", "2"]
    out, t_ingest = offline([*common, "ingest", str(bundle / "demo"), "--json"], env=env, cwd=work, log=log)
    report = json.loads(out)
    if report["added"] != 3 or report["failed"]:
        raise CheckFailed(f"ingest did not index the 3 demo documents: {report}")
    out, t_ask = offline([*common, "ask", QUESTION, "--json"], env=env, cwd=work, log=log)
    answer = json.loads(out)
    sources = answer.get("sources") or []
    if not answer.get("answer", "").strip() or not sources or not sources[0]["source"].endswith("travel-policy.pdf"):
        raise CheckFailed(f"ask did not answer from the travel policy: {answer}")
    scan = check_scan(common, env=env, work=work, log=log)
    desktop = home / ".local/share/applications" / bundle_mod.DESKTOP_FILE
    if f"Exec={hearth}" not in desktop.read_text(encoding="utf-8"):
        raise CheckFailed(f"The desktop entry {desktop} does not start {hearth}.")
    return {
        "install_seconds": round(t_install, 1),
        "ingest_seconds": round(t_ingest, 1),
        "ask_seconds": round(t_ask, 1),
        "installed_bytes": bundle_mod.folder_size(prefix),
        "ingest": {k: report[k] for k in ("added", "failed", "chunks")},
        "answer": answer["answer"],
        "answer_mentions_60": "60" in answer["answer"],
        "top_source": f"{Path(sources[0]['source']).name} p.{sources[0]['page']}",
        **scan,
        "log": str(log),
    }


def check_scan(common: list[str], *, env: dict[str, str], work: Path, log: Path) -> dict[str, object]:
    """Index a scanned page with the installed OCR models and find a number printed on it."""
    folder = work / "scans"
    folder.mkdir()
    shutil.copy(SCAN, folder / SCAN.name)
    out, seconds = offline([*common, "ingest", str(folder), "--json"], env=env, cwd=work, log=log)
    report = json.loads(out)
    if report["added"] != 1 or report["failed"]:
        raise CheckFailed(f"ingest did not read the scanned page: {report}")
    out, _ = offline([*common, "search", SCAN_QUERY, "--json"], env=env, cwd=work, log=log)
    hits = [h for h in json.loads(out)["hits"] if h["source"].endswith(SCAN.name)]
    if not hits or SCAN_WORD not in hits[0]["text"]:
        raise CheckFailed(f"OCR did not read {SCAN_WORD} on {SCAN.name}: {hits[:1]}")
    if hits[0].get("ocr_confidence") is None or hits[0]["ocr_confidence"] < 0.85:
        raise CheckFailed(f"OCR read {SCAN.name} with low or no confidence: {hits[0]}")
    return {"scan_seconds": round(seconds, 1), "scan_text": hits[0]["text"],
            "scan_confidence": hits[0]["ocr_confidence"]}


def main(argv: list[str] | None = None) -> int:
    """Build (unless given) and check a bundle; print the summary; exit 0 when it passed."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bundle", type=Path, default=None, help="check this bundle instead of building one")
    p.add_argument("--out", type=Path, default=None, help="where to build it (default: build/hearth-…-cpu-…)")
    p.add_argument("--keep", action="store_true", help="keep the installation and data (their folder is printed)")
    args = p.parse_args(argv)
    summary: dict[str, object] = {}
    work = Path(tempfile.mkdtemp(prefix="hearth-offline-"))
    try:
        if args.bundle is None:
            plan = bundle_mod.make_plan("cpu", (args.out or bundle_mod.default_out("cpu")).resolve())
            info = bundle_mod.build(plan)
            bundle = plan.out
            summary["build_seconds"] = info["timings"]["total"]  # type: ignore[index]
        else:
            bundle = args.bundle.resolve()
            info = json.loads((bundle / "bundle.json").read_text(encoding="utf-8"))
        summary.update(bundle=str(bundle), sizes=info["sizes"], wheels=info["wheels"],
                       model_packages=info["model_packages"], glibc=info.get("glibc"))
        summary.update(check(bundle, work))
        summary["passed"] = True
    except (CheckFailed, bundle_mod.BundleError, subprocess.TimeoutExpired) as exc:
        summary["passed"] = False
        summary["error"] = str(exc)
    finally:
        if args.keep:
            summary["work"] = str(work)
        else:
            summary.pop("log", None)
            shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(summary, indent=1))
    return 0 if summary["passed"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
