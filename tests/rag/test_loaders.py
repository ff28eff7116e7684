"""Document loaders, tested on real files written into tmp_path (PDFs made with fpdf2)."""

from __future__ import annotations

import importlib.util
import os
import random
from pathlib import Path

import pytest
from fpdf import FPDF

from rag.errors import LoadError
from rag.loaders import LOAD_ERROR_KINDS, SUPPORTED_SUFFIXES, Section, full_text, load

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "assets" / "demo"


def check_offsets(sections: list[Section]) -> str:
    """Assert every Section's offset points at its text in the full text, and return that text."""
    text = full_text(sections)
    for section in sections:
        assert text[section.offset : section.offset + len(section.text)] == section.text
        assert section.text == section.text.strip() and section.text
    return text


def load_error(path: Path) -> LoadError:
    with pytest.raises(LoadError) as info:
        load(path)
    error = info.value
    assert error.kind in LOAD_ERROR_KINDS
    assert path.name in str(error)
    return error


def write_pdf(path: Path, pages: list[str | None], *, bookmarks: bool = False, **encryption: str) -> Path:
    """A PDF with one page per entry: text, or None for a page with only a drawn rectangle."""
    pdf = FPDF()
    if encryption:
        pdf.set_encryption(**encryption)
    pdf.set_font("Helvetica", size=12)
    for number, text in enumerate(pages, start=1):
        pdf.add_page()
        if text is None:
            pdf.rect(20, 20, 80, 40, style="F")
            continue
        if bookmarks:
            pdf.start_section(f"Part {number}")
        pdf.multi_cell(0, 6, text, new_x="LMARGIN", new_y="NEXT")
    pdf.output(str(path))
    return path


# -- dispatch and file-level errors ------------------------------------------------------------------


def test_supported_suffixes() -> None:
    assert {".txt", ".md", ".markdown", ".html", ".htm", ".pdf"} <= SUPPORTED_SUFFIXES
    assert all(s == s.lower() and s.startswith(".") for s in SUPPORTED_SUFFIXES)


def test_unsupported_suffix(tmp_path: Path) -> None:
    path = tmp_path / "budget.xls"
    path.write_bytes(b"\xd0\xcf\x11\xe0")
    error = load_error(path)
    assert error.kind == "unsupported"
    assert error.hint and ".pdf" in error.hint


def test_no_suffix_is_unsupported(tmp_path: Path) -> None:
    path = tmp_path / "README"
    path.write_text("hello")
    assert load_error(path).kind == "unsupported"


def test_suffix_is_case_insensitive(tmp_path: Path) -> None:
    path = tmp_path / "NOTES.TXT"
    path.write_text("Shouting suffix.")
    assert [s.text for s in load(path)] == ["Shouting suffix."]


def test_missing_file_and_directory_are_unreadable(tmp_path: Path) -> None:
    assert load_error(tmp_path / "gone.txt").kind == "unreadable"
    folder = tmp_path / "folder.md"
    folder.mkdir()
    assert load_error(folder).kind == "unreadable"


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root reads files whatever their mode")
@pytest.mark.parametrize("name", ["locked.txt", "locked.pdf"])
def test_unreadable_file(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    path.write_bytes(b"secret")
    path.chmod(0)
    try:
        error = load_error(path)
    finally:
        path.chmod(0o600)
    assert error.kind == "unreadable"
    assert error.hint is not None


@pytest.mark.parametrize("name", ["locked.txt", "locked.html", "locked.pdf"])
def test_permission_error_becomes_unreadable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    # Runs as root too: the OS refusal is simulated where the loaders open files.
    path = tmp_path / name
    path.write_bytes(b"%PDF-1.4 whatever")

    def refuse(self: Path, *args: object, **kwargs: object) -> object:
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "read_bytes", refuse)
    monkeypatch.setattr(Path, "open", refuse)
    error = load_error(path)
    assert error.kind == "unreadable"
    assert "Permission denied" in str(error)
    assert error.hint and "permission" in error.hint


