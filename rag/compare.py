"""What changed between two documents, or two versions of one: computed from their text, no model involved.

    units(sections)              a document as comparable pieces: headings, sentences, table rows, in reading order
    compare(old, new)            the Comparison: each change (added, removed, changed, moved) cited on both sides
    word_changes(old, new)       the words that differ between two sentences, for showing a change
    figures_changed(old, new)    numbers, dates and amounts that differ between two sentences

How it works. Each document becomes a sequence of units (a heading line, a sentence, a table row) with a key
that ignores what is formatting only: case, spacing, line wrapping, punctuation and markup between words
(figures keep their own punctuation, so "1,200" and "1.200" differ). Matching on keys, not on the formats'
own sections, lets a Word file be compared with its PDF (pages there, headings here). difflib's
SequenceMatcher aligns the two sequences; what it leaves unmatched is then read in three passes:
  1. moved: a run of units deleted in one place and inserted identically in another (a section moved
     whole, or a paragraph) is one "moved" change, not a removal and an addition;
  2. changed: within each unmatched stretch, old and new units are paired by likeness (a table row by its
     key column, the first cell), and a lone old unit against a lone new one is an edit in place;
     what is left is paired across stretches (a section moved and edited);
  3. added / removed: the rest, consecutive units of one section reported together.
A renamed section is its heading line changed: its body matches and is not reported.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from difflib import SequenceMatcher
from pathlib import Path
from typing import Any

from rag.loaders import CELL_SEPARATOR, HEADING_SEPARATOR, Section, full_text

KINDS = ("added", "removed", "changed", "moved")
LIKE = 0.5  # two units whose words are at least this alike (difflib ratio) are one unit changed
LIKE_ACROSS = 0.6  # the same across unmatched stretches (an edit inside a moved section): surer, as it is rarer
MOVED_MIN_WORDS = 4  # a moved run of fewer words is an ordinary reordering, not worth a change of its own
WRAPPED_LINE = 60  # a line this long that does not end a sentence was wrapped (a PDF's lines): it runs on
SHARED_MIN = 0.1  # two documents sharing less than this fraction of their units are unrelated
MAX_PAIRS = 100_000  # old x new units of one stretch weighed for likeness at most (about 2 s on one core)
IN_PLACE = 3  # up to this many units replaced by as many, unlike as they are, are each one rewritten in place

_TOKEN = re.compile(r"[$€£¥%]|\d+(?:[.,:/-]\d+)*|[^\W_]+")
_MONTHS = r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|" \
          r"oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
_FIGURE = re.compile(rf"\b\d{{1,2}}\.?\s+{_MONTHS}\.?\s+\d{{4}}\b|\b{_MONTHS}\.?\s+\d{{1,2}},?\s+\d{{4}}\b|"
                     r"[$€£¥]\s?\d+(?:[.,]\d+)*|\d+(?:[.,:/-]\d+)*(?:\s?%)?", re.IGNORECASE)
_SENTENCE_END = re.compile(r"""[.!?:;]["'”’)\]]*$""")
_SPLIT = re.compile(r"""(?<=[.!?])["'”’)\]]*\s+(?=["'“‘(\[]?[A-ZÀ-ÖØ-Þ0-9])""")
_ABBREVIATION = re.compile(r"(?:\b(?:e\.g|i\.e|etc|no|nr|art|sec|mr|mrs|ms|dr|approx|incl|vs|cf|pp?|fig)|"
                           r"\b[A-Za-z]|^\(?[0-9A-Za-z]{1,3}(?:\.[0-9]{1,3})*)\.$", re.IGNORECASE)
_RULE_ROW = re.compile(r"^[\s|:+-]+$")  # a Markdown table's rule under its header: "|---|:--:|"
_MARKUP = re.compile(r"^\s*(?:#{1,6}\s+|[-*+•▪◦]\s+|>\s*)")
# A list's or clause's number ("4.", "4.2", "b)", "iv."): numbering that shifts when an item is inserted above is not
# a change of the item (the insertion is reported itself)
_ENUMERATOR = re.compile(r"^\(?(?:(?:\d+|[a-zA-Z]|[ivxlcIVXLC]+)[.)]|\d+(?:\.\d+)+\.?(?=\s+[A-ZÀ-ÖØ-Þ]))\s+(?=\S)")


@dataclass(frozen=True)
class Unit:
    """A comparable piece of a document: a heading line, a sentence or a table row, with where it is."""

    kind: str  # "heading" | "line" (short, no full stop: a heading or list item) | "text" | "row"
    text: str  # as the document has it (spacing tidied)
    key: str  # what is compared: its words and figures, lower case
    heading: str | None
    page: int | None
    cells: tuple[str, ...] = ()  # a row's cells
    header: tuple[str, ...] = ()  # a row's table header (empty for the header itself)
    inferred: bool = False  # `heading` is the short line above, not the document's own (see _headings_inferred)

    @property
    def row_key(self) -> str | None:
        """A table row's identity: its first cell's words (the key column), with the table's header."""
        return f"{_key(' '.join(self.header))}|{_key(self.cells[0])}" if self.kind == "row" and self.cells else None


@dataclass(frozen=True)
class Change:
    """One difference, cited on both sides (the side without the text has None)."""

    kind: str  # added | removed | changed | moved
    heading: str | None
    old_text: str | None
    new_text: str | None
    old_page: int | None
    new_page: int | None
    figures: tuple[tuple[str, str], ...] = ()  # numbers, dates, amounts that changed: (old, new), "" if none
    renamed: bool = False  # a changed heading: the section was renamed

    def to_json(self) -> dict[str, Any]:
        """The contract's change object (shared/DESIGN.md)."""
        return {"kind": self.kind, "heading": self.heading, "old_text": self.old_text, "new_text": self.new_text,
                "old_page": self.old_page, "new_page": self.new_page}


@dataclass(frozen=True)
class Side:
    """One of the two documents compared: which file, which kept version (None: read from the file)."""

    source: str
    version: int | None = None
    indexed_at: float | None = None
    note: str | None = None  # what OCR read, e.g. "scanned, low confidence (page 2)"

    def to_json(self) -> dict[str, Any]:
        """`{"source", "version", "indexed_at"}` (indexed_at as ISO 8601, UTC)."""
        return {"source": self.source, "version": self.version, "indexed_at": _iso(self.indexed_at)}


@dataclass(frozen=True)
class Comparison:
    """The changes from `old` to `new`, in the new document's order, and a summary in words."""

    old: Side
    new: Side
    changes: list[Change]
    summary: str
    shared: float  # the fraction of the smaller document's units found in the other: unchanged, moved or edited
    warnings: list[str] = field(default_factory=list)  # e.g. a scan read with low confidence
    texts: tuple[str, str] = ("", "")  # the two documents' full texts (rag.loaders.full_text), to show them whole

    def to_json(self) -> dict[str, Any]:
        """`{"old", "new", "changes", "summary"}` (shared/DESIGN.md)."""
        return {"old": self.old.to_json(), "new": self.new.to_json(),
                "changes": [c.to_json() for c in self.changes], "summary": self.summary}

    def counts(self) -> dict[str, int]:
        """How many changes of each kind."""
        return {k: sum(c.kind == k for c in self.changes) for k in KINDS}


def units(sections: Iterable[Section]) -> list[Unit]:
    """A document's headings, sentences and table rows in reading order, each with its section and page. Lines
    run on from one page to the next (a PDF's sentence broken by a page end is one sentence)."""
    out: list[Unit] = []
    lines: list[tuple[str, Section]] = []  # text lines not read yet, with the section each is from

    def read() -> None:
        out.extend(_text_units(lines))
        lines.clear()

    for section in sections:
        if lines and lines[-1][1].heading != section.heading:
            read()
        start = 0
        for a, b in sorted(section.tables):
            lines.extend((line, section) for line in section.text[start:a].splitlines())
            read()
            out.extend(_row_units(section.text[a:b], section))
            start = b
        lines.extend((line, section) for line in section.text[start:].splitlines())
    read()
    return _headings_inferred([u for u in out if u.key])


