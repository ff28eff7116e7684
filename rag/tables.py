"""Tables kept as tables: the typed rows of every table a document holds, for questions answered by computing.

Readers mark each table in a Section's text (`Section.tables`: rows one per line, cells joined by
`CELL_SEPARATOR`; Markdown keeps its pipes). `extract_tables` reads them back into `Table`s:

- the header row is found (a sheet may start with a title and blank rows), a two-row header whose top row
  was merged across columns is flattened ("Q1 Jan", "Q1 Feb"), empty and repeated names are made unique;
- each column gets a type, decided over all its cells: numbers (thousands separators, decimal commas,
  currency signs, percents), dates (ISO, day-first or month-first as the column shows, month names in
  English and Russian), or text;
- a closing "Total"/"Итого" row is kept apart, so that it is not counted twice.

Each row remembers where its line is in the document's text, so an answer can open the sheet at its rows.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rag.loaders import CELL_SEPARATOR, Section

NUMBER, DATE, TEXT = "number", "date", "text"
Value = float | str | None  # a number, an ISO date "YYYY-MM-DD", a text, or nothing

MIN_ROWS = 1  # data rows a table needs to be kept
MIN_COLUMNS = 2
_HEADER_SEARCH = 10  # rows from the top of a table where its header may be
_TYPED_SHARE = 0.8  # share of a column's non-empty cells that must read as numbers (dates) for its type
_TOTAL_ROW = re.compile(r"^\s*(?:grand\s+total|sub-?total|totals?|sum|итого|всего|сумма|итог)\b[\s:]*", re.I)
_MD_DELIMITER = re.compile(r"^\s*\|?\s*:?-+:?\s*(?:\|\s*:?-+:?\s*)*\|?\s*$")


@dataclass(frozen=True)
class Row:
    """One data row: the cells as shown, their typed values, and where its line is in the document's text."""

    number: int  # 1-based among the table's data rows
    cells: tuple[str, ...]
    values: tuple[Value, ...]
    start: int
    end: int


@dataclass(frozen=True)
class Table:
    """One table of a document, typed: its header, column types and data rows."""

    source: str
    ordinal: int  # 0-based among the document's tables
    sheet: str | None  # the sheet's name, or the heading the table sits under
    page: int | None
    title: str | None  # lines above the header (a sheet's title), if any
    columns: tuple[str, ...]
    types: tuple[str, ...]
    rows: tuple[Row, ...]
    start: int  # the table's place in the document's text
    end: int
    total_rows: tuple[Row, ...] = ()  # closing total lines, kept out of the computations
    decimals: tuple[int, ...] = ()  # per number column, the most decimals a cell shows

    @property
    def name(self) -> str:
        """How an answer names the table: "staff.xlsx › Staff", or the file alone."""
        file = Path(self.source).name
        return f"{file} › {self.sheet}" if self.sheet else file


Line = tuple[list[str], int, int]  # a table line's cells, and where the line starts and ends in the text


def extract_tables(source: str, sections: Sequence[Section]) -> list[Table]:
    """Every table of a document's sections that has a header and at least one data row, typed."""
    tables: list[Table] = []
    for section in sections:
        for a, b in section.tables:
            table = _table(source, len(tables), section, _lines(section.text, a, b, section.offset))
            if table is not None:
                tables.append(table)
    return tables


def _lines(text: str, a: int, b: int, offset: int) -> list[Line]:
    """The table's lines split into cells, with their offsets in the document's text."""
    lines: list[Line] = []
    body = text[a:b]
    markdown = any(_MD_DELIMITER.match(line) and "-" in line for line in body.splitlines()[1:3])
    pos = a
    for line in body.split("\n"):
        start, end = offset + pos, offset + pos + len(line)
        pos += len(line) + 1
        if not line.strip():
            continue
        if markdown:
            if _MD_DELIMITER.match(line) and "-" in line:
                continue
            inner = line.strip()
            inner = inner[1:] if inner.startswith("|") else inner
            inner = inner[:-1] if inner.endswith("|") and not inner.endswith("\\|") else inner
            cells = [c.replace("\\|", "|").strip() for c in re.split(r"(?<!\\)\|", inner)]
        else:
            cells = [c.strip() for c in line.split(CELL_SEPARATOR)]
        lines.append((cells, start, end))
    return lines


