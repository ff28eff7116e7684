"""The GUI's handle on the core: the `Hearth` service, its executors, and one method per user action.

The actions themselves are the core's (`Hearth`: the CLI and the API have the same ones); this module
only runs them off the GUI thread and turns their progress into events the widgets show. Every method
returns a `Job` at once; the work runs on the executor of the resource it uses:
`index` writes the document index (ingest, forget, re-index), `model` runs the chat model (load,
answer), `reader` does short reads (document lists, the model library, hardware). Reads may run while
the index is being written: the manifest (SQLite, serialized) and ChromaDB allow concurrent readers,
which is what lets a user ask a question while a folder is still being indexed.
"""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, Signal

from app.gui.gcguard import settle_heap
from app.gui.worker import Job, JobState, SerialExecutor
from inference.errors import Cancelled
from rag.answer import Answer
from rag.ingest import IngestReport, Progress, discover
from rag.service import Hearth, HearthConfig
from rag.summary import Summary

HearthFactory = Callable[[HearthConfig], Hearth]
SUMMARY_OF = "summary of "  # what a summary records as searched, as the core does for "Summarize X" in the chat


@dataclass(frozen=True)
class ApiState:
    """The local API as served: its URL, whether clients need the key, and a key made just now (show once)."""

    url: str
    key_required: bool
    new_key: str | None = None


@dataclass(frozen=True)
class Queued:
    """Progress event: the files an ingest run will go through, and inputs already refused."""

    files: list[str]
    refused: list[tuple[str, str]]  # (source, reason)


@dataclass(frozen=True)
class FileStage:
    """Progress event: one file entered a stage ('reading', 'embedding')."""

    source: str
    stage: str


@dataclass(frozen=True)
class Converting:
    """Progress event: a user's embedding model is being converted before the documents are embedded."""

    folder: str


@dataclass(frozen=True)
class FileResult:
    """Progress event: one file's turn ended; `ok` is whether it is now indexed (reasons come at the end)."""

    source: str
    ok: bool
    chunks: int | None = None  # passages stored for it, when it is indexed


@dataclass(frozen=True)
class ConversationStarted:
    """Progress event of an answer: the stored conversation it was added to (created for it)."""

    id: int


@dataclass(frozen=True)
class Token:
    """Progress event of an answer: one streamed piece of text."""

    text: str


