"""Whole-document summaries: section by section within the model's context, then put together.

Top-k retrieval sees a few passages of a forty-page file, so a summary reads all of it: the document's
passages in order, grouped by section heading (consecutive small sections share one call, a long one is
cut into parts), each part summarised by the chat model in a sentence or two that cites its section and
page, then an overview written from the parts. Progress (parts done, time left) goes to a callback, and
cancel is checked before every part and at every token.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from inference.chat import ChatModel
from inference.errors import Cancelled
from rag.lexical import LexicalRow
from rag.loaders import HEADING_SEPARATOR
from rag.store import Hit

PART_PROMPT = (
    "You summarise one section of an office document for a colleague. In one or two short sentences of your "
    "own, state its main rules: the concrete figures, names, deadlines and conditions it gives. Do not copy "
    "the section and do not add anything that is not in it. Reply with the summary only."
)
OVERVIEW_PROMPT = (
    "Below are summaries of the sections of one office document. Write two or three sentences saying what "
    "the document is and what it covers, naming its main topics. Do not add anything that is not there."
)
PART_ANSWER_TOKENS = 96
OVERVIEW_ANSWER_TOKENS = 128
MAX_PARTS = 24  # model calls per summary at most: longer documents get longer parts


@dataclass(frozen=True)
class SummaryProgress:
    """How far a summary is: parts done of the total, and the seconds left at the pace so far (None at first)."""

    done: int
    total: int
    seconds_left: float | None
    heading: str | None = None  # the part being summarised now


@dataclass(frozen=True)
class SummaryPart:
    """One section's summary, with where the section is."""

    heading: str | None
    page: int | None
    text: str
    source: str
    start: int
    end: int

    def to_json(self) -> dict[str, Any]:
        """The contract's part object: heading, page, text."""
        return {"heading": self.heading, "page": self.page, "text": self.text}


@dataclass(frozen=True)
class Summary:
    """A document's summary: an overview, the parts (each citing its section), and the sections as sources."""

    source: str
    summary: str
    parts: list[SummaryPart]

    @property
    def sources(self) -> list[Hit]:
        """One source per part, numbered as the summary cites them: the section's place (heading, page, offsets
        into the document's text) with the part's summary as its text, not the section's own words."""
        return [Hit(p.source, p.page, p.heading, 1.0, p.text, p.start, p.end, f"{p.source}#{i}")
                for i, p in enumerate(self.parts, 1)]

    def to_json(self) -> dict[str, Any]:
        """`{"summary", "parts": [{"heading", "page", "text"}], "sources": [...]}` (shared/DESIGN.md)."""
        return {"summary": self.summary, "parts": [p.to_json() for p in self.parts],
                "sources": [h.to_json() for h in self.sources]}


@dataclass(frozen=True)
class _Section:
    heading: str | None
    page: int | None
    text: str
    start: int
    end: int


def sections_of(rows: Sequence[LexicalRow], *, count_tokens: Callable[[str], int], part_tokens: int) -> list[_Section]:
    """The document's passages in reading order, grouped into parts of at most `part_tokens` tokens: a section
    per part where it fits, small neighbouring sections together, a long one cut at passage boundaries."""
    ordered = sorted(rows, key=lambda r: (r.start, r.end))
    runs: list[list[LexicalRow]] = []
    for row in ordered:
        if runs and runs[-1][-1].heading == row.heading:
            runs[-1].append(row)
        else:
            runs.append([row])
    parts: list[_Section] = []
    for run in runs:
        current: list[LexicalRow] = []
        size = 0
        for row in run:
            text = _fresh_text(row, current)
            n = count_tokens(text)
            if current and size + n > part_tokens:
                parts.append(_section(current))
                current, size = [], 0
                text, n = row.text, count_tokens(row.text)
            current.append(row if text == row.text else _with_text(row, text))
            size += n
        if current:
            parts.append(_section(current))
    return _merge_small(parts, count_tokens=count_tokens, part_tokens=part_tokens)


