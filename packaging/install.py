"""Install Hearth from an offline bundle: verify every file, make a virtual environment, no network at all.

    ./install.sh [--prefix DIR] [--system | --user] [--policy FILE] [--no-desktop] [--verify-only]
    ./install.sh --uninstall [--prefix DIR] [--system | --user]

This file is copied into the bundle by packaging/bundle.py and runs on the target with the standard
library only. Steps:

1. Verify: every file listed in SHA256SUMS has its hash, nothing listed is missing, and no wheel lies
   in the bundle that the list does not name (a wheel slipped in later would otherwise be installable).
2. Create PREFIX/venv (an existing one is set aside, and put back if anything fails).
3. `pip install --no-index --find-links wheelhouse --require-hashes -r requirements.lock`, then the
   models with `--no-deps` from models.lock; pip checks each wheel's hash again. pip's own
   configuration files and PIP_* variables are ignored, so a mirror set on the machine is never asked.
4. ROCm bundles: swap in the GPU build of ONNX Runtime (install_onnxruntime.py, from gpu/).
5. PREFIX/bin/hearth; as root also /usr/local/bin/hearth. The desktop entry, icons and AppStream data
   go to /usr/share (root) or ~/.local/share (a user), with Exec= pointing at PREFIX/bin/hearth.
6. With --policy FILE (root only): the administrator's policy to /etc/hearth/policy.toml, mode 0644.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent
APP_ID = "io.hearth.Hearth"
DESKTOP_FILE = "hearth.desktop"
SYSTEM_POLICY = Path("/etc/hearth/policy.toml")


class InstallError(Exception):
    """The installation cannot go on; the message says why."""


def sha256_file(path: Path) -> str:
    """The hex SHA-256 of a file."""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def read_sums(bundle: Path) -> dict[str, str]:
    """SHA256SUMS as {relative path: hash}."""
    try:
        text = (bundle / "SHA256SUMS").read_text(encoding="utf-8")
    except OSError as exc:
        raise InstallError(f"{bundle} has no readable SHA256SUMS: is it a Hearth bundle?") from exc
    sums = {}
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        digest, sep, rel = line.partition("  ")
        if not sep or len(digest) != 64 or rel.startswith("/") or ".." in Path(rel).parts:
            raise InstallError(f"SHA256SUMS line {n} is malformed: {line!r}")
        sums[rel] = digest
    return sums


def verify(bundle: Path) -> list[str]:
    """Problems with the bundle's files, one sentence each; empty when every file is as built."""
    sums = read_sums(bundle)
    problems = []
    for rel, digest in sums.items():
        path = bundle / rel
        if not path.is_file():
            problems.append(f"missing: {rel}")
        elif sha256_file(path) != digest:
            problems.append(f"damaged or changed: {rel}")
    for folder in ("wheelhouse", "models", "gpu"):
        for wheel in sorted((bundle / folder).glob("*.whl")) if (bundle / folder).is_dir() else []:
            rel = wheel.relative_to(bundle).as_posix()
            if rel not in sums:
                problems.append(f"not part of the bundle: {rel}")
    return problems


def read_info(bundle: Path) -> dict:
    """bundle.json: version, variant, Python version and what else was recorded when it was built."""
    return json.loads((bundle / "bundle.json").read_text(encoding="utf-8"))


