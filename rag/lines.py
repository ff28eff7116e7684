"""Sentence, row and line spans of a text: what the quotes are cut from (rag/quotes.py) and what a passage's
best line is found among (rag/retrieval.py); and whether a line is only one of the passage's headings."""

from __future__ import annotations

import re

from rag.loaders import HEADING_SEPARATOR

# A unit ends at sentence punctuation followed by space, or at a line break (rows, list items, headings).
_UNIT = re.compile(r"[^\n]+?(?:[.!?…](?=\s)|(?=\n)|$)", re.S)
_MARKER = re.compile(r"(?:[-*•]|\d{1,3}[.)])\s+")
_NUMBERING = re.compile(r"(?:\d{1,3}\.){2,}")  # "1.2.2." before a section title, read as a sentence of its own


def split_units(text: str) -> list[tuple[int, int]]:
    """Sentence, row and line spans of a text (start, end), whitespace and list markers trimmed."""
    spans = []
    for m in _UNIT.finditer(text):
        s, e = m.start(), m.end()
        while s < e and text[s].isspace():
            s += 1
        marker = _MARKER.match(text, s, e)
        if marker:
            s = marker.end()
        while e > s and text[e - 1].isspace():
            e -= 1
        if e > s and not _NUMBERING.fullmatch(text, s, e):
            spans.append((s, e))
    return spans


def names_heading(text: str, heading: str | None) -> bool:
    """Whether a text is one of the parts of a passage's heading path, its numbering aside."""
    if not heading:
        return False
    words = _words_of(text)
    return any(words == _words_of(part) for part in heading.split(HEADING_SEPARATOR))


def _words_of(text: str) -> list[str]:
    return [w for w in re.findall(r"\w+", text.lower()) if not w.isdigit()]
