"""Office, table, OpenDocument and e-mail loaders, on real files written in the tests by the same libraries."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import docx
import openpyxl
import pytest

from rag.errors import LoadError
from rag.loaders import LOAD_ERROR_KINDS, SUPPORTED_SUFFIXES, Limits, Section, full_text, load
from rag.loaders.text import decode
from tests.rag.make_docs import ODT_NS, write_docx, write_eml, write_odt, write_pptx, write_xlsx


def check(sections: list[Section]) -> str:
    """Offsets point at the text, table spans at whole lines; returns the full text."""
    text = full_text(sections)
    for s in sections:
        assert text[s.offset : s.offset + len(s.text)] == s.text
        for a, b in s.tables:
            assert 0 <= a < b <= len(s.text)
            assert a == 0 or s.text[a - 1] == "\n"
            assert b == len(s.text) or s.text[b] == "\n"
    return text


def load_error(path: Path, limits: Limits | None = None) -> LoadError:
    with pytest.raises(LoadError) as info:
        load(path, limits) if limits else load(path)
    assert info.value.kind in LOAD_ERROR_KINDS
    assert path.name in str(info.value)
    return info.value


def table_text(section: Section, n: int = 0) -> str:
    a, b = section.tables[n]
    return section.text[a:b]


def test_new_suffixes_are_supported() -> None:
    assert {".docx", ".pptx", ".xlsx", ".csv", ".tsv", ".odt", ".eml"} <= SUPPORTED_SUFFIXES


# -- DOCX ------------------------------------------------------------------------------------------------


def test_docx_headings_lists_and_tables(tmp_path: Path) -> None:
    sections = load(write_docx(tmp_path / "handbook.docx"))
    check(sections)
    assert [s.heading for s in sections] == [
        "Travel handbook", "Travel handbook › Expenses", "Travel handbook › Expenses › Abroad"
    ]
    assert sections[0].text == "Travel handbook\nRead this before you book."
    expenses = sections[1]
    assert expenses.text.startswith(
        "Expenses\n- Meals are paid per day.\n- Hotels up to a cap.\n1. Book through the desk\n2. Keep the receipts"
    )
    assert table_text(expenses) == "Item | Limit\nMeals | EUR 45\nHotel | EUR 150"
    assert sections[2].text == "Abroad\nThe daily allowance abroad is EUR 60."
    assert all(s.page is None for s in sections)


def test_docx_without_text_is_empty(tmp_path: Path) -> None:
    path = tmp_path / "blank.docx"
    docx.Document().save(str(path))
    assert load_error(path).kind == "empty"


def test_docx_not_a_zip_is_corrupt(tmp_path: Path) -> None:
    path = tmp_path / "fake.docx"
    path.write_text("plain text in disguise")
    assert load_error(path).kind == "corrupt"


def test_docx_truncated_is_corrupt(tmp_path: Path) -> None:
    data = write_docx(tmp_path / "whole.docx").read_bytes()
    path = tmp_path / "cut.docx"
    path.write_bytes(data[: len(data) // 2])
    assert load_error(path).kind == "corrupt"


def test_zip_of_something_else_is_corrupt(tmp_path: Path) -> None:
    path = tmp_path / "other.docx"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("readme.txt", "not a Word document")
    assert load_error(path).kind == "corrupt"


@pytest.mark.parametrize("suffix", [".docx", ".xlsx", ".pptx"])
def test_password_protected_office_file_is_encrypted(tmp_path: Path, suffix: str) -> None:
    # Office saves a protected file as an OLE compound file holding an "EncryptedPackage" stream.
    path = tmp_path / f"secret{suffix}"
    path.write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(504) + "EncryptedPackage".encode("utf-16-le") + bytes(64))
    error = load_error(path)
    assert error.kind == "encrypted" and "password" in str(error)


def test_old_binary_doc_renamed_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "legacy.docx"
    path.write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(1024))
    error = load_error(path)
    assert error.kind == "corrupt" and "old binary Office file" in str(error)


def test_zip_bomb_is_refused_before_parsing(tmp_path: Path) -> None:
    path = tmp_path / "bomb.docx"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("[Content_Types].xml", "<Types/>")
        z.writestr("word/document.xml", b"\0" * (20 * 2**20))  # 20 MiB of zeros in ~20 KiB
    error = load_error(path)
    assert error.kind == "too_large" and "zip bomb" in str(error)


def test_unzipped_size_cap_is_a_setting(tmp_path: Path) -> None:
    path = write_docx(tmp_path / "handbook.docx")
    error = load_error(path, Limits(max_unzipped_bytes=10_000))
    assert error.kind == "too_large" and "unpacks to" in str(error)


# -- PPTX ------------------------------------------------------------------------------------------------


def test_pptx_one_section_per_slide(tmp_path: Path) -> None:
    sections = load(write_pptx(tmp_path / "review.pptx"))
    check(sections)
    assert [(s.page, s.heading) for s in sections] == [(1, "Quarterly review"), (2, "Headcount"), (3, "Slide 3")]
    assert sections[0].text == "Quarterly review\nRevenue grew 12 percent\n  Costs stayed flat\n\nNotes: Mention the new office."
    assert table_text(sections[1]) == "Team | People\nSales | 14\nSupport | 9"
    assert sections[2].text == "Slide 3\nText of slide 3."


def test_pptx_slide_cap(tmp_path: Path) -> None:
    error = load_error(write_pptx(tmp_path / "long.pptx", slides=4), Limits(max_pages=3))
    assert error.kind == "too_large" and "4 slides" in str(error)


# -- XLSX and CSV ----------------------------------------------------------------------------------------


def test_xlsx_one_section_per_sheet_rows_under_header(tmp_path: Path) -> None:
    sections = load(write_xlsx(tmp_path / "staff.xlsx"))
    check(sections)
    assert [s.heading for s in sections] == ["Staff", "Rates 2"]
    assert sections[0].text == (
        "Name | Team | Extension | Started\nAda | IT | 4400 | 2021-03-01\nGrace | Finance | 4410 | 2019-07-15 09:30"
    )
    assert sections[0].tables == ((0, len(sections[0].text)),)
    assert sections[1].text == "Item | EUR\nMeals | 45.5\nMileage | 0.3"


def test_xlsx_empty_workbook_and_sheet_cap(tmp_path: Path) -> None:
    path = tmp_path / "blank.xlsx"
    openpyxl.Workbook().save(str(path))
    assert load_error(path).kind == "empty"
    error = load_error(write_xlsx(tmp_path / "many.xlsx", sheets=3), Limits(max_pages=2))
    assert error.kind == "too_large" and "3 sheets" in str(error)


def test_csv_sniffs_delimiter_and_encoding(tmp_path: Path) -> None:
    path = tmp_path / "rates.csv"
    path.write_bytes('Posten;Betrag\nMahlzeit;"45,00 €"\n"Übernachtung\nim Hotel";150\n'.encode("cp1252"))
    (section,) = load(path)
    assert section.text == "Posten | Betrag\nMahlzeit | 45,00 €\nÜbernachtung im Hotel | 150"
    assert section.tables == ((0, len(section.text)),)


def test_tsv_and_empty_csv(tmp_path: Path) -> None:
    path = tmp_path / "list.tsv"
    path.write_text("a\tb\n1\t2\n")
    assert load(path)[0].text == "a | b\n1 | 2"
    empty = tmp_path / "empty.csv"
    empty.write_text(" \n\n")
    assert load_error(empty).kind == "empty"


# -- ODT -------------------------------------------------------------------------------------------------

ODT_BODY = (
    "<text:table-of-content><text:index-body><text:p>Policy ..... 1</text:p></text:index-body></text:table-of-content>"
    '<text:h text:outline-level="1">Policy</text:h>'
    "<text:p>Intro<text:s text:c=\"2\"/>text<text:line-break/>next line<text:note><text:note-body>"
    "<text:p>a footnote</text:p></text:note-body></text:note>.</text:p>"
    '<text:h text:outline-level="2">Rates</text:h>'
    "<text:list><text:list-item><text:p>Meals</text:p>"
    "<text:list><text:list-item><text:p>Abroad</text:p></text:list-item></text:list></text:list-item></text:list>"
    "<table:table><table:table-row><table:table-cell><text:p>Item</text:p></table:table-cell>"
    "<table:table-cell><text:p>EUR</text:p></table:table-cell></table:table-row>"
    '<table:table-row><table:table-cell><text:p>Hotel</text:p></table:table-cell><table:table-cell><text:p>150</text:p>'
    '</table:table-cell><table:table-cell table:number-columns-repeated="1000"/></table:table-row></table:table>'
)


def test_odt_headings_lists_tables(tmp_path: Path) -> None:
    sections = load(write_odt(tmp_path / "policy.odt", ODT_BODY))
    text = check(sections)
    assert [s.heading for s in sections] == ["Policy", "Policy › Rates"]
    assert sections[0].text == "Policy\nIntro  text\nnext line."
    assert sections[1].text == "Rates\n- Meals\n  - Abroad\n\nItem | EUR\nHotel | 150"
    assert table_text(sections[1]) == "Item | EUR\nHotel | 150"
    assert "....." not in text and "footnote" not in text


def test_odt_encrypted(tmp_path: Path) -> None:
    path = write_odt(tmp_path / "locked.odt", "<text:p>x</text:p>", manifest_extra="<manifest:encryption-data/>")
    assert load_error(path).kind == "encrypted"


def test_odt_bad_xml_and_entity_bombs_are_corrupt(tmp_path: Path) -> None:
    assert load_error(write_odt(tmp_path / "bad.odt", "", raw="<office:document-content")).kind == "corrupt"
    bomb = (
        '<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;">]>'
        f"<office:document-content {ODT_NS}><office:body><office:text><text:p>&lol2;</text:p>"
        "</office:text></office:body></office:document-content>"
    )
    assert load_error(write_odt(tmp_path / "lol.odt", "", raw=bomb)).kind == "corrupt"


# -- EML -------------------------------------------------------------------------------------------------


def test_eml_headers_body_attachments(tmp_path: Path) -> None:
    (section,) = load(write_eml(tmp_path / "move.eml"))
    assert section.heading == "Travel desk moves to room 4.12"
    assert section.text == (
        "From: Ada Lovelace <ada@example.org>\nTo: team@example.org\nDate: Mon, 02 Mar 2026 09:00:00 +0100\n"
        "Subject: Travel desk moves to room 4.12\n\nHello all,\n\nthe travel desk moves on Friday.\n\nAda\n\n"
        "Attachments: floor-plan.pdf"
    )


def test_eml_html_body_is_read_as_visible_text(tmp_path: Path) -> None:
    (section,) = load(write_eml(tmp_path / "move.eml", html=True, attach=False))
    assert section.text.endswith("Move\nThe desk moves on Friday.")


def test_eml_unknown_charset_never_fails(tmp_path: Path) -> None:
    path = tmp_path / "odd.eml"
    path.write_bytes(
        b"Subject: Rechnung\r\nContent-Type: text/plain; charset=x-unknown-42\r\n"
        b"Content-Transfer-Encoding: 8bit\r\n\r\nGr\xfc\xdfe aus K\xf6ln\r\n"
    )
    (section,) = load(path)
    assert section.text.endswith("Grüße aus Köln")


def test_eml_binary_is_corrupt(tmp_path: Path) -> None:
    path = tmp_path / "image.eml"
    path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    assert load_error(path).kind == "corrupt"


# -- text encodings beyond Western Europe ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("encoding", "text"),
    [
        ("cp1251", "Командировочные расходы возмещаются в течение тридцати дней."),
        ("koi8_r", "Командировочные расходы возмещаются в течение тридцати дней."),
        ("shift_jis", "出張費は三十日以内に精算してください。"),
        ("gb18030", "差旅费应在三十天内报销。"),
        ("iso8859_7", "Τα έξοδα ταξιδιού επιστρέφονται εντός τριάντα ημερών."),
        ("cp1252", "Größe: 45 € – “quoted”. Reisekosten für München werden erstattet."),
    ],
)
def test_legacy_encodings_are_detected(encoding: str, text: str) -> None:
    assert decode(text.encode(encoding)) == text


def test_office_loaders_accept_file_objects_from_bytes_only_via_path(tmp_path: Path) -> None:
    # The loaders read from paths (the zip check and the parser see the same file); a BytesIO is no path.
    with pytest.raises(TypeError):
        load(io.BytesIO(b"PK"))  # type: ignore[arg-type]


def test_damaged_deflate_data_and_unknown_zip_versions_are_corrupt(tmp_path: Path) -> None:
    from tests.hostile_corpus import odt_bytes, pptx_bytes

    odt = bytearray(odt_bytes("<text:p>" + "Text to damage. " * 200 + "</text:p>"))
    with zipfile.ZipFile(io.BytesIO(bytes(odt))) as z:
        info = z.getinfo("content.xml")
    start = info.header_offset + 30 + len(info.filename) + len(info.extra)
    odt[start + 5 : start + 25] = b"\xff" * 20  # the deflate stream itself: zlib.error, not a CRC error
    (tmp_path / "bad.odt").write_bytes(bytes(odt))
    pptx = bytearray(pptx_bytes("x"))
    end = pptx.rfind(b"PK\x01\x02")
    pptx[end + 6 : end + 8] = (249).to_bytes(2, "little")  # "needs zip version 24.9" to extract
    (tmp_path / "new.pptx").write_bytes(bytes(pptx))
    for name in ("bad.odt", "new.pptx"):
        with pytest.raises(LoadError) as info:
            load(tmp_path / name)
        assert info.value.kind == "corrupt" and name in str(info.value)