def pip_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """The environment pip runs in: no configuration files, no PIP_* settings from the machine."""
    base = dict(os.environ if env is None else env)
    clean = {k: v for k, v in base.items() if not k.startswith("PIP_")}
    clean.update(PIP_CONFIG_FILE=os.devnull, PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1")
    return clean


def pip_commands(bundle: Path, python: Path) -> list[list[str]]:
    """The pip commands that install the bundle into the environment of `python`."""
    common = ["-I", "-m", "pip", "install", "-q", "--no-index", "--no-cache-dir", "--require-hashes",
              "--only-binary", ":all:"]
    return [
        [str(python), *common, "--find-links", str(bundle / "wheelhouse"), "-r", str(bundle / "requirements.lock")],
        [str(python), *common, "--no-deps", "--find-links", str(bundle / "models"), "-r", str(bundle / "models.lock")],
    ]


def gpu_onnxruntime_command(bundle: Path, python: Path, info: dict) -> list[str] | None:
    """The command that swaps in the GPU build of ONNX Runtime (ROCm bundles), or None."""
    gpu = info.get("gpu_onnxruntime")
    if not gpu:
        return None
    return [
        str(python), str(bundle / "install_onnxruntime.py"), gpu["variant"], "--python", str(python),
        f"--lock={bundle / 'gpu.lock'}", "--pip-arg=--no-index", "--pip-arg=--no-cache-dir",
        f"--pip-arg=--find-links={bundle / 'gpu'}",
    ]


def desktop_dirs(*, system: bool, env: dict[str, str] | None = None) -> dict[str, Path]:
    """Where the desktop entry, icons and AppStream file go: /usr/share as root, else $XDG_DATA_HOME."""
    env = dict(os.environ if env is None else env)
    if system:
        share = Path("/usr/share")
    else:
        share = Path(env.get("XDG_DATA_HOME") or Path(env.get("HOME", "~")).expanduser() / ".local" / "share")
    return {"applications": share / "applications", "icons": share / "icons" / "hicolor",
            "metainfo": share / "metainfo"}


def desktop_entry(template: str, hearth: Path) -> str:
    """The bundle's .desktop text with Exec= and TryExec= pointing at the installed `hearth`."""
    out = []
    for line in template.splitlines():
        if line.startswith("Exec="):
            args = line[len("Exec="):].split(" ", 1)
            line = f"Exec={_desktop_quote(str(hearth))}" + (f" {args[1]}" if len(args) > 1 else "")
        elif line.startswith("TryExec="):
            line = f"TryExec={hearth}"
        out.append(line)
    return "\n".join(out) + "\n"


def _desktop_quote(arg: str) -> str:
    # The Desktop Entry spec: an argument with reserved characters is double-quoted, \ " ` $ escaped.
    if not any(c in arg for c in ' \t\n"\'\\><~|&;$*?#()`'):
        return arg
    return '"' + "".join("\\" + c if c in '"`$\\' else c for c in arg) + '"'


def _glibc() -> str | None:
    try:
        return os.confstr("CS_GNU_LIBC_VERSION").split()[-1]
    except (ValueError, OSError, AttributeError, IndexError):
        return None


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in text.split(".") if x.isdigit())


def default_prefix(system: bool) -> Path:
    """/opt/hearth for a system install, ~/.local/opt/hearth for one user."""
    return Path("/opt/hearth") if system else Path.home() / ".local" / "opt" / "hearth"


def _run(cmd: Sequence[str], *, env: dict[str, str] | None = None) -> None:
    print(f"install: {' '.join(cmd)}", file=sys.stderr, flush=True)
    r = subprocess.run(list(cmd), env=env)
    if r.returncode != 0:
        raise InstallError(f"{Path(cmd[0]).name} {' '.join(cmd[1:3])} failed with exit status {r.returncode}.")


def install(bundle: Path, prefix: Path, *, system: bool, desktop: bool = True, policy: Path | None = None,
            env: dict[str, str] | None = None) -> dict:
    """Install the bundle into `prefix`; returns what was installed (also kept in PREFIX/installed.json)."""
    t0 = time.monotonic()
    info = read_info(bundle)
    want = tuple(int(x) for x in str(info["python"]).split("."))
    if sys.version_info[:2] != want:
        raise InstallError(f"This bundle's wheels are for Python {info['python']}, "
                           f"not {sys.version_info.major}.{sys.version_info.minor}.")
    glibc = _glibc()
    if info.get("glibc") and glibc and _version(glibc) < _version(info["glibc"]):
        raise InstallError(f"This bundle's libraries need glibc {info['glibc']} or newer; this system has {glibc}.")
    problems = verify(bundle)
    if problems:
        raise InstallError("The bundle failed its check:\n  " + "\n  ".join(problems[:20]))
    if policy is not None and not system:
        raise InstallError("--policy installs /etc/hearth/policy.toml, which needs --system (root).")
    prefix = prefix.expanduser().resolve()
    prefix.mkdir(parents=True, exist_ok=True)
    # venv scripts carry their folder's path, so the new one is made in place; the old one waits aside
    # and comes back if anything fails.
    venv, old = prefix / "venv", prefix / "venv.old"
    shutil.rmtree(old, ignore_errors=True)
    if venv.exists():
        venv.rename(old)
    try:
        _run([sys.executable, "-I", "-m", "venv", str(venv)])  # -I: nothing imported from the folder it runs in
        python = venv / "bin" / "python"
        for cmd in pip_commands(bundle, python):
            _run(cmd, env=pip_env(env))
        gpu = gpu_onnxruntime_command(bundle, python, info)
        if gpu is not None:
            _run(gpu, env=pip_env(env))
        _run([str(python), "-I", "-c", "import app.cli, rag.service, inference.models, chromadb, onnxruntime, llama_cpp"])
        if (bundle / "engines").is_dir():  # alternative llama.cpp engines (Vulkan), beside the installed build
            shutil.copytree(bundle / "engines", venv / "hearth-engines", symlinks=True)
    except BaseException:
        shutil.rmtree(venv, ignore_errors=True)
        if old.exists():
            old.rename(venv)
        raise
    shutil.rmtree(old, ignore_errors=True)

    bin_dir = prefix / "bin"
    bin_dir.mkdir(exist_ok=True)
    hearth = bin_dir / "hearth"
    hearth.unlink(missing_ok=True)
    hearth.symlink_to(venv / "bin" / "hearth")
    placed = [str(hearth)]
    if system:
        link = Path("/usr/local/bin/hearth")
        link.parent.mkdir(parents=True, exist_ok=True)
        link.unlink(missing_ok=True)
        link.symlink_to(hearth)
        placed.append(str(link))
    if desktop:
        placed += install_desktop(bundle, hearth, system=system, env=env)
    if policy is not None:
        SYSTEM_POLICY.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(policy, SYSTEM_POLICY)
        SYSTEM_POLICY.chmod(0o644)
        placed.append(str(SYSTEM_POLICY))
    record = {"version": info["version"], "variant": info["variant"], "prefix": str(prefix),
              "installed": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "files": placed,
              "seconds": round(time.monotonic() - t0, 1)}
    (prefix / "installed.json").write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    return record


