"""Markdown files: one Section per heading (ATX `#` or setext underline), source text kept readable."""

from __future__ import annotations

import re
from pathlib import Path

from rag.loaders import DEFAULT_LIMITS, HEADING_SEPARATOR, Limits, Section, build_sections
from rag.loaders.text import read_text


_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*$")
_ATX_CLOSING = re.compile(r"(?:^|[ \t]+)#+$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
# Lines that cannot be the text of a setext heading (lists, quotes, tables, indented code, HTML).
_NOT_PARAGRAPH = re.compile(r"^(?: {4}|\t| {0,3}(?:[-+*][ \t]|\d{1,9}[.)][ \t]|>|\||<))")
# Lines that start a new block even right under a paragraph line, at any indentation.
_BLOCK_START = re.compile(r"^[ \t]*(?:[-+*][ \t]|\d{1,9}[.)][ \t]|>|\||<)")
_RULE = re.compile(r"^ {0,3}(?:(?:-[ \t]*){3,}|(?:\*[ \t]*){3,}|(?:_[ \t]*){3,}|=+[ \t]*)$")
_TABLE_ROW = re.compile(r"\|")  # GFM table rows need no leading pipe, so any pipe may be one
_TABLE_DELIMITER = re.compile(r"^ {0,3}\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$")
_INDENTED_CODE = re.compile(r"^(?: {4}|\t)")
_BACKTICKS = re.compile(r"`+")
_MAY_HAVE_MARKUP = re.compile(r"[*_\[<\\]")
_ESCAPE = re.compile(r"\\([\\`*_{}\[\]()#+\-.!|>~])")
_FRONT_MATTER_END = {"---", "..."}

# Emphasis and link markup, dropped so that quotes of the rendered text match the extracted text.
# Every span is bounded in length and stops at the next opener: unbounded lazy spans made a line of
# unclosed "*" or "[" quadratic (a hostile file held a reader for minutes).
_IMAGE = re.compile(r"!\[([^\[\]]{0,1000})\]\([^)]{0,2000}\)")
_LINK = re.compile(r"\[([^\[\]]{1,1000})\]\(\s{0,10}<?([^)\s>]{0,2000})>?(?:\s{1,10}[\"'][^)]{0,1000})?\)")
_AUTOLINK = re.compile(r"<((?:https?|mailto):[^>\s]{1,2000})>")
# The text inside emphasis stops at the next delimiter ("tempered"), so a failed start costs only that far.
_STRONG = re.compile(r"(\*\*|__)(?!\s)((?:(?!\1).){1,500}?)(?<!\s)\1")
_EMPHASIS = re.compile(r"(?<![\w*\\])([*_])(?![\s*_])((?:(?!\1).){1,500}?)(?<![\s\\])\1(?![\w*])")


def load(path: Path, limits: Limits = DEFAULT_LIMITS) -> list[Section]:
    """Read a Markdown file as one Section per heading-delimited part."""
    return parse(read_text(path))


def parse(text: str) -> list[Section]:
    """Split Markdown text (with "\\n" newlines) into Sections at its headings."""
    lines = _without_front_matter(text.split("\n"))
    parts: list[tuple[str, str | None, bool]] = []  # (text, heading path, has text besides its heading)
    stack: list[tuple[int, str]] = []  # open headings as (level, text), outermost first
    heading_line: str | None = None  # the current section's own heading, shown as its first line
    body: list[str] = []
    paragraph_start: int | None = None  # index in `body` where the current plain paragraph began
    fence: tuple[str, int] | None = None  # (fence char, length) while inside a fenced code block
    joinable = False  # whether the next plain line continues the last body line (a soft wrap)

    def close_section() -> None:
        has_body = any(line.strip() for line in body)
        parts.append((_section_text(heading_line, body), _path(stack), has_body))

    def open_section(level: int, title: str) -> None:
        nonlocal heading_line, body, paragraph_start, joinable
        close_section()
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, title))
        heading_line, body, paragraph_start, joinable = title, [], None, False

    for raw in lines:
        line = raw.rstrip()
        if fence is not None:
            body.append(line)
            match = _FENCE.match(line)
            if match and match.group(1)[0] == fence[0] and len(match.group(1)) >= fence[1] and not match.group(2).strip():
                fence = None
            continue
        match = _FENCE.match(line)
        # A backtick fence's info string may not contain backticks (CommonMark), else it is inline code.
        if match and not (match.group(1)[0] == "`" and "`" in match.group(2)):
            fence = (match.group(1)[0], len(match.group(1)))
            body.append(line)
            paragraph_start, joinable = None, False
            continue
        atx = _ATX.match(line)
        if atx:
            title = _clean_heading(_ATX_CLOSING.sub("", atx.group(2) or ""))
            open_section(len(atx.group(1)), title)
            continue
        setext = _SETEXT.match(line)
        if setext and paragraph_start is not None:
            title = _clean_heading(" ".join(s.strip() for s in body[paragraph_start:]))
            del body[paragraph_start:]
            open_section(1 if setext.group(1)[0] == "=" else 2, title)
            continue
        if not line.strip():
            paragraph_start, joinable = None, False
            if body and body[-1] == "":
                continue  # one blank line separates paragraphs as well as several
            body.append("")
            continue
        if joinable and not (_BLOCK_START.match(line) or _RULE.match(line) or _TABLE_ROW.search(line)):
            # A soft-wrapped line continues the one above; Markdown renders the break as a space.
            body[-1] = f"{body[-1]} {_inline(_strip_hard_break(line.strip()))}"
            joinable = not _hard_break(raw)
            continue
        if _INDENTED_CODE.match(line):
            body.append(line)
            paragraph_start, joinable = None, False
            continue
        if _NOT_PARAGRAPH.match(line) or _RULE.match(line):
            paragraph_start = None  # a list or quote began; an underline below it is a rule, not a heading
        elif paragraph_start is None:
            paragraph_start = len(body)
        body.append(_inline(_strip_hard_break(line)))
        joinable = not (_hard_break(raw) or _TABLE_ROW.search(line) or _RULE.match(line))
    close_section()
    return _drop_bare_headings(parts)


