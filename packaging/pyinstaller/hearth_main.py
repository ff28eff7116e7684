"""The one-folder app's entry point: the `hearth` command, frozen by PyInstaller (see hearth.spec)."""

import multiprocessing
import sys


def _code_argument(argv: list[str]) -> int | None:
    """Where CODE stands in `hearth [-I] -c CODE …`, or None for any other command line."""
    start = 2 if argv[1:2] == ["-I"] else 1
    return start + 1 if argv[start : start + 1] == ["-c"] and len(argv) > start + 1 else None


def _run_code(at: int) -> None:
    """`hearth [-I] -c CODE`: run Python code as `python -c` would.

    Hearth starts helper processes as `sys.executable -I -c …` (rag/parse_pool.py's document readers); in
    the frozen app sys.executable is this program, so it has to understand that form too. A frozen app's
    sys.path never holds the working folder, so -I has nothing more to do here.
    """
    code = sys.argv[at]
    sys.argv = ["-c", *sys.argv[at + 1 :]]
    exec(compile(code, "<string>", "exec"), {"__name__": "__main__"})  # noqa: S102 - python -c's own behaviour


if __name__ == "__main__":
    code_at = _code_argument(sys.argv) if getattr(sys, "frozen", False) else None
    if code_at is not None:
        _run_code(code_at)
        sys.exit(0)
    # multiprocessing's spawned workers re-run this executable; freeze_support turns those runs into workers.
    multiprocessing.freeze_support()
    from app.cli import main

    sys.exit(main())
