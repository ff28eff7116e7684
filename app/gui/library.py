"""The library panel: the workspace's documents with per-file status, overall progress, rate and ETA."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QAction, QBrush, QPalette
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QMenu,
    QProgressBar,
    QPushButton,
    QToolButton,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from app.gui import theme
from app.gui.operations import Converting, FileResult, FileStage, Queued
from app.gui.widgets import Banner, muted, plain_tooltip, title
from rag.ingest import IngestReport, Progress
from rag.loaders import read_ocr_note
from rag.manifest import DocumentRecord

# Status keys; their labels are translated in `LibraryPanel.status_label`.
QUEUED, READING, EMBEDDING, DONE, FAILED, STOPPED, INTERRUPTED = (
    "queued", "reading", "embedding", "done", "failed", "stopped", "interrupted")
_COL_NAME, _COL_STATUS, _COL_CHUNKS = 0, 1, 2
_NOTE = Qt.ItemDataRole.UserRole + 1  # the manifest's note of a row (what OCR read), on the status column


class LibraryPanel(QWidget):
    """Documents of the current workspace; emits the user's requests, shows what the operations report."""

    add_files_requested = Signal()
    add_folder_requested = Signal()
    remove_requested = Signal(list)
    reindex_requested = Signal(list)
    open_requested = Signal(str)
    ask_about_requested = Signal(list)  # documents to limit the next questions to
    summarize_requested = Signal(str)  # a document to summarize in the chat
    compare_with_requested = Signal(str)  # a document to compare with another one (chosen next)
    compare_previous_requested = Signal(str)  # a document to compare with its previous version
    cancel_requested = Signal()
    watch_requested = Signal()
    unwatch_requested = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.rows: dict[str, QTreeWidgetItem] = {}
        self.versions: dict[str, int] = {}  # earlier versions kept, by document (those with any)
        self._current: str | None = None
        self._run_started = 0.0
        lay = QVBoxLayout(self)
        lay.setContentsMargins(8, 8, 8, 8)
        lay.setSpacing(6)

        bar = QHBoxLayout()
        self.add_files = QPushButton(self.tr("Add files…"))
        self.add_files.setToolTip(self.tr("Add documents to this workspace (Ctrl+O)"))
        self.add_files.clicked.connect(self.add_files_requested)
        bar.addWidget(self.add_files)
        self.add_folder = QPushButton(self.tr("Add folder…"))
        self.add_folder.clicked.connect(self.add_folder_requested)
        bar.addWidget(self.add_folder)
        bar.addStretch(1)
        self.ask_about = QPushButton(self.tr("Ask about these"))
        self.ask_about.setToolTip(self.tr("Answer the next questions from the selected documents only"))
        self.ask_about.clicked.connect(self._ask_about)
        self.ask_about.setEnabled(False)
        bar.addWidget(self.ask_about)
        self.more = QToolButton()
        self.more.setText("⋯")
        self.more.setToolTip(self.tr("More actions for the selected documents"))
        self.more.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        self.more.setMenu(self._menu())
        bar.addWidget(self.more)
        lay.addLayout(bar)

        self.banner = Banner()
        lay.addWidget(self.banner)

        self.progress_box = QWidget()
        pl = QVBoxLayout(self.progress_box)
        pl.setContentsMargins(0, 0, 0, 0)
        pl.setSpacing(2)
        prow = QHBoxLayout()
        self.progress = QProgressBar()
        self.progress.setTextVisible(False)
        self.progress.setFixedHeight(8)
        prow.addWidget(self.progress, 1)
        self.cancel = QPushButton(self.tr("Cancel"))
        self.cancel.setToolTip(self.tr("Stop indexing; the documents done so far are kept"))
        self.cancel.clicked.connect(self.cancel_requested)
        prow.addWidget(self.cancel)
        pl.addLayout(prow)
        self.progress_text = muted()
        pl.addWidget(self.progress_text)
        self.progress_box.hide()
        lay.addWidget(self.progress_box)

        self.tree = QTreeWidget()
        self.tree.setColumnCount(3)
        self.tree.setHeaderLabels([self.tr("Document"), self.tr("Status"), self.tr("Passages")])
        self.tree.setRootIsDecorated(False)
        self.tree.setAlternatingRowColors(True)
        self.tree.setUniformRowHeights(True)
        self.tree.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.tree.setSortingEnabled(True)
        self.tree.sortByColumn(_COL_NAME, Qt.SortOrder.AscendingOrder)
        header = self.tree.header()
        header.setSectionResizeMode(_COL_NAME, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(_COL_STATUS, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(_COL_CHUNKS, QHeaderView.ResizeMode.ResizeToContents)
        header.setStretchLastSection(False)
        self.tree.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.tree.customContextMenuRequested.connect(
            lambda pos: self._menu().exec(self.tree.viewport().mapToGlobal(pos)))
        self.tree.itemSelectionChanged.connect(lambda: self.ask_about.setEnabled(bool(self.searchable())))
        self.tree.itemDoubleClicked.connect(
            lambda item, _c: self.open_requested.emit(item.data(0, Qt.ItemDataRole.UserRole)))
        lay.addWidget(self.tree, 1)
        self.summary = muted()
        lay.addWidget(self.summary)

        head = QHBoxLayout()
        head.addWidget(title(self.tr("Watched folders")))
        head.addStretch(1)
        self.watch_button = QPushButton(self.tr("Watch a folder…"))
        self.watch_button.setToolTip(self.tr("Keep a folder in sync: new, changed and deleted files are picked up "
                                             "by themselves"))
        self.watch_button.clicked.connect(self.watch_requested)
        head.addWidget(self.watch_button)
        lay.addLayout(head)
        self.watched = QTreeWidget()
        self.watched.setColumnCount(2)
        self.watched.setHeaderHidden(True)
        self.watched.setRootIsDecorated(False)
        self.watched.setMaximumHeight(90)
        self.watched.header().setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        self.watched.header().setSectionResizeMode(1, QHeaderView.ResizeMode.ResizeToContents)
        self.watched.header().setStretchLastSection(False)
        self.watched.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.watched.customContextMenuRequested.connect(self._watch_menu)
        lay.addWidget(self.watched)
        self.watched_empty = muted(self.tr("None: documents are indexed when you add them."))
        lay.addWidget(self.watched_empty)
        self.watched.hide()
        hint = muted(self.tr("Drop files or folders anywhere on the window to add them; drop a .gguf file to add "
                             "a chat model."))
        lay.addWidget(hint)
        self._update_summary()

    def _menu(self) -> QMenu:
        menu = QMenu(self)
        open_ = QAction(self.tr("Open"), menu)
        open_.triggered.connect(lambda: [self.open_requested.emit(s) for s in self.selected()[:1]])
        ask = QAction(self.tr("Ask about these"), menu)
        ask.triggered.connect(self._ask_about)
        summarize = QAction(self.tr("Summarize"), menu)
        summarize.setToolTip(self.tr("A summary of the whole document, section by section, in the chat"))
        summarize.triggered.connect(lambda: [self.summarize_requested.emit(s) for s in self.searchable()[:1]])
        compare = QAction(self.tr("Compare with…"), menu)
        compare.setToolTip(self.tr("What changed between this document and another one"))
        compare.triggered.connect(lambda: [self.compare_with_requested.emit(s) for s in self.searchable()[:1]])
        previous = QAction(self.tr("Compare with previous version"), menu)
        previous.setToolTip(self.tr("What changed since the version indexed before this one"))
        previous.triggered.connect(lambda: [self.compare_previous_requested.emit(s) for s in self.searchable()[:1]])
        menu.addAction(open_)
        menu.addAction(ask)
        menu.addAction(summarize)
        menu.addAction(compare)
        menu.addAction(previous)
        menu.addSeparator()
        reindex = QAction(self.tr("Re-index"), menu)
        reindex.triggered.connect(lambda: self.selected() and self.reindex_requested.emit(self.selected()))
        remove = QAction(self.tr("Remove from the library"), menu)
        remove.triggered.connect(lambda: self.selected() and self.remove_requested.emit(self.selected()))
        for a in (reindex, remove):
            menu.addAction(a)

        def enable() -> None:
            for a in (open_, reindex, remove):
                a.setEnabled(bool(self.selected()))
            ask.setEnabled(bool(self.searchable()))
            one = len(self.selected()) == 1 and bool(self.searchable())
            summarize.setEnabled(one)
            compare.setEnabled(one and len(self.indexed()) > 1)
            previous.setEnabled(one and self.versions.get(self.selected()[0], 0) > 0)

        menu.aboutToShow.connect(enable)
        return menu

    def indexed(self) -> list[str]:
        """Every indexed document of the list, in its order."""
        return [s for s, item in sorted(self.rows.items(), key=lambda r: r[0])
                if item.data(_COL_STATUS, Qt.ItemDataRole.UserRole) == DONE]

    def set_versions(self, counts: dict[str, int]) -> None:
        """Show which documents have earlier versions kept (they can be compared with the previous one)."""
        changed = set(self.versions) | set(counts)
        self.versions = dict(counts)
        for source in changed:
            if source in self.rows and self.status_of(source) == DONE:
                self._set(source, DONE)

    def searchable(self) -> list[str]:
        """The selected documents that are indexed (what a question or a summary can use)."""
        return [s for s in self.selected() if self.status_of(s) == DONE]

    def _ask_about(self) -> None:
        if self.searchable():
            self.ask_about_requested.emit(self.searchable())

    def set_watched(self, folders: Sequence[str]) -> None:
        """The workspace's watched folders (their state follows with `set_watch_state`)."""
        self.watched.clear()
        for folder in folders:
            item = QTreeWidgetItem([Path(folder).name or folder, self.tr("starting…")])
            item.setToolTip(0, plain_tooltip(folder))
            item.setData(0, Qt.ItemDataRole.UserRole, folder)
            self.watched.addTopLevelItem(item)
        self.watched.setVisible(bool(folders))
        self.watched_empty.setVisible(not folders)

    def set_watch_state(self, text: str, *, level: str = "info", tooltip: str = "") -> None:
        """The sync state of the watched folders (one watcher keeps them all)."""
        colour = {"ok": theme.OK, "warning": theme.WARN, "error": theme.ERROR}.get(level)
        for i in range(self.watched.topLevelItemCount()):
            item = self.watched.topLevelItem(i)
            item.setText(1, text)
            item.setToolTip(1, plain_tooltip(tooltip or text))
            item.setForeground(1, QBrush(colour) if colour else self.palette().brush(QPalette.ColorRole.Text))

    def watch_state(self) -> str:
        """The state text shown (for tests)."""
        item = self.watched.topLevelItem(0)
        return item.text(1) if item is not None else ""

    def _watch_menu(self, pos) -> None:
        item = self.watched.itemAt(pos)
        if item is None:
            return
        menu = QMenu(self)
        folder = item.data(0, Qt.ItemDataRole.UserRole)
        menu.addAction(self.tr("Open folder"), lambda: self.open_requested.emit(folder))
        menu.addAction(self.tr("Stop watching"), lambda: self.unwatch_requested.emit(folder))
        menu.exec(self.watched.viewport().mapToGlobal(pos))

    def selected(self) -> list[str]:
        """Sources of the selected rows."""
        return [item.data(0, Qt.ItemDataRole.UserRole) for item in self.tree.selectedItems()]

    def status_label(self, status: str) -> str:
        """A status key in the user's language."""
        return {
            QUEUED: self.tr("queued"), READING: self.tr("reading…"), EMBEDDING: self.tr("embedding…"),
            DONE: self.tr("done"), FAILED: self.tr("failed"), STOPPED: self.tr("not indexed (stopped)"),
            INTERRUPTED: self.tr("interrupted, will be redone"),
        }.get(status, status)

    def done_count(self) -> int:
        """Documents indexed and searchable."""
        return sum(1 for s in self.rows if self.status_of(s) == DONE)

    def scan_label(self, note: str | None) -> tuple[str, str, bool] | None:
        """A document's OCR note in the library's words: (label, tooltip, read poorly), or None if not scanned."""
        read = read_ocr_note(note)
        if read is None:
            return None
        if read.low_confidence:
            label = self.tr("scanned, low confidence")
            if read.pages:
                tip = self.tr("Read by OCR from page images, poorly on pages: {pages}. Check their text against the "
                              "original before relying on it.").format(pages=read.pages)
            else:
                tip = self.tr("Read by OCR from page images, poorly: check the text against the original before "
                              "relying on it.")
            return label, tip, True
        if read.pages:
            return (self.tr("scanned"), self.tr("Pages read by OCR from page images: {pages}.").format(pages=read.pages),
                    False)
        return self.tr("scanned"), self.tr("Read by OCR from page images."), False

    def status_text(self, source: str) -> tuple[str, str]:
        """The status column's text and tooltip of a document's row (for tests)."""
        item = self.rows.get(source)
        return ("", "") if item is None else (item.text(_COL_STATUS), item.toolTip(_COL_STATUS))

    def status_of(self, source: str) -> str | None:
        """The status key of a document's row (for tests)."""
        item = self.rows.get(source)
        return None if item is None else item.data(_COL_STATUS, Qt.ItemDataRole.UserRole)

    # What the operations report.
    def set_documents(self, records: Sequence[DocumentRecord]) -> None:
        """Show the index's documents (rows of a running batch keep their live status)."""
        live = {s for s, item in self.rows.items()
                if item.data(_COL_STATUS, Qt.ItemDataRole.UserRole) in (QUEUED, READING, EMBEDDING, FAILED, STOPPED)}
        keep = {r.source for r in records} | live
        for source in list(self.rows):
            if source not in keep:
                self.tree.takeTopLevelItem(self.tree.indexOfTopLevelItem(self.rows.pop(source)))
        for r in records:
            if r.source in live and self.status_of(r.source) not in (FAILED, STOPPED):
                continue
            self._set(r.source, DONE if r.status == "done" else INTERRUPTED, chunks=r.chunks, pages=r.pages,
                      note=r.note or "")
        self._update_summary()

    def clear(self) -> None:
        """Empty the list (another workspace)."""
        self.tree.clear()
        self.rows.clear()
        self._current = None
        self.progress_box.hide()
        self.banner.hide()
        self._update_summary()

    def begin(self) -> None:
        """An ingest run was submitted."""
        self._run_started = time.monotonic()
        self.progress.setRange(0, 0)  # busy until the files are known
        self.progress_text.setText(self.tr("Looking for documents…"))
        self.cancel.setEnabled(True)
        self.progress_box.show()
        self.banner.hide()

    def on_progress(self, event: object) -> None:
        """Queued, FileStage or Progress events of the running batch."""
        if isinstance(event, Queued):
            for source in event.files:
                if self.status_of(source) not in (READING, EMBEDDING):
                    self._set(source, QUEUED)
            for source, reason in event.refused:
                self._set(source, FAILED, reason=reason)
        elif isinstance(event, FileStage):
            self._current = event.source
            self._set(event.source, EMBEDDING if event.stage == EMBEDDING else READING)
        elif isinstance(event, FileResult):
            self._set(event.source, DONE if event.ok else FAILED, chunks=event.chunks)
            if self._current == event.source:
                self._current = None
        elif isinstance(event, Progress):
            self._show_progress(event)
        elif isinstance(event, Converting):
            self.progress_text.setText(self.tr("Converting the embedding model in {folder} (a minute or so)…").format(
                folder=Path(event.folder).name))
        self._update_summary()

    def finish(self, report: IngestReport | None, *, stopped: bool = False) -> None:
        """The batch ended: mark failures with their reasons, stopped files as not indexed."""
        if self._current and self.status_of(self._current) in (READING, EMBEDDING):
            self._set(self._current, STOPPED if stopped else DONE)
        self._current = None
        for source, item in self.rows.items():
            if item.data(_COL_STATUS, Qt.ItemDataRole.UserRole) == QUEUED:
                self._set(source, STOPPED)
        if report is not None:
            for f in report.failed:
                self._set(f.source, FAILED, reason=f.error)
        self.progress_box.hide()
        if stopped:
            self.banner.show_message(self.tr("Indexing stopped."),
                                     self.tr("The documents indexed so far are kept; add the rest again to go on."),
                                     level="warning")
        elif report is not None and report.failed:
            self.banner.show_message(
                self.tr("{n} of the documents could not be read.").format(n=len(report.failed)),
                self.tr("Each one's reason is in its row (hover for the full text)."), level="warning")
        self._update_summary()

    def _show_progress(self, p: Progress) -> None:
        total = max(p.files_total, 1)
        self.progress.setRange(0, total)
        self.progress.setValue(p.files_done)
        text = self.tr("{done} of {total} files · {chunks} passages").format(
            done=p.files_done, total=p.files_total, chunks=p.chunks)
        if p.pages and p.elapsed > 0:  # pages read so far, OCR'd ones included: a scan's pace is pages/s
            text += " · " + self.tr("{pages} pages, {rate:.1f} pages/s").format(pages=p.pages,
                                                                              rate=p.pages / p.elapsed)
        if p.files_done and p.elapsed > 0 and p.files_done < p.files_total:
            eta = getattr(p, "eta", None)
            if eta is None:
                eta = (p.files_total - p.files_done) * p.elapsed / p.files_done
            rate = p.chunks / p.elapsed
            text += " · " + self.tr("{rate:.0f} passages/s · about {eta} left").format(rate=rate, eta=_duration(eta))
        self.progress_text.setText(text)

    def _set(self, source: str, status: str, *, reason: str | None = None, chunks: int | None = None,
             pages: int | None = None, note: str | None = None) -> None:
        """Show a row's status; `note` is the manifest's ("" for none), None keeps the one the row has."""
        item = self.rows.get(source)
        if item is None:
            item = _Item()
            item.setText(_COL_NAME, Path(source).name)
            item.setData(0, Qt.ItemDataRole.UserRole, source)
            item.setTextAlignment(_COL_CHUNKS, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            self.tree.addTopLevelItem(item)
            self.rows[source] = item
        item.setData(_COL_STATUS, Qt.ItemDataRole.UserRole, status)
        if note is not None:
            item.setData(_COL_STATUS, _NOTE, note)
        label = self.status_label(status)
        if status == FAILED and reason:
            label += ": " + _short_reason(reason, Path(source).name)
        colour = {DONE: theme.OK, FAILED: theme.ERROR, STOPPED: theme.WARN, INTERRUPTED: theme.WARN}.get(status)
        scan = self.scan_label(item.data(_COL_STATUS, _NOTE)) if status == DONE else None
        if scan is not None:
            label, reason = f"{label} · {scan[0]}", scan[1]  # the tooltip says what OCR read, and how well
            colour = theme.WARN if scan[2] else colour
        earlier = self.versions.get(source, 0) if status == DONE else 0
        if earlier:
            label += " · " + (self.tr("1 earlier version") if earlier == 1 else
                              self.tr("{n} earlier versions").format(n=earlier))
            reason = (reason + "\n" if reason else "") + self.tr(
                "Earlier versions are kept: right-click › Compare with previous version shows what changed.")
        item.setText(_COL_STATUS, label)
        item.setForeground(_COL_STATUS, QBrush(colour) if colour else self.palette().brush(QPalette.ColorRole.Text))
        tip = source if not reason else f"{source}\n{reason}"
        if pages:
            tip += "\n" + self.tr("{n} pages").format(n=pages)
        item.setToolTip(_COL_NAME, plain_tooltip(tip))  # file names and reasons are shown as they are
        item.setToolTip(_COL_STATUS, plain_tooltip(reason or label))
        if chunks is not None:
            item.setText(_COL_CHUNKS, str(chunks))
            item.setData(_COL_CHUNKS, Qt.ItemDataRole.UserRole, chunks)

    def _update_summary(self) -> None:
        counts: dict[str, int] = {}
        chunks = 0
        for item in self.rows.values():
            s = item.data(_COL_STATUS, Qt.ItemDataRole.UserRole)
            counts[s] = counts.get(s, 0) + 1
            chunks += int(item.data(_COL_CHUNKS, Qt.ItemDataRole.UserRole) or 0)
        if not self.rows:
            self.summary.setText(self.tr("No documents yet."))
            return
        text = self.tr("{n} documents · {chunks} passages").format(n=counts.get(DONE, 0), chunks=chunks)
        if counts.get(FAILED):
            text += " · " + self.tr("{n} failed").format(n=counts[FAILED])
        self.summary.setText(text)


class _Item(QTreeWidgetItem):
    """Sorts the passages column as numbers."""

    def __lt__(self, other: QTreeWidgetItem) -> bool:
        tree = self.treeWidget()
        col = tree.sortColumn() if tree else 0
        if col == _COL_CHUNKS:
            role = Qt.ItemDataRole.UserRole
            return int(self.data(col, role) or 0) < int(other.data(col, role) or 0)
        return self.text(col).lower() < other.text(col).lower()


def _short_reason(reason: str, name: str) -> str:
    """A failure reason without the file name the row already shows."""
    text = reason[len(name) + 1:].strip() if reason.startswith(name + ":") else reason
    return text[:80] + ("…" if len(text) > 80 else "")


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds // 60 % 60:02d} min"

