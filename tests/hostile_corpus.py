"""A deterministic corpus of hostile files (and a few good ones) for the ingest path to survive.

    make_hostile_corpus(folder, scale="ci")  -> {relative name: Expect}; writes the files
    Expect                                     what ingesting one file must give

Every category of the "hostile corpus" issue has files here: truncated, damaged and encrypted PDFs, PDFs
with thousands of pages, huge images or a decompression bomb for a content stream, DOCX/XLSX/PPTX/ODT
zip bombs (high ratio, many members, nested, lying sizes), billion-laughs and external-entity XML, binary
junk under document suffixes, empty files, broken UTF-8/UTF-16, one enormous single-line text, symlink
loops, an unreadable file, and names with a newline or bytes that are not UTF-8. The good files each hold
one sentence found nowhere else, so a search can prove they were indexed.

`scale="ci"` stays small enough for a test on two busy cores (about 100 MB on disk, most of it one long
line); `scale="soak"` adds the 10,000-page PDF with text on every page and the 1 GB single line.
Everything comes from a seeded RNG: the same call writes the same bytes.
"""

from __future__ import annotations

import functools
import io
import os
import random
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SCALES = ("ci", "soak")
# Kinds a failed file may be reported with (LoadError kinds plus the pool's own "timeout").
ANY_FAILURE = frozenset(
    {"unsupported", "empty", "corrupt", "encrypted", "no_text_layer", "unreadable", "too_large", "timeout"}
)


@dataclass(frozen=True)
class Expect:
    """What ingesting one file must give.

    outcome: "indexed" (its `sentence` is searchable), "failed" (reported with one of `kinds`),
    "skipped" (not a document: counted as skipped), or "any" (indexed or failed with one of `kinds`;
    damaged files that a lenient reader may still partly read).
    """

    outcome: str
    kinds: frozenset[str] = frozenset()
    sentence: str | None = None
    category: str = ""


