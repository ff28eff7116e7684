"""HTML files, read with the standard library's parser: visible text only, one Section per heading."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

from rag.errors import LoadError
from rag.loaders import CELL_SEPARATOR, DEFAULT_LIMITS, HEADING_SEPARATOR, Limits, Section, build_sections, read_bytes
from rag.loaders.text import text_from_bytes


# Elements whose content is never shown as page text.
_HIDDEN = frozenset({"script", "style", "noscript", "template", "svg", "math", "iframe", "object", "select"})
_HEADINGS = {f"h{n}": n for n in range(1, 7)}
_BLOCKS = frozenset(
    {
        "address", "article", "aside", "blockquote", "body", "caption", "center", "details", "dialog", "dd",
        "div", "dl", "dt", "fieldset", "figcaption", "figure", "footer", "form", "header", "hgroup", "hr",
        "html", "legend", "li", "main", "menu", "nav", "ol", "p", "pre", "section", "summary", "table",
        "tbody", "td", "tfoot", "th", "thead", "tr", "ul",
    }
)  # fmt: skip
_CELLS = frozenset({"td", "th"})
_LISTS = frozenset({"ul", "ol", "menu"})
# Elements that may stand in <head>; any other start tag means the body began without a <body> tag.
_HEAD_CONTENT = frozenset({"base", "link", "meta", "noscript", "script", "style", "template", "title"})
_TAG_OPEN = re.compile(r"<(?=[A-Za-z!/?])")
_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_:.-]+)""", re.I)


def load(path: Path, limits: Limits = DEFAULT_LIMITS) -> list[Section]:
    """Read an HTML file as one Section per heading-delimited part of its visible text."""
    data = read_bytes(path)
    text = text_from_bytes(path, data, declared=_declared_charset(data))
    try:
        return parse(text)
    except Exception as exc:  # html.parser is lenient, but a pathological file must not stop a batch
        raise LoadError(f"{path.name} could not be read as HTML ({type(exc).__name__}).", kind="corrupt") from exc


def parse(markup: str) -> list[Section]:
    """Extract the visible text of an HTML document as heading-delimited Sections."""
    extractor = _Extractor()
    extractor.feed(_defused(markup))
    extractor.close()
    return extractor.sections()


def _defused(markup: str) -> str:
    """The markup without comments, and with a tag left open at the end turned into text.

    The standard parser rescans from every "<!--" or "<a" that is never closed to the end of the input,
    which makes a file of thousands of them take quadratic time (minutes for a megabyte). Comments are
    never text, so they are cut here in one pass; one left open runs to the end, as browsers read it.
    """
    pieces: list[str] = []
    position = 0
    while True:
        start = markup.find("<!--", position)
        if start < 0:
            pieces.append(markup[position:])
            break
        pieces.append(markup[position:start])
        end = markup.find("-->", start + 4)
        if end < 0:
            break
        position = end + 3
    markup = "".join(pieces)
    # After the last ">", any "<" that would open a tag can never be closed: it is text.
    tail_start = markup.rfind(">") + 1
    tail = markup[tail_start:]
    if "<" in tail:
        markup = markup[:tail_start] + _TAG_OPEN.sub("&lt;", tail)
    return markup


def _declared_charset(data: bytes) -> str | None:
    """The charset named in a <meta> tag near the start of the file, if any."""
    match = _META_CHARSET.search(data[:4096])
    return match.group(1).decode("ascii") if match else None


