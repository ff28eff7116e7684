"""Hearth's front ends: the command line, the local API and MCP server, the Qt desktop app."""

import os as _os
import sys as _sys


def _drop_working_folder() -> None:
    """`python -m app` run inside a folder of documents puts that folder first on sys.path, where a planted
    `json.py` would be imported by the next line of Hearth. Drop it, unless it is where Hearth's own code lies
    (a checkout run from its root). The `hearth` program never has it there."""
    first = _sys.path[0] if _sys.path else None
    if first is None or _os.path.abspath(first or ".") != _os.getcwd():
        return
    home = _os.path.dirname(_os.path.dirname(_os.path.abspath(__file__)))
    if _os.path.realpath(first or ".") != _os.path.realpath(home):
        del _sys.path[0]


_drop_working_folder()