def shown(name: str) -> str:
    """A corpus file name as reports show it (undecodable bytes replaced)."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def unmet(expect: dict[str, Expect], failed: dict[str, Any], indexed: set[str]) -> dict[str, str]:
    """The files whose ingest did not end as `expect` says: name -> expected and got.

    `failed`: the report's failures (with .kind and .error) by file name relative to the corpus folder;
    `indexed`: the names of the documents indexed. The hostile test and bench.hostile both judge by this.
    """
    wrong = {}
    for name, e in expect.items():
        key = shown(name)
        failure = failed.get(key)
        done = key in indexed
        ok = {
            "skipped": failure is None and not done,
            "indexed": done and failure is None,
            "failed": failure is not None and failure.kind in e.kinds and not done,
            "any": done != (failure is not None) and (failure is None or failure.kind in e.kinds),
        }[e.outcome]
        if not ok:
            got = f"{failure.kind}: {failure.error}" if failure else "indexed" if done else "nothing"
            wrong[name] = f"expected {e.outcome} {sorted(e.kinds)}, got {got}"
    return wrong


def _failed(*kinds: str, category: str) -> Expect:
    return Expect("failed", frozenset(kinds), category=category)


def _any(category: str, *kinds: str) -> Expect:
    return Expect("any", frozenset(kinds) or ANY_FAILURE, category=category)


def _good(sentence: str, category: str = "good") -> Expect:
    return Expect("indexed", sentence=sentence, category=category)


# -- PDF bytes ----------------------------------------------------------------------------------------


def raw_pdf(objects: list[bytes], *, root: int = 1, trailer: bytes = b"", xref: bool = True) -> bytes:
    """A PDF from numbered object bodies (object i+1 is objects[i]), with a correct cross-reference table."""
    out = io.BytesIO()
    out.write(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n" % number + body + b"\nendobj\n")
    start = out.tell()
    if xref:
        out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1))
        for offset in offsets:
            out.write(b"%010d 00000 n \n" % offset)
    out.write(b"trailer\n<< /Size %d /Root %d 0 R %s>>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, root, trailer, start))
    return out.getvalue()


def stream(data: bytes, extra: bytes = b"", *, compress: bool = False) -> bytes:
    """A stream object body."""
    if compress:
        data = zlib.compress(data, 9)
        extra += b" /Filter /FlateDecode"
    return b"<< /Length %d%s >>\nstream\n" % (len(data), extra) + data + b"\nendstream"


def _pdf_text(text: str) -> bytes:
    escaped = text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
    return b"BT /F1 12 Tf 72 720 Td (" + escaped.encode("latin-1") + b") Tj ET"


def pages_pdf(count: int, *, text: Callable[[int], str] | None = None, declared: int | None = None) -> bytes:
    """A PDF of `count` pages: one shared content stream, or one per page when `text` gives each its own."""
    font = b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"
    first_page = 5 if text is None else 4
    per_page = 1 if text is None else 2
    kids = b" ".join(b"%d 0 R" % (first_page + per_page * i) for i in range(count))
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [%s] /Count %d >>" % (kids, declared if declared is not None else count),
        font,
    ]
    if text is None:
        objects.append(stream(_pdf_text("The same words on every page.")))
    resources = b"/Resources << /Font << /F1 3 0 R >> >>"
    for i in range(count):
        if text is None:
            objects.append(b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R %s >>" % resources)
        else:
            content = first_page + per_page * i + 1
            objects.append(b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents %d 0 R %s >>" % (content, resources))
            objects.append(stream(_pdf_text(text(i))))
    return raw_pdf(objects)


def one_page_pdf(content: bytes, *, resources: bytes = b"", extra_objects: list[bytes] = ()) -> bytes:  # type: ignore[assignment]
    """A one-page PDF whose content stream object body is `content` (objects 5+ are `extra_objects`)."""
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 << /Type /Font /Subtype /Type1 /BaseFont /Helvetica >> >> " + resources + b" >> >>",
        content,
        *extra_objects,
    ]
    return raw_pdf(objects)


def fpdf_bytes(pages: list[str], **encryption: str) -> bytes:
    """A real PDF written by fpdf2 (optionally encrypted)."""
    from fpdf import FPDF

    pdf = FPDF()
    if encryption:
        pdf.set_encryption(**encryption)
    pdf.set_font("Helvetica", size=12)
    for text in pages:
        pdf.add_page()
        pdf.multi_cell(0, 6, text, new_x="LMARGIN", new_y="NEXT")
    return bytes(pdf.output())


def deflate_bomb(size: int, fill: bytes = b"\0") -> bytes:
    """zlib data that inflates to `size` bytes of `fill`, made without holding the inflated bytes."""
    compressor = zlib.compressobj(9)
    block = fill * (1 << 20)
    parts = []
    left = size
    while left > 0:
        n = min(left, len(block))
        parts.append(compressor.compress(block[:n]))
        left -= n
    parts.append(compressor.flush())
    return b"".join(parts)


# -- office files -------------------------------------------------------------------------------------

_CT = "http://schemas.openxmlformats.org/package/2006/content-types"
_RELS = "http://schemas.openxmlformats.org/package/2006/relationships"
_OFFICE_DOC = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument"
_W_NS = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"


def docx_bytes(sentence: str) -> bytes:
    import docx

    document = docx.Document()
    document.add_heading("Hostile corpus", 1)
    document.add_paragraph(sentence)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def pptx_bytes(sentence: str) -> bytes:
    import pptx

    presentation = pptx.Presentation()
    slide = presentation.slides.add_slide(presentation.slide_layouts[1])
    slide.shapes.title.text = "Hostile corpus"
    slide.placeholders[1].text = sentence
    out = io.BytesIO()
    presentation.save(out)
    return out.getvalue()


def xlsx_bytes(sentence: str) -> bytes:
    import openpyxl

    workbook = openpyxl.Workbook()
    sheet = workbook.active
    sheet.title = "Notes"
    sheet.append(["Note", "Count"])
    sheet.append([sentence, 1])
    out = io.BytesIO()
    workbook.save(out)
    return out.getvalue()


def ods_bytes(rows: list[list[str]]) -> bytes:
    """A minimal OpenDocument spreadsheet of one sheet; cells that read as numbers are typed as floats."""
    def cell(text: str) -> str:
        typed = f' office:value-type="float" office:value="{text}"' if text.replace(".", "", 1).isdigit() else ""
        return f"<table:table-cell{typed}><text:p>{text}</text:p></table:table-cell>"

    body = "".join("<table:table-row>" + "".join(cell(c) for c in row) + "</table:table-row>" for row in rows)
    content = (
        '<?xml version="1.0" encoding="UTF-8"?>'
        '<office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
        'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" '
        'xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" office:version="1.3">'
        f'<office:body><office:spreadsheet><table:table table:name="Sheet1">{body}</table:table>'
        "</office:spreadsheet></office:body></office:document-content>"
    ).encode()
    return odt_bytes("", content=content)


def odt_bytes(body_xml: str, *, content: bytes | None = None) -> bytes:
    """A minimal OpenDocument text file, laid out as LibreOffice writes one."""
    if content is None:
        content = (
            '<?xml version="1.0" encoding="UTF-8"?>'
            '<office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
            'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" '
            'xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" office:version="1.3">'
            f"<office:body><office:text>{body_xml}</office:text></office:body></office:document-content>"
        ).encode()
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        z.writestr(zipfile.ZipInfo("mimetype"), "application/vnd.oasis.opendocument.text")
        z.writestr(
            "META-INF/manifest.xml",
            '<?xml version="1.0" encoding="UTF-8"?><manifest:manifest '
            'xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0" manifest:version="1.3">'
            '<manifest:file-entry manifest:full-path="/" manifest:media-type="application/vnd.oasis.opendocument.text"/>'
            '<manifest:file-entry manifest:full-path="content.xml" manifest:media-type="text/xml"/>'
            "</manifest:manifest>",
            zipfile.ZIP_DEFLATED,
        )
        z.writestr("content.xml", content, zipfile.ZIP_DEFLATED)
    return out.getvalue()


def replace_member(archive: bytes, name: str, data: bytes, *, extra: dict[str, bytes] | None = None) -> bytes:
    """The zip with member `name` replaced by `data` (and `extra` members added)."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(archive)) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            dst.writestr(info.filename, data if info.filename == name else src.read(info.filename))
        for extra_name, extra_data in (extra or {}).items():
            dst.writestr(extra_name, extra_data)
    return out.getvalue()


