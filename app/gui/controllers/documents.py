"""Documents: the library's list, adding files and folders (and dropped .gguf models), indexing with live
progress, cancelling, removing and re-indexing."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from PySide6.QtWidgets import QFileDialog

from app.gui.controllers.base import Controller
from app.gui.operations import FileResult
from app.gui.widgets import confirm
from app.gui.worker import Failure, Job


class DocumentController(Controller):
    """The current workspace's documents and the indexing runs (`jobs`) that change them."""

    def __init__(self, window) -> None:
        super().__init__(window)
        self.jobs: list[Job] = []
        self.compare_view: Any = None  # the last comparison shown
        self._noticed: set[str] = set()  # workspaces whose languages were checked this session

    def refresh(self) -> None:
        """Reload the current workspace's document list."""
        ws = self.workspace
        job = self.ops.list_documents(ws)
        job.finished.connect(lambda docs: self._set_documents(ws, docs))
        job.failed.connect(self.show_failure)

    def reload(self) -> None:
        """Another workspace is shown: empty the list and load its documents."""
        self.window.library.clear()
        self.refresh()

    def _set_documents(self, ws: str, docs: Sequence[Any]) -> None:
        if ws != self.workspace:
            return
        self.window.library.set_documents(docs)
        versions = self.ops.earlier_versions(ws)
        versions.finished.connect(lambda counts: ws == self.workspace and self.window.library.set_versions(counts))
        done = sum(1 for d in docs if d.status == "done")
        self._update_count(done)
        if done and ws not in self._noticed:
            self._noticed.add(ws)  # said once a session per workspace; the banner is closed by the user
            job = self.ops.language_notice(ws)
            job.finished.connect(lambda notice: self._show_language_notice(ws, notice))

    def compare_with(self, source: str) -> Job | None:
        """Choose another indexed document and show what changed from it to `source`."""
        from PySide6.QtWidgets import QInputDialog

        others = [s for s in self.window.library.indexed() if s != source]
        if not others:
            return None
        names = [f"{Path(s).name}  —  {Path(s).parent}" for s in others]
        chosen, ok = QInputDialog.getItem(self.window, self.tr("Compare with…"),
                                          self.tr("Compare {name} with (the older one):").format(
                                              name=Path(source).name), names, 0, False)
        if not ok:
            return None
        return self.compare(others[names.index(chosen)], source)

    def compare(self, old: str, new: str | None = None) -> Job:
        """Show what changed from `old` to `new`, or with `new` None, from `old`'s previous version to it."""
        job = self.ops.compare(old, new, self.workspace, previous=new is None)
        job.finished.connect(self._show_comparison)
        job.failed.connect(self.show_failure)
        return job

    def _show_comparison(self, comparison: Any) -> None:
        from app.gui.compare_view import CompareView

        self.compare_view = CompareView(comparison, self.window)
        self.compare_view.show()

    def _show_language_notice(self, ws: str, notice: Any) -> None:
        """Most of the workspace is in a language the embedder does not read: say so, with the numbers."""
        if notice is not None and ws == self.workspace:
            names = {"ru": self.tr("Russian"), "de": self.tr("German"), "fr": self.tr("French"),
                     "es": self.tr("Spanish"), "it": self.tr("Italian"), "pt": self.tr("Portuguese"),
                     "nl": self.tr("Dutch"), "pl": self.tr("Polish")}
            self.window.library.banner.show_message(
                self.tr("{n} of the {total} passages here are in {language}, which the embedding model {model} "
                        "does not read: questions in {language} are matched by their words only, not by their "
                        "meaning.").format(n=f"{notice.passages:,}", total=f"{notice.total:,}",
                                           language=names.get(notice.language, notice.language_name),
                                           model=notice.embedder),
                self.tr("A multilingual model (multilingual-e5 or bge-m3, as a sentence-transformers folder) would "
                        "read them: Hearth converts it and embeds this workspace's documents again with it."),
                level="info", action=(self.tr("Use a multilingual model…"), lambda: self.choose_embedder(ws)))

    def choose_embedder(self, ws: str) -> Job | None:
        """Pick a user's embedding model folder and, once confirmed, embed the workspace again with it."""
        folder = QFileDialog.getExistingDirectory(
            self.window, self.tr("Choose a multilingual embedding model folder"), str(Path.home()))
        if not folder:
            return None
        n = self.window.library.done_count() if ws == self.workspace else 0
        if not confirm(self.window, self.tr("Use another embedding model"),
                       self.tr("Convert the model in {folder} and embed the {n} documents of this workspace again "
                               "with it? That takes a while; questions are answered from the documents already "
                               "done. If you stop it, add the remaining documents again later.").format(
                           folder=Path(folder).name, n=n), default_yes=True):
            return None
        job = self.ops.reembed(Path(folder), ws)
        self._track(job, ws)
        job.finished.connect(lambda report: ws == self.workspace and not report.failed and self.window.library.banner.show_message(
            self.tr("This workspace is now searched with the model in {folder}.").format(folder=Path(folder).name),
            level="info"))
        return job

    def _update_count(self, n: int) -> None:
        self.window.chat.set_workspace_label(self.window.workspaces.label(), n)

    def choose_files(self) -> None:
        """Pick files to add (for those who do not drag)."""
        paths, _ = QFileDialog.getOpenFileNames(self.window, self.tr("Add documents"), str(Path.home()))
        if paths:
            self.add_paths([Path(p) for p in paths])

    def choose_folder(self) -> None:
        """Pick a folder to add."""
        folder = QFileDialog.getExistingDirectory(self.window, self.tr("Add a folder"), str(Path.home()))
        if folder:
            self.add_paths([Path(folder)])

    def add_paths(self, paths: Sequence[Path]) -> None:
        """Add dropped or chosen paths: .gguf files to the model library, the rest to the workspace."""
        models = [p for p in paths if p.suffix.lower() == ".gguf" and p.is_file()]
        docs = [p for p in paths if p not in models]
        for m in models:
            self.add_model(m)
        if docs:
            self.ingest(docs)

    def ingest(self, paths: Sequence[Path]) -> Job:
        """Index paths into the current workspace."""
        ws = self.workspace
        self.window.workspaces.remember(ws)
        job = self.ops.ingest(list(paths), ws)
        self._track(job, ws)
        return job

    def _track(self, job: Job, ws: str) -> None:
        self.jobs.append(job)
        if ws == self.workspace:
            self.window.library.begin()
        self.window.show_side_tab(0)
        job.progress.connect(lambda e: ws == self.workspace and self._on_progress(e))
        job.finished.connect(lambda report: self._on_ingested(ws, report))
        job.failed.connect(lambda f: self._on_failed(ws, f))
        job.ended.connect(lambda: self.jobs.remove(job) if job in self.jobs else None)

    def _on_progress(self, event: object) -> None:
        library = self.window.library
        library.on_progress(event)
        if isinstance(event, FileResult) and event.ok:
            self._update_count(library.done_count())

    def _on_ingested(self, ws: str, report: Any) -> None:
        if ws == self.workspace:
            self.window.library.finish(report)
            self.refresh()
        done = report.added + report.updated
        self.window.statusBar().showMessage(
            self.tr("Indexed {n} documents ({chunks} passages) in {s:.1f} s; {u} unchanged, {f} failed.").format(
                n=done, chunks=report.chunks, s=report.seconds, u=report.unchanged, f=len(report.failed)), 8000)

    def _on_failed(self, ws: str, failure: Failure) -> None:
        if ws == self.workspace:
            library = self.window.library
            library.finish(None, stopped=failure.cancelled)
            if not failure.cancelled:
                library.banner.show_message(failure.message, failure.hint, log_link=self.window.log_path is not None)
            self.refresh()

    def cancel(self) -> None:
        """Stop indexing (every queued batch too)."""
        for job in self.jobs:
            job.cancel()
        library = self.window.library
        library.cancel.setEnabled(False)
        library.progress_text.setText(self.tr("Stopping after the current document…"))

    def remove(self, sources: list[str]) -> None:
        """Remove documents from the workspace after asking."""
        names = ", ".join(Path(s).name for s in sources[:3]) + (" …" if len(sources) > 3 else "")
        if not confirm(self.window, self.tr("Remove documents"),
                       self.tr("Remove {names} from the library? The files themselves are not deleted.").format(
                           names=names), default_yes=True):
            return
        job = self.ops.forget(sources, self.workspace)
        job.finished.connect(lambda _r: self.refresh())
        job.failed.connect(self.show_failure)

    def reindex(self, sources: list[str]) -> None:
        """Read documents again from scratch."""
        self._track(self.ops.reindex(sources, self.workspace), self.workspace)

    def add_model(self, path: Path) -> Job:
        """Put a dropped .gguf into the models folder."""
        bar = self.window.statusBar()
        bar.showMessage(self.tr("Adding the model {name}…").format(name=path.name))
        job = self.ops.add_model(path)
        job.progress.connect(lambda f: bar.showMessage(
            self.tr("Adding the model {name}… {pct:.0f}%").format(name=path.name, pct=f * 100)))
        job.finished.connect(lambda target: (
            bar.clearMessage(),
            self.window.library.banner.show_message(
                self.tr("{name} is now in the model library.").format(name=target.name),
                self.tr("Choose it as the chat model in Settings (Ctrl+,)."), level="info")))
        job.failed.connect(lambda f: (bar.clearMessage(), self.show_failure(f)))
        return job