def summarize(
    source: str,
    rows: Sequence[LexicalRow],
    model: ChatModel,
    *,
    progress: Callable[[SummaryProgress], None] | None = None,
    cancel: Callable[[], bool] | None = None,
    on_token: Callable[[str], None] | None = None,
) -> Summary:
    """Summarise one document from its stored passages (all of them, in order)."""
    if not rows:
        raise ValueError("no passages")
    prompt_room = model.n_ctx - PART_ANSWER_TOKENS - model.count_prompt(
        [{"role": "system", "content": PART_PROMPT}, {"role": "user", "content": ""}]) - 64
    total_tokens = sum(model.count_tokens(r.text) for r in rows)
    part_tokens = max(200, min(prompt_room, 1200, max(total_tokens // MAX_PARTS + 1, 400)))
    sections = sections_of(rows, count_tokens=model.count_tokens, part_tokens=part_tokens)
    name = Path(source).name
    parts: list[SummaryPart] = []
    t0 = time.perf_counter()
    for i, section in enumerate(sections):
        _check(cancel)
        if progress is not None:
            elapsed = time.perf_counter() - t0
            left = elapsed / i * (len(sections) + 1 - i) if i else None
            progress(SummaryProgress(i, len(sections), left, section.heading))
        label = f"Document: {name}" + (f"\nSection: {section.heading}" if section.heading else "") + (
            f" (page {section.page})" if section.page is not None else "")
        messages = [{"role": "system", "content": PART_PROMPT},
                    {"role": "user", "content": f"{label}\n\n{section.text}"}]
        text = _clean("".join(model.stream(messages, max_tokens=PART_ANSWER_TOKENS, cancel=cancel)))
        parts.append(SummaryPart(section.heading, section.page, text or _first_sentence(section.text), source,
                                 section.start, section.end))
    _check(cancel)
    if progress is not None:
        progress(SummaryProgress(len(sections), len(sections) + 1, None, None))
    overview = ""
    if len(parts) > 1:
        listing = "\n".join(f"- {p.heading or 'Part ' + str(i)}: {p.text}" for i, p in enumerate(parts, 1))
        messages = [{"role": "system", "content": OVERVIEW_PROMPT},
                    {"role": "user", "content": f"Document: {name}\n\n{listing}"}]
        room = model.n_ctx - OVERVIEW_ANSWER_TOKENS - 32
        if model.count_prompt(messages) < room:
            overview = _clean("".join(model.stream(messages, max_tokens=OVERVIEW_ANSWER_TOKENS, cancel=cancel)))
    text = _compose(name, overview, parts)
    if on_token is not None:
        on_token(text)
    if progress is not None:
        progress(SummaryProgress(len(sections) + 1, len(sections) + 1, 0.0, None))
    return Summary(source, text, parts)


def _compose(name: str, overview: str, parts: Sequence[SummaryPart]) -> str:
    """The summary as shown: the overview, then each part under its section with its citation."""
    lines = [overview] if overview else [f"Summary of {name}:"]
    lines.append("")
    for i, p in enumerate(parts, 1):
        where = p.heading.split(HEADING_SEPARATOR)[-1].strip() if p.heading else f"Part {i}"
        page = f" (p. {p.page})" if p.page is not None else ""
        lines.append(f"- **{where}**{page}: {p.text} [{i}]")
    return "\n".join(lines).strip()


def _clean(text: str) -> str:
    """One line, without a last sentence the answer's length cap cut short."""
    flat = " ".join(text.split()).strip()
    if flat and flat[-1] not in ".!?…)\"”»" and (cut := flat.rfind(". ")) > len(flat) * 0.4:
        flat = flat[: cut + 1]
    return flat


def _first_sentence(text: str) -> str:
    flat = " ".join(text.split())
    end = flat.find(". ")
    return flat[: end + 1] if 0 < end < 300 else flat[:300]


def _check(cancel: Callable[[], bool] | None) -> None:
    if cancel is not None and cancel():
        raise Cancelled("The summary stopped.")


def _fresh_text(row: LexicalRow, previous: Sequence[LexicalRow]) -> str:
    """The row's text without what it repeats of the previous row (chunks overlap)."""
    if not previous or row.start >= previous[-1].end:
        return row.text
    overlap = previous[-1].end - row.start
    return row.text[overlap:] if 0 < overlap < len(row.text) else row.text


def _with_text(row: LexicalRow, text: str) -> LexicalRow:
    return LexicalRow(row.chunk_id, row.source, row.page, row.heading, row.end - len(text), row.end, text,
                      row.ocr_confidence)


def _section(rows: Sequence[LexicalRow]) -> _Section:
    return _Section(rows[0].heading, rows[0].page, "\n".join(r.text for r in rows), rows[0].start, rows[-1].end)


def _merge_small(parts: list[_Section], *, count_tokens: Callable[[str], int], part_tokens: int) -> list[_Section]:
    """Neighbouring sections that together fit one part share a call, while there are more than MAX_PARTS."""
    while len(parts) > MAX_PARTS:
        sizes = [count_tokens(p.text) for p in parts]
        i = min(range(len(parts) - 1), key=lambda j: sizes[j] + sizes[j + 1])
        if sizes[i] + sizes[i + 1] > part_tokens * 2:
            break
        a, b = parts[i], parts[i + 1]
        heading = a.heading if a.heading == b.heading or not b.heading else (
            f"{a.heading}; {b.heading.split(HEADING_SEPARATOR)[-1].strip()}" if a.heading else b.heading)
        parts[i: i + 2] = [_Section(heading, a.page, f"{a.text}\n{b.text}", a.start, b.end)]
    return parts
