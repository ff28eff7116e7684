"""The architecture's rules, checked on the source of every module (docs/architecture.md, "Layers").

Read with the AST, not by importing, so a rule holds for imports inside functions and under TYPE_CHECKING
too, and for modules no test happens to import.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("app", "rag", "inference")
LAYER = {"inference": 0, "rag": 1, "app": 2}  # a module may import only its own layer and those below
MAX_LINES = 650
MAX_FUNCTION_LINES = 80  # a function of the service (rag/) reads on one screen


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for pkg in PACKAGES for p in sorted((ROOT / pkg).rglob("*.py"))}


def _imports(name: str, path: Path) -> set[str]:
    """The project's modules that `name` imports, anywhere in its source (a submodule counts with its packages)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text("utf-8"), str(path))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]
        for target in targets:
            parts = target.split(".")
            # Importing a.b.c runs a/__init__ and a/b/__init__ first.
            for i in range(1, len(parts) + 1):
                candidate = ".".join(parts[:i])
                if candidate in MODULES and candidate != name:
                    found.add(candidate)
    return found


GRAPH = {name: _imports(name, path) for name, path in MODULES.items()}


def test_every_module_is_checked():
    assert {"app.cli", "app.gui.main_window", "rag.service", "rag.components", "inference.hardware"} <= set(MODULES)
    assert len(MODULES) > 60


@pytest.mark.parametrize("name", sorted(MODULES))
def test_imports_point_down_only(name):
    """inference imports no rag or app; rag imports no app."""
    own = LAYER[name.split(".")[0]]
    upward = sorted(m for m in GRAPH[name] if LAYER[m.split(".")[0]] > own)
    assert not upward, f"{name} imports {upward}, a layer above it"


@pytest.mark.parametrize("name", sorted(MODULES))
def test_qt_only_in_the_desktop_app(name):
    if name == "app.gui" or name.startswith("app.gui."):
        return
    tree = ast.parse(MODULES[name].read_text("utf-8"))
    qt = [n.lineno for n in ast.walk(tree)
          if (isinstance(n, ast.Import) and any(a.name.split(".")[0] in ("PySide6", "shiboken6") for a in n.names))
          or (isinstance(n, ast.ImportFrom) and (n.module or "").split(".")[0] in ("PySide6", "shiboken6"))]
    assert not qt, f"{name} imports Qt (lines {qt}); only app/gui/ may"


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected group of two or more modules (Tarjan), each a circle of imports."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return groups


def test_no_import_circle_between_modules():
    assert _cycles(GRAPH) == []


def test_the_cycle_finder_finds_a_circle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


@pytest.mark.parametrize("name", sorted(MODULES))
def test_modules_stay_readable_in_one_sitting(name):
    path = MODULES[name]
    assert path.stem not in ("utils", "helpers", "misc"), f"{path}: name the module by what it holds"
    lines = len(path.read_text("utf-8").splitlines())
    assert lines <= MAX_LINES, f"{path.relative_to(ROOT)} has {lines} lines (at most {MAX_LINES})"


@pytest.mark.parametrize("name", sorted(m for m in MODULES if m.startswith("rag.")))
def test_the_services_functions_stay_short(name):
    path = MODULES[name]
    long = [f"{node.name} ({node.end_lineno - node.lineno + 1} lines)"
            for node in ast.walk(ast.parse(path.read_text("utf-8")))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES]
    assert not long, f"{path.relative_to(ROOT)}: {', '.join(long)} over {MAX_FUNCTION_LINES} lines"


# The parts the service owns: only rag/components.py builds them.
BUILT_ONLY_BY_COMPONENTS = {"LlamaCppModel", "OpenAIChatModel", "OnnxEmbedder", "OnnxCrossEncoder", "ChromaStore",
                            "HybridStore", "SharedHybridStore", "LexicalIndex"}
STORE_TYPES = {"ChromaStore", "HybridStore", "SharedHybridStore", "SharedChromaStore", "VectorStore"}


@pytest.mark.parametrize("name", sorted(m for m in MODULES if m.startswith("app.") or m == "rag.service"))
def test_front_ends_and_the_service_build_no_part_and_never_ask_the_stores_type(name):
    tree = ast.parse(MODULES[name].read_text("utf-8"))
    built = [(n.lineno, n.func.id if isinstance(n.func, ast.Name) else n.func.attr) for n in ast.walk(tree)
             if isinstance(n, ast.Call) and isinstance(n.func, (ast.Name, ast.Attribute))
             and (n.func.id if isinstance(n.func, ast.Name) else n.func.attr) in BUILT_ONLY_BY_COMPONENTS]
    assert not built, f"{name} builds {built}: ask the service (rag/components.py builds parts)"
    asked = [n.lineno for n in ast.walk(tree)
             if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "isinstance"
             and any(isinstance(a, ast.Name) and a.id in STORE_TYPES for a in ast.walk(n.args[1]))]
    assert not asked, f"{name} branches on the store's type (lines {asked}); use the DocumentIndex protocol"