def _headings_inferred(found: list[Unit]) -> list[Unit]:
    """Units of a document without headings of its own (a PDF without bookmarks, a text file) under the short
    line that stands alone before a paragraph ("4. Fees"), so that their changes name a section."""
    if any(u.heading for u in found):
        return found
    out, current = [], None
    for n, u in enumerate(found):
        before = [found[m].kind for m in (n - 1, n - 2) if m >= 0]
        if u.kind == "line" and n + 1 < len(found) and found[n + 1].kind == "text" and before != ["line", "line"]:
            current = u.text
        out.append(replace(u, heading=current, inferred=True) if current else u)
    return out


def _text_units(lines: Sequence[tuple[str, Section]]) -> list[Unit]:
    out = []
    for segment, section in _segments(lines):
        title = _key(section.heading.split(HEADING_SEPARATOR)[-1]) if section.heading else None
        key = _key(segment)
        if title is not None and key == title:
            out.append(Unit("heading", segment, key, section.heading, section.page))
        elif len(segment) < WRAPPED_LINE and not _SENTENCE_END.search(segment):
            out.append(Unit("line", segment, key, section.heading, section.page))  # a heading or list item, maybe
        else:
            out.extend(Unit("text", t, _key(t), section.heading, section.page) for t in sentences(segment))
    return out


def _row_units(text: str, section: Section) -> list[Unit]:
    lines = [line.strip() for line in text.splitlines()]
    lines = [line.strip("|").strip() for line in lines if line and not _RULE_ROW.match(line)]  # Markdown's pipes
    rows = [tuple(" ".join(c.split()) for c in line.split(CELL_SEPARATOR.strip())) for line in lines]
    rows = [r for r in rows if any(r)]
    out = []
    for i, cells in enumerate(rows):
        header = rows[0] if i else ()
        shown = CELL_SEPARATOR.join(cells)
        out.append(Unit("row", shown, _key(" ".join(cells)), section.heading, section.page, cells, header))
    return out


def _segments(lines: Sequence[tuple[str, Section]]) -> list[tuple[str, Section]]:
    """Lines joined into paragraphs, list items and headings, each with the section of its first line: a line
    runs on into the next when it ends no sentence and is as long as a wrapped line or the next goes on in lower
    case, so a PDF's wrapped lines (and a line broken by hand) read like a Word file's paragraphs."""
    tidy = [(" ".join(line.split()), section) for line, section in lines]
    out: list[tuple[str, Section]] = []
    current: list[str] = []
    first: Section | None = None
    for n, (line, section) in enumerate(tidy):
        if line:
            first = first if current else section
            current.append(line)
        following = tidy[n + 1][0] if n + 1 < len(tidy) else ""
        runs_on = bool(line) and not _SENTENCE_END.search(line) and bool(following) and (
            len(line) >= WRAPPED_LINE or following[0].islower())
        if current and not runs_on:
            out.append((" ".join(current), first))  # type: ignore[arg-type]
            current = []
    if current:
        out.append((" ".join(current), first))  # type: ignore[arg-type]
    return out


def sentences(text: str) -> list[str]:
    """A paragraph split into sentences (not after "e.g.", "No.", an initial or a clause number like "4.2.")."""
    pieces = _SPLIT.split(text)
    out: list[str] = []
    for piece in pieces:
        if out and _ABBREVIATION.search(out[-1]):
            out[-1] = f"{out[-1]} {piece}"
        else:
            out.append(piece)
    return out


