"""Workspaces: named sets of documents, each with its own index collection and conversations."""

from __future__ import annotations

import unicodedata

from inference.errors import UsageError

DEFAULT_WORKSPACE = "default"


def check_workspace(name: str) -> str:
    """A workspace name after validation: 1–100 printable characters."""
    name = name.strip()
    if not name or len(name) > 100 or any(unicodedata.category(c).startswith("C") for c in name):
        raise UsageError(f"{name!r} is not a valid workspace name.", hint="Use 1 to 100 printable characters.")
    return name
