"""Questions answered by computing over a table: counts, sums, averages, extremes and filtered lists.

`answer_from_tables(question, tables)` reads what the question asks (English and Russian):

- the operation from its words ("how many", "total", "average", "largest", "which …", "сколько", "сумма",
  "средний", "наибольший", "какие …");
- the table and its columns from the header names the question uses, the cell values it names ("Lisbon" is
  a value of column Office: a filter), numbers with a comparison ("over 5,000": a filter on a number
  column), years and months (a filter on a date column), and "by X"/"per X"/"по X" (a grouping);

and computes the result over every row. Figures come from the computation, never from a model. A question
that names nothing of any table, or asks nothing a table computes, gets None and goes the usual way.
"""

from __future__ import annotations

import calendar
import math
import re
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rag.table_result import Filter, TableResult, language
from rag.table_words import (FILLERS, ID_WORDS, MONEY_WORDS, NAME_WORDS, NOT_WORDS, ROW_NOUNS, STOP, content_words,
                             header_words, same_word, words_of)
from rag.tables import DATE, NUMBER, TEXT, Row, Table, month_number, parse_number

_WHEN = re.compile(r"\b(?:latest|earliest|newest|oldest|most recent|first|last|date|when)\b|последн|ранн|поздн|"
                   r"перв|дат[аыу]\b|когда", re.I)


# Operations ---------------------------------------------------------------------------------------------

_OPERATIONS: list[tuple[str, re.Pattern[str]]] = [
    ("average", re.compile(r"\b(?:average|mean|avg)\b|средн", re.I)),
    ("count", re.compile(r"\bhow many\b|\bnumber of\b|^\s*count\b|\bheadcount\b|\bсколько\b|\bколичеств|"
                         r"\bчисло\b", re.I)),
    ("max", re.compile(r"\b(?:largest|highest|biggest|greatest|maximum|max|most|latest|newest|"
                       r"most recent|longest)\b|наибольш|максимал|"
                       r"сам(?:ый|ая|ое|ую|ой|ом|ые|ых) (?:больш|высок|дорог|поздн|нов)|больше всего|последн", re.I)),
    ("min", re.compile(r"\b(?:smallest|lowest|least|minimum|min|cheapest|earliest|oldest|fewest|shortest)\b|"
                       r"наименьш|минимал|сам(?:ый|ая|ое|ую|ой|ом|ые|ых) (?:мал|низк|дешев|ранн|стар)|меньше всего|"
                       r"перв(?:ый|ая|ое) по", re.I)),
    ("sum", re.compile(r"\btotal\b|\bsum\b|\bhow much\b|\baltogether\b|\bcombined\b|\bсумм|\bитог|\bвсего\b|"
                       r"\bобщ(?:ая|ий|ее|ую) (?:сумм|стоимост)", re.I)),
    ("list", re.compile(r"^\s*(?:which|who|list|show|name|what are|whose)\b|"
                        r"\b(?:list|show me|name all|name the|give me the|names of)\b|"
                        r"^\s*(?:какие|какой|какая|какое|кто|чьи)\b|перечисл|\bсписок\b|\bпокажи\b|\bназови\b", re.I)),
]
_OPERATION_WORD = re.compile(r"average|mean|total|sum|count|headcount|highest|lowest|largest|smallest|biggest|"
                             r"maximum|minimum|earliest|latest|oldest|newest|recent|cheapest|fewest|list|show|"
                             r"средн\w*|общ\w*|сумм\w*|наибольш\w*|наименьш\w*|максимальн\w*|"
                             r"минимальн\w*|перечисл\w*|покажи|назови|самы\w*|сама\w*|маленьк\w*|больш\w*")
_GROUP = re.compile(r"\b(?:per|by|for each|for every|in each|each)\s+([^\W\d_]+)|"
                    r"\b(?:по|в каждом|в каждой|для каждого|для каждой|в разрезе)\s+([^\W\d_]+)", re.I)
_COMPARE = re.compile(
    r"(more than|greater than|larger than|higher than|bigger than|over|above|exceeding|at least|"
    r"less than|fewer than|lower than|smaller than|under|below|at most|up to|"
    r"не менее|не более|больше|более|свыше|выше|меньше|менее|ниже|>=|<=|>|<)\s*(?:[$€£₽]\s*)?"
    r"(-?\d[\d\u00a0\u202f ,.']*\d|-?\d)", re.I)
_AT_LEAST = {"at least", "не менее", ">="}
_AT_MOST = {"at most", "up to", "не более", "<="}
_BELOW = {"less than", "fewer than", "lower than", "smaller than", "under", "below", "меньше", "менее", "ниже", "<"}
_YEAR = re.compile(r"(?<![\d.,])((?:19|20)\d{2})(?![\d.,]\d)")
_MONTH_YEAR = re.compile(r"\b([^\W\d_]{3,})\.?\s+((?:19|20)\d{2})\b")
_BEFORE_AFTER = re.compile(r"\b(before|after|since|until|prior to|from|до|после|с|начиная с)\s+(?:the\s+)?"
                           r"(?:(end|start|beginning)\s+of\s+)?(\d{4}-\d{2}-\d{2}|[^\W\d_]{3,}\.?\s+(?:19|20)\d{2}|"
                           r"(?:19|20)\d{2})\b", re.I)
_BOUND_OPS = {"before": "<", "prior to": "<", "до": "<", "after": ">", "после": ">", "since": ">=", "from": ">=",
              "с": ">=", "начиная с": ">=", "until": "<="}


def answer_from_tables(question: str, tables: Sequence[Table]) -> TableResult | None:
    """The computed answer to a question about one of `tables`, or None when none of them answers it."""
    operation = _operation(question)
    if operation is None or not tables:
        return None
    words = words_of(question)
    best: tuple[float, TableResult] | None = None
    for table in tables:
        planned = _plan(question, words, operation, table)
        if planned is not None and (best is None or planned[0] > best[0]):
            best = planned
    return best[1] if best is not None else None


def _operation(question: str) -> str | None:
    """The first operation whose words the question uses, in the order of _OPERATIONS; of "largest" and
    "smallest" words, the one that comes first ("the earliest start… our longest-serving person")."""
    for name, pattern in _OPERATIONS:
        found = pattern.search(question)
        if found:
            if name in ("max", "min"):
                other = dict(_OPERATIONS)["min" if name == "max" else "max"].search(question)
                if other is not None and other.start() < found.start():
                    return "min" if name == "max" else "max"
            return name
    return None


# Planning -----------------------------------------------------------------------------------------------

@dataclass
class _Match:
    """What of one table a question names."""

    named: dict[int, float] = field(default_factory=dict)  # column -> share of its header's words named
    positions: dict[int, list[int]] = field(default_factory=dict)  # column -> where its words are in the question
    values: list[tuple[int, str, int, int]] = field(default_factory=list)  # column, value, first, last word
    name_words: int = 0  # words of the file or sheet name the question uses