def _section_text(heading: str | None, body: list[str]) -> str:
    """The heading on its own line, then the body."""
    text = "\n".join(body).strip("\n")
    if heading:
        return f"{heading}\n{text}" if text.strip() else heading
    return text


def _drop_bare_headings(parts: list[tuple[str, str | None, bool]]) -> list[Section]:
    """Drop sections that are only a heading (a parent whose text all sits under its children)."""
    # The child's heading path still names the parent, so nothing is lost; a file of nothing but
    # headings keeps them, since they are then all the text there is.
    sections = build_sections(
        (text, None, heading, _table_spans(text)) for text, heading, has_body in parts if has_body
    )
    return sections if sections else build_sections((text, None, heading) for text, heading, _ in parts)


def _table_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each GFM pipe table: a header row, a delimiter row, then rows with pipes."""
    spans: list[tuple[int, int]] = []
    lines = text.split("\n")
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)
    i = 0
    while i + 1 < len(lines):
        if "|" in lines[i] and _TABLE_DELIMITER.match(lines[i + 1]):
            j = i + 2
            while j < len(lines) and "|" in lines[j] and lines[j].strip():
                j += 1
            spans.append((starts[i], starts[j] - 1))
            i = j
        else:
            i += 1
    return spans


def _path(stack: list[tuple[int, str]]) -> str | None:
    """The open headings as "Parent › Child", or None before the first heading."""
    titles = [title for _, title in stack if title]
    return HEADING_SEPARATOR.join(titles) if titles else None


def _clean_heading(text: str) -> str:
    """Heading text without emphasis, link and code markup."""
    text = _inline(text)
    pieces: list[str] = []
    last = 0
    for start, end, fence in _code_spans(text):
        pieces.append(text[last:start])
        pieces.append(text[start + fence : end - fence].strip())
        last = end
    pieces.append(text[last:])
    return " ".join("".join(pieces).split())


def _inline(line: str) -> str:
    """A line without emphasis and link markup; code spans are left exactly as written."""
    pieces: list[str] = []
    last = 0
    for start, end, _ in _code_spans(line):
        pieces.append(_unmark(line[last:start]))
        pieces.append(line[start:end])
        last = end
    pieces.append(_unmark(line[last:]))
    return "".join(pieces)


def _code_spans(line: str) -> list[tuple[int, int, int]]:
    """(start, end, fence length) of each code span: a backtick run closed by the next run of equal length.

    One pass over the runs (CommonMark's rule), so a line of thousands of backticks costs linear time.
    """
    if "`" not in line:
        return []
    runs = [(m.start(), m.end()) for m in _BACKTICKS.finditer(line)]
    closer: list[int | None] = [None] * len(runs)  # index of the next run of the same length
    following: dict[int, int] = {}
    for i in range(len(runs) - 1, -1, -1):
        length = runs[i][1] - runs[i][0]
        closer[i] = following.get(length)
        following[length] = i
    spans = []
    i = 0
    while i < len(runs):
        j = closer[i]
        start, end = runs[i]
        # Code needs content: a run directly followed by its closer ("````" as 2+2) is not a span.
        if j is not None and runs[j][0] > end:
            spans.append((start, runs[j][1], end - start))
            i = j + 1
        else:
            i += 1
    return spans


def _unmark(text: str) -> str:
    if not _MAY_HAVE_MARKUP.search(text):
        return text  # most lines: no pass of the five patterns below can change them
    text = _IMAGE.sub(r"\1", text)
    text = _LINK.sub(lambda m: m.group(1) if m.group(2) in {"", m.group(1)} else f"{m.group(1)} ({m.group(2)})", text)
    text = _AUTOLINK.sub(r"\1", text)
    text = _STRONG.sub(r"\2", text)
    text = _EMPHASIS.sub(r"\2", text)
    return _ESCAPE.sub(r"\1", text)


def _hard_break(raw: str) -> bool:
    """Whether a line ends in a Markdown hard line break (two spaces or a backslash)."""
    return raw.endswith("  ") or raw.rstrip().endswith("\\")


def _strip_hard_break(line: str) -> str:
    return line[:-1].rstrip() if line.endswith("\\") else line


def _without_front_matter(lines: list[str]) -> list[str]:
    """Lines without a leading YAML front matter block (metadata, not prose)."""
    if not lines or lines[0].strip() != "---":
        return lines
    for i, line in enumerate(lines[1:60], start=1):
        if line.strip() in _FRONT_MATTER_END:
            return lines[i + 1 :]
    return lines