class Operations(QObject):
    """The core service plus executors; rebuilt parts (`reconfigure`) take effect for the next job."""

    config_changed = Signal()
    model_loaded = Signal(object)  # the chat model, once loaded

    def __init__(self, config: HearthConfig, *, factory: HearthFactory | None = None,
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._factory = factory or (lambda cfg: Hearth(cfg))
        self.config = config
        self.hearth = self._factory(config)
        self.index = SerialExecutor("index", self)
        self.model = SerialExecutor("model", self)
        self.reader = SerialExecutor("reader", self)
        self.watcher = SerialExecutor("watch", self)
        # Held by every write to the index, from the index executor and from the folder watcher.
        self.index_lock = threading.Lock()
        self._api: Any = None  # the local API server, when it is on (touched only by reader jobs)
        self.loaded_model: Any = None

    @property
    def executors(self) -> list[SerialExecutor]:
        """All executors."""
        return [self.index, self.model, self.reader]  # the watcher runs for good, so it never counts as busy

    @property
    def busy(self) -> bool:
        """True while any job is queued or running."""
        return any(e.busy for e in self.executors)

    def reconfigure(self, config: HearthConfig) -> None:
        """Use new settings: a new service object; parts load again on first use."""
        if config == self.config:
            return
        self.config = config
        self.hearth = self._factory(config)
        self.loaded_model = None
        gc.unfreeze()  # the old service's parts can be collected again (see settle_heap)
        self.config_changed.emit()

    def shutdown(self) -> None:
        """Cancel everything and wait for the running jobs (each stops within one step)."""
        for e in [*self.executors, self.watcher]:
            e.cancel_all()
        if self._api is not None:
            self.reader.submit("api-stop", lambda s: self._stop_api())
        for e in [*self.executors, self.watcher]:
            e.shutdown(wait=True)

    def set_api_server(self, on: bool, *, port: int = 8642) -> Job:
        """Serve (or stop serving) the local OpenAI-compatible API on 127.0.0.1:port; result: ApiState or None.

        The administrator's policy applies as to `hearth serve`: "forbidden" fails with its reason, and
        "key-only" asks for the API key on this computer too (a key made now is in the result, to show once).
        Its answers run on the chat model's executor, so they queue with the window's own questions.
        """
        hearth, pool = self.hearth, self.model.pool

        def run(state: JobState) -> ApiState | None:
            self._stop_api()
            if not on:
                return None
            from app.policy import api_server_config, load_policy
            from app.server import ApiServer

            config, key = api_server_config(load_policy(), hearth.config.data_dir, port=port)
            self._api = ApiServer.for_hearth(hearth, config, chat_executor=pool).start()
            return ApiState(self._api.url, config.api_key_sha256 is not None, key)

        return self.reader.submit("api", run)

    def _stop_api(self) -> None:
        api, self._api = self._api, None
        if api is not None:
            api.stop()

    # Reads.
    def list_workspaces(self) -> Job:
        """Workspace names known to the index; the window's first job, so it also takes the data folder."""
        hearth = self.hearth

        def run(state: JobState) -> list[str]:
            # The window is long-lived: take the folder at once, so that another Hearth process using it
            # is named in the banner now, not when the first question fails.
            hearth.claim_data_dir()
            return hearth.manifest.workspaces()

        return self.reader.submit("workspaces", run)

    def document_text(self, path: Path) -> Job:
        """A document's text as Hearth reads it (what passage and quote offsets point into)."""
        hearth = self.hearth
        return self.reader.submit("document text", lambda s: hearth.document_text(path))

    def page_boxes(self, path: Path, page: int) -> Job:
        """Where the lines of a scanned page lie on its picture (None when OCR did not read that page)."""
        hearth = self.hearth
        return self.reader.submit("page boxes", lambda s: hearth.page_boxes(path, page))

    def list_documents(self, workspace: str) -> Job:
        """The workspace's document records."""
        hearth = self.hearth
        return self.reader.submit("documents", lambda s: hearth.sources(workspace=workspace))

    def earlier_versions(self, workspace: str) -> Job:
        """How many earlier versions are kept of each document of the workspace that has any."""
        hearth = self.hearth
        return self.reader.submit("versions", lambda s: hearth.earlier_versions(workspace=workspace))

    def compare(self, old: str, new: str | None, workspace: str, *, previous: bool = False) -> Job:
        """What changed between two documents, or a document and its previous version (computed: no model)."""
        hearth = self.hearth
        return self.reader.submit("compare", lambda s: hearth.compare(old, new, previous=previous,
                                                                      workspace=workspace))

    def language_notice(self, workspace: str) -> Job:
        """Whether most of the workspace is in a language its embedding model does not read (None if not)."""
        hearth = self.hearth
        return self.reader.submit("languages", lambda s: hearth.language_notice(workspace=workspace))

    def list_models(self) -> Job:
        """The model library: built-in models and the GGUF files in the models folder."""
        hearth = self.hearth
        return self.reader.submit("models", lambda s: hearth.models())

    def hardware(self, *, n_gpu_layers: int | None = None, n_ctx: int | None = None,
                 model: str | None = None) -> Job:
        """A hardware snapshot with the chat model's memory plan (`n_gpu_layers` None: as many as fit)."""
        hearth, config, loaded = self.hearth, self.config, self.loaded_model

        def run(state: JobState) -> dict[str, Any]:
            from app.gui.hardware_source import snapshot

            path = hearth.model_to_plan(model)
            report = getattr(loaded, "load_report", None) if loaded is not None else None
            checker = hearth.checker_loaded
            return snapshot(model_path=path, n_ctx=n_ctx or config.n_ctx, n_gpu_layers=n_gpu_layers,
                            load_report=report, check_path=hearth.checker_to_plan(model) if path else None,
                            check_report=getattr(checker, "load_report", None))

        return self.reader.submit("hardware", run)

    def list_conversations(self, workspace: str) -> Job:
        """The workspace's stored conversations, most recent first (without their turns)."""
        hearth = self.hearth
        return self.reader.submit("conversations", lambda s: hearth.conversations.list(workspace))

    def get_conversation(self, conv_id: int) -> Job:
        """One stored conversation with its turns (None if it is gone)."""
        hearth = self.hearth
        return self.reader.submit("conversation", lambda s: hearth.conversations.get(conv_id))

    def delete_conversation(self, conv_id: int) -> Job:
        """Delete a stored conversation."""
        hearth = self.hearth
        return self.reader.submit("delete-conversation", lambda s: hearth.conversations.delete(conv_id))

    def export_conversation(self, conv_id: int, path: Path) -> Job:
        """Write a conversation as Markdown to `path`."""
        hearth = self.hearth
        return self.reader.submit("export-conversation", lambda s: hearth.export_conversation(conv_id, path))

    def _write(self, name: str, fn) -> Job:
        """Submit an index write: on the index executor, holding the index lock."""
        lock = self.index_lock

        def run(state: JobState):
            with lock:
                return fn(state)

        return self.index.submit(name, run)

    def watch(self, folders: Sequence[Path], workspace: str) -> Job:
        """Sync folders into a workspace and keep them in sync until the job is cancelled.

        Progress: Progress events while syncing, WatchUpdate after each batch of changes.
        """
        hearth, lock = self.hearth, self.index_lock

        def run(state: JobState) -> None:
            hearth.watch(folders, stop=state.cancel_event, on_update=state.progress, workspace=workspace,
                         progress=state.progress, lock=lock)

        return self.watcher.submit("watch", run)

    # Index writes.
    def ingest(self, paths: Sequence[Path], workspace: str) -> Job:
        """Index files and folders; progress: Queued, then FileStage and Progress events."""
        hearth = self.hearth

        def run(state: JobState):
            files, refused, _ = discover(list(paths), include_hidden=hearth.config.ingest.include_hidden)
            state.progress(Queued([str(f.resolve()) for f in files], [(f.source, f.error) for f in refused]))
            return _with_file_events(hearth, workspace, state, lambda progress, cancel: hearth.ingest(
                paths, workspace=workspace, progress=progress, cancel=cancel))

        job = self._write("ingest", run)
        job.ended.connect(settle_heap)
        return job

    def forget(self, sources: Sequence[str], workspace: str) -> Job:
        """Remove documents from a workspace."""
        hearth = self.hearth
        return self._write("forget", lambda s: hearth.forget([Path(x) for x in sources], workspace=workspace))

    def reindex(self, sources: Sequence[str], workspace: str) -> Job:
        """Drop documents' passages and read them again."""
        hearth = self.hearth
        queued = Queued([str(Path(x).resolve()) for x in sources], [])

        def run(state: JobState):
            return _with_file_events(hearth, workspace, state, lambda progress, cancel: hearth.reindex(
                sources, workspace=workspace, progress=progress, cancel=cancel), queued=queued)

        return self._write("reindex", run)

    def reembed(self, folder: Path, workspace: str) -> Job:
        """Convert a user's embedding model folder and embed the workspace's documents again with it; progress:
        Converting, then the ingest events; the result is the IngestReport."""
        hearth = self.hearth

        def run(state: JobState):
            state.progress(Converting(str(folder)))
            info = hearth.add_embedder(folder)
            sources = [r.source for r in hearth.sources(workspace=workspace)]
            return _with_file_events(hearth, workspace, state, lambda progress, cancel: hearth.reembed(
                info.name, workspace=workspace, progress=progress, cancel=cancel), queued=Queued(sources, []))

        return self._write("reembed", run)

    def delete_workspace(self, workspace: str) -> Job:
        """Remove every document of a workspace from the index."""
        hearth = self.hearth
        return self._write("delete-workspace", lambda s: hearth.delete_workspace(workspace))

    def add_model(self, path: Path) -> Job:
        """Put a .gguf into the models folder (cancellable; progress: the share copied, 0..1)."""
        hearth = self.hearth
        return self.reader.submit("add-model", lambda s: hearth.add_model(path, progress=s.progress, cancel=s.cancel))

    # The chat model.
    def load_model(self) -> Job:
        """Load the chat model now, so the first answer does not wait for it."""
        hearth = self.hearth

        def run(state: JobState) -> Any:
            hearth.warm_up(wait=True)  # loads the model and reads its fixed instructions ahead of a question
            return hearth.chat_model  # raises the loading error, if there was one

        job = self.model.submit("load-model", run)
        job.finished.connect(self._on_model_loaded)
        return job

    def _on_model_loaded(self, model: Any) -> None:
        settle_heap()
        self.loaded_model = model
        self.model_loaded.emit(model)

    def ask(self, question: str, workspace: str, conversation: int | None, *, scope: Sequence[str] = (),
            query: str | None = None) -> Job:
        """Answer a question in a stored conversation (a new one when None), from the documents under `scope`
        only when it names any, searching `query` instead of what the core would search when given.

        Progress: ConversationStarted once, then Token events; result: the Answer.
        """
        hearth, scope = self.hearth, list(scope)

        def run(state: JobState):
            conv_id = conversation
            if conv_id is None:
                conv_id = hearth.new_conversation(question, workspace=workspace)
            state.progress(ConversationStarted(conv_id))
            return hearth.ask(question, workspace=workspace, conversation=conv_id, scope=scope, query=query,
                              on_token=lambda piece: state.progress(Token(piece)), cancel=state.cancel,
                              progress=state.progress)  # SummaryProgress, when the question asks for a summary

        return self.model.submit("ask", run)

    def summarize(self, source: str, workspace: str, conversation: int | None, question: str) -> Job:
        """Summarize a whole document on the chat model's executor, as a turn (`question`) of a stored
        conversation (a new one when None).

        Progress: ConversationStarted once, then SummaryProgress events; result: the summary as an Answer
        whose sources are its sections.
        """
        hearth = self.hearth

        def run(state: JobState) -> Answer:
            conv_id = conversation
            if conv_id is None:
                conv_id = hearth.new_conversation(question, workspace=workspace)
            state.progress(ConversationStarted(conv_id))
            t0 = time.perf_counter()
            try:
                summary = hearth.summarize(source, workspace=workspace, progress=state.progress, cancel=state.cancel)
            except Exception as exc:  # kept in the conversation, as an answer that failed or stopped is
                hearth.conversations.add_turn(conv_id, question, None, error=str(exc) or type(exc).__name__)
                raise
            answer = summary_answer(summary, time.perf_counter() - t0)
            hearth.conversations.add_turn(conv_id, question, answer)
            return replace(answer, conversation_id=conv_id)

        return self.model.submit("summarize", run)


def summary_answer(summary: Summary, seconds: float) -> Answer:
    """A summary as an answer in the chat: its text, its sections as the sources it cites [1]…[n] (the
    core answers "Summarize X" typed in the chat the same way)."""
    sources = summary.sources
    return Answer(summary.summary, sources, list(range(1, len(sources) + 1)), {"total": seconds},
                  searched_for=SUMMARY_OF + Path(summary.source).name)


IngestCall = Callable[[Callable[[Progress], None], Callable[[], bool]], IngestReport]


def _with_file_events(hearth: Hearth, workspace: str, state: JobState, run: IngestCall, *,
                      queued: Queued | None = None) -> IngestReport:
    """Run a core call that indexes (`run(progress, cancel)`), adding per-file FileStage / FileResult events
    to its Progress; `queued` goes first, once the core has started (it checks its inputs before that).

    Files overlap in the core's pipeline (one is read while others are embedded or wait to be written in a
    batch), so a file is reported indexed when the manifest says it is done, whenever that is; a file that
    never gets there (it failed, or the run stopped) is reported when the run ends.
    """
    workspace = workspace.strip()
    open_files: dict[str, None] = {}  # seen in progress, not yet reported, in order
    pending = [queued] if queued is not None else []

    def report(source: str, ok: bool) -> None:
        record = hearth.manifest.get(workspace, source) if ok else None
        state.progress(FileResult(source, ok, record.chunks if record is not None else None))
        open_files.pop(source, None)

    def settle(*, all_of_them: bool = False) -> None:
        if not open_files:
            return
        done = hearth.manifest.done_sources(workspace)  # read again only when the manifest changed
        for source in list(open_files):
            if source in done:
                report(source, True)
            elif all_of_them:
                report(source, False)

    def progress(p: Progress) -> None:
        while pending:
            state.progress(pending.pop())
        source = str(Path(p.current).resolve()) if p.current is not None else None
        if source is not None and source not in open_files:
            open_files[source] = None
        settle()
        if source is not None and source in open_files:
            state.progress(FileStage(source, getattr(p, "stage", None) or "reading"))
        state.progress(p)

    try:
        result = run(progress, state.cancel)
    except Cancelled:
        settle(all_of_them=True)  # what was written before the stop is done; the rest is not
        raise
    settle(all_of_them=True)
    return result