def _key(text: str) -> str:
    """The words and figures of a text, lower case: spacing, punctuation, markup, case and a leading list or clause
    number do not count."""
    text = _ENUMERATOR.sub("", _MARKUP.sub("", unicodedata.normalize("NFKC", text).strip()), count=1)
    return " ".join(_TOKEN.findall(text.casefold()))


def _iso(when: float | None) -> str | None:
    if when is None:
        return None
    import datetime as dt

    return dt.datetime.fromtimestamp(when, dt.timezone.utc).isoformat(timespec="seconds")


def _like(a: Unit, b: Unit, matcher: SequenceMatcher | None = None) -> float:
    """How alike two units' words are (0..1); rows with the same key column are alike outright. `matcher`, when
    given, already has b's words as its second sequence (difflib indexes that one: set it once for many a's)."""
    if a.kind == "row" and b.kind == "row" and a.row_key is not None and b.row_key is not None:
        if a.row_key == b.row_key:
            return 1.0
        keys = SequenceMatcher(None, _key(a.cells[0]), _key(b.cells[0]), autojunk=False)
        if keys.ratio() < 0.8:
            return 0.0  # another row (the key column differs), however alike the figures
    if not _comparable(a, b):
        return 0.0
    if matcher is None:
        matcher = SequenceMatcher(None, b=b.key.split(), autojunk=False)
    matcher.set_seq1(a.key.split())
    if matcher.real_quick_ratio() < LIKE:
        return 0.0
    bound = matcher.quick_ratio()  # an upper bound of ratio(), much cheaper
    return bound * 0.99 if bound < LIKE else matcher.ratio()


def _comparable(a: Unit, b: Unit) -> bool:
    """Whether one unit can be the other edited: anything but a heading against a sentence (a table row is a
    plain line in a PDF, a heading is a plain line too)."""
    return {a.kind, b.kind} != {"heading", "text"}


def _heading_like(unit: Unit) -> bool:
    """A heading, or a short line that may be one (a PDF's headings are plain lines)."""
    return unit.kind in ("heading", "line")


def find_in(text: str, passage: str, start: int = 0) -> tuple[int, int] | None:
    """Where a change's text (its first line) stands in a document's full text, line breaks and spacing aside;
    None when it cannot be found (a table row read from a PDF, say)."""
    words = (passage.strip().splitlines() or [""])[0].split()[:40]
    if not words:
        return None
    match = re.compile(r"\s+".join(re.escape(w) for w in words)).search(text, start)
    return (match.start(), match.end()) if match else None


