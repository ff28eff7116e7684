"""PowerPoint files (.pptx) through python-pptx: one Section per slide, headed by its title, notes included.
A slide with no text of its own but pictures (a scanned page pasted in) is read from them by OCR."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from rag.errors import LoadError
from rag.loaders import DEFAULT_LIMITS, Limits, Section, TextBuilder, build_sections, too_many_pages
from rag.loaders import scan
from rag.loaders.archive import open_checked


def load(path: Path, limits: Limits = DEFAULT_LIMITS) -> list[Section]:
    """Read a .pptx file as one Section per slide (page = slide number, heading = slide title)."""
    open_checked(path, limits, kind="PowerPoint").close()
    import pptx  # python-pptx

    try:
        presentation = pptx.Presentation(str(path))
        slides = list(presentation.slides)
    except Exception as exc:  # python-pptx raises KeyError, ValueError, lxml errors... on damaged files
        raise LoadError(f"{path.name} is not a valid PowerPoint file or is damaged.", kind="corrupt") from exc
    if len(slides) > limits.max_pages:
        raise too_many_pages(path, len(slides), limits.max_pages, "slides")
    pictures = scan.Pictures(path, limits)
    confidences: dict[int, float] = {}  # slide number -> lowest confidence of the pictures OCR read on it
    try:
        sections = build_sections(
            _slide(slide, number, pictures, confidences) for number, slide in enumerate(slides, start=1)
        )
    except LoadError:
        raise
    except Exception as exc:
        raise LoadError(f"{path.name} could not be read as a PowerPoint file ({type(exc).__name__}).") from exc
    if not sections and pictures.error is not None:
        raise pictures.error
    return [replace(s, ocr_confidence=confidences[s.page]) if s.page in confidences else s for s in sections]


def _slide(slide: Any, number: int, pictures: scan.Pictures,
           confidences: dict[int, float]) -> tuple[str, int | None, str | None, list[tuple[int, int]]]:  # fmt: skip
    builder = TextBuilder()
    title_shape = slide.shapes.title
    has_title = title_shape is not None and title_shape.has_text_frame
    title = " ".join(title_shape.text_frame.text.split()) if has_title else ""
    if title:
        builder.heading(title)
    for shape in _reading_order(slide.shapes):
        if title_shape is not None and shape.shape_id == title_shape.shape_id:
            continue
        _shape(builder, shape)
    if not builder:  # no text of its own: what its pictures say, in reading order
        read = [page for blob in _pictures(slide.shapes) if (page := pictures.read(blob)) is not None]
        for page in read:
            builder.paragraph(page.text)
        if read:
            confidences[number] = min(page.confidence for page in read)
    if slide.has_notes_slide:
        notes = slide.notes_slide.notes_text_frame
        text = notes.text.strip() if notes is not None else ""
        if text:
            builder.paragraph("Notes: " + text)
    return builder.part(number, title or None)


def _reading_order(shapes: Any) -> list[Any]:
    """Shapes top to bottom, then left to right (their order in the file is z-order, not reading order)."""

    def key(shape: Any) -> tuple[int, int]:
        return (shape.top or 0, shape.left or 0)

    return sorted(shapes, key=key)


def _shape(builder: TextBuilder, shape: Any) -> None:
    if getattr(shape, "shape_type", None) is not None and hasattr(shape, "shapes"):  # a group
        for inner in _reading_order(shape.shapes):
            _shape(builder, inner)
        return
    if getattr(shape, "has_table", False):
        builder.table([cell.text for cell in row.cells] for row in shape.table.rows)
        return
    if getattr(shape, "has_text_frame", False):
        lines = []
        for paragraph in shape.text_frame.paragraphs:
            text = " ".join(paragraph.text.split())
            if text:
                lines.append("  " * max(0, paragraph.level) + text)
        if lines:
            builder.paragraph("\n".join(lines))


def _pictures(shapes: Any) -> list[bytes]:
    """The pictures among `shapes` and inside their groups, in reading order."""
    from pptx.enum.shapes import MSO_SHAPE_TYPE
    from pptx.shapes.picture import Picture

    found: list[bytes] = []
    for shape in _reading_order(shapes):
        if getattr(shape, "shape_type", None) == MSO_SHAPE_TYPE.GROUP:
            found.extend(_pictures(shape.shapes))
        elif isinstance(shape, Picture):  # a picture, or a placeholder filled with one
            try:
                found.append(shape.image.blob)
            except Exception:  # a linked picture, or one whose part is missing: nothing to read
                continue
    return found