def _table(source: str, ordinal: int, section: Section, lines: list[Line]) -> Table | None:
    width = max((len(c) for c, _, _ in lines), default=0)
    if width < MIN_COLUMNS or len(lines) < MIN_ROWS + 1:
        return None
    h = _header_index(lines, width)
    if h is None:
        return None
    header = _pad(lines[h][0], width)
    data_from = h + 1
    if data_from < len(lines) and _merged_top(header, _pad(lines[data_from][0], width), lines[data_from + 1:]):
        header = _flatten(header, _pad(lines[data_from][0], width))
        data_from += 1
    columns = _unique_names(header)
    raw = [(_pad(c, width), s, e) for c, s, e in lines[data_from:]]
    totals: list[Line] = []
    while raw and _TOTAL_ROW.match(next((c for c in raw[-1][0] if c), "")):
        totals.insert(0, raw.pop())
    if len(raw) < MIN_ROWS:
        return None
    kinds, parsers, decimals = _column_types([cells for cells, _, _ in raw], width)
    rows = tuple(
        Row(i, tuple(cells), tuple(parsers[j](cells[j]) for j in range(width)), s, e)
        for i, (cells, s, e) in enumerate(raw, 1)
    )
    total_rows = tuple(
        Row(0, tuple(cells), tuple(parsers[j](cells[j]) for j in range(width)), s, e) for cells, s, e in totals
    )
    title = " ".join(" ".join(c for c in cells if c) for cells, _, _ in lines[:h]) or None
    return Table(source, ordinal, section.heading, section.page, title, tuple(columns), tuple(kinds), rows,
                 lines[h][1], (totals or raw)[-1][2], total_rows, tuple(decimals))


def _pad(cells: list[str], width: int) -> list[str]:
    return (cells + [""] * width)[:width]


def _header_index(lines: list[Line], width: int) -> int | None:
    """The first row near the top that reads as a header: two or more text cells, half the width, none a
    number or a date, and a row after it."""
    for i, (cells, _, _) in enumerate(lines[: _HEADER_SEARCH]):
        filled = [c for c in cells if c]
        if i + 1 >= len(lines) or len(filled) < MIN_COLUMNS or len(filled) * 2 < width:
            continue
        if all(parse_number(c, ".") is None and parse_date(c, True) is None for c in filled):
            return i
    return None


def _merged_top(top: list[str], sub: list[str], after: Sequence[Line]) -> bool:
    """Whether `top` is the upper row of a two-row header: cells merged across columns leave gaps that the
    row below fills with text, and data rows follow."""
    gaps = [j for j, c in enumerate(top) if not c]
    if not gaps or not after or not all(sub[j] for j in gaps):
        return False
    filled = [c for c in sub if c]
    if len(filled) <= len([c for c in top if c]):
        return False
    return all(parse_number(c, ".") is None and parse_date(c, True) is None for c in filled)


def _flatten(top: list[str], sub: list[str]) -> list[str]:
    """A two-row header as one: each merged top cell carried over the gaps after it, then joined with the
    cell below ("Q1 Jan")."""
    names, carried = [], ""
    for t, s in zip(top, sub, strict=True):
        if t:
            carried = t
        upper = t or carried
        names.append(f"{upper} {s}".strip() if s and upper and upper != s else (s or upper))
    return names


def _unique_names(header: list[str]) -> list[str]:
    names: list[str] = []
    for j, name in enumerate(header, 1):
        name = " ".join(name.split()) or f"Column {j}"
        base, n = name, 2
        while name in names:
            name, n = f"{base} ({n})", n + 1
        names.append(name)
    return names


def _column_types(rows: list[list[str]], width: int) -> tuple[list[str], list[Any], list[int]]:
    """Each column's type and the parser for its cells, decided from all its non-empty cells."""
    kinds, parsers, decimals = [], [], []
    for j in range(width):
        cells = [r[j] for r in rows if r[j]]
        decimal = decimal_mark(cells)
        numbers = [parse_number(c, decimal) for c in cells]
        day_first = _day_first(cells)
        if cells and sum(n is not None for n in numbers) >= _TYPED_SHARE * len(cells):
            kinds.append(NUMBER)
            parsers.append(lambda c, d=decimal: parse_number(c, d) if c else None)
            decimals.append(max((_decimals_shown(c, decimal) for c in cells), default=0))
        elif cells and sum(parse_date(c, day_first) is not None for c in cells) >= _TYPED_SHARE * len(cells):
            kinds.append(DATE)
            parsers.append(lambda c, f=day_first: _iso(parse_date(c, f)) if c else None)
            decimals.append(0)
        else:
            kinds.append(TEXT)
            parsers.append(lambda c: c or None)
            decimals.append(0)
    return kinds, parsers, decimals


# Numbers ----------------------------------------------------------------------------------------------

_CURRENCY = re.compile(r"^(?:[$€£¥₽₴]|eur|usd|gbp|rub|chf|руб\.?|р\.|₸)\s*|\s*(?:[$€£¥₽₴]|eur|usd|gbp|rub|chf|"
                       r"руб\.?|р\.|₸|%)$", re.I)
_GROUP_SPACE = re.compile(r"(?<=\d)[\s\u00a0\u202f'’](?=\d{3}(?:\D|$))")
_PLAIN = re.compile(r"^\d+(?:[.,]\d+)*$")