@pytest.mark.parametrize("suffix", [".txt", ".md", ".html", ".pdf"])
@pytest.mark.parametrize("content", [b"", b"   \n\t\r\n  "])
def test_empty_files(tmp_path: Path, suffix: str, content: bytes) -> None:
    path = tmp_path / f"blank{suffix}"
    path.write_bytes(content)
    error = load_error(path)
    assert error.kind == ("empty" if suffix != ".pdf" or not content else "corrupt")


def test_html_without_visible_text_is_empty(tmp_path: Path) -> None:
    path = tmp_path / "shell.html"
    path.write_text("<html><head><title>T</title><script>run()</script></head><body> </body></html>")
    assert load_error(path).kind == "empty"


@pytest.mark.parametrize("suffix", sorted(SUPPORTED_SUFFIXES))
def test_random_bytes_never_escape_as_foreign_errors(tmp_path: Path, suffix: str) -> None:
    rng = random.Random(7)
    for i in range(20):
        path = tmp_path / f"noise{i}{suffix}"
        head = b"%PDF-1.7\n" if suffix == ".pdf" and i % 2 else b""
        path.write_bytes(head + bytes(rng.randrange(256) for _ in range(rng.randrange(1, 600))))
        try:
            check_offsets(load(path))
        except LoadError as error:
            assert error.kind in LOAD_ERROR_KINDS


# -- plain text ----------------------------------------------------------------------------------------