def _plan(question: str, words: list[str], operation: str, table: Table) -> tuple[float, TableResult] | None:
    match = _names(words, table)
    notes: list[str] = []
    filters, conditions = _value_filters(words, table, match, notes)
    numeric = [j for j, kind in enumerate(table.types) if kind == NUMBER and not _id_like(table, j)]
    dates = [j for j, kind in enumerate(table.types) if kind == DATE]
    column: int | None = None
    op = operation
    if op == "count":  # "how many hours …": the sum of a number column named right after
        after = _named_right_after(words, table, numeric, ("how many", "number of", "сколько", "количество"))
        if after is not None:
            op, column = "sum", after
    if op in ("sum", "average", "max", "min") and column is None:
        choices = numeric + (dates if op in ("max", "min") else [])
        if op in ("max", "min") and len(dates) == 1 and _WHEN.search(question):
            choices = dates  # "the latest invoice", "the earliest start": the date, not an amount
        column = _value_column(table, choices, match, notes, op)
    cf, cc, rest = _compare_filters(question, table, match, numeric, column)
    df, dc = _date_filters(rest, table, match, dates, notes)
    filters += cf + df
    conditions += cc + dc
    group = _group_column(question, table, column)
    evidence = 3 * len(match.values) + 2 * len(match.named) + match.name_words + 2 * len(cf + df)
    if evidence < 2:
        return None
    extreme = _extreme_group(question, table, match, filters, column) if op in ("max", "min") else None
    if extreme is not None and extreme[1] == "count":
        column = None  # "the most employees" counts rows per value: no column is compared
    elif op in ("max", "min") and _counts_nothing_measured(question, table):
        return None  # "the most employees" with nothing to group by: no column holds employees
    if op in ("sum", "average", "max", "min") and column is None and extreme is None:
        return None
    if op == "list" and not filters:
        return None
    if op == "count" and not _counts_rows(words, table, match):
        return None
    if op == "count" and not (filters or match.name_words or group is not None):
        return None
    explained, unexplained = _explained(words, table, match)
    if op != "list":
        explained += 1  # "how many", "total", "average": asking to compute is itself a sign; "which" is not
    if unexplained > max(0, explained - 2):
        return None  # the question speaks of things the table does not hold ("the maximum hotel rate in Berlin")
    rows = [r for r in table.rows if all(c(r) for c in conditions)]
    if table.total_rows:
        notes.append("The table's total line was left out." if language(question) == "en"
                     else "Итоговая строка таблицы не учитывалась.")
    label = _label_column(table, match, filters) if op in ("list", "max", "min") else None
    if extreme is not None:  # "which office has the most employees": per office, then the largest
        by, per = extreme
        counts = _compute(per, table, column, rows, by, None)
        if counts is None:
            return None
        groups = dict(sorted(counts[0].items(), key=lambda kv: kv[1], reverse=op == "max"))
        best = next(iter(groups.values()))
        winners = tuple(k for k, v in groups.items() if v == best)
        return evidence, TableResult(
            table, op, table.columns[column] if per == "sum" and column is not None else None, tuple(filters),
            tuple(rows), winners[0] if len(winners) == 1 else list(winners), table.columns[by], table.columns[by],
            winners, tuple(notes), language(question), groups, per)
    result = _compute(op, table, column, rows, group, label)
    if result is None:
        return None
    value, used, labels = result
    if op == "count" and group is None and value > 1:
        evidence += 1  # a count of one row in a list of unique names is rarely what "how many" asks
    if group is not None and isinstance(value, dict) and all(v == 1 for v in value.values()) and op == "count":
        evidence -= 2  # nor a count per value of a column whose values are all different
    names = table.columns
    return evidence, TableResult(
        table, op, names[column] if column is not None else None, tuple(filters), tuple(used), value,
        names[group] if group is not None else None, names[label] if label is not None else None, tuple(labels),
        tuple(notes), language(question),
    )


def _explained(words: list[str], table: Table, match: _Match) -> tuple[int, int]:
    """How many of the question's meaningful words the table explains (a header, a value, its name, its
    rows), and how many it does not."""
    named: set[int] = set()
    for positions in match.positions.values():
        named.update(positions)
    for _, _, first, last in match.values:
        named.update(range(first, last + 1))
    names = _table_names(table)
    explained = unexplained = 0
    for i, w in enumerate(words):
        if i in named or _OPERATION_WORD.fullmatch(w):  # a header, a value, what to compute ("total")
            explained += 1
            continue
        if w in STOP or w in FILLERS or len(w) <= 2 or w.isdigit() or month_number(w) is not None:
            continue
        if w in ROW_NOUNS or any(same_word(w, n) for n in names):
            explained += 1
        else:
            unexplained += 1
    return explained, unexplained
_COUNT_TRIGGERS = (("how", "many"), ("number", "of"), ("сколько",), ("количество",), ("count",), ("число",))


def _counts_rows(words: list[str], table: Table, match: _Match) -> bool:
    """Whether what "how many" counts is this table's rows: the word after it names people or records, the
    table (file, sheet), one of its columns or a value ("how many invoices", "how many employees"), and not
    something else ("how many days of leave")."""
    for trigger in _COUNT_TRIGGERS:
        n = len(trigger)
        for i in range(len(words) - n + 1):
            if tuple(words[i:i + n]) != trigger:
                continue
            following = [w for w in words[i + n:i + n + 3] if w not in STOP]
            if not following:
                return True
            noun = following[0]
            names = _table_names(table)
            if noun in ROW_NOUNS or any(same_word(noun, x) for x in names):
                return True
            if any(noun in words[p:p + 1] for p in sum(match.positions.values(), [])):
                return True
            return any(first <= i + n + 2 and last >= i + n for _, _, first, last in match.values)
    return True


def _table_names(table: Table) -> list[str]:
    """The words of a table's file name, sheet name and title."""
    return content_words(words_of(Path(table.source).stem) + words_of(table.sheet or "") + words_of(table.title or ""))


def _names(words: list[str], table: Table) -> _Match:
    match = _Match()
    for j, column in enumerate(table.columns):
        header = header_words(column)
        hits = [i for i, w in enumerate(words) if any(same_word(w, h) for h in header)]
        if header and hits:
            own = content_words(words_of(column)) or header
            share = max(len({h for h in own if any(same_word(w, h) for w in words)}), 1) / len(own)
            match.named[j] = share
            match.positions[j] = hits
    content = content_words(words)
    files = {n for n in content_words(words_of(Path(table.source).stem)) if any(same_word(w, n) for w in content)}
    sheets = {n for n in content_words(words_of(table.sheet or "") + words_of(table.title or ""))
              if any(same_word(w, n) for w in content)}
    match.name_words = len(files) + 2 * len(sheets)  # the sheet's name tells two sheets of one file apart
    return match


def _value_filters(words: list[str], table: Table, match: _Match, notes: list[str]) -> tuple[list[Filter], list]:
    """Filters for the cell values the question names, one per column (several values of one column: any)."""
    found: list[tuple[int, str, int, int]] = []
    content = set(content_words(words))
    for j, kind in enumerate(table.types):
        if kind != TEXT:
            continue
        index = _distinct(table, j)
        for i, word in enumerate(words):
            for value, key in index.get(word[:3], ()):
                n = len(key)
                if all(i + k < len(words) and same_word(words[i + k], key[k]) for k in range(n)) and any(
                        k in content or any(same_word(k, c) for c in content) for k in key):
                    found.append((j, value, i, i + n - 1))
    # A longer value wins over one inside it; the same words in two columns: the named column, else noted.
    found.sort(key=lambda f: (-(f[3] - f[2]), f[2]))
    kept: list[tuple[int, str, int, int]] = []
    for f in found:
        overlap = [k for k in kept if not (f[3] < k[2] or f[2] > k[3])]
        if not overlap:
            kept.append(f)
        elif all((k[2], k[3]) == (f[2], f[3]) for k in overlap) and f[0] != overlap[0][0]:
            k = overlap[0]
            if f[0] in match.named and k[0] not in match.named:
                kept[kept.index(k)] = f
                notes.append(_both_note(table, f, k))
            elif not (k[0] in match.named and f[0] not in match.named):
                notes.append(_both_note(table, k, f))
    match.values = kept
    by_column: dict[int, list[tuple[str, bool]]] = {}
    for j, value, first, _last in sorted(kept, key=lambda f: f[2]):
        negated = any(w in NOT_WORDS for w in words[max(0, first - 2):first])
        by_column.setdefault(j, []).append((value, negated))
    filters, conditions = [], []
    for j, values in by_column.items():
        wanted = {v for v, neg in values if not neg}
        unwanted = {v for v, neg in values if neg}
        column = table.columns[j]
        if wanted:
            filters.append(Filter(column, "=", " or ".join(sorted(wanted, key=[v for v, _ in values].index))))
            conditions.append(lambda r, j=j, w=frozenset(_key(v) for v in wanted): _key(r.cells[j]) in w)
        for v in unwanted:
            filters.append(Filter(column, "!=", v))
            conditions.append(lambda r, j=j, k=_key(v): _key(r.cells[j]) != k)
    return filters, conditions


def _both_note(table: Table, used: tuple[int, str, int, int], other: tuple[int, str, int, int]) -> str:
    return (f"“{used[1]}” is a value of both {table.columns[used[0]]} and {table.columns[other[0]]}; "
            f"{table.columns[used[0]]} was used.")


# Per table object and column: the store hands out one object per stored table, and a re-indexed document's
# tables are new objects, so an index never outlives the values it was built from.
_DISTINCT: dict[tuple[int, int], tuple[weakref.ref[Table], dict[str, list[tuple[str, tuple[str, ...]]]]]] = {}
_DISTINCT_TABLES = 4096  # columns whose values are kept indexed between questions


