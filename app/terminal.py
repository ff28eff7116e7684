"""What the command line prints carries no terminal control characters.

A document (an e-mail's subject, a file's name, a reply that quotes a passage) can hold escape sequences:
OSC 8 links that point elsewhere than they say, a new window title, a cleared screen, or C1 codes some
terminals obey. The loaders already turn them into spaces (rag.loaders.without_controls); an index made
before that, a file's name, or a model's reply can still hold them, so the streams the CLI writes to remove
them too. JSON output is unaffected in meaning: JSON escapes C0 itself, and a removed DEL or C1 code was
never text a user could read.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import Any, TextIO

from rag.loaders import without_controls


class PlainStream:
    """A text stream that drops terminal control characters (tab, newline and carriage return pass)."""

    def __init__(self, inner: TextIO) -> None:
        self._inner = inner

    def write(self, text: str) -> int:
        self._inner.write(without_controls(text, ""))
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:  # flush, isatty, fileno, encoding, buffer…
        return getattr(self._inner, name)


@contextlib.contextmanager
def plain_output() -> Iterator[None]:
    """While inside, sys.stdout and sys.stderr drop terminal control characters."""
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = PlainStream(sys.stdout), PlainStream(sys.stderr)  # type: ignore[assignment]
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved
