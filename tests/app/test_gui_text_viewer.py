"""Finding a cited passage or quote in a document's text (app/gui/text_viewer.py `locate`), with no window."""

from __future__ import annotations

import pytest

pytest.importorskip("PySide6.QtWidgets")


def test_locate_finds_the_quote_by_offsets_then_by_text_then_by_words():
    from app.gui.text_viewer import locate

    text = "Alpha beta.\nThe fridge is cleaned\nout every Friday. Gamma."
    quote = "The fridge is cleaned\nout every Friday."
    at = text.index(quote)
    assert locate(text, at, at + len(quote), quote) == (at, at + len(quote))
    assert locate(text, 0, len(quote), quote) == (at, at + len(quote))  # stale offsets: found by its text
    moved = "Intro.\n" + text.replace("cleaned\nout", "cleaned out")
    start, end = locate(moved, at, at + len(quote), quote)  # respaced: found by its words
    assert moved[start:end] == "The fridge is cleaned out every Friday."
    assert locate("Nothing here.", 0, 5, quote) is None and locate(text, 0, 0, "") is None