def bomb_member_zip(members: dict[str, bytes], bomb_name: str, bomb_size: int) -> bytes:
    """A zip holding `members` and one deflated member that inflates to `bomb_size` zero bytes."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in members.items():
            z.writestr(name, data)
        info = zipfile.ZipInfo(bomb_name)
        info.compress_type = zipfile.ZIP_DEFLATED
        with z.open(info, "w", force_zip64=True) as handle:
            block = b"\0" * (1 << 20)
            for _ in range(bomb_size >> 20):
                handle.write(block)
    return out.getvalue()


def lying_sizes(archive: bytes, member: str, inflated: bytes) -> bytes:
    """The zip with `member`'s data replaced by deflated `inflated` while its headers keep declaring the old sizes.

    A reader that trusts the declared size reads only that much (and fails the CRC check); one that
    inflates the stream to its end gets all of `inflated`: the bomb that defeats a declared-size check.
    """
    with zipfile.ZipFile(io.BytesIO(archive)) as z:
        info = z.getinfo(member)
    data = bytearray(archive)
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    bomb = compressor.compress(inflated) + compressor.flush()
    # Local header: 30 bytes + name + extra, then the data of compress_size bytes.
    start = info.header_offset
    name_len = int.from_bytes(data[start + 26 : start + 28], "little")
    extra_len = int.from_bytes(data[start + 28 : start + 30], "little")
    data_start = start + 30 + name_len + extra_len
    if info.compress_type != zipfile.ZIP_DEFLATED or len(bomb) > info.compress_size:
        return bytes(data)  # the replacement must fit where the old data was
    padded = bomb + b"\0" * (info.compress_size - len(bomb))
    data[data_start : data_start + info.compress_size] = padded
    return bytes(data)


def many_members_zip(count: int, first: dict[str, bytes]) -> bytes:
    """A zip of `count` empty junk members plus `first` (appended, so the junk is written once per count)."""
    out = io.BytesIO(_junk_zip(count))
    with zipfile.ZipFile(out, "a", zipfile.ZIP_DEFLATED) as z:
        for name, member in first.items():
            z.writestr(name, member)
    return out.getvalue()


@functools.lru_cache(maxsize=2)
def _junk_zip(count: int) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as z:
        for i in range(count):
            z.writestr(f"junk/{i}.xml", b"")
    return out.getvalue()


def nested_zip(levels: int, leaf: bytes) -> bytes:
    data = leaf
    for level in range(levels):
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
            for i in range(4):
                z.writestr(f"layer{level}-{i}.zip", data)
        data = out.getvalue()
    return data


def overlapping_zip(members: dict[str, bytes], copies: int, size: int) -> bytes:
    """Fifield's overlapping-file bomb: many central-directory entries all pointing at one big deflated kernel."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in members.items():
            z.writestr(name, data)
        z.writestr("kernel.xml", b"A" * size)
    archive = out.getvalue()
    with zipfile.ZipFile(io.BytesIO(archive)) as z:
        kernel = z.getinfo("kernel.xml")
        entries = z.infolist()
    cd_start = kernel.header_offset + 30 + len(b"kernel.xml") + kernel.compress_size
    body = archive[:cd_start]
    central = io.BytesIO()
    for info in entries:
        central.write(_central_entry(info, info.filename.encode(), info.header_offset))
    for i in range(copies):
        central.write(_central_entry(kernel, f"copy{i}.xml".encode(), kernel.header_offset))
    cd = central.getvalue()
    count = len(entries) + copies
    end = b"PK\x05\x06" + b"\0\0\0\0" + count.to_bytes(2, "little") * 2 + len(cd).to_bytes(4, "little")
    end += cd_start.to_bytes(4, "little") + b"\0\0"
    return body + cd + end


def _central_entry(info: zipfile.ZipInfo, name: bytes, offset: int) -> bytes:
    import struct

    dostime = info.date_time[3] << 11 | info.date_time[4] << 5 | info.date_time[5] // 2
    dosdate = (info.date_time[0] - 1980) << 9 | info.date_time[1] << 5 | info.date_time[2]
    return struct.pack(
        "<4s4H2H3L5H2L", b"PK\x01\x02", 20, 20, 0, info.compress_type, dostime, dosdate,
        info.CRC, info.compress_size, info.file_size, len(name), 0, 0, 0, 0, 0, offset,
    ) + name  # fmt: skip


BILLION_LAUGHS = (
    b'<?xml version="1.0"?>\n<!DOCTYPE lolz [\n <!ENTITY lol "lol">\n'
    + b"".join(
        b' <!ENTITY lol%d "%s">\n' % (i, b"".join(b"&lol%s;" % (b"" if i == 1 else b"%d" % (i - 1)) for _ in range(10)))
        for i in range(1, 10)
    )
    + b"]>\n"
)
XXE = b'<?xml version="1.0"?>\n<!DOCTYPE doc [<!ENTITY xxe SYSTEM "file:///etc/passwd"> <!ENTITY net SYSTEM "http://127.0.0.1:9/x">]>\n'


def docx_with_xml(body: bytes) -> bytes:
    """A .docx whose word/document.xml is `body` (a DTD prolog, then WordprocessingML)."""
    return replace_member(docx_bytes("placeholder"), "word/document.xml", body)


def wordml(prolog: bytes, text: bytes) -> bytes:
    return prolog + b'<w:document xmlns:w="%s"><w:body><w:p><w:r><w:t>%s</w:t></w:r></w:p></w:body></w:document>' % (
        _W_NS.encode(), text)  # fmt: skip


# -- the corpus ---------------------------------------------------------------------------------------


class _Writer:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.expect: dict[str, Expect] = {}

    def add(self, name: str, data: bytes, expect: Expect) -> None:
        (self.folder / name).write_bytes(data)
        self.expect[name] = expect

    def good(self, name: str, data: bytes, sentence: str) -> None:
        self.add(name, data, _good(sentence))


def _sentence(n: int) -> str:
    animals = ["otter", "heron", "badger", "lynx", "marten", "ibis", "tapir", "okapi", "quokka", "serval", "kestrel", "newt"]
    colours = ["amber", "cobalt", "saffron", "teal", "umber", "vermilion", "ochre", "indigo", "jade", "russet", "slate", "mauve"]
    return f"The {colours[n % 12]} {animals[(n * 5 + 1) % 12]} keeps ledger number {7100 + n} in drawer {n}."


