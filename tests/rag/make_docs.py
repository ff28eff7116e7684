"""Real documents of every format Hearth reads, written with the same libraries office programs' files are
read with (python-docx, python-pptx, openpyxl, fpdf2) or laid out by hand as LibreOffice does (ODT)."""

from __future__ import annotations

import datetime as dt
import zipfile
from email.message import EmailMessage
from pathlib import Path

import docx
import openpyxl
import pptx
from fpdf import FPDF
from pptx.util import Inches


def write_pdf(path: Path, pages: list[str | None]) -> Path:
    """A PDF with one page per entry: text, or None for a page with only a drawn rectangle (no text layer)."""
    pdf = FPDF()
    pdf.set_font("Helvetica", size=12)
    for text in pages:
        pdf.add_page()
        if text is None:
            pdf.rect(20, 20, 80, 40, style="F")
        else:
            pdf.multi_cell(0, 6, text, new_x="LMARGIN", new_y="NEXT")
    pdf.output(str(path))
    return path


def write_docx(path: Path) -> Path:
    d = docx.Document()
    d.add_heading("Travel handbook", 0)
    d.add_paragraph("Read this before you book.")
    d.add_heading("Expenses", 1)
    d.add_paragraph("Meals are paid per day.", style="List Bullet")
    d.add_paragraph("Hotels up to a cap.", style="List Bullet")
    d.add_paragraph("Book through the desk", style="List Number")
    d.add_paragraph("Keep the receipts", style="List Number")
    table = d.add_table(rows=3, cols=2)
    for r, (a, b) in enumerate([("Item", "Limit"), ("Meals", "EUR 45"), ("Hotel", "EUR 150")]):
        table.cell(r, 0).text, table.cell(r, 1).text = a, b
    d.add_heading("Abroad", 2)
    d.add_paragraph("The daily allowance abroad is EUR 60.")
    d.save(str(path))
    return path


def write_pptx(path: Path, slides: int = 3) -> Path:
    p = pptx.Presentation()
    title_only, title_body = p.slide_layouts[5], p.slide_layouts[1]
    s = p.slides.add_slide(title_body)
    s.shapes.title.text = "Quarterly review"
    body = s.placeholders[1].text_frame
    body.text = "Revenue grew 12 percent"
    para = body.add_paragraph()
    para.text = "Costs stayed flat"
    para.level = 1
    s.notes_slide.notes_text_frame.text = "Mention the new office."
    s = p.slides.add_slide(title_only)
    s.shapes.title.text = "Headcount"
    shape = s.shapes.add_table(3, 2, Inches(1), Inches(2), Inches(6), Inches(2))
    for r, (a, b) in enumerate([("Team", "People"), ("Sales", "14"), ("Support", "9")]):
        shape.table.cell(r, 0).text, shape.table.cell(r, 1).text = a, b
    for n in range(3, slides + 1):
        s = p.slides.add_slide(title_only)
        s.shapes.title.text = f"Slide {n}"
        box = s.shapes.add_textbox(Inches(1), Inches(2), Inches(4), Inches(1))
        box.text_frame.text = f"Text of slide {n}."
    p.save(str(path))
    return path


def write_xlsx(path: Path, sheets: int = 2) -> Path:
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Staff"
    ws.append(["Name", "Team", "Extension", "Started"])
    ws.append(["Ada", "IT", 4400, dt.datetime(2021, 3, 1)])
    ws.append([])
    ws.append(["Grace", "Finance", 4410.0, dt.datetime(2019, 7, 15, 9, 30)])
    for n in range(2, sheets + 1):
        other = wb.create_sheet(f"Rates {n}")
        other.append(["Item", "EUR"])
        other.append(["Meals", 45.5])
        other.append(["Mileage", 0.3])
    wb.save(str(path))
    return path


ODT_NS = (
    'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
    'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" '
    'xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0"'
)


def write_odt(path: Path, body: str, *, manifest_extra: str = "", raw: str | None = None) -> Path:
    """An OpenDocument text file as LibreOffice lays it out: mimetype first, stored; content.xml; manifest."""
    content = raw if raw is not None else (
        f'<?xml version="1.0" encoding="UTF-8"?><office:document-content {ODT_NS} office:version="1.3">'
        f"<office:body><office:text>{body}</office:text></office:body></office:document-content>"
    )
    manifest = (
        '<?xml version="1.0" encoding="UTF-8"?>'
        '<manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0">'
        f'<manifest:file-entry manifest:full-path="content.xml" manifest:media-type="text/xml">{manifest_extra}'
        "</manifest:file-entry></manifest:manifest>"
    )
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("mimetype", "application/vnd.oasis.opendocument.text", compress_type=zipfile.ZIP_STORED)
        z.writestr("content.xml", content, compress_type=zipfile.ZIP_DEFLATED)
        z.writestr("META-INF/manifest.xml", manifest, compress_type=zipfile.ZIP_DEFLATED)
    return path


def write_eml(path: Path, *, html: bool = False, attach: bool = True) -> Path:
    msg = EmailMessage()
    msg["From"] = "Ada Lovelace <ada@example.org>"
    msg["To"] = "team@example.org"
    msg["Subject"] = "Travel desk moves to room 4.12"
    msg["Date"] = "Mon, 02 Mar 2026 09:00:00 +0100"
    if html:
        msg.set_content("<html><body><h1>Move</h1><p>The desk moves on <b>Friday</b>.</p></body></html>", subtype="html")
    else:
        msg.set_content("Hello all,\n\nthe travel desk moves on Friday.\n\nAda")
    if attach:
        msg.add_attachment(b"%PDF-1.4", maintype="application", subtype="pdf", filename="floor-plan.pdf")
    path.write_bytes(msg.as_bytes())
    return path
