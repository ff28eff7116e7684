"""A table's computed answer: what was computed over which rows, its result, and how Hearth states it.

`TableResult` is the contract's `table` object (`ask --json`, the API's and MCP's extra fields), stored with
the conversation; `statement` writes the answer (the figure first, then the table, the filters and the rows
counted) in English or Russian; `table_hit` is the passage the answer cites: the rows used, in place.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rag.language import detect
from rag.loaders import CELL_SEPARATOR
from rag.store import Hit
from rag.tables import Row, Table

ROWS_SHOWN = 500  # rows of the computation a result carries for showing (all are counted)


@dataclass(frozen=True)
class Filter:
    """One condition on a column ("Office = Lisbon", "Amount > 5000", "Issued >= 2022-01-01", "Issued in 2024")."""

    column: str
    op: str  # "=", "!=", ">", ">=", "<", "<=" (numbers and dates), "year", "month"
    value: str

    def to_json(self) -> dict[str, str]:
        """The filter as the contract's `filters` items."""
        return {"column": self.column, "op": self.op, "value": self.value}

    def shown(self) -> str:
        """The filter as a person reads it: "Office = Lisbon", "Amount > 5000", "Date in 2024"."""
        op = {"year": "in", "month": "in"}.get(self.op, self.op)
        return f"{self.column} {op} {self.value}"


