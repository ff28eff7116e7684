"""Token-aware splitting of a document's sections into overlapping chunks that keep their place."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from rag.loaders import Section

_PARAGRAPH = re.compile(r"\S(?:.*?\S)?(?=\n\s*\n|\s*\Z)", re.S)
_SENTENCE = re.compile(r"\S.*?(?:[.!?…。](?=\s)|\Z)", re.S)
_WORD = re.compile(r"\S+")


@dataclass(frozen=True)
class Chunk:
    """A piece of a document small enough to embed, with where it came from."""

    text: str
    page: int | None
    heading: str | None
    start: int  # character offsets in the document's full text (sections joined by "\n\n")
    end: int
    index: int


@dataclass(frozen=True)
class _Unit:
    start: int  # offsets relative to the section text
    end: int
    tokens: int


def chunk_sections(
    sections: Sequence[Section],
    *,
    count_tokens: Callable[[str], int],
    max_tokens: int = 200,
    overlap_tokens: int = 40,
) -> list[Chunk]:
    """Split sections into chunks of at most `max_tokens`, overlapping by up to `overlap_tokens`."""
    if max_tokens < 8:
        raise ValueError("max_tokens must be at least 8")
    overlap_tokens = max(0, min(overlap_tokens, max_tokens // 2))
    chunks: list[Chunk] = []
    for section in sections:
        units = list(_units(section.text, count_tokens, max_tokens))
        for first, last in _pack(units, max_tokens, overlap_tokens):
            start, end = units[first].start, units[last].end
            chunks.append(
                Chunk(
                    text=section.text[start:end],
                    page=section.page,
                    heading=section.heading,
                    start=section.offset + start,
                    end=section.offset + end,
                    index=len(chunks),
                )
            )
    return chunks


def _units(text: str, count: Callable[[str], int], limit: int) -> Iterator[_Unit]:
    """Paragraphs, or sentences of a long paragraph, or word runs of a long sentence."""
    for para in _PARAGRAPH.finditer(text):
        n = count(para.group())
        if n <= limit:
            yield _Unit(para.start(), para.end(), n)
            continue
        for sent in _SENTENCE.finditer(text, para.start(), para.end()):
            n = count(sent.group())
            if n <= limit:
                yield _Unit(sent.start(), sent.end(), n)
            else:
                yield from _word_runs(text, sent.start(), sent.end(), count, limit)


def _word_runs(text: str, lo: int, hi: int, count: Callable[[str], int], limit: int) -> Iterator[_Unit]:
    """Cut an over-long sentence between words (never inside one) into runs that fit."""
    words = [(m.start(), m.end()) for m in _WORD.finditer(text, lo, hi)]
    i = 0
    while i < len(words):
        j = i
        # Grow the run while it fits; a single word longer than the limit stands alone.
        while j + 1 < len(words) and count(text[words[i][0] : words[j + 1][1]]) <= limit:
            j += 1
        yield _Unit(words[i][0], words[j][1], count(text[words[i][0] : words[j][1]]))
        i = j + 1


def _pack(units: list[_Unit], limit: int, overlap: int) -> Iterator[tuple[int, int]]:
    """Greedily group consecutive units into (first, last) index ranges, with trailing overlap."""
    first = 0
    while first < len(units):
        last, total = first, units[first].tokens
        while last + 1 < len(units) and total + units[last + 1].tokens <= limit:
            last += 1
            total += units[last].tokens
        yield first, last
        if last + 1 >= len(units):
            return
        # Start the next chunk with as many trailing units as fit in the overlap budget,
        # but always move forward by at least one unit.
        nxt, carried = last + 1, 0
        while nxt - 1 > first and carried + units[nxt - 1].tokens <= overlap:
            nxt -= 1
            carried += units[nxt].tokens
        first = nxt
