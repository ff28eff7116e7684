"""The library's Compare actions and the comparison window, offscreen."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
pytest.importorskip("PySide6.QtWidgets")
pytest.importorskip("pytestqt")

from app.gui.compare_view import ADDED_STYLE, REMOVED_STYLE  # noqa: E402
from app.gui.launch import build_window  # noqa: E402
from app.gui.prefs import Prefs  # noqa: E402
from rag.service import Hearth, HearthConfig  # noqa: E402
from tests.fakes import HashEmbedder, ScriptedModel  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
WAIT = 20_000
POLICY = ("# Travel policy\n\n## Meals\n\nMeals are paid at EUR 45 per day. Alcohol is not refunded.\n\n"
          "## Hotels\n\nHotels up to EUR 150 per night are refunded. Book through the travel desk.\n")


@pytest.fixture(autouse=True)
def _fixture_machine(monkeypatch):
    monkeypatch.setenv("HEARTH_SYSFS_ROOT", str(ROOT / "tests" / "fixtures" / "sysfs" / "strix-halo"))


def revise(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8")
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))


def test_compare_with_the_previous_version_side_by_side(qtbot, tmp_path, monkeypatch):
    docs = tmp_path / "docs"
    docs.mkdir()
    policy, other = docs / "travel-policy.md", docs / "travel-policy-draft.md"
    revise(policy, POLICY)
    revise(other, POLICY.replace("EUR 150", "EUR 120"))
    w = build_window(HearthConfig(data_dir=tmp_path / "data"), prefs=Prefs(tmp_path / "gui.ini"),
                     open_external=lambda p: None,
                     factory=lambda cfg: Hearth(cfg, embedder=HashEmbedder(), chat_model=ScriptedModel("ok")))
    qtbot.addWidget(w)
    w.show()
    w.start()
    w.ingest([docs])
    qtbot.waitUntil(lambda: not w.ops.busy, timeout=WAIT)
    lib, source = w.library, str(policy.resolve())
    assert lib.versions == {} and "earlier" not in lib.status_text(source)[0]

    revise(policy, POLICY.replace("EUR 45", "EUR 50").replace("travel desk.", "travel desk. Trains are preferred."))
    w.ingest([docs])
    qtbot.waitUntil(lambda: not w.ops.busy and bool(lib.versions), timeout=WAIT)
    assert lib.versions == {source: 1}
    assert "1 earlier version" in lib.status_text(source)[0]  # the library shows it has earlier versions

    lib.tree.setCurrentItem(lib.rows[source])
    menu = lib._menu()
    menu.aboutToShow.emit()
    actions = {a.text(): a for a in menu.actions()}
    assert actions["Compare with previous version"].isEnabled() and actions["Compare with…"].isEnabled()
    actions["Compare with previous version"].trigger()
    qtbot.waitUntil(lambda: w.documents.compare_view is not None, timeout=WAIT)
    view = w.documents.compare_view
    assert view.isVisible() and view.changes.count() == 2 and view.current() == 0
    assert "changed" in view.changes.item(0).text() and "Meals" in view.changes.item(0).text()
    old_html, new_html = view.old_text.toHtml(), view.new_text.toHtml()
    assert "45" in old_html and "50" not in old_html and "50" in new_html
    assert view.old_text.toPlainText().strip() == "Meals are paid at EUR 45 per day."
    assert "Change 1 of 2" == view.position.text() and not view.previous.isEnabled()
    # Both documents whole below, the selected change highlighted where it stands and scrolled to.
    assert "Hotels up to EUR 150" in view.old_doc.toPlainText()
    assert "Trains are preferred." in view.new_doc.toPlainText()
    old_span, new_span = view.spans[0]
    assert view.old_doc.toPlainText()[old_span[0]:old_span[1]] == "Meals are paid at EUR 45 per day."
    assert view.new_doc.toPlainText()[new_span[0]:new_span[1]] == "Meals are paid at EUR 50 per day."
    assert view.new_doc.textCursor().position() == new_span[0]
    assert len(view.old_doc.extraSelections()) == 1 and len(view.new_doc.extraSelections()) == 2  # added: new side
    view.step(1)
    assert view.current() == 1 and "added" in view.changes.item(1).text()
    assert view.new_text.toPlainText().strip() == "Trains are preferred." and not view.next.isEnabled()
    assert view.old_text.toPlainText().strip() == "Not in the old version."
    assert view.new_doc.textCursor().position() == view.spans[1][1][0] and view.spans[1][0] is None

    # Compare with another document, chosen in a list.
    from PySide6.QtWidgets import QInputDialog

    monkeypatch.setattr(QInputDialog, "getItem", lambda *a, **k: (a[3][0], True))
    w.documents.compare_view = None
    w.documents.compare_with(source)
    qtbot.waitUntil(lambda: w.documents.compare_view is not None, timeout=WAIT)
    view = w.documents.compare_view
    assert Path(view.comparison.old.source).name == "travel-policy-draft.md"
    assert {view.changes.item(n).text().split(" ")[1] for n in range(view.changes.count())} == {"changed", "added"}


def test_change_html_marks_the_words_on_each_side():
    from app.gui.compare_view import change_html
    from rag.compare import Change

    old, new = change_html(Change("changed", None, "Pay EUR 45 a day.", "Pay EUR 50 a day.", 1, 1))
    assert f'<span style="{REMOVED_STYLE}">45</span>' in old and "50" not in old
    assert f'<span style="{ADDED_STYLE}">50</span>' in new and "45" not in new
    old, new = change_html(Change("added", None, None, "Trains <preferred>.", None, 2))
    assert old == "" and "Trains &lt;preferred&gt;." in new