@dataclass(frozen=True)
class TableResult:
    """A computed answer: which table, what was computed over which rows, and the result."""

    table: Table
    operation: str  # count | sum | average | max | min | list
    column: str | None  # the column computed over (None for a count)
    filters: tuple[Filter, ...]
    rows: tuple[Row, ...]  # the rows the result was computed from
    result: Any  # a number, a date, a list of texts, or {group: number} with `group_by`
    group_by: str | None = None
    label: str | None = None  # the column that names rows (a list's items, the row of a maximum)
    labels: tuple[str, ...] = ()  # for max/min: the names of the rows that have it
    notes: tuple[str, ...] = ()
    language: str = "en"
    # "Which office has the most employees": the count (or sum) per value of `group_by`, extreme first;
    # `result` is then the value (or values, tied) that has the extreme.
    groups: dict[str, Any] | None = None
    per: str | None = None  # what `groups` holds: "count" or "sum"

    def to_json(self) -> dict[str, Any]:
        """The contract's `table` object, with the rows used for showing."""
        t = self.table
        return {
            "source": t.source, "sheet": t.sheet, "operation": self.operation, "column": self.column,
            "filters": [f.to_json() for f in self.filters], "rows_used": len(self.rows), "result": self.result,
            "group_by": self.group_by, "label": self.label, "labels": list(self.labels), "notes": list(self.notes),
            "columns": list(t.columns), "types": list(t.types),
            "rows": [list(r.cells) for r in self.rows[:ROWS_SHOWN]],
            "row_numbers": [r.number for r in self.rows[:ROWS_SHOWN]],
            "row_spans": [[r.start, r.end] for r in self.rows[:ROWS_SHOWN]],
            "rows_total": len(t.rows), "start": t.start, "end": t.end, "page": t.page,
            **({"groups": self.groups, "per": self.per} if self.groups is not None else {}),
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> TableResult:
        """A result as `to_json` wrote it (stored conversations), with the rows it carried."""
        types = tuple(d.get("types") or ["text"] * len(d["columns"]))
        spans = d.get("row_spans") or [[0, 0]] * len(d["rows"])
        rows = tuple(Row(n, tuple(cells), tuple(cells), int(a), int(b))
                     for n, cells, (a, b) in zip(d["row_numbers"], d["rows"], spans, strict=False))
        table = Table(d["source"], 0, d.get("sheet"), d.get("page"), None, tuple(d["columns"]), types, rows,
                      int(d.get("start", 0)), int(d.get("end", 0)))
        return cls(table, d["operation"], d.get("column"), tuple(Filter(**f) for f in d.get("filters", [])), rows,
                   d.get("result"), d.get("group_by"), d.get("label"), tuple(d.get("labels", [])),
                   tuple(d.get("notes", [])), groups=d.get("groups"), per=d.get("per"))


def language(text: str) -> str:
    """The language a table answer is stated in: "ru" for a Russian question, else "en"."""
    return "ru" if detect(text) == "ru" else "en"


# The statement ------------------------------------------------------------------------------------------

def statement(result: TableResult) -> str:
    """The answer as Markdown: the figure first, then where it comes from (table, filters, rows counted)."""
    ru = result.language == "ru"
    t, n = result.table, len(result.rows)
    where = ""
    if result.filters:
        joined = (" и " if ru else " and ").join(f.shown() for f in result.filters)
        where = (", где " if ru else " where ") + joined
    rows = _rows_phrase(n, ru)
    of = f"{rows} {'таблицы' if ru else 'of'} {t.name}{where}"
    value = result.result
    column = result.column or ""
    lines: list[str] = []  # the statement, then its list items
    if result.groups is not None:
        high = result.operation == "max"
        winners = ", ".join(result.labels)
        if ru:
            what = ("больше всего" if high else "меньше всего") + (" строк" if result.per == "count"
                                                                    else f" по сумме {column}")
        else:
            what = ("the most" if high else "the fewest") + (" rows" if result.per == "count" else f" {column} in total")
        lines.append(f"**{winners}** — {what}: {_shown(next(iter(result.groups.values())))}; "
                     f"{'по столбцу' if ru else 'by'} {result.group_by}, {of}:")
        lines += [f"- {name}: {_shown(v)}" for name, v in result.groups.items()]
    elif result.group_by is not None:
        what = {"count": ("Количество строк", "Count"), "sum": ("Сумма по столбцу " + column, "Total " + column),
                "average": ("Среднее по столбцу " + column, "Average " + column)}[result.operation]
        lines.append(f"**{what[0] if ru else what[1]} {'по' if ru else 'by'} {result.group_by}** — {of}:")
        lines += [f"- {name}: {_shown(v)}" for name, v in value.items()]
    elif result.operation == "count":
        lines.append(f"**{value}** — {'посчитано' if ru else 'counted'}: {of}.")
    elif result.operation == "sum":
        head = f"Сумма по столбцу {column}" if ru else f"Total {column}"
        lines.append(f"**{head}: {_shown(value)}** — {'сумма по' if ru else 'the sum over'} {of}.")
    elif result.operation == "average":
        head = f"Среднее по столбцу {column}" if ru else f"Average {column}"
        lines.append(f"**{head}: {_shown(value)}** — {'по' if ru else 'over'} {of}.")
    elif result.operation in ("max", "min"):
        high = result.operation == "max"
        head = (("Наибольшее" if high else "Наименьшее") + f" значение {column}") if ru else \
            (("Highest " if high else "Lowest ") + column)
        who = f" ({', '.join(result.labels[:10])})" if result.labels else ""
        lines.append(f"**{head}: {_shown(value)}**{who} — {'из' if ru else 'of'} {of}.")
    else:
        lines.append(f"**{_rows_phrase(len(value), ru) if result.label is None else len(value)}** — {of}"
                     + (f" ({result.label})" if result.label else "") + ":")
        lines += [f"- {item}" for item in value[:50]]
        if len(value) > 50:
            lines.append(f"- … {'и ещё' if ru else 'and'} {len(value) - 50}{'' if ru else ' more'}")
    notes = [f"_{note}_" for note in result.notes]
    notes.append("_Вычислено Hearth по таблице, а не моделью._" if ru else
                 "_Computed by Hearth from the table, not by the model._")
    blocks = [lines[0], "\n".join(lines[1:]), *notes]
    return "\n\n".join(b for b in blocks if b)


def _shown(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.10f}".rstrip("0").rstrip(".")
    return str(value)


def _rows_phrase(n: int, ru: bool) -> str:
    if not ru:
        return f"{n} row" + ("" if n == 1 else "s")
    if n % 10 == 1 and n % 100 != 11:
        return f"{n} строка"
    if 2 <= n % 10 <= 4 and not 12 <= n % 100 <= 14:
        return f"{n} строки"
    return f"{n} строк"


def table_hit(result: TableResult) -> Hit:
    """The passage an answer cites: the table's lines from the first row used to the last (the header when
    none was used), at their place in the document, so that opening it shows the sheet at those rows."""
    t = result.table
    rows = result.rows or t.rows[:1]
    first, last = min(r.number for r in rows), max(r.number for r in rows)
    span = [r for r in t.rows if first <= r.number <= last] or list(rows)
    lines = [_line(r.cells) for r in span[:200]]
    start, end = (span[0].start, span[-1].end) if span[0].end > span[0].start else (t.start, t.end)
    return Hit(t.source, t.page, t.sheet, 1.0, "\n".join([_line(t.columns), *lines]) if start == t.start
               else "\n".join(lines), start, end, f"table:{t.ordinal}:{first}-{last}")


def _line(cells: Sequence[str]) -> str:
    cells = list(cells)
    while cells and not cells[-1]:
        cells.pop()
    return CELL_SEPARATOR.join(cells)