def _distinct(table: Table, j: int) -> dict[str, list[tuple[str, tuple[str, ...]]]]:
    """A text column's distinct values with their words, by the first three letters of their first word
    (words that `same_word` matches share them), so a question looks up only the values it could name."""
    key = (id(table), j)
    entry = _DISTINCT.get(key)
    cached = entry[1] if entry is not None and entry[0]() is table else None
    if cached is None:
        seen: dict[str, tuple[str, ...]] = {}
        for r in table.rows:
            cell = r.cells[j]
            if cell and cell not in seen:
                words = tuple(words_of(cell))
                if words and len(words) <= 6 and any(w not in STOP and len(w) >= 2 for w in words):
                    seen[cell] = words
        cached = {}
        for value, words in seen.items():
            cached.setdefault(words[0][:3], []).append((value, words))
        if len(_DISTINCT) >= _DISTINCT_TABLES:
            _DISTINCT.pop(next(iter(_DISTINCT)))
        _DISTINCT[key] = (weakref.ref(table), cached)
    return cached


def _key(text: str) -> str:
    return " ".join(text.lower().split())


def _id_like(table: Table, j: int) -> bool:
    """A number column that identifies rows (ID, No., code) rather than measuring anything."""
    return bool(set(words_of(table.columns[j])) & ID_WORDS) or table.columns[j].strip() in {"#", "№"}


def _named_right_after(words: list[str], table: Table, columns: list[int], triggers: Sequence[str]) -> int | None:
    """The column among `columns` whose own header word is what a trigger counts ("how many hours",
    "number of desks"): the first word after it that is not a stop word."""
    lowered = " ".join(words)
    for trigger in triggers:
        at = lowered.find(trigger)
        if at < 0:
            continue
        start = len(lowered[:at].split()) + len(trigger.split())
        following = [w for w in words[start:start + 3] if w not in STOP]
        if not following:
            continue
        for j in columns:
            if any(same_word(following[0], h) for h in content_words(words_of(table.columns[j]))):
                return j
    return None


def _value_column(table: Table, choices: list[int], match: _Match, notes: list[str], op: str) -> int | None:
    """The column a sum, average or extreme is computed over: the one the question names (the best-named of
    several, noted), else the only one there is."""
    named = [j for j in choices if j in match.named]
    if named:
        best = max(match.named[j] for j in named)
        top = [j for j in named if match.named[j] == best]
        if len(top) > 1:
            others = ", ".join(table.columns[j] for j in top[1:])
            notes.append(f"Several columns match: {table.columns[top[0]]} was used (also: {others}).")
        return top[0]
    if len(choices) == 1:
        return choices[0]
    money = [j for j in choices if set(words_of(table.columns[j])) & MONEY_WORDS]
    if len(money) == 1:  # "the total of the invoices": the one column that holds amounts
        notes.append(f"No column was named; {table.columns[money[0]]} was used.")
        return money[0]
    return None


def _compare_filters(question: str, table: Table, match: _Match, numeric: list[int],
                     column: int | None) -> tuple[list[Filter], list, str]:
    """Filters for "over 5,000", "less than 10", "больше 1000" on a number column, and the question without
    them (their numbers are not years)."""
    filters, conditions = [], []
    rest = question
    for m in _COMPARE.finditer(question.lower()):
        phrase, number = m.group(1), m.group(2).strip()
        decimal = "," if re.search(r",\d{1,2}$", number) else "."
        value = parse_number(number, decimal)
        if value is None:
            continue
        target = _nearest_named(question, m.start(), match, numeric) or column
        if target is None and len(numeric) == 1:
            target = numeric[0]
        if target is None:
            continue
        op = ">=" if phrase in _AT_LEAST else "<=" if phrase in _AT_MOST else "<" if phrase in _BELOW else ">"
        filters.append(Filter(table.columns[target], op, _number_text(value)))
        conditions.append(lambda r, j=target, o=op, v=value: isinstance(r.values[j], (int, float))
                          and _compare(r.values[j], o, v))
        rest = rest[: m.start()] + " " * (m.end() - m.start()) + rest[m.end():]
    return filters, conditions, rest


def _nearest_named(question: str, at: int, match: _Match, columns: list[int]) -> int | None:
    before = len(words_of(question[:at]))
    best, distance = None, 10**9
    for j in columns:
        for p in match.positions.get(j, []):
            d = before - p if p < before else (p - before) + 100  # a header before the comparison first
            if d < distance:
                best, distance = j, d
    return best


def _compare(a: float, op: str, b: float) -> bool:
    return {">": a > b, ">=": a >= b, "<": a < b, "<=": a <= b}[op]


