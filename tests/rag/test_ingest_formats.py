"""Ingest of every format and every failure kind, through the service, with the fast HashEmbedder."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from rag.ingest import IngestOptions
from rag.service import Hearth, HearthConfig
from tests.fakes import HashEmbedder
from tests.rag.make_docs import write_docx, write_eml, write_odt, write_pdf, write_pptx, write_xlsx


@pytest.fixture
def office(tmp_path: Path) -> Path:
    root = tmp_path / "office"
    root.mkdir()
    write_docx(root / "handbook.docx")
    write_pptx(root / "review.pptx")
    write_xlsx(root / "staff.xlsx")
    (root / "rates.csv").write_text("Item,EUR\nMeals,45\nHotel,150\n")
    write_odt(root / "policy.odt", '<text:h text:outline-level="1">Policy</text:h><text:p>Badges open the doors.</text:p>')
    write_eml(root / "move.eml")
    write_pdf(root / "manual.pdf", ["Printer setup on floor two.", "Scanner setup on floor three."])
    (root / "notes.md").write_text("# Notes\n\nThe wifi password rotates monthly.")
    (root / "page.html").write_text("<h1>VPN</h1><p>Connect the VPN first.</p>")
    (root / "legacy.txt").write_bytes("Größe: 45 € für München".encode("cp1252"))
    return root


def hearth(tmp_path: Path, **options: object) -> Hearth:
    return Hearth(HearthConfig(data_dir=tmp_path / "data", ingest=IngestOptions(**options)), embedder=HashEmbedder())


def test_every_format_is_indexed_with_its_place(tmp_path: Path, office: Path) -> None:
    h = hearth(tmp_path)
    r = h.ingest([office])
    assert r.failed == [] and r.added == 10 and r.chunks >= 10
    assert {Path(d.source).name for d in h.sources() if d.status == "done"} == {p.name for p in office.iterdir()}
    top = h.search("Scanner setup floor three", k=1)[0]
    assert (Path(top.source).name, top.page) == ("manual.pdf", 2)
    top = h.search("Headcount Support people", k=1)[0]
    assert (Path(top.source).name, top.page, top.heading) == ("review.pptx", 2, "Headcount")
    top = h.search("Grace Finance extension", k=1)[0]
    assert (Path(top.source).name, top.heading) == ("staff.xlsx", "Staff")
    assert top.text.startswith("Name | Team | Extension | Started\n")
    top = h.search("daily allowance abroad", k=1)[0]
    assert top.heading == "Travel handbook › Expenses › Abroad"
    assert any("München" in x.text for x in h.search("Größe München", k=3))
    assert sum(d.pages or 0 for d in h.sources()) == 2 + 3  # the manifest keeps PDF pages and slides
    assert r.pages >= 5


def test_big_split_table_keeps_its_header_in_stored_passages(tmp_path: Path) -> None:
    rows = "\n".join(f"Person{i},Team{i % 4},{4400 + i}" for i in range(300))
    path = tmp_path / "phones.csv"
    path.write_text("Name,Team,Extension\n" + rows + "\n")
    h = hearth(tmp_path, workers=0)
    r = h.ingest([path])
    assert r.chunks > 3
    hit = h.search("Person250 Team2 4650", k=1)[0]
    assert "Person250 | Team2 | 4650" in hit.text
    assert hit.text.startswith("Name | Team | Extension\n")


def test_every_failure_kind_is_reported_and_the_batch_goes_on(tmp_path: Path, office: Path) -> None:
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "empty.txt").write_text("   ")
    (bad / "broken.docx").write_bytes(b"PK\x03\x04 not really a zip")
    (bad / "secret.xlsx").write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + "EncryptedPackage".encode("utf-16-le"))
    write_pdf(bad / "scan.pdf", [None, None])
    write_pdf(bad / "long.pdf", ["a", "b", "c", "d"])
    with zipfile.ZipFile(bad / "bomb.pptx", "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("ppt/slides/slide1.xml", b"\0" * (20 * 2**20))
    (bad / "huge.md").write_text("x " * 100_000)
    (bad / "data.xyz").write_text("x")
    h = hearth(tmp_path, max_pages=3, max_file_bytes=100_000)
    r = h.ingest([office, *sorted(bad.iterdir()), tmp_path / "missing.md"])
    kinds = {Path(f.source).name: f.kind for f in r.failed}
    assert kinds == {
        "empty.txt": "empty", "broken.docx": "corrupt", "secret.xlsx": "encrypted", "scan.pdf": "no_text_layer",
        "long.pdf": "too_large", "bomb.pptx": "too_large", "huge.md": "too_large", "data.xyz": "unsupported",
        "missing.md": "missing",
    }  # fmt: skip
    assert all(f.error and Path(f.source).is_absolute() for f in r.failed)
    assert "no text layer" in next(f.error for f in r.failed if f.kind == "no_text_layer")
    assert r.added == 10
    assert all(d.status == "done" for d in h.sources())
    assert r.to_json()["failed"][0].keys() >= {"source", "error"}
