"""A table answer in the desktop app: the computed statement, the rows used in a sortable table under it,
and a row that opens the sheet's text at that row. The real window, service and index; fast fake models."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
pytest.importorskip("PySide6.QtWidgets")
pytest.importorskip("pytestqt")

from PySide6.QtCore import Qt  # noqa: E402

from app.gui.launch import build_window  # noqa: E402
from app.gui.prefs import Prefs  # noqa: E402
from app.gui.table_view import RowsTable  # noqa: E402
from rag.service import Hearth, HearthConfig  # noqa: E402
from tests.fakes import HashEmbedder, ScriptedModel  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
WAIT = 20_000


@pytest.fixture(autouse=True)
def _collect_on_the_gui_thread(qapp):
    from app.gui import gcguard

    gcguard.install(qapp)
    yield
    gcguard.uninstall(qapp)


@pytest.fixture(autouse=True)
def _fixture_machine(monkeypatch):
    monkeypatch.setenv("HEARTH_SYSFS_ROOT", str(ROOT / "tests" / "fixtures" / "sysfs" / "strix-halo"))


def test_a_table_answer_shows_its_rows_sortable_and_a_row_opens_the_sheet(qtbot, tmp_path):
    sheet = tmp_path / "invoices.csv"
    sheet.write_text("Invoice;Client;Amount;Status\nINV-1;Acme;1.200,00;Unpaid\nINV-2;Globex;80,50;Paid\n"
                     "INV-3;Acme;950,00;Unpaid\nINV-4;Initech;10.000,00;Unpaid\n", encoding="utf-8")
    model = ScriptedModel("A guess [1].")
    w = build_window(HearthConfig(data_dir=tmp_path / "data", min_score=0.0), prefs=Prefs(tmp_path / "gui.ini"),
                     open_external=lambda p: None,
                     factory=lambda cfg: Hearth(cfg, embedder=HashEmbedder(), chat_model=model))
    qtbot.addWidget(w)
    w.show()
    w.start()
    w.ingest([sheet])
    qtbot.waitUntil(lambda: not w.ops.busy, timeout=WAIT)
    assert w.ask("What is the total amount of unpaid invoices?") is not None
    qtbot.waitUntil(lambda: w.ask_job is None, timeout=WAIT)
    card = w.chat.cards[-1]
    assert model.prompts == []
    assert "Total Amount: 12150" in card.body.toPlainText()
    (rows,) = card.findChildren(RowsTable)
    assert rows.rowCount() == 3 and rows.columnCount() == 4
    assert [rows.horizontalHeaderItem(j).text() for j in range(4)] == ["Invoice", "Client", "Amount", "Status"]
    # Amounts sort as numbers (10.000,00 above 1.200,00), not as text.
    rows.sortItems(2, Qt.SortOrder.DescendingOrder)
    assert [rows.item(i, 0).text() for i in range(3)] == ["INV-4", "INV-1", "INV-3"]
    # Double-clicking a row opens the sheet's text with that row highlighted.
    rows.cellDoubleClicked.emit(0, 0)
    qtbot.waitUntil(lambda: sheet.resolve() in w.sources.text_viewers, timeout=WAIT)
    viewer = w.sources.text_viewers[sheet.resolve()]
    qtbot.waitUntil(lambda: "INV-4" in viewer.highlighted, timeout=WAIT)
    assert "INV-1" not in viewer.highlighted
