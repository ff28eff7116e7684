"""Files planted in a folder the office indexes do nothing but get reported (#65), through the real CLI.

One shared folder holds ordinary documents and what an attacker would drop beside them:
- `json.py` and `re.py`, which a reader process started as `python -c` would import from the working folder
  (`cd share && hearth ingest .`);
- a PostScript file named `invoice.png` and a Word file whose only picture is an EPS, which Pillow would
  hand to Ghostscript (a stand-in `gs` first on PATH records whether it was started);
- an e-mail and a file name carrying terminal escape sequences (OSC title and hyperlink, CSI, a C1 code).
The real `hearth` program indexes the folder from inside it; nothing planted may run, Ghostscript must not
start, the ordinary documents are indexed, and no control character reaches `search`, `ask` or `sources`.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.skipif(os.name != "posix", reason="POSIX paths and programs")]
HEARTH = Path(sys.executable).with_name("hearth")
EPS = (b"%!PS-Adobe-3.0 EPSF-3.0\n%%BoundingBox: 0 0 120 60\n"
       b"/Helvetica findfont 12 scalefont setfont 10 20 moveto (PAID IN FULL) show showpage\n%%EOF\n")
ESCAPES = "\x1b]0;pwned\x07 \x1b]8;;http://evil.example/\x07click\x1b]8;;\x07 \x1b[2J\x1b[31m \x9b31m \x7f"
# Terminal control characters: C0 but tab, newline, carriage return; DEL; C1.
CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


def _docx_with_eps_picture(path: Path) -> None:
    """A Word file whose only content is a picture, its bytes EPS (as an attacker would embed one)."""
    import docx
    from PIL import Image

    png = io.BytesIO()
    Image.new("RGB", (40, 20), "white").save(png, format="PNG")
    png.seek(0)
    document = docx.Document()
    document.add_picture(png)
    plain = io.BytesIO()
    document.save(plain)
    with zipfile.ZipFile(io.BytesIO(plain.getvalue())) as src, zipfile.ZipFile(path, "w") as out:
        for item in src.infolist():
            data = src.read(item)
            out.writestr(item, EPS if item.filename.startswith("word/media/") else data)


@pytest.fixture(scope="module")
def share(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("planted")
    marks, share, stub = root / "marks", root / "share", root / "bin"
    for folder in (marks, share, stub):
        folder.mkdir()
    (share / "policy.md").write_text("# Parking\n\nStaff park on level minus two; the barrier code is on the badge.\n")
    (share / "vpn.txt").write_text("Connect the VPN before opening the intranet.\n")
    for module in ("json", "re"):
        (share / f"{module}.py").write_text(
            f"open({str(marks / (module + '-ran'))!r}, 'w').write('ran')\nraise ImportError('planted')\n")
    (share / "invoice.png").write_bytes(EPS)
    _docx_with_eps_picture(share / "contract-scan.docx")
    (share / "newsletter.eml").write_text(
        f"From: news@example.com\nTo: staff@example.com\nSubject: Garage {ESCAPES} news\n"
        f"Content-Type: text/plain; charset=utf-8\n\nThe garage{ESCAPES} opens at seven for visitors.\n",
        encoding="utf-8")
    (share / "notes\x1b]0;title\x07.txt").write_text("The canteen serves lunch from noon.\n")
    gs = stub / "gs"
    gs.write_text(f"#!/bin/sh\necho \"$@\" > {marks / 'gs-ran'}\nexit 1\n")
    gs.chmod(0o755)
    return {"root": root, "marks": marks, "share": share, "stub": stub, "data": root / "data"}


def hearth(share: dict[str, Path], *args: str) -> subprocess.CompletedProcess:
    """The installed `hearth` program, run from inside the shared folder with the stand-in gs first on PATH."""
    env = dict(os.environ, HEARTH_DATA_DIR=str(share["data"]), PATH=f"{share['stub']}:{os.environ.get('PATH', '')}")
    return subprocess.run([str(HEARTH), "--threads", "2", *args], cwd=share["share"], env=env,
                          capture_output=True, text=True, timeout=900)


@pytest.fixture(scope="module")
def ingested(share) -> dict:
    if not HEARTH.is_file():
        pytest.skip(f"the hearth program is not installed beside {sys.executable}")
    r = hearth(share, "ingest", ".", "--json")
    assert r.returncode == 1, r.stderr  # some inputs failed: the planted pictures
    return json.loads(r.stdout)


def test_nothing_planted_runs_and_the_documents_are_indexed(share, ingested):
    assert sorted(p.name for p in share["marks"].iterdir()) == []  # no json.py, no re.py, no gs
    assert ingested["added"] == 4  # policy.md, vpn.txt, newsletter.eml and the oddly named note
    failed = {Path(f["source"]).name: f["error"] for f in ingested["failed"]}
    assert set(failed) == {"invoice.png", "contract-scan.docx"}
    assert "invoice.png is not a PNG, JPEG, TIFF or WebP picture (it holds PostScript)" in failed["invoice.png"]


def _no_controls(r: subprocess.CompletedProcess) -> None:
    for name, text in (("stdout", r.stdout), ("stderr", r.stderr)):
        found = sorted({hex(ord(c)) for c in CONTROL.findall(text)})
        assert not found, f"{name} holds terminal control characters {found}"


def test_search_and_sources_print_no_escape_sequence(share, ingested):
    r = hearth(share, "search", "garage opens for visitors")
    assert r.returncode == 0, r.stderr
    assert "newsletter.eml" in r.stdout and "opens at seven" in r.stdout
    _no_controls(r)
    r = hearth(share, "sources")
    assert r.returncode == 0, r.stderr
    assert "newsletter.eml" in r.stdout and "notes]0;title.txt" in r.stdout  # the name, without its escapes
    _no_controls(r)
    r = hearth(share, "search", "garage opens for visitors", "--json")
    hits = json.loads(r.stdout)["hits"]
    assert hits and not any(CONTROL.search(h["text"] + (h["heading"] or "")) for h in hits)  # stored clean


def test_ask_prints_no_escape_sequence(share, ingested):
    r = hearth(share, "ask", "When does the garage open for visitors?")
    assert r.returncode == 0, r.stderr
    assert "newsletter.eml" in r.stdout
    _no_controls(r)


def test_python_m_app_inside_the_folder_imports_nothing_from_it(share):
    """`python -m app` puts the working folder first on sys.path; Hearth drops it before its first import."""
    r = subprocess.run([sys.executable, "-m", "app", "--data-dir", str(share["data"]), "sources"], cwd=share["share"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in share["marks"].iterdir()) == []