def make_hostile_corpus(folder: Path, *, scale: str = "ci") -> dict[str, Expect]:
    """Write the hostile corpus into `folder` (created if needed); returns the expectation for every name.

    Names are paths relative to `folder` as str (non-UTF-8 bytes surrogate-escaped, as os.fsdecode gives).
    """
    if scale not in SCALES:
        raise ValueError(f"scale must be one of {SCALES}")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    rng = random.Random(20240611)
    w = _Writer(folder)
    sentences = iter(_sentence(n) for n in range(1000))

    # Good files among the bad, one unique sentence each, in every format.
    goods: list[tuple[str, Callable[[str], bytes]]] = [
        ("good.pdf", lambda s: fpdf_bytes([s])),
        ("good-empty-user-password.pdf", lambda s: fpdf_bytes([s], owner_password="owner-secret", user_password="")),
        ("good.docx", docx_bytes),
        ("good.pptx", pptx_bytes),
        ("good.xlsx", xlsx_bytes),
        ("good.odt", lambda s: odt_bytes(f"<text:p>{s}</text:p>")),
        ("good.txt", str.encode),
        ("good.md", lambda s: f"# Notes\n\n{s}\n".encode()),
        ("good.html", lambda s: f"<html><body><h1>Notes</h1><p>{s}</p></body></html>".encode()),
        ("good.csv", lambda s: f"note,count\n{s},1\n".encode()),
        ("good.eml", lambda s: f"From: a@example.org\nTo: b@example.org\nSubject: Notes\n\n{s}\n".encode()),
        ("good-utf16.txt", lambda s: "\ufeff".encode("utf-16-le") + s.encode("utf-16-le")),
        ("good-latin1.txt", lambda s: (s + " Café déjà vu.").encode("latin-1")),
        ("good-with-bad-byte.txt", lambda s: s.encode() + b" caf\xc3\xa9 broken \xff byte"),
        ("good-markdown.markdown", lambda s: f"Title\n=====\n\n{s}\n".encode()),
        ("good.tsv", lambda s: f"note\tcount\n{s}\t1\n".encode()),
        ("good.htm", lambda s: f"<!DOCTYPE html><p>{s}</p>".encode()),
        ("good.docm", docx_bytes),
        ("good.pptm", pptx_bytes),
        ("good.xlsm", xlsx_bytes),
        ("name with\nnewline {word}.txt", str.encode),
    ]
    for name, make in goods:
        s = next(sentences)
        w.good(name.format(word=s.split()[2]), make(s), s)

    # -- PDFs -------------------------------------------------------------------------------------
    base = fpdf_bytes(["A page of ordinary text to damage in many ways."] * 3)
    for i, cut in enumerate(sorted(rng.sample(range(1, len(base)), 30))):
        w.add(f"pdf-truncated-{i:02d}.pdf", base[:cut], _any("pdf-truncated"))
    for i in range(40):
        data = bytearray(base)
        for _ in range(rng.choice([1, 4, 32, 256])):
            data[rng.randrange(len(data))] = rng.randrange(256)
        w.add(f"pdf-flipped-{i:02d}.pdf", bytes(data), _any("pdf-flipped"))
    for i in range(10):
        data = bytearray(base)
        at = rng.randrange(len(data))
        data[at:at] = rng.randbytes(rng.choice([1, 100, 5000]))
        w.add(f"pdf-inserted-{i:02d}.pdf", bytes(data), _any("pdf-inserted"))
    w.add("pdf-header-only.pdf", b"%PDF-1.7\n", _failed("corrupt", category="pdf-corrupt"))
    w.add("pdf-garbage.pdf", b"%PDF-1.4 garbage " + rng.randbytes(3000), _failed("corrupt", category="pdf-corrupt"))
    w.add("pdf-no-xref.pdf", pages_pdf(2)[:-60], _any("pdf-corrupt"))
    w.add("pdf-encrypted.pdf", fpdf_bytes(["secret"], owner_password="o", user_password="user-secret"),
          _failed("encrypted", category="pdf-encrypted"))  # fmt: skip
    w.add("pdf-encrypted-aes.pdf", _aes_pdf(), _failed("encrypted", category="pdf-encrypted"))
    w.add("pdf-no-text.pdf", one_page_pdf(stream(b"0 0 1 rg 10 10 100 100 re f")), _failed("no_text_layer", category="pdf-scan"))
    w.add("pdf-zero-pages.pdf", raw_pdf([b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [] /Count 0 >>"]),
          _failed("corrupt", "empty", category="pdf-corrupt"))  # fmt: skip
    # Page counts: over the limit (too_large before any page is read), and a page tree that lies.
    many = 10_000 if scale == "soak" else 6_000
    # Over the default page cap; the soak run raises the cap, so that there it is read, all 10,000 pages.
    pages_expect = _failed("too_large", category="pdf-pages") if scale == "ci" else _any("pdf-pages")
    w.add(f"pdf-{many}-pages.pdf", pages_pdf(many), pages_expect)
    w.add("pdf-count-lies.pdf", pages_pdf(2, declared=2_000_000_000), _any("pdf-pages"))
    w.add("pdf-page-tree-loop.pdf", raw_pdf([
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R 2 0 R] /Count 2 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >>",
    ]), _any("pdf-loop"))  # fmt: skip
    w.add("pdf-xref-prev-loop.pdf", pages_pdf(1).replace(b"/Root 1 0 R", b"/Root 1 0 R /Prev 9"), _any("pdf-loop"))
    w.add("pdf-deep-nesting.pdf", one_page_pdf(b"<< /Deep " + b"[" * 200_000 + b"]" * 200_000 + b" >>"), _any("pdf-deep"))
    w.add("pdf-deep-dict.pdf", one_page_pdf(b"<< /A " * 50_000 + b">>" * 50_000), _any("pdf-deep"))
    # Huge images: a 60000 x 60000 image (10 GB as pixels) whose data is a small deflate bomb; text is still read.
    image = b"<< /Type /XObject /Subtype /Image /Width 60000 /Height 60000 /ColorSpace /DeviceRGB /BitsPerComponent 8 " \
            b"/Filter /FlateDecode /Length %d >>\nstream\n"  # fmt: skip
    pixels = deflate_bomb(16 << 20)
    s = next(sentences)
    w.add("pdf-huge-image.pdf", one_page_pdf(
        stream(b"q 600 0 0 700 0 0 cm /Im1 Do Q " + _pdf_text(s)), resources=b"/XObject << /Im1 5 0 R >>",
        extra_objects=[image % len(pixels) + pixels + b"\nendstream"],
    ), _any("pdf-image"))  # fmt: skip
    # A content stream that inflates to hundreds of MB of text-showing operators: the reader's memory, not its time.
    bomb_size = (1 << 30) if scale == "soak" else (384 << 20)
    w.add("pdf-content-bomb.pdf", one_page_pdf(
        b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(blob := deflate_bomb(bomb_size, b"(A) Tj ")) + blob + b"\nendstream"
    ), _any("pdf-bomb", "too_large", "corrupt", "timeout", "no_text_layer"))  # fmt: skip
    w.add("binary.pdf", rng.randbytes(20_000), _failed("corrupt", category="junk"))

    # -- zip-based office files ---------------------------------------------------------------------
    docx_ok = docx_bytes("A Word file to damage.")
    xlsx_ok = xlsx_bytes("A workbook to damage.")
    pptx_ok = pptx_bytes("A deck to damage.")
    odt_ok = odt_bytes("<text:p>An OpenDocument file to damage.</text:p>")
    seeds = {".docx": docx_ok, ".xlsx": xlsx_ok, ".pptx": pptx_ok, ".odt": odt_ok}
    main_part = {".docx": "word/document.xml", ".xlsx": "xl/worksheets/sheet1.xml",
                 ".pptx": "ppt/slides/slide1.xml", ".odt": "content.xml"}  # fmt: skip
    for suffix, seed in seeds.items():
        stem = suffix[1:]
        for i, cut in enumerate(sorted(rng.sample(range(1, len(seed)), 8))):
            w.add(f"{stem}-truncated-{i}{suffix}", seed[:cut], _any(f"{stem}-truncated"))
        for i in range(10):
            data = bytearray(seed)
            for _ in range(rng.choice([1, 8, 64])):
                data[rng.randrange(len(data))] = rng.randrange(256)
            w.add(f"{stem}-flipped-{i}{suffix}", bytes(data), _any(f"{stem}-flipped"))
        members = _members(seed)
        bomb_total = 64 << 20  # over 16 MiB at a ratio near 1000: refused by the ratio rule
        w.add(f"{stem}-bomb-ratio{suffix}", bomb_member_zip(members, "bomb.bin", bomb_total),
              _failed("too_large", category="zip-bomb"))  # fmt: skip
        w.add(f"{stem}-bomb-members{suffix}", many_members_zip(25_000, members), _failed("too_large", category="zip-bomb"))
        w.add(f"{stem}-bomb-nested{suffix}", replace_member(seed, "", b"",
              extra={"nested-bomb.zip": nested_zip(3, deflate_bomb(1 << 20))}), _any(f"{stem}-nested"))  # fmt: skip
        w.add(f"{stem}-bomb-overlap{suffix}", overlapping_zip(members, 2000, 200_000),
              _failed("too_large", "corrupt", category="zip-bomb"))  # fmt: skip
        # Declared sizes small, real data inflating to 32 MB: a reader must stop at the declared size.
        lying = lying_sizes(seed, main_part[suffix], b"<" + b"a" * (32 << 20))
        w.add(f"{stem}-bomb-lying-size{suffix}", lying, _any(f"{stem}-lying", "corrupt", "empty"))
        w.add(f"{stem}-not-a-zip{suffix}", rng.randbytes(5000), _failed("corrupt", category="junk"))
        w.add(f"{stem}-encrypted{suffix}", _ole_encrypted(rng), _failed("encrypted", category="office-encrypted"))
        w.add(f"{stem}-old-binary{suffix}", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + rng.randbytes(4000),
              _failed("corrupt", category="office-old"))  # fmt: skip
        w.add(f"{stem}-empty-zip{suffix}", _empty_zip(), _failed("corrupt", "empty", category="office-corrupt"))
        w.add(f"{stem}-malformed-xml{suffix}", replace_member(seed, main_part[suffix], b"<unclosed><a></b>&amp"),
              _failed("corrupt", "empty", category="office-xml"))  # fmt: skip
    # Billion laughs and external entities in every XML-based format: never expanded, never fetched.
    laugh = b"&lol9;"
    w.add("docx-billion-laughs.docx", docx_with_xml(wordml(BILLION_LAUGHS, laugh)), _any("xml-bomb", "corrupt", "empty"))
    w.add("docx-xxe.docx", docx_with_xml(wordml(XXE, b"&xxe;&net;")), _any("xml-xxe", "corrupt", "empty"))
    w.add("docx-bomb-styles.docx", replace_member(docx_ok, "word/styles.xml", BILLION_LAUGHS + b"<a>&lol9;</a>"),
          _any("xml-bomb", "corrupt", "empty"))  # fmt: skip
    w.add("xlsx-billion-laughs.xlsx", replace_member(xlsx_ok, "xl/worksheets/sheet1.xml",
          BILLION_LAUGHS + b'<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>'
          b'<row r="1"><c r="A1" t="inlineStr"><is><t>&lol9;</t></is></c></row></sheetData></worksheet>'),
          _any("xml-bomb", "corrupt", "empty"))  # fmt: skip
    w.add("xlsx-xxe.xlsx", replace_member(xlsx_ok, "xl/worksheets/sheet1.xml",
          XXE + b'<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>'
          b'<row r="1"><c r="A1" t="inlineStr"><is><t>&xxe;</t></is></c></row></sheetData></worksheet>'),
          _any("xml-xxe", "corrupt", "empty"))  # fmt: skip
    w.add("xlsx-bomb-workbook.xlsx", replace_member(xlsx_ok, "xl/workbook.xml", BILLION_LAUGHS + b"<a>&lol9;</a>"),
          _any("xml-bomb", "corrupt", "empty"))  # fmt: skip
    with zipfile.ZipFile(io.BytesIO(pptx_ok)) as z:
        slide = z.read("ppt/slides/slide1.xml")
    body = slide.split(b"?>", 1)[-1]
    w.add("pptx-billion-laughs.pptx", replace_member(pptx_ok, "ppt/slides/slide1.xml",
          BILLION_LAUGHS + body.replace(b"A deck to damage.", laugh)), _any("xml-bomb", "corrupt", "empty"))  # fmt: skip
    w.add("pptx-xxe.pptx", replace_member(pptx_ok, "ppt/slides/slide1.xml",
          XXE + body.replace(b"A deck to damage.", b"&xxe;")), _any("xml-xxe", "corrupt", "empty"))  # fmt: skip
    odt_content = _members(odt_ok)["content.xml"].split(b"?>", 1)[-1]
    w.add("odt-billion-laughs.odt", odt_bytes("", content=BILLION_LAUGHS + odt_content.replace(b"An OpenDocument file to damage.", laugh)),
          _failed("corrupt", category="xml-bomb"))  # fmt: skip
    w.add("odt-xxe.odt", odt_bytes("", content=XXE + odt_content.replace(b"An OpenDocument file to damage.", b"&xxe;")),
          _failed("corrupt", category="xml-xxe"))  # fmt: skip
    w.add("odt-deep.odt", odt_bytes("<text:section>" * 5000 + "<text:p>deep</text:p>" + "</text:section>" * 5000),
          _any("xml-deep"))  # fmt: skip

    # -- HTML and other text formats ----------------------------------------------------------------
    w.add("html-billion-laughs.html", BILLION_LAUGHS + b"<html><body><p>&lol9;</p></body></html>", _any("xml-bomb"))
    w.add("html-xxe.html", XXE + b"<html><body><p>&xxe;</p></body></html>", _any("xml-xxe"))
    w.add("html-deep.html", b"<div>" * 200_000 + b"deep" + b"</div>" * 200_000, _any("html-deep"))
    w.add("html-unclosed-comments.html", b"<!--" + b"<!-- x " * 200_000, _any("html-slow"))
    w.add("html-many-lt.html", b"<" * 500_000 + b"a", _any("html-slow"))
    w.add("html-unclosed-tags.html", b"<a b='" * 100_000, _any("html-slow"))
    w.add("html-charrefs.html", b"&#x" * 300_000 + b"&amp" * 300_000, _any("html-slow"))
    w.add("html-nul.htm", b"<html>\0\0\0" + rng.randbytes(5000), _failed("corrupt", category="junk"))
    w.add("md-emphasis.md", b"*a " * 200_000 + b"_b " * 200_000, _any("md-slow"))
    w.add("md-brackets.md", b"[" * 200_000 + b"](" * 100_000 + b"![x" * 100_000, _any("md-slow"))
    w.add("md-backticks.md", b"`" * 100_000 + b" x " + b"``" * 100_000, _any("md-slow"))
    w.add("md-headings.markdown", b"#" * 300_000 + b"\n" + b"=\n" * 200_000, _any("md-slow"))
    w.add("md-fences.md", b"```\n" * 200_000, _any("md-slow"))
    w.add("csv-quotes.csv", b'"' * 300_000 + b"a,b\n" * 1000, _any("csv-slow"))
    w.add("csv-nul.csv", b"a,b\n1,\0" + b"x" * 100, _any("csv-corrupt"))
    w.add("csv-huge-field.csv", b'"' + b"x" * (20 << 20) + b'"\n', _any("csv-big", "corrupt", "too_large"))
    w.add("csv-many-columns.csv", b",".join(b"c%d" % i for i in range(200_000)) + b"\n", _any("csv-wide"))
    w.add("csv-sniff.csv", (b"a;b,c|d\t\"e'" * 20_000)[:65536], _any("csv-slow"))
    w.add("eml-nested.eml", _nested_mail(3000), _any("eml-deep"))
    w.add("eml-bad-charset.eml", b"Subject: x\nContent-Type: text/plain; charset=no-such-charset\n\nbody \xff\xfe text\n", _any("eml-charset"))
    w.add("eml-bad-base64.eml", b"Subject: x\nContent-Transfer-Encoding: base64\n\n!!!!not base64====\n", _any("eml-b64"))
    w.add("eml-huge-header.eml", b"Subject: " + b"a " * 2_000_000 + b"\n\nbody\n", _any("eml-header"))
    w.add("eml-binary.eml", b"\0" + rng.randbytes(5000), _failed("corrupt", category="junk"))

    # -- text encodings, empty files, junk -------------------------------------------------------------
    for suffix in (".txt", ".md", ".html", ".csv", ".eml", ".pdf", ".docx", ".xlsx", ".pptx", ".odt", ".tsv", ".htm",
                   ".markdown", ".docm", ".xlsm", ".pptm"):  # fmt: skip
        w.add(f"empty{suffix}", b"", _failed("empty", category="empty"))
    w.add("whitespace.txt", b" \n\t\r\n  \n", _failed("empty", category="empty"))
    w.add("only-bom.txt", b"\xef\xbb\xbf", _failed("empty", category="empty"))
    w.add("only-utf16-bom.txt", b"\xff\xfe", _failed("empty", category="empty"))
    w.add("nul-only.txt", b"\0" * 4096, _failed("corrupt", "empty", category="junk"))
    w.add("utf16-odd-length.txt", "\ufeffodd".encode("utf-16-le") + b"\x41", _any("utf16"))
    w.add("utf16-lone-surrogates.txt", b"\xff\xfe" + b"\x00\xd8\x41\x00" * 1000, _any("utf16"))
    w.add("utf16-bomless.txt", ("text without a mark " * 50).encode("utf-16-be"), _any("utf16"))
    w.add("utf32-invalid.txt", b"\xff\xfe\x00\x00" + b"\xff\xff\xff\x7f" * 1000, _any("utf32"))
    w.add("utf8-invalid.txt", bytes(rng.randrange(0x80, 0x100) for _ in range(20_000)), _any("utf8"))
    w.add("utf8-overlong.txt", b"\xc0\xaf\xe0\x80\xaf\xed\xa0\x80 " * 2000, _any("utf8"))
    w.add("control-chars.txt", bytes(range(1, 32)) * 1000, _any("control", "empty"))
    for i in range(25):
        suffix = rng.choice(sorted({".txt", ".md", ".html", ".csv", ".eml", ".docx", ".pptx", ".xlsx", ".odt", ".pdf"}))
        junk = rng.randbytes(rng.choice([1, 17, 4096, 100_000]))
        w.add(f"junk-{i:02d}{suffix}", junk, _any("junk"))
    w.add("elf-binary.txt", b"\x7fELF\x02\x01\x01\0" + rng.randbytes(8000), _failed("corrupt", category="junk"))
    w.add("png-as.md", b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR" + rng.randbytes(2000), _failed("corrupt", category="junk"))
    # One enormous line: a few hundred MB of text once decoded; the memory cap, not the machine, stops it.
    line_bytes = (1 << 30) if scale == "soak" else (96 << 20)
    with (folder / "single-line.txt").open("wb") as handle:
        chunk = ("word " * 200_000).encode()
        left = line_bytes - 4
        while left > 0:
            handle.write(chunk[: min(left, len(chunk))])
            left -= len(chunk)
        handle.write("\U0001f525".encode())  # one astral character: the decoded str takes 4 bytes a character
    w.expect["single-line.txt"] = _any("single-line", "too_large", "timeout")
    if scale == "soak":
        w.add("pdf-10000-pages-with-text.pdf", pages_pdf(10_000, text=lambda i: f"Page {i} of the long report."),
              _any("pdf-pages"))  # fmt: skip

    # -- the file system ---------------------------------------------------------------------------
    os.symlink("loop-b.txt", folder / "loop-a.txt")
    os.symlink("loop-a.txt", folder / "loop-b.txt")
    os.symlink("self-loop.md", folder / "self-loop.md")
    os.symlink("no-such-target.txt", folder / "dangling.txt")
    (folder / "dir-loop").mkdir()
    os.symlink("..", folder / "dir-loop" / "up")
    for name in ("loop-a.txt", "loop-b.txt", "self-loop.md", "dangling.txt"):
        w.expect[name] = _failed("unreadable", category="symlink")
    os.mkfifo(folder / "fifo.txt")
    w.expect["fifo.txt"] = _failed("unreadable", category="special")
    secret = folder / "unreadable.txt"
    secret.write_bytes(b"You may not read this.")
    secret.chmod(0)
    # Root reads anything: there the file is simply indexed.
    w.expect["unreadable.txt"] = (
        Expect("indexed", sentence="You may not read this.", category="permissions") if os.geteuid() == 0
        else _failed("unreadable", category="permissions")
    )  # fmt: skip
    bad_name = os.fsdecode(b"not-utf8-\xff\xfe-name.txt")
    (folder / bad_name).write_bytes(next(sentences).encode())
    # Reported, not indexed: the index (SQLite, Chroma) stores names as UTF-8 text.
    w.expect[bad_name] = _failed("unsupported", category="names")
    w.add("unsupported.exe", rng.randbytes(1000), Expect("skipped", category="unsupported"))
    w.add("no-suffix", b"text without a suffix", Expect("skipped", category="unsupported"))
    return w.expect


# -- fuzzing --------------------------------------------------------------------------------------------

# Mutations: (operation, a number that picks the place, bytes to use). "member" damages the main XML part
# of a zip-based file and zips it again, so that the XML parsers see the damage instead of zipfile's CRC.
MUTATIONS = ("flip", "truncate", "insert", "delete", "repeat", "member")
_MAIN_PART = {".docx": "word/document.xml", ".docm": "word/document.xml", ".xlsx": "xl/worksheets/sheet1.xml",
              ".xlsm": "xl/worksheets/sheet1.xml", ".pptx": "ppt/slides/slide1.xml", ".pptm": "ppt/slides/slide1.xml",
              ".odt": "content.xml", ".ods": "content.xml"}  # fmt: skip


@functools.lru_cache(maxsize=1)
def seed_files() -> dict[str, bytes]:
    """One valid file for every suffix the loaders read: what the fuzzers mutate."""
    from rag.loaders import _REGISTRY

    sentence = "Fuzzing seeds hold a heading, a list and a table."
    text = {
        "text": f"Notes\n\n{sentence}\nCafé déjà vu.\n".encode(),
        "markdown": f"# Notes\n\n{sentence} *Emphasis*, `code` and [a link](http://x).\n\n- one\n- two\n\n| a | b |\n|---|---|\n| 1 | 2 |\n".encode(),
        "html": f"<html><head><title>T</title></head><body><h1>Notes</h1><p>{sentence}</p><ul><li>one</li></ul>"
        "<table><tr><th>a</th><th>b</th></tr><tr><td>1</td><td>2</td></tr></table><!-- c --></body></html>".encode(),
        "csv": f"name,note\nfirst,{sentence}\nsecond,\"quoted, with comma\"\n".encode(),
        "eml": f"From: a@example.org\nTo: b@example.org\nSubject: Notes\nMIME-Version: 1.0\n"
        f'Content-Type: multipart/alternative; boundary="xx"\n\n--xx\nContent-Type: text/plain; charset=utf-8\n\n{sentence}\n'
        f"--xx\nContent-Type: text/html\n\n<p>{sentence}</p>\n--xx--\n".encode(),
    }
    builders: dict[str, Callable[[], bytes]] = {
        "pdf": lambda: fpdf_bytes([sentence, "A second page."]),
        "docx": lambda: docx_bytes(sentence),
        "pptx": lambda: pptx_bytes(sentence),
        "xlsx": lambda: xlsx_bytes(sentence),
        "odt": lambda: odt_bytes(f"<text:h text:outline-level='1'>Notes</text:h><text:p>{sentence}</text:p>"),
        "ods": lambda: ods_bytes([["Topic", "Note", "Count"], ["Seeds", sentence, "3"]]),
    }
    pictures = {".png": "PNG", ".jpg": "JPEG", ".jpeg": "JPEG", ".tif": "TIFF", ".tiff": "TIFF", ".webp": "WEBP"}
    seeds = {}
    for suffix, module in _REGISTRY.items():
        if suffix in pictures:
            seeds[suffix] = picture_bytes("Fuzzing seeds", pictures[suffix])
            continue
        seeds[suffix] = text[module] if module in text else builders[module]()
    return seeds


def picture_bytes(text: str, image_format: str) -> bytes:
    """A small picture of one line of text (a few KB: OCR reads it in a fraction of a second)."""
    from bench.ocr import render_page

    out = io.BytesIO()
    render_page([text], dpi=150, width_in=2.2).convert("L").save(out, format=image_format,
                                                                 **({"compression": "tiff_deflate"} if image_format == "TIFF" else {}))
    return out.getvalue()


def mutate(data: bytes, suffix: str, ops: list[tuple[str, int, bytes]]) -> bytes:
    """`data` with each mutation applied in turn (deterministic: the same ops give the same bytes)."""
    for op, where, payload in ops:
        if op == "member" and suffix in _MAIN_PART:
            try:
                members = _members(data)
            except (zipfile.BadZipFile, zlib.error, ValueError, EOFError, OSError, NotImplementedError):
                continue  # already damaged past unzipping: the byte mutations have it
            part = _MAIN_PART[suffix]
            if part in members:
                members[part] = mutate(members[part], "", [(MUTATIONS[where % 5], where // 5, payload)])
            out = io.BytesIO()
            with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
                for name, member in members.items():
                    z.writestr(name, member)
            data = out.getvalue()
            continue
        if not data:
            data = payload
            continue
        at = where % (len(data) + 1)
        if op == "flip":
            data = data[:at] + bytes([(data[at % len(data)] ^ (payload[0] if payload else 0xFF)) or 1]) + data[at + 1 :]
        elif op == "truncate":
            data = data[:at]
        elif op == "insert":
            data = data[:at] + payload + data[at:]
        elif op == "delete":
            data = data[:at] + data[at + 1 + len(payload) * 8 :]
        elif op == "repeat":
            piece = data[at : at + 1 + len(payload)]
            data = data[:at] + piece * (1 + where % 200) + data[at:]
    return data


def random_ops(rng: random.Random) -> list[tuple[str, int, bytes]]:
    """Between one and eight random mutations."""
    return [
        (rng.choice(MUTATIONS), rng.randrange(1 << 32), rng.randbytes(rng.choice([0, 1, 4, 64])))
        for _ in range(rng.randint(1, 8))
    ]


def _members(archive: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(archive)) as z:
        return {name: z.read(name) for name in z.namelist()}


def _empty_zip() -> bytes:
    out = io.BytesIO()
    zipfile.ZipFile(out, "w").close()
    return out.getvalue()


def _ole_encrypted(rng: random.Random) -> bytes:
    """The start of an OLE compound file naming an EncryptedPackage stream, as password-protected OOXML is."""
    return b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + rng.randbytes(1000) + "EncryptedPackage".encode("utf-16-le") + rng.randbytes(1000)


def _aes_pdf() -> bytes:
    """An AES-256 encrypted PDF (fpdf2's strongest scheme) with a user password."""
    from fpdf.enums import EncryptionMethod

    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_encryption(owner_password="o", user_password="u", encryption_method=EncryptionMethod.AES_256)
    pdf.add_page()
    pdf.set_font("Helvetica", size=12)
    pdf.cell(0, 10, "secret")
    return bytes(pdf.output())


def _nested_mail(depth: int) -> bytes:
    """A message whose multipart parts nest `depth` deep."""
    head = b"Subject: nested\nMIME-Version: 1.0\n"
    parts = []
    for i in range(depth):
        parts.append(b'Content-Type: multipart/mixed; boundary="b%d"\n\n--b%d\n' % (i, i))
    middle = b"Content-Type: text/plain\n\ninnermost\n"
    tail = b"".join(b"\n--b%d--\n" % i for i in reversed(range(depth)))
    return head + b"".join(parts) + middle + tail

