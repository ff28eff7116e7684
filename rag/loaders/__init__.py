"""Turn one document file into its text, as Sections that remember page, heading and position.

    load(path)              -> list[Section]; raises LoadError (kind says why) and nothing else
    SUPPORTED_SUFFIXES      the file suffixes load() understands (lower case, with the dot)
    full_text(sections)     the document's full text: section texts joined by SEPARATOR

One module per format (`text`, `markdown`, `html`, `pdf`), each with `load(path) -> list[Section]`.
They are imported only when a file of theirs is loaded, so pypdfium2 costs nothing until a PDF appears.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from inference.errors import LoadError

SEPARATOR = "\n\n"

LOAD_ERROR_KINDS = frozenset({"unsupported", "empty", "corrupt", "encrypted", "no_text_layer", "unreadable"})


@dataclass(frozen=True)
class Section:
    """A contiguous piece of a document's text: one PDF page, or one heading's part of a text file."""

    text: str
    page: int | None  # 1-based; None for formats without pages
    heading: str | None  # nearest heading, as a "Parent › Child" path where the format has levels
    offset: int  # where `text` starts in full_text() of the document's sections


# Suffix -> name of the module in this package that reads it. A new format is one module and one line here.
_REGISTRY: dict[str, str] = {
    ".txt": "text",
    ".md": "markdown",
    ".markdown": "markdown",
    ".html": "html",
    ".htm": "html",
    ".pdf": "pdf",
}

SUPPORTED_SUFFIXES: frozenset[str] = frozenset(_REGISTRY)


def load(path: Path) -> list[Section]:
    """Read one document into Sections, or raise LoadError saying why it cannot be read."""
    path = Path(path)
    suffix = path.suffix.lower()
    module_name = _REGISTRY.get(suffix)
    if module_name is None:
        shown = suffix or "without a suffix"
        raise LoadError(
            f"{path.name} is not a supported document type ({shown}).",
            kind="unsupported",
            hint="Supported types: " + ", ".join(sorted(SUPPORTED_SUFFIXES)) + ".",
        )
    if not path.is_file():
        raise LoadError(f"{path.name} cannot be read: it is not a file or no longer exists.", kind="unreadable")
    try:
        module = importlib.import_module(f"{__name__}.{module_name}")
    except ImportError as exc:
        # Only a missing third-party reader (pypdfium2) can get here; the install is broken, not the file.
        raise LoadError(
            f"{path.name} cannot be read: the reader for {suffix} files is not installed.",
            kind="unsupported",
            hint=f"Reinstall Hearth with its dependencies (missing: {exc.name or 'a module'}).",
        ) from exc
    sections: list[Section] = module.load(path)
    if not sections:
        raise empty_error(path)
    return sections


def full_text(sections: Iterable[Section]) -> str:
    """The document's full extracted text, in which every Section's offset points at its text."""
    return SEPARATOR.join(s.text for s in sections)


def build_sections(parts: Iterable[tuple[str, int | None, str | None]]) -> list[Section]:
    """Make Sections from (text, page, heading) parts, dropping blank ones and computing offsets."""
    sections: list[Section] = []
    offset = 0
    for text, page, heading in parts:
        text = text.strip()
        if not text:
            continue
        if sections:
            offset += len(SEPARATOR)
        sections.append(Section(text=text, page=page, heading=heading, offset=offset))
        offset += len(text)
    return sections


def read_bytes(path: Path) -> bytes:
    """The file's bytes, with OS errors (permissions, vanished file) turned into LoadError."""
    try:
        return path.read_bytes()
    except OSError as exc:
        raise unreadable_error(path, exc) from exc


def unreadable_error(path: Path, exc: OSError) -> LoadError:
    """The LoadError for a file the operating system will not let us read."""
    reason = exc.strerror or type(exc).__name__
    hint = "Check that you have permission to read the file." if isinstance(exc, PermissionError) else None
    return LoadError(f"{path.name} cannot be opened ({reason}).", kind="unreadable", hint=hint)


def empty_error(path: Path) -> LoadError:
    """The LoadError for a document that holds no text at all."""
    return LoadError(f"{path.name} is empty: it contains no text.", kind="empty")
