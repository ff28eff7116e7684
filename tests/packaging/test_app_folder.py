"""The one-folder app's pieces that can be checked without running PyInstaller (`make app-folder` builds it)."""

from __future__ import annotations

import ast
import sys

import pytest

from tests.packaging.conftest import ROOT, load_script

SPEC = ROOT / "packaging" / "pyinstaller" / "hearth.spec"


def spec_model_modules() -> list[str]:
    tree = ast.parse(SPEC.read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == "MODEL_MODULES":
            # A list of names and comprehensions over part numbers: evaluated on its own, nothing else of the spec.
            return list(eval(compile(ast.Expression(node.value), str(SPEC), "eval"), {"__builtins__": {"range": range}}))
    raise AssertionError("MODEL_MODULES not found in the spec")


def test_the_app_carries_every_default_models_package():
    from inference.models import CHAT_MODELS, DEFAULT_EMBEDDER

    needed = {DEFAULT_EMBEDDER.module} | {part.module for info in CHAT_MODELS.values() for part in info.parts}
    assert needed <= set(spec_model_modules())


@pytest.mark.parametrize("flags", [["-I"], []])
def test_frozen_hearth_runs_code_as_python_c_does(tmp_path, monkeypatch, flags):
    """The document readers are started as `sys.executable -I -c CODE`: in the app, `hearth -I -c CODE`."""
    main = load_script("pyinstaller/hearth_main")
    out = tmp_path / "out.txt"
    code = f"import sys; open({str(out)!r}, 'w').write(repr(sys.argv) + __name__)"
    argv = ["hearth", *flags, "-c", code, "x"]
    monkeypatch.setattr(sys, "argv", argv)
    at = main._code_argument(argv)
    assert at == len(flags) + 2
    main._run_code(at)
    assert out.read_text() == "['-c', 'x']__main__"


def test_frozen_hearth_leaves_other_command_lines_to_the_cli():
    main = load_script("pyinstaller/hearth_main")
    for argv in (["hearth"], ["hearth", "ingest", "-c"], ["hearth", "-I"], ["hearth", "-I", "-c"], ["hearth", "-c"]):
        assert main._code_argument(argv) is None, argv
