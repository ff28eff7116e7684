"""The retrieval benchmark's corpus: real documentation from pinned Debian packages, fetched with apt.

    documents(cache_dir=None) -> list[Path]   fetch (once), check, unpack and return the corpus files
    corpus_root(cache_dir=None) -> Path       the folder that gold references are relative to
    MANIFEST                                   every corpus file, relative to corpus_root()

Nobody on the project wrote these documents: the English HTML edition of The Debian Administrator's
Handbook (127 pages, one per chapter or section) and the PDF of the Debian New Maintainers' Guide
(63 pages). Each .deb is downloaded with `apt-get download NAME=VERSION`, checked against the SHA-256
pinned here, unpacked with `dpkg-deb -x`, and only the selected files are kept, under
`.data/bench-corpus/docs/<package>/`. A stamp file records what was unpacked, so later runs reuse it.

    python -m bench.corpus            fetch the corpus and list its files
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from inference.models import sha256_file

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CACHE_DIR = REPO_ROOT / ".data" / "bench-corpus"
STAMP = ".corpus.json"


class CorpusError(Exception):
    """The corpus cannot be fetched, checked or unpacked; str() says why and what to do."""


@dataclass(frozen=True)
class DebPackage:
    """One pinned Debian package and the files taken from it."""

    name: str
    version: str
    sha256: str  # of the .deb, as apt's own index lists it (apt-cache show NAME=VERSION)
    folder: str  # the folder inside the package that `files` are relative to
    files: tuple[str, ...]

    @property
    def deb_name(self) -> str:
        """The file name apt-get download gives the package (an epoch's colon is written %3a)."""
        return f"{self.name}_{self.version.replace(':', '%3a')}_all.deb"


HANDBOOK = DebPackage(
    name="debian-handbook",
    version="11.20220922",
    sha256="3d5dbeac1f1afc9c094eab9d0f701f6ecff99c4927d5a4794cf6c85678134faa",
    folder="usr/share/doc/debian-handbook/html/en-US",
    # Every English HTML page of the book (the package also holds 25 other languages).
    files=tuple(
        """
        advanced-administration.html apt.html basic-configuration.html case-study.html conclusion.html
        debian-packaging.html derivative-distributions.html existing-setup.html foreword.html index.html
        installation.html network-infrastructure.html network-services.html packaging-system.html preface.html
        sect.acknowledgments.html sect.administration-interfaces.html sect.after-first-boot.html sect.apparmor.html
        sect.apt-cache.html sect.apt-file.html sect.apt-frontends.html sect.apt-get.html sect.aptosid.html
        sect.asynchronous-task-scheduling-anacron.html sect.automated-installation.html
        sect.automatic-upgrades.html sect.backup.html sect.becoming-package-maintainer.html
        sect.book-structure.html sect.building-first-package.html
        sect.coexistence-with-other-packaging-systems.html sect.common-procedures.html sect.computer-layers.html
        sect.config-bootloader.html sect.config-misc.html sect.config-printing.html sect.contributing.html
        sect.creating-accounts.html sect.customizing-graphical-interface.html
        sect.dealing-with-compromised-machine.html sect.debian-internals.html sect.development.html
        sect.devuan.html sect.dhcp.html sect.dist-upgrade.html sect.domain-name-servers.html sect.doudoulinux.html
        sect.dynamic-routing.html sect.filesystem-hierarchy.html sect.firewall-packet-filtering.html
        sect.follow-debian-news.html sect.foundation-documents.html sect.ftp-file-server.html
        sect.future-of-debian.html sect.future-of-this-book.html sect.graphical-desktops.html sect.grml.html
        sect.hostname-name-service.html sect.hotplug.html sect.how-to-migrate.html sect.http-ftp-proxy.html
        sect.http-web-server.html sect.inetd.html sect.installation-steps.html sect.ipv6.html sect.kali.html
        sect.kernel-compilation.html sect.kernel-installation.html sect.kernel-role-and-tasks.html
        sect.knoppix.html sect.ldap-directory.html sect.linux-mint.html sect.main-desktop-tools.html
        sect.manipulating-packages-with-dpkg.html sect.master-plan.html sect.monitoring.html
        sect.network-config.html sect.network-diagnosis-tools.html sect.nfs-file-server.html
        sect.office-suites.html sect.other-derivatives.html sect.other-security-considerations.html
        sect.package-authentication.html sect.package-meta-information.html sect.power-management.html
        sect.pureos.html sect.quality-of-service.html sect.quotas.html sect.raspbian.html
        sect.regular-upgrades.html sect.release-lifecycle.html sect.remote-login.html sect.rights-management.html
        sect.role-of-distributions.html sect.rtc-clients.html sect.rtc-services.html sect.searching-packages.html
        sect.selected-approach.html sect.selinux.html sect.setup-apt-package-repository.html
        sect.shell-environment.html sect.source-package-structure.html sect.steamos.html sect.supervision.html
        sect.syslog.html sect.tails.html sect.task-scheduling-cron-atd.html sect.ubuntu.html
        sect.user-group-databases.html sect.user-space.html sect.virtual-private-network.html
        sect.virtualization.html sect.web-browsers.html sect.who-is-this-book-for.html sect.why-debian-stable.html
        sect.why-debian.html sect.why-gnu-linux.html sect.windows-emulation.html
        sect.windows-file-server-with-samba.html sect.x509-cert.html security.html short-remedial-course.html
        solving-problems.html the-debian-project.html unix-services.html workstation.html
        """.split()
    ),
)

MAINT_GUIDE = DebPackage(
    name="maint-guide",
    version="1.2.53",
    sha256="762c8a400a36668d2eb814a3ba356b06488fd889dfce478eb11d5cfb189a47b5",
    folder="usr/share/doc/maint-guide",
    # The PDF only: its HTML edition would duplicate the same text.
    files=("maint-guide.en.pdf",),
)

FAQ = DebPackage(
    name="debian-faq",
    version="11.1",
    sha256="427426e0cfa6888622fc1d72631071cb4b5a1f86ccde722e7820bcef284de5d0",
    folder="usr/share/doc/debian/FAQ",
    # The English HTML edition (NAME.html are links to these; the PDF and text editions repeat them).
    files=tuple(
        f"{name}.en.html"
        for name in """
        basic-defs choosing compatibility contributing customizing faqinfo ftparchives getting-debian index kernel
        nextrelease pkg-basics pkgtools redistributing software support uptodate
        """.split()
    ),
)

PACKAGES: tuple[DebPackage, ...] = (HANDBOOK, MAINT_GUIDE)

# Corpus files relative to corpus_root(): "<package>/<file>". Gold references in the question set use these.
MANIFEST: tuple[str, ...] = tuple(f"{p.name}/{f}" for p in PACKAGES for f in p.files)


@dataclass(frozen=True)
class Corpus:
    """A set of pinned packages unpacked into one folder of the cache (the English corpus: "docs")."""

    packages: tuple[DebPackage, ...]
    folder: str

    @property
    def manifest(self) -> tuple[str, ...]:
        """Its files relative to its root: "<package>/<file>"."""
        return tuple(f"{p.name}/{f}" for p in self.packages for f in p.files)


ENGLISH = Corpus(PACKAGES, "docs")
# The evaluation corpus (bench/data/eval_*.json): the same two books and a FAQ of another kind, in one index.
EVAL = Corpus((HANDBOOK, MAINT_GUIDE, FAQ), "docs-eval")


def corpus_root(cache_dir: Path | None = None, which: Corpus = ENGLISH) -> Path:
    """The folder holding the selected documents; MANIFEST paths are relative to it."""
    return (cache_dir or DEFAULT_CACHE_DIR) / which.folder


def is_unpacked(cache_dir: Path | None = None, which: Corpus = ENGLISH) -> bool:
    """Whether the pinned corpus is already unpacked (no download needed)."""
    root = corpus_root(cache_dir, which)
    try:
        stamp = json.loads((root / STAMP).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return stamp == _stamp(which) and all((root / rel).is_file() for rel in which.manifest)


def documents(cache_dir: Path | None = None, *, log=None, which: Corpus = ENGLISH) -> list[Path]:
    """The corpus files, fetched, checked and unpacked on first use; reused afterwards."""
    cache_dir = cache_dir or DEFAULT_CACHE_DIR
    log = log or (lambda msg: print(msg, file=sys.stderr))
    root = corpus_root(cache_dir, which)
    if not is_unpacked(cache_dir, which):
        debs = cache_dir / "debs"  # shared by the corpora: the Russian one comes from the same package
        debs.mkdir(parents=True, exist_ok=True)
        staged = cache_dir / f"{which.folder}.new"
        shutil.rmtree(staged, ignore_errors=True)
        for package in which.packages:
            deb = _fetch(package, debs, log)
            _unpack(package, deb, staged / package.name, cache_dir)
        (staged / STAMP).write_text(json.dumps(_stamp(which), indent=1), encoding="utf-8")
        shutil.rmtree(root, ignore_errors=True)
        staged.rename(root)
        log(f"corpus: {len(which.manifest)} documents unpacked into {root}")
    return [root / rel for rel in which.manifest]


def _stamp(which: Corpus = ENGLISH) -> dict[str, object]:
    return {
        "packages": [{"name": p.name, "version": p.version, "sha256": p.sha256} for p in which.packages],
        "files": hashlib.sha256("\n".join(which.manifest).encode("utf-8")).hexdigest(),
    }


def _fetch(package: DebPackage, debs: Path, log) -> Path:
    """The package's .deb in `debs`, downloaded with apt-get if absent, with its SHA-256 checked."""
    deb = debs / package.deb_name
    if deb.is_file() and sha256_file(deb) == package.sha256:
        return deb
    if shutil.which("apt-get") is None:
        raise CorpusError(
            f"apt-get is not available, so {package.name} {package.version} cannot be downloaded. "
            f"Put {package.deb_name} (SHA-256 {package.sha256}) into {debs} and run again."
        )
    served = _apt_versions(package.name)
    if served and package.version not in served:
        log(
            f"corpus: apt serves {package.name} version(s) {', '.join(served)}, not the pinned {package.version}; "
            "the question set was written for the pinned version."
        )
    log(f"corpus: downloading {package.name}={package.version} with apt-get")
    with tempfile.TemporaryDirectory(dir=debs) as tmp:
        # apt-get download writes into the working directory; a temp folder keeps failures out of `debs`.
        proc = subprocess.run(
            ["apt-get", "download", f"{package.name}={package.version}"],
            cwd=tmp,
            capture_output=True,
            text=True,
        )
        got = Path(tmp) / package.deb_name
        if proc.returncode != 0 or not got.is_file():
            detail = (proc.stderr or proc.stdout).strip().splitlines()
            raise CorpusError(
                f"apt-get could not download {package.name} {package.version}"
                + (f" ({detail[-1]})" if detail else "")
                + (f"; apt serves version(s) {', '.join(served)} instead" if served else "")
                + ". The questions' gold references were written for the pinned version: put "
                f"{package.deb_name} (SHA-256 {package.sha256}, e.g. from snapshot.debian.org) into {debs}, "
                "or re-pin the package in bench/corpus.py and re-check every gold reference."
            )
        digest = sha256_file(got)
        if digest != package.sha256:
            raise CorpusError(
                f"{package.deb_name} from apt has SHA-256 {digest}, not the pinned {package.sha256}; "
                "it is not the file the question set was written for."
            )
        got.replace(deb)
    return deb


def _apt_versions(name: str) -> list[str]:
    """The versions of a package that apt's index offers (empty if apt-cache cannot say)."""
    try:
        proc = subprocess.run(["apt-cache", "madison", name], capture_output=True, text=True, check=False)
    except OSError:
        return []
    versions = []
    for line in proc.stdout.splitlines():
        parts = [p.strip() for p in line.split("|")]
        if len(parts) >= 2 and parts[0] == name and parts[1] not in versions:
            versions.append(parts[1])
    return versions


def _unpack(package: DebPackage, deb: Path, target: Path, cache_dir: Path) -> None:
    """Unpack the .deb into a scratch folder and copy the selected files to `target`."""
    if shutil.which("dpkg-deb") is None:
        raise CorpusError("dpkg-deb is not available; it is needed to unpack the corpus packages (apt install dpkg).")
    with tempfile.TemporaryDirectory(dir=cache_dir, prefix="unpack-") as tmp:
        proc = subprocess.run(["dpkg-deb", "-x", str(deb), tmp], capture_output=True, text=True)
        if proc.returncode != 0:
            raise CorpusError(f"dpkg-deb could not unpack {deb.name}: {proc.stderr.strip()}")
        folder = Path(tmp) / package.folder
        for rel in package.files:
            source = folder / rel
            if not source.is_file():
                raise CorpusError(f"{package.deb_name} has no {package.folder}/{rel}; the selection list is wrong.")
            dest = target / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, dest)


def main(argv: list[str] | None = None) -> int:
    """Fetch the corpus and print its files, one per line."""
    parser = argparse.ArgumentParser(prog="python -m bench.corpus", description=__doc__.split("\n")[0])
    parser.add_argument("--cache-dir", type=Path, default=None, help=f"default: {DEFAULT_CACHE_DIR}")
    parser.add_argument("--eval", action="store_true", help="the evaluation corpus (the books and the Debian FAQ)")
    args = parser.parse_args(argv)
    try:
        paths = documents(args.cache_dir, which=EVAL if args.eval else ENGLISH)
    except CorpusError as exc:
        print(f"bench.corpus: error: {exc}", file=sys.stderr)
        return 1
    for path in paths:
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