def word_changes(old: str, new: str) -> list[tuple[str, str]]:
    """The two texts as (op, text) pieces: "=" words in both, "-" only in the old, "+" only in the new."""
    a, b = old.split(), new.split()
    out: list[tuple[str, str]] = []
    matcher = SequenceMatcher(None, [_key(w) or w for w in a], [_key(w) or w for w in b], autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            out.append(("=", " ".join(b[j1:j2])))
            continue
        if i2 > i1:
            out.append(("-", " ".join(a[i1:i2])))
        if j2 > j1:
            out.append(("+", " ".join(b[j1:j2])))
    return out


def figures_changed(old: str, new: str) -> tuple[tuple[str, str], ...]:
    """Numbers, dates and amounts in one text and not the other, paired in order: (old, new), "" for none."""
    a = [" ".join(f.split()) for f in _FIGURE.findall(old)]
    b = [" ".join(f.split()) for f in _FIGURE.findall(new)]
    norm = [_key(f) for f in a], [_key(f) for f in b]
    matcher = SequenceMatcher(None, norm[0], norm[1], autojunk=False)
    out: list[tuple[str, str]] = []
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            continue
        olds, news = a[i1:i2], b[j1:j2]
        for n in range(max(len(olds), len(news))):
            out.append((olds[n] if n < len(olds) else "", news[n] if n < len(news) else ""))
    return tuple(out)


def compare(old: Sequence[Section], new: Sequence[Section], *, old_side: Side | None = None,
            new_side: Side | None = None) -> Comparison:
    """The changes from one document's sections to another's (see the module's docstring for how)."""
    a, b = units(old), units(new)
    matched = align([u.key for u in a], [u.key for u in b])
    gaps = _gaps(matched, len(a), len(b))
    equal = len(matched)
    found = _Found(a, b, gaps)
    found.moves()
    moved = sum(len(block[0]) for block in found.moved)
    shared = (equal + moved) / max(1, min(len(a), len(b)))
    if shared >= SHARED_MIN or len(a) * len(b) <= MAX_PAIRS:  # not for two large unrelated documents: no use
        found.pairs()
        shared = (equal + moved + found.alike) / max(1, min(len(a), len(b)))  # a short note edited through
    changes = found.changes()
    old_side = old_side or Side("old")
    new_side = new_side or Side("new")
    warnings = [f"{Path(s.source).name} was read by OCR with low confidence ({s.note.split('(')[-1].rstrip(')')}): "
                "the reading may be wrong, and so may some changes." for s in (old_side, new_side)
                if s.note and "low confidence" in s.note]
    summary = describe(changes, old_side, new_side, warnings)
    return Comparison(old_side, new_side, changes, summary, shared, warnings, (full_text(old), full_text(new)))


def align(old: Sequence[str], new: Sequence[str]) -> list[tuple[int, int]]:
    """The in-order pairs (i, j) of equal keys that carry the most words between them (a heaviest common
    subsequence): where a section moved, the smaller amount of text is the one that moved."""
    where: dict[str, list[int]] = {}
    for j, key in enumerate(new):
        where.setdefault(key, []).append(j)
    pairs = [(i, j) for i, key in enumerate(old) for j in reversed(where.get(key, ()))]
    if len(pairs) > 2_000_000:  # keys repeated by the thousand: difflib's greedy matching instead
        blocks = SequenceMatcher(None, list(old), list(new), autojunk=False).get_matching_blocks()
        return [(i + n, j + n) for i, j, size in blocks for n in range(size)]
    size = len(new) + 1
    tree = [(0, -1)] * (size + 1)  # Fenwick tree over j: (best weight of a chain ending at or before, its pair)
    back: list[int] = []
    best = (0, -1)
    for p, (i, j) in enumerate(pairs):
        k, top = j, (0, -1)
        while k > 0:  # the heaviest chain ending before column j
            top = max(top, tree[k])
            k -= k & -k
        weight = top[0] + len(old[i].split()) + 1
        back.append(top[1])
        best = max(best, (weight, p))
        k = j + 1
        while k <= size:
            if tree[k][0] < weight:
                tree[k] = (weight, p)
            k += k & -k
    chain, p = [], best[1]
    while p >= 0:
        chain.append(pairs[p])
        p = back[p]
    return chain[::-1]


def _gaps(matched: list[tuple[int, int]], n_old: int, n_new: int) -> list[tuple[int, int, int, int]]:
    """The stretches between matched pairs: (old start, old end, new start, new end), one side possibly empty."""
    gaps = []
    i0 = j0 = 0
    for i, j in [*matched, (n_old, n_new)]:
        if i > i0 or j > j0:
            gaps.append((i0, i, j0, j))
        i0, j0 = i + 1, j + 1
    return gaps


class _Found:
    """The unmatched stretches of an alignment, read as moves, pairs of changed units, and the rest."""

    def __init__(self, a: list[Unit], b: list[Unit], gaps: list[tuple[int, int, int, int]]) -> None:
        self.a, self.b, self.gaps = a, b, gaps
        self.old_left = {i: g for g, (i1, i2, _, _) in enumerate(gaps) for i in range(i1, i2)}  # unit -> its gap
        self.new_left = {j: g for g, (_, _, j1, j2) in enumerate(gaps) for j in range(j1, j2)}
        self.moved: list[tuple[list[int], list[int]]] = []  # (old units, new units) of each moved run
        self.paired: list[tuple[int, int]] = []  # (old unit, new unit) changed
        self.alike = 0  # of those, the pairs found alike in their words (not merely in place of each other)

    def moves(self) -> None:
        """Runs of units deleted in one place and inserted word for word in another."""
        inserted: dict[str, list[int]] = {}
        for j in sorted(self.new_left):
            inserted.setdefault(self.b[j].key, []).append(j)
        pairs: list[tuple[int, int]] = []
        for i in sorted(self.old_left):
            spots = inserted.get(self.a[i].key, [])
            if spots:
                j = min(spots, key=lambda j: (not pairs or j != pairs[-1][1] + 1, j))  # runs on where it can
                inserted[self.a[i].key].remove(j)
                pairs.append((i, j))
        runs: list[list[tuple[int, int]]] = []
        for i, j in pairs:
            if runs and runs[-1][-1] == (i - 1, j - 1):
                runs[-1].append((i, j))
            else:
                runs.append([(i, j)])
        for run in runs:
            olds, news = [i for i, _ in run], [j for _, j in run]
            for i, j in run:  # matched, whether reported or not: a short run is only reordering
                del self.old_left[i], self.new_left[j]
            if sum(len(self.a[i].key.split()) for i in olds) >= MOVED_MIN_WORDS:
                self.moved.append((olds, news))

    def pairs(self) -> None:
        """Changed units: alike ones within each stretch, then a few in place of as many (in order), then alike
        across stretches."""
        for g in range(len(self.gaps)):
            olds = [i for i, h in self.old_left.items() if h == g]
            news = [j for j, h in self.new_left.items() if h == g]
            self._pair(olds, news, LIKE)
            olds = [i for i in olds if i in self.old_left]
            news = [j for j in news if j in self.new_left]
            if 0 < len(olds) == len(news) <= IN_PLACE and not self._replaced_section(olds, news) and all(
                    self._lone_pair(self.a[i], self.b[j]) for i, j in zip(olds, news)):
                for i, j in zip(olds, news):  # as many units in place of as many: each one rewritten
                    self._take(i, j)
        self._pair(sorted(self.old_left), sorted(self.new_left), LIKE_ACROSS)

    def _replaced_section(self, olds: list[int], news: list[int]) -> bool:
        """Whether a stretch is one section replaced by another, its heading and its text both unlike the old
        ("Hotels" and its rule gone, "Rail" and another in its place): removed and added, not edited in place. A
        heading changed alone, its text matched, is a rename."""
        def whole(units: list[Unit], indices: list[int]) -> bool:
            kinds = [_heading_like(units[k]) for k in indices]
            return any(kinds) and not all(kinds)

        return whole(self.a, olds) and whole(self.b, news)

    @staticmethod
    def _lone_pair(old: Unit, new: Unit) -> bool:
        """Whether one unit in place of one other is that unit edited: a heading for a heading, a sentence for a
        sentence; rows only with a like key column (another key is another row)."""
        if not _comparable(old, new):
            return False
        return (old.kind != "row" or new.kind != "row") or _like(old, new) > 0

    def _pair(self, olds: list[int], news: list[int], floor: float) -> None:
        """Pair the most alike old and new units first, each at most once, while they are `floor` alike."""
        if not olds or not news or len(olds) * len(news) > MAX_PAIRS:
            return  # a stretch rewritten through: its units are reported added and removed, not paired
        scored = []
        for j in news:
            matcher = SequenceMatcher(None, b=self.b[j].key.split(), autojunk=False)
            scored.extend((score, i, j) for i in olds if (score := _like(self.a[i], self.b[j], matcher)) >= floor)
        for score, i, j in sorted(scored, reverse=True):
            if i in self.old_left and j in self.new_left:
                self._take(i, j)
                self.alike += 1

    def _take(self, i: int, j: int) -> None:
        del self.old_left[i], self.new_left[j]
        self.paired.append((i, j))

    def changes(self) -> list[Change]:
        """Every change, in the new document's order (a removal where it would have stood)."""
        placed: list[tuple[float, Change]] = []
        for i, j in self.paired:
            old, new = self.a[i], self.b[j]
            placed.append((j, Change("changed", _heading(old, new), old.text, new.text, old.page, new.page,
                                     figures_changed(old.text, new.text),
                                     renamed=_heading_like(old) and _heading_like(new) and "heading" in (
                                         old.kind, new.kind))))
        for olds, news in self.moved:
            old, new = self.a[olds[0]], self.b[news[0]]
            placed.append((news[0], Change("moved", _heading(old, new), _joined(self.a, olds),
                                           _joined(self.b, news), old.page, new.page)))
        for units, left, kind in ((self.b, self.new_left, "added"), (self.a, self.old_left, "removed")):
            for run in _runs(sorted(left), units):
                first = units[run[0]]
                where = run[0] if kind == "added" else self._new_place(run[0]) - 0.5
                text = _joined(units, run)
                placed.append((where, Change(kind, first.heading, text if kind == "removed" else None,
                                             text if kind == "added" else None,
                                             first.page if kind == "removed" else None,
                                             first.page if kind == "added" else None)))
        placed.sort(key=lambda p: p[0])
        return [c for _, c in placed]

    def _new_place(self, i: int) -> float:
        """Where in the new document an old unit would stand: the start of its stretch's new side."""
        g = next(g for g, (i1, i2, _, _) in enumerate(self.gaps) if i1 <= i < i2)
        return self.gaps[g][2]


def _heading(old: Unit, new: Unit) -> str | None:
    """The section a change on both sides is in: the new side's, unless only the old side's is the document's own."""
    if new.heading and (not new.inferred or not old.heading or old.inferred):
        return new.heading
    return old.heading or new.heading


def _runs(indices: list[int], units: list[Unit]) -> list[list[int]]:
    """Consecutive units of one section, grouped."""
    runs: list[list[int]] = []
    for n in indices:
        if runs and runs[-1][-1] == n - 1 and units[n].heading == units[n - 1].heading:
            runs[-1].append(n)
        else:
            runs.append([n])
    return runs


def _joined(units: list[Unit], indices: list[int]) -> str:
    return " ".join(units[n].text if units[n].kind != "row" else units[n].text + "\n" for n in indices).replace(
        "\n ", "\n").strip()


def describe(changes: Sequence[Change], old: Side, new: Side, warnings: Sequence[str] = ()) -> str:
    """The comparison in a few sentences: how many changes of each kind, the figures that changed, warnings."""
    names = (Path(old.source).name, Path(new.source).name)
    what = f"{names[0]}" + (f" (version {old.version})" if old.version else "")
    what += f" → {names[1]}" + (f" (version {new.version})" if new.version else "")
    if not changes:
        text = f"{what}: no changes in the text (formatting and spacing aside)."
    else:
        counts = [f"{n} {k}" for k in KINDS if (n := sum(c.kind == k for c in changes))]
        text = f"{what}: {len(changes)} change{'s' if len(changes) != 1 else ''} ({', '.join(counts)})."
        renamed = [c for c in changes if c.renamed]
        if renamed:
            text += " Renamed: " + "; ".join(f"“{c.old_text}” → “{c.new_text}”" for c in renamed[:5]) + "."
        figures = [(c, f) for c in changes for f in c.figures if f[0] and f[1]]
        if figures:
            shown = [f"{o} → {n}" + (f" ({_short(c.heading)})" if c.heading else "") for c, (o, n) in figures[:8]]
            more = f" and {len(figures) - 8} more" if len(figures) > 8 else ""
            text += " Figures changed: " + "; ".join(shown) + more + "."
    return " ".join([text, *warnings])


def _short(heading: str) -> str:
    return heading.split(HEADING_SEPARATOR)[-1]
