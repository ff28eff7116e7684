"""Small documents written for a test: a {file name: text} mapping becomes a folder to ingest."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path


def write_notes(folder: Path, notes: Mapping[str, str]) -> Path:
    """Each note as a UTF-8 file in `folder` (made if need be); returns the folder."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in notes.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder
