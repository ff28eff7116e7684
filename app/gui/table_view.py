"""The rows a table answer was computed from, shown under the answer: a small sortable table.

Numbers sort as numbers and dates as dates; every cell is plain text. Double-clicking a row opens the
document at that row, as a source does.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableWidget, QTableWidgetItem

from rag.store import Hit
from rag.table_result import TableResult
from rag.tables import NUMBER, decimal_mark, parse_number

MAX_HEIGHT = 260  # pixels: a long result scrolls inside the answer instead of stretching it


class _Cell(QTableWidgetItem):
    """A cell that sorts by its number when its column holds numbers."""

    def __init__(self, text: str, key: float | None) -> None:
        super().__init__(text)
        self.key = key
        self.setFlags(Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable)

    def __lt__(self, other: QTableWidgetItem) -> bool:
        mine, theirs = self.key, getattr(other, "key", None)
        if mine is not None and theirs is not None:
            return mine < theirs
        if (mine is None) != (theirs is None):
            return mine is None  # empty cells first
        return self.text().lower() < other.text().lower()


class RowsTable(QTableWidget):
    """The rows used by a computed answer; emits `row_opened` with the row's place in the document."""

    row_opened = Signal(object)

    def __init__(self, result: TableResult, parent=None) -> None:
        table = result.table
        rows = result.rows
        super().__init__(len(rows), len(table.columns), parent)
        self.result = result
        self.setHorizontalHeaderLabels(list(table.columns))
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.verticalHeader().setVisible(False)
        self.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.horizontalHeader().setStretchLastSection(True)
        numeric = [j < len(table.types) and table.types[j] == NUMBER for j in range(len(table.columns))]
        marks = [decimal_mark([r.cells[j] for r in rows if j < len(r.cells)]) for j in range(len(table.columns))]
        for i, row in enumerate(rows):
            for j, cell in enumerate(row.cells[: len(table.columns)]):
                self.setItem(i, j, _Cell(cell, parse_number(cell, marks[j]) if numeric[j] else None))
        self.setSortingEnabled(True)
        self.setMaximumHeight(MAX_HEIGHT)
        self.cellDoubleClicked.connect(self._open)

    def _open(self, index: int, _column: int) -> None:
        cells = [self.item(index, j).text() if self.item(index, j) else "" for j in range(self.columnCount())]
        row = next((r for r in self.result.rows if list(r.cells[: len(cells)]) == cells), None)
        if row is None or row.end <= row.start:
            return
        t = self.result.table
        text = " | ".join(c for c in row.cells if c)
        self.row_opened.emit(Hit(t.source, t.page, t.sheet, 1.0, text, row.start, row.end, f"table-row:{row.number}"))
