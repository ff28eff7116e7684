"""Excel workbooks (.xlsx) through openpyxl, streamed: one Section per sheet, its rows a table under its header."""

from __future__ import annotations

import datetime as dt
import warnings
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from rag.errors import LoadError
from rag.loaders import DEFAULT_LIMITS, Limits, Section, TextBuilder, build_sections, too_many_pages
from rag.loaders.archive import open_checked


def load(path: Path, limits: Limits = DEFAULT_LIMITS) -> list[Section]:
    """Read an .xlsx workbook as one Section per worksheet (heading = sheet name), rows as table lines."""
    open_checked(path, limits, kind="Excel").close()
    import openpyxl  # uses defusedxml for its XML when installed, which Hearth requires

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "unknown extension", "no default style": noise about valid files
            workbook = openpyxl.load_workbook(str(path), read_only=True, data_only=True)
    except Exception as exc:  # InvalidFileException, KeyError, XML errors... on damaged files
        raise LoadError(f"{path.name} is not a valid Excel file or is damaged.", kind="corrupt") from exc
    try:
        sheets = workbook.worksheets
        if len(sheets) > limits.max_pages:
            raise too_many_pages(path, len(sheets), limits.max_pages, "sheets")
        parts = []
        for sheet in sheets:
            builder = TextBuilder()
            builder.table(rows_as_text(sheet.iter_rows(values_only=True)))
            parts.append(builder.part(None, sheet.title))
        return build_sections(parts)
    except LoadError:
        raise
    except Exception as exc:
        raise LoadError(f"{path.name} could not be read as an Excel file ({type(exc).__name__}).") from exc
    finally:
        workbook.close()


def rows_as_text(rows: Iterable[Iterable[Any]]) -> Iterator[list[str]]:
    """Rows of cell values as rows of text; empty rows dropped (the first row left is the header)."""
    for row in rows:
        cells = [cell_text(v) for v in row]
        if any(cells):
            yield cells


def cell_text(value: Any) -> str:
    """A cell's value as a person would read it: 45 not 45.0, dates without a midnight time."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 1e15:
            return str(int(value))
        return repr(round(value, 10))
    if isinstance(value, dt.datetime):
        if value.time() == dt.time(0, 0):
            return value.date().isoformat()
        return value.isoformat(sep=" ", timespec="minutes" if value.second == 0 else "seconds")
    if isinstance(value, (dt.date, dt.time)):
        return value.isoformat()
    return " ".join(str(value).split())