def _date_filters(question: str, table: Table, match: _Match, dates: list[int], notes: list[str]
                  ) -> tuple[list[Filter], list]:
    """Filters on a date column for the years, months and "before/after" the question names."""
    if not dates:
        return [], []
    named = [j for j in dates if j in match.named]
    j = named[0] if named else dates[0]
    filters: list[Filter] = []
    conditions: list = []
    text = question
    for m in _BEFORE_AFTER.finditer(text):
        span = _period(m.group(3))
        if span is None:
            continue
        word, edge = m.group(1).lower(), (m.group(2) or "").lower()
        op = _BOUND_OPS[word]
        first, last = span
        if edge == "end":  # "after the end of March": after its last day; "before the end of": up to it
            first = last
        elif edge in ("start", "beginning"):
            last = first
        bound = first if op in ("<", ">=") else last
        filters.append(Filter(table.columns[j], op, bound))
        conditions.append(lambda r, b=bound, o=op: isinstance(r.values[j], str) and _compare_text(r.values[j], o, b))
        text = text.replace(m.group(0), " ")
    for m in _MONTH_YEAR.finditer(text):
        month = month_number(m.group(1))
        if month:
            prefix = f"{m.group(2)}-{month:02d}"
            filters.append(Filter(table.columns[j], "month", f"{m.group(1)} {m.group(2)}"))
            conditions.append(lambda r, p=prefix: isinstance(r.values[j], str) and r.values[j].startswith(p))
            text = text.replace(m.group(0), " ")
    for m in _YEAR.finditer(text):
        year = m.group(1)
        filters.append(Filter(table.columns[j], "year", year))
        conditions.append(lambda r, y=year: isinstance(r.values[j], str) and r.values[j].startswith(y))
    if filters and len(dates) > 1 and not named:
        notes.append(f"The table has several date columns; {table.columns[j]} was used.")
    return filters, conditions


def _period(text: str) -> tuple[str, str] | None:
    """The first and last day (ISO) of a date, a month ("March 2025") or a year, or None."""
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
        return text, text
    if re.fullmatch(r"\d{4}", text):
        return f"{text}-01-01", f"{text}-12-31"
    name, year = text.rstrip().rsplit(None, 1)
    month = month_number(name)
    if month is None:
        return None
    days = calendar.monthrange(int(year), month)[1]
    return f"{year}-{month:02d}-01", f"{year}-{month:02d}-{days:02d}"


def _compare_text(a: str, op: str, b: str) -> bool:
    return {">": a > b, ">=": a >= b, "<": a < b, "<=": a <= b}[op]


def _group_column(question: str, table: Table, column: int | None) -> int | None:
    for m in _GROUP.finditer(question):
        word = (m.group(1) or m.group(2)).lower()
        for j, name in enumerate(table.columns):
            if j != column and table.types[j] != NUMBER and any(same_word(word, h)
                                                                for h in content_words(words_of(name))):
                return j
    return None


def _label_column(table: Table, match: _Match, filters: list[Filter]) -> int | None:
    """The column that names a row: a text column the question asks for ("which offices", "list the
    invoice numbers"), else the text column with the most distinct values (names, numbers of invoices)."""
    texts = [j for j, kind in enumerate(table.types) if kind == TEXT]
    filtered = {f.column for f in filters}
    asked = [j for j in texts if j in match.named and table.columns[j] not in filtered and not _id_like(table, j)]
    if asked:
        return min(asked, key=lambda j: min(match.positions[j]))
    pool = texts or list(range(len(table.columns)))

    def rank(j: int) -> tuple[bool, bool, bool, int, int]:
        words = set(words_of(table.columns[j]))
        distinct = len({r.cells[j] for r in table.rows})
        # A column that tells rows apart first (names, invoice numbers), then one named like a name.
        return (distinct >= 0.9 * len(table.rows), bool(words & NAME_WORDS), not _id_like(table, j), distinct, -j)

    return max(pool, key=rank)


_MOST = re.compile(r"\b(?:most|fewest|least)\s+(?:number\s+of\s+)?([^\W\d_]+)|больше всего|меньше всего", re.I)
_IN_TOTAL = re.compile(r"\btotal\b|\bin total\b|\bcombined\b|\boverall\b|\bсумм|\bв сумме\b|\bвсего\b", re.I)


