"""CSV and TSV files: encoding detected as for text, delimiter sniffed, rows a table under the header row."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from rag.errors import LoadError
from rag.loaders import DEFAULT_LIMITS, Limits, Section, TextBuilder, build_sections, read_bytes
from rag.loaders.text import text_from_bytes
from rag.loaders.xlsx import rows_as_text

_DELIMITERS = ",;\t|"
_FIELD_LIMIT = 16 * 1024 * 1024  # the csv module's default (128 KiB) fails on long notes fields
# Text the delimiter is guessed from: the Sniffer's regexes take time quadratic in a line's length.
_SNIFF_CHARS = 16384


def load(path: Path, limits: Limits = DEFAULT_LIMITS) -> list[Section]:
    """Read a .csv/.tsv file as one Section holding one table."""
    text = text_from_bytes(path, read_bytes(path))
    if not text.strip():
        return []
    dialect: type[csv.Dialect] | csv.Dialect
    if path.suffix.lower() == ".tsv":
        dialect = csv.excel_tab
    else:
        try:
            dialect = csv.Sniffer().sniff(_sample(text), delimiters=_DELIMITERS)
        except csv.Error:
            dialect = csv.excel  # one column, or too irregular to tell: commas
    if csv.field_size_limit() < _FIELD_LIMIT:
        csv.field_size_limit(_FIELD_LIMIT)
    builder = TextBuilder()
    try:
        builder.table(rows_as_text(csv.reader(io.StringIO(text, newline=""), dialect)))
    except csv.Error as exc:
        raise LoadError(f"{path.name} is not a valid CSV file ({exc}).", kind="corrupt") from exc
    return build_sections([builder.part(None, None)])


def _sample(text: str) -> str:
    """The first lines of the text, at most _SNIFF_CHARS long (whole lines where there are several)."""
    sample = text[:_SNIFF_CHARS]
    end = sample.rfind("\n")
    return sample[: end + 1] if end > 0 and len(text) > _SNIFF_CHARS else sample