def test_text_single_section_with_normalised_newlines(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_bytes(b"\n\nFirst line\r\nSecond line\rThird line\n\n")
    sections = load(path)
    assert sections == [Section(text="First line\nSecond line\nThird line", page=None, heading=None, offset=0)]


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-be", "utf-8-sig"])
def test_text_with_bom(tmp_path: Path, encoding: str) -> None:
    text = "Grüße aus Köln – 20 € pro Tag"
    data = text.encode(encoding)
    if encoding == "utf-16-be":
        data = b"\xfe\xff" + data
    path = tmp_path / "bom.txt"
    path.write_bytes(data)
    assert load(path)[0].text == text


def test_text_utf16_without_bom(tmp_path: Path) -> None:
    path = tmp_path / "nobom.txt"
    path.write_bytes("Reisekosten für München".encode("utf-16-le"))
    assert load(path)[0].text == "Reisekosten für München"


def test_text_cp1252(tmp_path: Path) -> None:
    path = tmp_path / "legacy.txt"
    path.write_bytes("Größe: 45 € – “quoted”".encode("cp1252"))
    assert load(path)[0].text == "Größe: 45 € – “quoted”"


def test_text_undefined_cp1252_bytes_fall_back_to_latin1(tmp_path: Path) -> None:
    path = tmp_path / "odd.txt"
    path.write_bytes(b"caf\xe9 \x81 ok")
    assert load(path)[0].text == "café   ok"  # \x81, a C1 control code, became a space (#65)


def test_text_utf8_with_a_damaged_byte_keeps_its_accents(tmp_path: Path) -> None:
    path = tmp_path / "damaged.txt"
    path.write_bytes("Größe und Qualität".encode() + b" \xff " + "Übermäßig".encode())
    assert load(path)[0].text == "Größe und Qualität \ufffd Übermäßig"


def test_text_binary_data_is_corrupt(tmp_path: Path) -> None:
    path = tmp_path / "image.txt"
    path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x01\x00")
    assert load_error(path).kind == "corrupt"


# -- Markdown ------------------------------------------------------------------------------------------

MARKDOWN = """\
---
title: Handbook
---
Intro before any heading,
wrapped over two lines.

# Office guide

Welcome to the **office**. See [the policy](https://intranet.example/policy) and `a_b * c`.

## Expenses

- Meals: EUR 45
- Hotel: *EUR 150*

```bash
# this is a comment, not a heading
echo "## nor this"
```

~~~
# tilde fences too
~~~

Travel
------
Book through the travel desk.

Setext top
==========

### Deep
Deep text.
"""


def test_markdown_sections_headings_and_offsets(tmp_path: Path) -> None:
    path = tmp_path / "guide.md"
    path.write_text(MARKDOWN, encoding="utf-8")
    sections = load(path)
    check_offsets(sections)
    assert [s.heading for s in sections] == [
        None,
        "Office guide",
        "Office guide › Expenses",
        "Office guide › Travel",
        "Setext top › Deep",  # "Setext top" has no text of its own; its child names it
    ]
    assert all(s.page is None for s in sections)
    intro, office, expenses, travel, deep = sections
    assert intro.text == "Intro before any heading, wrapped over two lines."
    assert office.text == (
        "Office guide\nWelcome to the office. See the policy (https://intranet.example/policy) and `a_b * c`."
    )
    assert expenses.text.startswith("Expenses\n- Meals: EUR 45\n- Hotel: EUR 150\n\n```bash\n")
    assert "# this is a comment, not a heading" in expenses.text
    assert 'echo "## nor this"' in expenses.text
    assert "# tilde fences too" in expenses.text
    assert travel.text == "Travel\nBook through the travel desk."
    assert deep.text == "Deep\nDeep text."
    assert "title: Handbook" not in full_text(sections)


def test_markdown_markdown_suffix_and_unclosed_fence(tmp_path: Path) -> None:
    path = tmp_path / "notes.markdown"
    path.write_text("# Title\ntext\n```\n# inside\n## still inside\n")
    sections = load(path)
    assert len(sections) == 1
    assert sections[0].heading == "Title"
    assert sections[0].text.endswith("# inside\n## still inside")


def test_markdown_rule_under_list_is_not_a_heading(tmp_path: Path) -> None:
    path = tmp_path / "rule.md"
    path.write_text("- one\n- two\n---\nafter\n")
    sections = load(path)
    assert [s.heading for s in sections] == [None]
    assert sections[0].text == "- one\n- two\n---\nafter"


def test_markdown_pipe_table_without_leading_pipes_stays_one_row_per_line(tmp_path: Path) -> None:
    path = tmp_path / "table.md"
    path.write_text("Topic | Contact\n---|---\nIT | extension 4400\n\nSoft\nwrapped.\n")
    assert load(path)[0].text == "Topic | Contact\n---|---\nIT | extension 4400\n\nSoft wrapped."


def test_markdown_only_headings_keeps_them(tmp_path: Path) -> None:
    path = tmp_path / "toc.md"
    path.write_text("# One\n## Two\n")
    assert [s.text for s in load(path)] == ["One", "Two"]


# -- HTML ----------------------------------------------------------------------------------------------

HTML = """\
<!DOCTYPE html>
<html>
<head>
  <meta charset="utf-8">
  <title>Office &amp; IT</title>
  <style>p { color: red; } h1::before { content: "Hidden"; }</style>
  <script>var s = "<h1>not a heading</h1>"; if (a < b && c > d) {}</script>
</head>
<body>
  <p>Intro   paragraph
     over lines&nbsp;with &euro;&#160;5 &amp; &lt;tags&gt;.</p>
  <noscript>Please enable JavaScript</noscript>
  <h1>Handbook</h1>
  <p>First line<br>second line</p>
  <h2>Pass<em>words</em></h2>
  <ul>
    <li>At least <b>14</b> characters</li>
    <li>Use Vaultwarden
      <ul><li>Nested item</li></ul>
    </li>
  </ul>
  <ol><li>One</li><li>Two</li></ol>
  <table>
    <tr><th>Item</th><th>Limit</th></tr>
    <tr><td>Meals <p>per day</p></td><td>EUR 45</td></tr>
    <tr><td><h3>Hotel</h3></td><td>EUR 150</td></tr>
  </table>
  <pre>  keep
    this   spacing</pre>
  <template><p>template text</p></template>
  <h2>VPN</h2>
  <div>Connect first.<div>Nested block.</div></div>
  <svg><text>svg label</text></svg>
</body>
</html>
"""


def test_html_visible_text_sections_and_offsets(tmp_path: Path) -> None:
    path = tmp_path / "handbook.html"
    path.write_text(HTML, encoding="utf-8")
    sections = load(path)
    text = check_offsets(sections)
    assert [s.heading for s in sections] == ["Office & IT", "Handbook", "Handbook › Passwords", "Handbook › VPN"]
    intro, handbook, passwords, vpn = sections
    assert intro.text == "Intro paragraph over lines with € 5 & <tags>."
    assert handbook.text == "Handbook\nFirst line\nsecond line"
    assert passwords.text == (
        "Passwords\n"
        "- At least 14 characters\n- Use Vaultwarden\n  - Nested item\n\n"
        "1. One\n2. Two\n\n"
        "Item | Limit\nMeals per day | EUR 45\nHotel | EUR 150\n\n"
        "  keep\n    this   spacing"
    )
    assert vpn.text == "VPN\nConnect first.\n\nNested block."
    for hidden in ("color", "not a heading", "JavaScript", "template text", "svg label", "Hidden"):
        assert hidden not in text


def test_html_htm_suffix_declared_latin1_charset(tmp_path: Path) -> None:
    path = tmp_path / "old.HTM"
    markup = '<html><head><meta http-equiv="Content-Type" content="text/html; charset=iso-8859-1"></head>'
    path.write_bytes((markup + "<body><p>Gebühr: 5 €</p></body></html>").encode("cp1252"))
    assert [s.text for s in load(path)] == ["Gebühr: 5 €"]


def test_html_fragment_without_head_or_body(tmp_path: Path) -> None:
    path = tmp_path / "fragment.html"
    path.write_text("<h2>Only</h2><p>A <a href='x'>link</a> here<p>unclosed paragraph")
    sections = load(path)
    assert [(s.heading, s.text) for s in sections] == [("Only", "Only\nA link here\n\nunclosed paragraph")]


def test_html_list_item_paragraphs_and_unclosed_title(tmp_path: Path) -> None:
    path = tmp_path / "odd.html"
    path.write_text("<title>Notes<ul><li><p>Boxed item</p></li><li></li></ul><p>After the list</p>")
    sections = load(path)
    assert [(s.heading, s.text) for s in sections] == [("Notes", "- Boxed item\n\nAfter the list")]


# -- PDF -----------------------------------------------------------------------------------------------


def test_pdf_one_section_per_page(tmp_path: Path) -> None:
    path = write_pdf(tmp_path / "three.pdf", ["Alpha page text.", "Beta page text.\nSecond line.", "Gamma."])
    sections = load(path)
    check_offsets(sections)
    assert [s.page for s in sections] == [1, 2, 3]
    assert [s.text for s in sections] == ["Alpha page text.", "Beta page text.\nSecond line.", "Gamma."]
    assert all(s.heading is None for s in sections)


def test_pdf_page_without_text_is_skipped_and_numbers_kept(tmp_path: Path) -> None:
    path = write_pdf(tmp_path / "mixed.pdf", ["Cover text.", None, "After the picture."])
    sections = load(path)
    assert [(s.page, s.text) for s in sections] == [(1, "Cover text."), (3, "After the picture.")]
    check_offsets(sections)


class _HandbookPdf(FPDF):
    """Pages with a running header (title and page number, roman on the front matter) and a footer."""

    def header(self) -> None:
        if self.page_no() > 1:
            roman = ["", "i", "ii", "iii"]
            number = roman[self.page_no() - 1] if self.page_no() <= 4 else f"{self.page_no() - 4} / 6"
            self.cell(0, 6, f"Acme Staff Handbook {number}", new_x="LMARGIN", new_y="NEXT")

    def footer(self) -> None:
        self.set_y(-15)
        self.cell(0, 6, f"Acme Ltd - Confidential - Page {self.page_no()} of {{nb}}")


def test_pdf_running_headers_and_footers_are_left_out(tmp_path: Path) -> None:
    pdf = _HandbookPdf()
    pdf.set_font("Helvetica", size=12)
    bodies = ["Acme Staff Handbook\nEdition 2026"]
    bodies += [f"Section {n}. Staff get {20 + n} days of leave." for n in range(1, 10)]
    for body in bodies:
        pdf.add_page()
        pdf.multi_cell(0, 6, body, new_x="LMARGIN", new_y="NEXT")
    path = tmp_path / "handbook.pdf"
    pdf.output(str(path))
    sections = load(path)
    check_offsets(sections)
    # The cover keeps its lines (the title is the document's), a footer included; no other page keeps either.
    assert sections[0].text.startswith("Acme Staff Handbook\nEdition 2026")
    assert [s.text for s in sections[1:]] == bodies[1:]


def test_pdf_lines_that_recur_on_few_pages_are_kept(tmp_path: Path) -> None:
    pages = ["Cover.", "Summary\nLeave is 25 days.", "Summary\nTravel is by train.", "Contacts\nAsk HR.",
             "Notes\nNothing else.", "Notes\nEnd.", "Index\nLeave, travel."]
    sections = load(write_pdf(tmp_path / "plain.pdf", pages))
    assert [s.text for s in sections] == pages  # "Summary" and "Notes" open two pages of six, not half


def test_pdf_bookmarks_become_headings(tmp_path: Path) -> None:
    path = write_pdf(tmp_path / "marked.pdf", ["One.", "Two.", None, "Four."], bookmarks=True)
    assert [(s.page, s.heading) for s in load(path)] == [(1, "Part 1"), (2, "Part 2"), (4, "Part 4")]


def test_pdf_without_text_layer(tmp_path: Path) -> None:
    path = write_pdf(tmp_path / "scan.pdf", [None, None])
    error = load_error(path)
    assert error.kind == "no_text_layer"
    assert "no text layer (scanned?)" in str(error)
    assert error.hint and "OCR" in error.hint


def test_pdf_encrypted_with_user_password(tmp_path: Path) -> None:
    path = write_pdf(tmp_path / "secret.pdf", ["Confidential."], owner_password="owner", user_password="open sesame")
    error = load_error(path)
    assert error.kind == "encrypted"
    assert "password" in str(error)


def test_pdf_with_only_an_owner_password_opens_with_the_empty_password(tmp_path: Path) -> None:
    path = write_pdf(tmp_path / "restricted.pdf", ["Readable anyway."], owner_password="owner")
    assert [s.text for s in load(path)] == ["Readable anyway."]


@pytest.mark.parametrize("keep", [0.1, 0.5, 0.9])
def test_pdf_truncated_is_corrupt_or_partially_read(tmp_path: Path, keep: float) -> None:
    data = write_pdf(tmp_path / "whole.pdf", ["Page one text.", "Page two text."]).read_bytes()
    path = tmp_path / "cut.pdf"
    path.write_bytes(data[: int(len(data) * keep)])
    try:
        sections = load(path)
    except LoadError as error:
        # PDFium repairs some damage; when it cannot, the error must say so.
        assert error.kind in {"corrupt", "no_text_layer"}
        assert "cut.pdf" in str(error)
    else:
        check_offsets(sections)


def test_pdf_not_a_pdf(tmp_path: Path) -> None:
    path = tmp_path / "fake.pdf"
    path.write_text("This is plain text wearing a .pdf suffix.")
    error = load_error(path)
    assert error.kind == "corrupt"
    assert str(error) == "fake.pdf is not a valid PDF or is damaged."


# -- the committed demo documents ------------------------------------------------------------------------


def test_demo_travel_policy_pages() -> None:
    sections = load(DEMO / "travel-policy.pdf")
    check_offsets(sections)
    assert [s.page for s in sections] == [1, 2, 3]
    page1, page2, page3 = (s.text for s in sections)
    assert "economy class" in page1 and "EUR 150 per night" in page1 and "EUR 200 per night" in page1
    assert "travel desk" in page1
    assert "EUR 60" in page2
    assert "The daily meal allowance is EUR 45 for travel within Germany and EUR 60 for travel abroad." in page2
    assert "within 30 days" in page3 and "expense portal" in page3 and "EUR 0.30" in page3
    assert "line manager" in page3
    assert sections[1].heading == "5. Meals and daily allowance"


def test_demo_it_handbook() -> None:
    sections = load(DEMO / "it-handbook.html")
    text = check_offsets(sections)
    by_heading = {s.heading: s.text for s in sections}
    assert "at least 14 characters" in by_heading["IT Handbook › Passwords"]
    assert "Vaultwarden" in by_heading["IT Handbook › Passwords"]
    assert "VPN" in by_heading["IT Handbook › VPN and working remotely"]
    assert (
        "If your laptop or phone is lost or stolen, call the IT service desk at extension 4400 immediately"
        " — at the latest within 24 hours." in by_heading["IT Handbook › Lost or stolen devices"]
    )
    assert "service portal" in by_heading["IT Handbook › Software requests"]
    assert "font-family" not in text


def test_demo_onboarding() -> None:
    sections = load(DEMO / "onboarding.md")
    text = check_offsets(sections)
    assert "reception on the ground floor" in text and "badge" in text
    assert "buddy" in text
    assert "28 days of annual leave" in text
    assert "Core hours are 10:00–15:00" in text
    assert any(s.heading and s.heading.endswith("Payroll") for s in sections)


def _demo_script() -> object:
    spec = importlib.util.spec_from_file_location("make_demo_docs", REPO / "packaging" / "make_demo_docs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_demo_pdf_generator_is_deterministic_and_matches_the_committed_file(tmp_path: Path) -> None:
    script = _demo_script()
    first, second = script.build(), script.build()  # type: ignore[attr-defined]
    assert first == second
    regenerated = tmp_path / "travel-policy.pdf"
    regenerated.write_bytes(first)
    # Compare text rather than bytes, so that a newer fpdf2 with a different byte layout still passes.
    assert load(regenerated) == load(DEMO / "travel-policy.pdf")


# -- hostile inputs that once took minutes or escaped as raw exceptions (tests/hostile_corpus.py) --------


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("emphasis.md", b"*a " * 100_000 + b"_b " * 100_000),
        ("brackets.md", b"[" * 100_000 + b"](" * 50_000 + b"![x" * 50_000),
        ("backticks.md", b"`" * 50_000 + b" x " + b"``" * 50_000),
        ("comments.html", b"<!--" + b"<!-- x " * 100_000),
        ("tags.html", b"<a b='" * 50_000),
    ],
)
def test_pathological_markup_is_read_in_linear_time(tmp_path: Path, name: str, data: bytes) -> None:
    import time

    path = tmp_path / name
    path.write_bytes(data)
    t0 = time.perf_counter()
    try:
        load(path)
    except LoadError as exc:
        assert exc.kind == "empty"
    assert time.perf_counter() - t0 < 5  # each took minutes before the fix (quadratic in the file's size)