def parse_number(text: str, decimal: str) -> float | None:
    """A cell's number: "1,234.50", "1.234,50" (decimal ","), "€ 1 200", "(300)" (negative), "12%"; or None."""
    s = text.strip()
    if not s or len(s) > 40:
        return None
    negative = False
    if s.startswith("(") and s.endswith(")"):
        negative, s = True, s[1:-1].strip()
    for _ in range(2):
        s = _CURRENCY.sub("", s).strip()
    if s[:1] in "-−–":
        negative, s = not negative, s[1:].strip()
    elif s[:1] == "+":
        s = s[1:].strip()
    s = _CURRENCY.sub("", s).strip()
    s = _GROUP_SPACE.sub("", s)
    if not _PLAIN.match(s):
        return None
    group = "," if decimal == "." else "."
    if s.count(decimal) > 1:
        return None
    if group in s:
        head, _, tail = s.partition(decimal)
        parts = head.split(group)
        if any(len(p) != 3 for p in parts[1:]) or not parts[0]:
            return None
        s = "".join(parts) + ("." + tail if tail else "")
    else:
        s = s.replace(decimal, ".")
    try:
        value = float(s)
    except ValueError:
        return None
    return -value if negative else value


def decimal_mark(cells: Sequence[str]) -> str:
    """"," when the column's numbers are written with decimal commas ("12,5", "1.234,50"), else "."."""
    comma = dot = 0
    for c in cells:
        s = _GROUP_SPACE.sub("", c.strip())
        m = re.search(r"\d([.,])\d+\D*$", s)
        if not m:
            continue
        mark = m.group(1)
        other = "," if mark == "." else "."
        tail = re.search(r"[.,](\d+)\D*$", s)
        digits = len(tail.group(1)) if tail else 0
        if other in s or digits != 3:  # "1.234,50", or a mark not followed by exactly three digits: decimal
            comma += mark == ","
            dot += mark == "."
    return "," if comma > dot else "."


def _decimals_shown(cell: str, decimal: str) -> int:
    m = re.search(re.escape(decimal) + r"(\d+)\D*$", cell.strip())
    return len(m.group(1)) if m and not (decimal == "," and len(m.group(1)) == 3 and "." not in cell) else 0


# Dates ------------------------------------------------------------------------------------------------

MONTHS = {
    **{m: i for i, m in enumerate(["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov",
                                   "dec"], 1)},
    **{m: i for i, m in enumerate(["янв", "фев", "мар", "апр", "ма", "июн", "июл", "авг", "сен", "окт", "ноя",
                                   "дек"], 1)},
}
_ISO = re.compile(r"^(\d{4})-(\d{1,2})-(\d{1,2})(?:[ T]\d{1,2}:\d{2}(?::\d{2})?)?$")
_NUMERIC_DATE = re.compile(r"^(\d{1,2})([./-])(\d{1,2})\2(\d{4}|\d{2})(?:\s+\d{1,2}:\d{2}(?::\d{2})?)?$")
_WORD_DATE = re.compile(r"^(?:(\d{1,2})[\s-]+([^\W\d_]+)\.?,?[\s-]+(\d{4})|([^\W\d_]+)\.?\s+(\d{1,2}),?\s+(\d{4}))"
                        r"(?:\s*г\.?)?$")


def month_number(word: str) -> int | None:
    """1–12 for a month's name or abbreviation in English or Russian (any case ending: "марта"), else None."""
    w = word.lower().rstrip(".")
    if len(w) < 3 and w != "ма":
        return None
    if re.match(r"^ма[йяе]", w) or w == "ма":
        return 5
    return MONTHS.get(w[:3])


def parse_date(text: str, day_first: bool) -> dt.date | None:
    """A cell's date: "2024-03-05", "05.03.2024", "3/5/2024" (order from `day_first`), "5 March 2024",
    "March 5, 2024", "5 марта 2024 г."; or None."""
    s = text.strip()
    if not s or len(s) > 30:
        return None
    try:
        m = _ISO.match(s)
        if m:
            return dt.date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
        m = _NUMERIC_DATE.match(s)
        if m:
            a, b, year = int(m.group(1)), int(m.group(3)), int(m.group(4))
            year += 2000 if year < 100 else 0
            first = day_first or m.group(2) == "."
            return dt.date(year, b, a) if first else dt.date(year, a, b)
        m = _WORD_DATE.match(s)
        if m:
            if m.group(1):
                day, month, year = int(m.group(1)), month_number(m.group(2)), int(m.group(3))
            else:
                day, month, year = int(m.group(5)), month_number(m.group(4)), int(m.group(6))
            return dt.date(year, month, day) if month else None
    except ValueError:
        return None
    return None


def _day_first(cells: Sequence[str]) -> bool:
    """Whether "a/b/yyyy" dates of a column put the day first: some first number above 12 says so, some
    second number above 12 says not; undecided, the day comes first (as in most of the world)."""
    for c in cells:
        m = _NUMERIC_DATE.match(c.strip())
        if m and m.group(2) != ".":
            if int(m.group(1)) > 12:
                return True
            if int(m.group(3)) > 12:
                return False
    return True


def _iso(date: dt.date | None) -> str | None:
    return date.isoformat() if date is not None else None
