"""The one-folder app's entry point: the `hearth` command, frozen by PyInstaller (see hearth.spec)."""

import multiprocessing
import sys


def _run_code() -> None:
    """`hearth -c CODE`: run Python code as `python -c` would.

    Hearth starts helper processes as `sys.executable -c …` (rag/parse_pool.py's document readers); in
    the frozen app sys.executable is this program, so it has to understand that form too.
    """
    code = sys.argv[2]
    sys.argv = ["-c", *sys.argv[3:]]
    exec(compile(code, "<string>", "exec"), {"__name__": "__main__"})  # noqa: S102 - python -c's own behaviour


if __name__ == "__main__":
    if getattr(sys, "frozen", False) and len(sys.argv) >= 3 and sys.argv[1] == "-c":
        _run_code()
        sys.exit(0)
    # multiprocessing's spawned workers re-run this executable; freeze_support turns those runs into workers.
    multiprocessing.freeze_support()
    from app.cli import main

    sys.exit(main())
