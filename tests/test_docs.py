"""The documentation holds together: every relative link and #anchor resolves, the README stays a short front
page, the evaluation page stays one page, and the guide covers the tasks it promises (issue 64)."""

from __future__ import annotations

import re
import sys
import unicodedata
from pathlib import Path
from urllib.parse import unquote

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
EVALUATION = DOCS / "evaluation.md"
README_MAX_LINES = 300
EVALUATION_MAX_LINES = 400

FENCE = re.compile(r"^(```|~~~).*?^\1[ \t]*$", re.M | re.S)
CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1", re.S)
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t]*#*[ \t]*$", re.M)


def markdown_files() -> list[Path]:
    """The README, the changelog and every page under docs/."""
    files = [README, *sorted(DOCS.rglob("*.md"))]
    changelog = ROOT / "CHANGELOG.md"
    return files + [changelog] if changelog.exists() else files


def prose(text: str) -> str:
    """The text without fenced code blocks and code spans, where brackets are code, not links."""
    return CODE_SPAN.sub("", FENCE.sub("", text))


def links(text: str) -> list[str]:
    """Every link and image target written in the text's prose."""
    return LINK.findall(prose(text))


def slug(heading: str) -> str:
    """The anchor a heading gets, as GitHub makes it: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link in a heading keeps its words
    text = text.replace("`", "").strip().lower()
    kept = "".join(c for c in text if c in " -_" or unicodedata.category(c)[0] in "LN")
    return kept.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every #anchor the headings of a Markdown file make (a repeated heading gets -1, -2, …)."""
    seen: dict[str, int] = {}
    out = set()
    for _, heading in HEADING.findall(FENCE.sub("", path.read_text(encoding="utf-8"))):
        base = slug(heading)
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return out


def broken_links(path: Path) -> list[str]:
    """The relative links of one Markdown file that lead nowhere: a missing file, or a missing #anchor."""
    broken = []
    for target in links(path.read_text(encoding="utf-8")):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):  # http:, https:, mailto:: not ours to check
            continue
        file_part, _, anchor = target.partition("#")
        dest = (path.parent / unquote(file_part)).resolve() if file_part else path
        if not dest.exists():
            broken.append(f"{target} (no such file)")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(f"{target} (no heading makes #{anchor})")
    return broken


def test_the_slugs_are_githubs() -> None:
    assert slug("Answers and \"not found\"") == "answers-and-not-found"
    assert slug("`hearth serve`: the OpenAI-compatible API") == "hearth-serve-the-openai-compatible-api"
    assert slug("1. Build the bundle (on a connected machine)") == "1-build-the-bundle-on-a-connected-machine"
    assert slug("Proofs") == "proofs"


def test_links_in_code_are_not_links() -> None:
    text = "See [the guide](docs/README.md).\n\n```\nprint([1](2))\n```\nand `[n](x)` too, ![pic](a.png)"
    assert links(text) == ["docs/README.md", "a.png"]


@pytest.mark.parametrize("path", markdown_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(path: Path) -> None:
    assert broken_links(path) == []


def test_the_readme_is_a_short_front_page_with_the_two_commands_first() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines (at most {README_MAX_LINES})"
    top = "\n".join(lines[:20])
    assert "make run" in top and "make test" in top


def test_the_readme_holds_no_lab_notes() -> None:
    text = README.read_text(encoding="utf-8").lower()
    for note in ("load average", "(now)", "one-off", "tuning half", "held-out half", "held out", "held-out"):
        assert note not in text, f"README.md holds lab notes: {note!r}; they belong in docs/evaluation.md"


def test_the_readme_keeps_its_proofs_table_and_its_tests_exist() -> None:
    text = README.read_text(encoding="utf-8")
    section = text.split("\n## Proofs\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ") and not line.startswith("| promise")]
    assert len(rows) >= 14, "one row per promise"
    cited = set(re.findall(r"`(tests/[\w/]+\.py)(?:::\w+)?`", section))
    assert cited, "the proofs cite their tests"
    missing = sorted(p for p in cited if not (ROOT / p).is_file())
    assert not missing, f"the Proofs table cites tests that do not exist: {missing}"


def test_the_evaluation_page_is_one_page_of_reproducible_figures() -> None:
    text = EVALUATION.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= EVALUATION_MAX_LINES
    commands = set(re.findall(r"python -m (bench\.\w+)", text))
    assert {"bench.retrieval", "bench.quotes", "bench.office_notes", "bench.tables", "bench.ocr"} <= commands
    for module in commands:
        assert (ROOT / "bench" / f"{module.split('.', 1)[1]}.py").is_file(), f"{module} is not in bench/"
    assert "(now)" not in text and "superseded" not in text.lower()
    assert "## Grounding ablation" in text


def test_the_guide_covers_the_tasks_people_come_for() -> None:
    guide = "\n".join(p.read_text(encoding="utf-8") for p in sorted(DOCS.glob("*.md"))).lower()
    for task in ("drag", "hearth ask", "hearth serve", "mcp", "scan", "tables", "summar", "gpu",
                 "offline", "shared office", "hearth ingest", "hearth search", "hearth sources", "hearth forget"):
        assert task in guide, f"no page under docs/ covers {task!r}"


def test_every_guide_page_is_in_the_index() -> None:
    index = (DOCS / "README.md").read_text(encoding="utf-8")
    pages = {p.name for p in DOCS.glob("*.md")} - {"README.md"}
    missing = sorted(p for p in pages if f"({p})" not in index)
    assert not missing, f"docs/README.md does not list {missing}"


def test_the_screenshots_are_made_by_the_documented_command(monkeypatch) -> None:
    assert (ROOT / "packaging" / "make_screenshots.py").is_file()
    assert "python packaging/make_screenshots.py" in (DOCS / "README.md").read_text(encoding="utf-8")
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_screenshots", ROOT / "packaging" / "make_screenshots.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)  # its dataclass looks its module up there
    spec.loader.exec_module(module)  # packaging/ is no package: `packaging` is another project's name
    for name, shot in module.shots().items():
        assert (DOCS / "screenshots" / f"{name}.png").is_file()
        cmd = module.command(shot, png=Path("x.png"), data=Path("d"), documents=None)
        assert cmd[1:3] == ["-m", "app"] and "--screenshot" in cmd