def _repeats(table: Table, j: int) -> bool:
    """Whether a column's values repeat enough to compare rows by them (offices, clients; not names)."""
    distinct, rows = len({r.cells[j] for r in table.rows}), len(table.rows)
    return distinct < rows and distinct <= max(0.5 * rows, rows - 2)


def _counts_nothing_measured(question: str, table: Table) -> bool:
    """Whether "the most X" names an X that no number column of the table measures ("the most employees")."""
    most = _MOST.search(question)
    if most is None:
        return False
    counted = (most.group(1) or "").lower()
    if counted and not (counted in ROW_NOUNS or counted.endswith("s")):
        return False  # "the most recent", "the most expensive": an extreme of a column, not a count
    return not (counted and any(same_word(counted, h) for j in range(len(table.columns))
                                if table.types[j] in (NUMBER, DATE) for h in header_words(table.columns[j])))


def _extreme_group(question: str, table: Table, match: _Match, filters: list[Filter], column: int | None
                   ) -> tuple[int, str] | None:
    """For "which office has the most employees" (or "the highest total"): the column whose values are
    compared (named by the question, holding repeated values), and what is compared per value ("count",
    or "sum" of the value column)."""
    filtered = {f.column for f in filters}
    named = [j for j in match.named if table.types[j] == TEXT and table.columns[j] not in filtered
             and _repeats(table, j)]
    if not named:
        return None
    by = min(named, key=lambda j: min(match.positions[j]))
    if _counts_nothing_measured(question, table):
        return by, "count"
    if column is not None and table.types[column] == NUMBER and _IN_TOTAL.search(question):
        return by, "sum"
    return None


def _compute(op: str, table: Table, column: int | None, rows: list[Row], group: int | None,
             label: int | None) -> tuple[Any, list[Row], list[str]] | None:
    if group is not None and op in ("count", "sum", "average"):
        groups: dict[str, list[Row]] = {}
        for r in rows:
            groups.setdefault(r.cells[group] or "(empty)", []).append(r)
        out = {}
        for name, members in groups.items():
            value = _aggregate(op, table, column, members)
            if value is not None:
                out[name] = value
        return (out, rows, []) if out else None
    if op == "count":
        return len(rows), rows, []
    if op == "list":
        names = [_row_name(table, r, label) for r in rows]
        if (label is not None and not set(words_of(table.columns[label])) & NAME_WORDS
                and len({r.cells[label] for r in table.rows}) < 0.5 * len(table.rows)):
            names = list(dict.fromkeys(names))  # a column of repeated values ("which offices"): each once
        return names, rows, []
    if op in ("sum", "average"):
        value = _aggregate(op, table, column, rows)
        used = [r for r in rows if column is not None and r.values[column] is not None]
        return (value, used, []) if value is not None else None
    assert column is not None
    used = [r for r in rows if r.values[column] is not None]
    if not used:
        return None
    pick = max if op == "max" else min
    best = pick(r.values[column] for r in used)
    labels = [_row_name(table, r, label) for r in used if r.values[column] == best]
    value = best if isinstance(best, str) else _rounded(float(best), table.decimals[column] if table.decimals else 2)
    return value, used, labels


def _aggregate(op: str, table: Table, column: int | None, rows: list[Row]) -> float | int | None:
    if op == "count":
        return len(rows)
    assert column is not None
    numbers = [float(r.values[column]) for r in rows if isinstance(r.values[column], (int, float))]
    if not numbers:
        return None
    decimals = table.decimals[column] if table.decimals else 2
    total = math.fsum(numbers)
    if op == "sum":
        return _rounded(total, decimals)
    return _rounded(total / len(numbers), max(decimals, 2) + 2)


def _rounded(value: float, decimals: int) -> float | int:
    value = round(value, decimals)
    return int(value) if value == int(value) and abs(value) < 1e15 else value


def _row_name(table: Table, row: Row, label: int | None) -> str:
    if label is None:
        return " ".join(c for c in row.cells if c)
    # "First name" beside "Last name": the whole name
    name = row.cells[label]
    columns = [c.lower() for c in table.columns]
    if "first name" in columns and "last name" in columns and columns[label] in ("first name", "last name"):
        name = f"{row.cells[columns.index('first name')]} {row.cells[columns.index('last name')]}".strip()
    return name or f"row {row.number}"


def _number_text(value: float) -> str:
    return str(int(value)) if value == int(value) else repr(value)