def test_markdown_code_spans_pair_runs_of_equal_length(tmp_path: Path) -> None:
    path = tmp_path / "code.md"
    path.write_text("Use ``a ` b`` and `*kept*` but *dropped* here.\n")
    assert load(path)[0].text == "Use ``a ` b`` and `*kept*` but dropped here."


def test_html_comments_are_dropped_and_an_unclosed_one_runs_to_the_end(tmp_path: Path) -> None:
    path = tmp_path / "c.html"
    path.write_text("<p>kept <!-- hidden --> text</p><p>also kept</p><!-- never closed <p>gone</p>")
    assert full_text(load(path)) == "kept text\n\nalso kept"
    path.write_text("<p>a &lt; b and then 1 <b")
    assert full_text(load(path)) == "a < b and then 1 <b"


def test_a_huge_mail_header_is_cut_not_parsed_for_minutes(tmp_path: Path) -> None:
    import time

    path = tmp_path / "m.eml"
    path.write_bytes(b"Subject: " + b"a " * 1_000_000 + b"\nContent-Type: text/plain; x=" + b"y " * 100_000
                     + b"\n\nThe body survives.\n")  # fmt: skip
    t0 = time.process_time()  # CPU time: a busy machine's other work does not count against the reader
    text = full_text(load(path))
    assert time.process_time() - t0 < 10  # parsed whole, the header takes minutes
    assert "The body survives." in text and len(text) < 20_000


def test_a_csv_with_one_huge_quoted_line_is_sniffed_quickly(tmp_path: Path) -> None:
    import time

    path = tmp_path / "q.csv"
    path.write_bytes((b"a;b,c|d\t\"e'" * 20_000) + b"\nx,y\n")
    t0 = time.perf_counter()
    load(path)
    assert time.perf_counter() - t0 < 3