@dataclass
class _Part:
    """A section being collected: its heading path and finished blocks as (text, kind)."""

    heading: str | None
    # kind: "heading", "paragraph", "line" (list item), "row" (table row), or "first-line"/"first-row"
    # (the first of a list or table)
    blocks: list[tuple[str, str]] = field(default_factory=list)

    def text(self) -> str:
        """Blocks joined by blank lines; list items and table rows one per line; a heading atop its text."""
        return self.render()[0]

    def render(self) -> tuple[str, list[tuple[int, int]]]:
        """The text, and the (start, end) of each table in it."""
        out: list[str] = []
        length = 0
        tables: list[tuple[int, int]] = []
        previous = ""
        for block, kind in self.blocks:
            if out:
                glued = previous == "heading" or (previous == kind.removeprefix("first-") and kind in {"line", "row"})
                glue = "\n" if glued else "\n\n"
                out.append(glue)
                length += len(glue)
            if kind == "first-row" or (kind == "row" and previous != "row"):
                tables.append((length, length))
            out.append(block)
            length += len(block)
            if kind in {"row", "first-row"}:
                tables[-1] = (tables[-1][0], length)
            previous = kind.removeprefix("first-")
        return "".join(out), tables


class _Extractor(HTMLParser):
    """Collects visible text into blocks, breaking at block elements and starting Sections at headings."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self._hidden: list[str] = []  # open hidden elements; text is dropped while any is open
        self._in_head = False
        self._title: list[str] | None = None  # collecting <title> text
        self._title_text: str | None = None
        self._heading: tuple[int, list[str]] | None = None  # (level, text pieces) inside <hN>
        self._stack: list[tuple[int, str]] = []  # open headings, outermost first
        self._lines: list[list[str]] = [[]]  # current paragraph, split at <br>
        self._pre = 0
        self._lists: list[list[int | None]] = []  # per open list: [next number] for <ol>, [None] for <ul>
        self._item_prefix: str | None = None  # marker for the paragraph that a <li> started
        self._row: list[list[str]] | None = None  # cells of the open table row
        self._group_start = False  # the next line block begins a new list or table
        self._parts: list[_Part] = [_Part(heading=None)]

    # -- parser callbacks ---------------------------------------------------------------------------

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self._title is not None:
            self._end_title()  # a <title> holds only text; a tag means its end tag is missing
        if tag in _HIDDEN:
            self._hidden.append(tag)
            return
        if tag == "head":
            self._in_head = True
        elif tag == "body" or (self._in_head and tag not in _HEAD_CONTENT):
            self._in_head = False
        elif tag == "title" and not self._hidden:
            self._title = []
        if self._hidden or self._in_head:
            return
        if tag == "br":
            self._break_line()
        elif tag in _HEADINGS and self._row is None:
            self._flush()
            self._heading = (_HEADINGS[tag], [])
        elif tag in _CELLS:
            if self._row is None:
                self._flush()
                self._row = []
            self._row.append([])
        elif tag == "tr":
            self._end_row()
            self._flush()
            self._row = []
        elif self._row is not None and self._row and tag in _BLOCKS and tag not in {"table", "tbody", "thead", "tfoot"}:
            self._text(" ")  # a block inside a table cell keeps the row on one line
        elif tag in _LISTS:
            self._flush()
            self._group_start = self._group_start or not self._lists
            start = _int_attr(attrs, "start")
            self._lists.append([start if start is not None else 1] if tag == "ol" else [None])
        elif tag == "li":
            self._flush()
            self._item_prefix = self._list_marker()
        elif tag in _BLOCKS:
            if tag == "table":
                self._end_row()
            self._flush()
            if tag == "table":
                self._group_start = True
            if tag == "pre":
                self._pre += 1

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _HIDDEN:
            return  # <svg/> and the like open nothing
        self.handle_starttag(tag, attrs)
        if tag not in {"br", "hr", "td", "th", "tr"}:
            self.handle_endtag(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag in _HIDDEN:
            if tag in self._hidden:
                # Close this element and anything left open inside it.
                del self._hidden[len(self._hidden) - 1 - self._hidden[::-1].index(tag) :]
            return
        if tag == "head":
            self._in_head = False
        elif tag == "title" and self._title is not None:
            self._end_title()
        if self._hidden or self._in_head:
            return
        if tag in _HEADINGS and self._heading is not None:
            self._end_heading()
        elif tag in _CELLS:
            pass  # the next cell or the row's end decides what follows
        elif tag == "tr":
            self._end_row()
        elif tag == "table":
            self._end_row()
            self._flush()
        elif self._row is not None and self._row and tag in _BLOCKS:
            self._text(" ")
        elif tag in _LISTS:
            self._flush()
            self._item_prefix = None
            if self._lists:
                self._lists.pop()
        elif tag in _BLOCKS:
            self._flush()
            if tag == "pre" and self._pre:
                self._pre -= 1

    def handle_data(self, data: str) -> None:
        if self._hidden:
            return
        if self._title is not None:
            self._title.append(data)
            return
        if self._in_head:
            return
        self._text(data)

    def close(self) -> None:
        super().close()
        if self._title is not None:
            self._end_title()
        if self._heading is not None:
            self._end_heading()
        self._end_row()
        self._flush()

    # -- building text ------------------------------------------------------------------------------

    def sections(self) -> list[Section]:
        """The collected Sections; text before the first heading is headed by the <title>."""
        parts = [(*part.render(), part.heading) for part in self._parts]
        if parts and parts[0][2] is None and self._title_text:
            parts[0] = (parts[0][0], parts[0][1], self._title_text)
        return build_sections((text, None, heading, tables) for text, tables, heading in parts)

    def _end_title(self) -> None:
        assert self._title is not None
        self._title_text = self._title_text or " ".join("".join(self._title).split()) or None
        self._title = None

    def _text(self, data: str) -> None:
        if self._heading is not None:
            self._heading[1].append(data)
        elif self._row is not None:
            if not self._row:
                self._row.append([])  # text in a row before any cell
            self._row[-1].append(data)
        else:
            self._lines[-1].append(data)

    def _break_line(self) -> None:
        if self._heading is not None or self._row is not None:
            self._text(" ")  # a line break cannot survive inside a one-line heading or row
        else:
            self._lines.append([])

    def _flush(self) -> None:
        """Finish the current paragraph as a block of the current part."""
        if self._pre:
            text = "\n".join("".join(pieces) for pieces in self._lines).replace("\xa0", " ")
            text = text.strip("\n").rstrip()
        else:
            lines = (" ".join("".join(pieces).split()) for pieces in self._lines)
            text = "\n".join(line for line in lines if line)
        self._lines = [[]]
        if not text:
            return  # e.g. the gap between <li> and a <p> inside it; the item's marker waits for its text
        prefix, self._item_prefix = self._item_prefix, None
        if prefix is not None:
            indent = "  " * max(0, len(self._lists) - 1)
            self._add_line(f"{indent}{prefix} {text}")
        else:
            self._parts[-1].blocks.append((text, "paragraph"))

    def _end_row(self) -> None:
        if self._row is None:
            return
        cells = [" ".join("".join(cell).split()) for cell in self._row]
        self._row = None
        if any(cells):
            self._add_line(CELL_SEPARATOR.join(cells), row=True)

    def _add_line(self, text: str, *, row: bool = False) -> None:
        kind = ("first-" if self._group_start else "") + ("row" if row else "line")
        self._group_start = False
        self._parts[-1].blocks.append((text, kind))

    def _end_heading(self) -> None:
        assert self._heading is not None
        level, pieces = self._heading
        self._heading = None
        title = " ".join("".join(pieces).split())
        if not title:
            return  # an empty <h2></h2> is layout, not structure
        while self._stack and self._stack[-1][0] >= level:
            self._stack.pop()
        self._stack.append((level, title))
        part = _Part(heading=HEADING_SEPARATOR.join(t for _, t in self._stack))
        part.blocks.append((title, "heading"))
        self._parts.append(part)

    def _list_marker(self) -> str:
        if not self._lists:
            return "-"
        counter = self._lists[-1]
        if counter[0] is None:
            return "-"
        number = counter[0]
        counter[0] = number + 1
        return f"{number}."


def _int_attr(attrs: list[tuple[str, str | None]], name: str) -> int | None:
    for key, value in attrs:
        if key == name and value is not None:
            try:
                return int(value.strip())
            except ValueError:
                return None
    return None
