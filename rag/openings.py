"""A reply in another language than English that opens by copying its passage's label and title.

Asked in Russian, the default 0.5B model answers from a passage by copying it, and the copy opens with what
stands before the passage in the prompt and its first line: "[1] (parkovka.md, Парковка)\nПарковка\nМеста …".
What follows holds the answer (bench.reply_form: 7 of 8 Russian replies right, none in another language, with the
question also asked before the passages); the opening is the prompt's layout, not an answer. Three layouts of the
prompt were measured against it and none stopped it with this model (docs/evaluation.md "How replies open"), so
the opening lines are dropped as the reply streams: the number in brackets, a line naming a passage's file or
label, and a line that is a passage's title. English replies are asked again instead (rag.answer).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from pathlib import Path

from rag.store import Hit

_NUMBER = re.compile(r"\s*(?:\[\d{1,3}\]\s*)+")
_PARTIAL_NUMBER = re.compile(r"\s*(?:\[\d{1,3}\]\s*)*\[\d{0,3}")
_MAX_LINES = 3  # opening lines that may be dropped: the label, the title, and a blank line between
_MAX_LINE = 200  # an opening line still undecided after this many characters is the reply's own


def _names(passages: Sequence[Hit], separator: str) -> tuple[list[str], list[str]]:
    """The passages' file names and titles (a heading's last part), case-folded."""
    files = [Path(h.source).name.casefold() for h in passages]
    titles = [h.heading.split(separator)[-1].strip().casefold() for h in passages if h.heading]
    return files, [t for t in titles if t]


def _header_line(line: str, files: Sequence[str], titles: Sequence[str]) -> bool:
    """Whether a whole opening line is a copied label or title: "(parkovka.md, Парковка)", "obuchenie.md,
    Обучение", "Парковка"."""
    text = line.strip().strip("()[]:").strip().casefold()
    return not text or any(f in text for f in files) or text in titles


def _may_become(line: str, files: Sequence[str], titles: Sequence[str]) -> bool:
    """Whether an unfinished opening line may still become a copied label or title."""
    text = line.strip().casefold()
    if len(text) > _MAX_LINE:
        return False
    if not text or text.startswith("("):  # nothing yet, or a label in brackets not yet closed
        return True
    return any(c.startswith(text) or text.startswith(c) for c in (*files, *titles))


def copied_opening(text: str, passages: Sequence[Hit], *, separator: str, final: bool) -> int | None:
    """How many characters at the start of a reply (as written so far, or whole when `final`) are a copied label
    and title; 0 when none; None while the opening cannot tell yet."""
    files, titles = _names(passages, separator)
    if not final and _PARTIAL_NUMBER.fullmatch(text):  # "[", "[1": a number in brackets begun
        return None
    number = _NUMBER.match(text)
    at = number.end() if number else 0
    cut = 0
    for _ in range(_MAX_LINES):
        end = text.find("\n", at)
        if end < 0:  # the line is not finished
            return cut if final or not _may_become(text[at:], files, titles) else None
        if not _header_line(text[at:end], files, titles):
            break
        at = cut = end + 1
    return cut


def next_passage(line: str, passages: Sequence[Hit]) -> bool:
    """Whether a line of a reply opens the copy of a passage: its number in brackets, then its label
    ("[2] (parkovka.md, Парковка)")."""
    number = _NUMBER.match(line)
    files = [Path(h.source).name.casefold() for h in passages]
    return number is not None and any(f in line[number.end():].casefold() for f in files)


class OpeningFilter:
    """Passes a reply's pieces on to `on_token` with a copied opening (`copied_opening`) left out, and ends it
    where it runs on into the copy of another passage (`next_passage`): the opening, and a line that opens with
    a number in brackets, are held until they can tell. `text()` is the reply as passed on, once the stream has
    ended (`finish`)."""

    def __init__(self, passages: Sequence[Hit], on_token: Callable[[str], None] | None, *, separator: str) -> None:
        self.passages, self.on_token, self.separator = passages, on_token, separator
        self._held = ""  # the opening, then a line that may open another passage's copy
        self._cut: int | None = None
        self._ended = False
        self._out: list[str] = []

    def __call__(self, piece: str) -> None:
        if self._ended:
            return
        self._held += piece
        if self._cut is None:
            self._cut = copied_opening(self._held, self.passages, separator=self.separator, final=False)
            if self._cut is None:
                return
            self._held = self._held[self._cut:]
        self._lines(final=False)

    def finish(self) -> None:
        """The stream has ended: what is still held is decided on the whole reply."""
        if self._cut is None:
            self._cut = copied_opening(self._held, self.passages, separator=self.separator, final=True)
            self._held = self._held[self._cut:]
        self._lines(final=True)

    def text(self) -> str:
        return "".join(self._out).rstrip()

    def _lines(self, *, final: bool) -> None:
        """Pass on what is held, up to a line that opens with a number in brackets and is not finished yet;
        end the reply at one that opens another passage's copy."""
        while self._held and not self._ended:
            if self._out and self._out[-1].endswith("\n") and self._held.startswith("["):
                start = 0  # a line that opens with a number in brackets begins here
            else:
                found = self._held.find("\n[")
                start = found + 1 if found >= 0 else -1
            if start < 0:  # none: all but a last line break passes (the next piece may open such a line)
                keep = 0 if final or not self._held.endswith("\n") else 1
                self._pass(self._held[:len(self._held) - keep])
                self._held = self._held[len(self._held) - keep:]
                return
            self._pass(self._held[:start])
            self._held = self._held[start:]
            end = self._held.find("\n")
            if end < 0 and not final and len(self._held) <= _MAX_LINE:
                return
            line = self._held if end < 0 else self._held[:end]
            if next_passage(line, self.passages):
                self._ended, self._held = True, ""
                return
            self._pass(line)
            self._held = self._held[len(line):]

    def _pass(self, piece: str) -> None:
        if not self._out:
            piece = piece.lstrip()
        if piece:
            self._out.append(piece)
            if self.on_token is not None:
                self.on_token(piece)