def install_desktop(bundle: Path, hearth: Path, *, system: bool, env: dict[str, str] | None = None) -> list[str]:
    """Put the desktop entry, icons and AppStream metadata in place; returns the files written."""
    dirs = desktop_dirs(system=system, env=env)
    src = bundle / "desktop"
    written = []
    dirs["applications"].mkdir(parents=True, exist_ok=True)
    entry = dirs["applications"] / DESKTOP_FILE
    entry.write_text(desktop_entry((src / DESKTOP_FILE).read_text(encoding="utf-8"), hearth), encoding="utf-8")
    written.append(str(entry))
    dirs["metainfo"].mkdir(parents=True, exist_ok=True)
    meta = dirs["metainfo"] / f"{APP_ID}.metainfo.xml"
    shutil.copyfile(src / f"{APP_ID}.metainfo.xml", meta)
    written.append(str(meta))
    icons = src / "icons" / "hicolor"
    for icon in sorted(icons.rglob("*")) if icons.is_dir() else []:
        if icon.is_file():
            dest = dirs["icons"] / icon.relative_to(icons)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(icon, dest)
            written.append(str(dest))
    # Menus and icon caches refresh themselves on most desktops; these help where they do not.
    for tool, arg in (("update-desktop-database", dirs["applications"]),
                      ("gtk-update-icon-cache", dirs["icons"])):
        if shutil.which(tool):
            subprocess.run([tool, "-q", str(arg)], check=False, capture_output=True)
    return written


def uninstall(prefix: Path) -> list[str]:
    """Remove what an installation recorded in PREFIX/installed.json, then the prefix itself."""
    prefix = prefix.expanduser().resolve()
    try:
        record = json.loads((prefix / "installed.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InstallError(f"No Hearth installation in {prefix} (no installed.json).") from exc
    removed = []
    for name in record.get("files", []):
        path = Path(name)
        if path == SYSTEM_POLICY:
            continue  # the administrator's policy stays until they remove it
        if path.is_symlink() or path.is_file():
            path.unlink()
            removed.append(name)
    shutil.rmtree(prefix)
    removed.append(str(prefix))
    return removed


def main(argv: Sequence[str] | None = None) -> int:
    """Verify and install (or uninstall); exit 0 on success, 1 on failure."""
    p = argparse.ArgumentParser(prog="install.sh", description="Install Hearth from this offline bundle.")
    scope = p.add_mutually_exclusive_group()
    scope.add_argument("--system", action="store_true", help="for every user (root): /opt/hearth, /usr/share")
    scope.add_argument("--user", action="store_true", help="for this user: ~/.local (the default when not root)")
    p.add_argument("--prefix", type=Path, default=None, help="install folder (default: /opt/hearth or ~/.local/opt/hearth)")
    p.add_argument("--policy", type=Path, default=None, help="with --system: install FILE as /etc/hearth/policy.toml")
    p.add_argument("--no-desktop", action="store_true", help="no menu entry, icons or AppStream data")
    p.add_argument("--verify-only", action="store_true", help="check the bundle's files and stop")
    p.add_argument("--uninstall", action="store_true", help="remove an installation made by this script")
    args = p.parse_args(argv)
    system = args.system or (not args.user and hasattr(os, "geteuid") and os.geteuid() == 0)
    prefix = args.prefix or default_prefix(system)
    try:
        if args.uninstall:
            for name in uninstall(prefix):
                print(f"removed {name}")
            return 0
        if args.verify_only:
            problems = verify(HERE)
            for line in problems:
                print(f"install: {line}", file=sys.stderr)
            print("bundle OK" if not problems else f"{len(problems)} problems")
            return 1 if problems else 0
        record = install(HERE, prefix, system=system, desktop=not args.no_desktop, policy=args.policy)
    except InstallError as exc:
        print(f"install: error: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(record, indent=1))
    print(f"Hearth {record['version']} ({record['variant']}) is installed; start it with {prefix / 'bin' / 'hearth'}",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
