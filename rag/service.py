"""The one service object the GUI, the CLI and the HTTP server all call: ingest, search, ask, sources, forget."""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from inference.chat import ChatModel
from inference.errors import HearthError, ModelError, UsageError
from rag.answer import fixed_messages
from rag.comparisons import Comparisons
from rag.components import (check_model_name, embedder_folder, load_chat_model, load_check_model, load_embedder,
                            load_reranker, open_document_index, resolve_chat_model)
from rag.config import HearthConfig, model_allowed
from rag.confirm import AnswerCheck, CheckBounds, bounds_for
from rag.crosslingual import LanguageNotice, language_notice
from rag.errors import IndexDamaged, StoreError
from rag.indexing import Indexing
from rag.ingest import forget
from rag.manifest import DocumentRecord, Manifest
from rag.questions import Questions
from rag.retrieval import Reranker
from rag.self_test import SelfTestReport, self_test
from rag.workspaces import DEFAULT_WORKSPACE, check_workspace
from rag.store import DocumentIndex
from rag.table_store import TableStore

if TYPE_CHECKING:
    from inference.budget import MemoryPlan
    from inference.embedder import Embedder
    from inference.model_library import LibraryModel, ModelLibrary
    from rag.conversations import ConversationStore
    from rag.datalock import DataDirClaim
    from rag.page_boxes import PageBoxes
    from rag.probe import Probe
    from rag.repair import RepairReport

log = logging.getLogger(__name__)


class Hearth(Indexing, Questions, Comparisons):
    """Hearth's core, built once with its parts; parts not passed in are made on first use."""

    def __init__(
        self,
        config: HearthConfig,
        *,
        embedder: Embedder | None = None,
        store: DocumentIndex | None = None,
        chat_model: ChatModel | None = None,
        check_model: ChatModel | None = None,
        probe: Probe | None = None,
        check_bounds: CheckBounds | None = None,
    ) -> None:
        self.config = config
        self._embedder = embedder
        self._embedders: dict[str, Embedder] = {}  # loaded ONNX embedders by folder (the key workspaces record)
        self._store = store
        self._chat_model = chat_model
        # The model that checks answers' lines (rag/confirm.py), when it is not the chat model; a chat model
        # passed in also checks, unless the configuration names a checker (passed in too, or loaded when needed).
        self._checker_name: str | None = (
            None if chat_model is not None and config.check_model is None else check_model_name(config))
        self._check_model = check_model if self._checker_name is not None else None
        # The probe that reads the checker's state on the question's lines (rag/probe.py): None, the one that
        # ships for the checker. A benchmark passes one fitted without the office it asks about.
        self._probe = probe
        # How the checker's verdicts are read: None, the bounds chosen for it (rag.confirm.bounds_for). A benchmark
        # passes others to measure a bound it has not chosen yet.
        self._check_bounds = check_bounds
        self._manifest: Manifest | None = None
        self._reranker: Reranker | None = None
        self.memory_plan: MemoryPlan | None = None  # how the chat model was placed, when Hearth chose it
        self._lock = threading.RLock()
        # The chat model has its own lock, so that loading it never holds up search.
        self._model_lock = threading.Lock()
        self._warming: threading.Thread | None = None
        self._conversations: ConversationStore | None = None
        self._tables: TableStore | None = None
        self._library: ModelLibrary | None = None
        # This process's hold on the data folder (rag.datalock), taken when the local index is opened.
        self._claim: DataDirClaim | None = None
        self._unclaim: weakref.finalize | None = None
        self._own_store = False
        self.last_repair: RepairReport | None = None  # the last rebuild of a damaged vector index, if any
        self.last_redacted = 0  # answers in stored conversations the last `forget` took passages out of
        self.notices: list[str] = []  # what making the data folder private changed, for a front end to show
        self._data_dir_ready = False

    # Parts, made lazily so `hearth sources` never loads a model.
    def _open_data_dir(self) -> None:
        """Make the data folder private before anything is written in it (once; UsageError if it cannot be)."""
        with self._lock:
            if not self._data_dir_ready:
                from rag.datalock import secure_data_dir

                self.notices = secure_data_dir(self.config.data_dir)
                for notice in self.notices:
                    log.warning("%s", notice)
                self._data_dir_ready = True

    @property
    def manifest(self) -> Manifest:
        """The document manifest."""
        with self._lock:
            if self._manifest is None:
                self._open_data_dir()
                self.config.index_dir.mkdir(parents=True, exist_ok=True)
                self._manifest = Manifest(self.config.index_dir / "manifest.sqlite")
            return self._manifest

    @property
    def tables(self) -> TableStore:
        """The typed tables of the indexed documents (this machine's, beside the manifest)."""
        with self._lock:
            if self._tables is None:
                self._open_data_dir()
                self.config.index_dir.mkdir(parents=True, exist_ok=True)
                self._tables = TableStore(self.config.index_dir / "tables.sqlite")
            return self._tables

    @property
    def store(self) -> DocumentIndex:
        """The document index: this machine's, or the office's shared one (rag.components chooses)."""
        with self._lock:
            if self._store is None:
                self._open_data_dir()
                self.claim_data_dir()  # ChromaDB's files must never be open in two processes
                self._store = open_document_index(self.config)
                self._own_store = True
            return self._store

    def claim_data_dir(self) -> None:
        """Take the data folder for this process, or raise DataDirInUse naming the process that has it.

        Opening the local index does this; long-lived front ends call it at start, to fail at once.
        Hearth objects of one process share the folder; `close` (or garbage collection) lets it go.
        """
        with self._lock:
            if self._claim is None and not self.config.chroma_url:  # a Chroma server guards its own files
                from rag.datalock import claim

                self._claim = claim(self.config.data_dir)
                self._unclaim = weakref.finalize(self, self._claim.release)

    def close(self) -> None:
        """Let other processes use the data folder; the index opens (and takes the folder) again on next use."""
        with self._lock:
            if self._own_store:
                self._store, self._own_store = None, False
            if self._unclaim is not None:
                self._unclaim()  # releases the claim, once
            self._claim = self._unclaim = None

    @property
    def embedder(self) -> Embedder:
        """The embedding model (the default one unless another was passed in)."""
        with self._lock:
            if self._embedder is None:
                return self._load_embedder(self.config.embedder)
            return self._embedder

    @property
    def embedder_given(self) -> bool:
        """Whether an embedder was handed to Hearth (tests, benchmarks): it then searches and measures alike."""
        return self._embedder is not None

    def embedder_for(self, workspace: str) -> Embedder:
        """The embedder for a workspace: the configured one, else the one it was indexed with, else the default."""
        with self._lock:
            if self._embedder is not None:
                return self._embedder
            bound = self.manifest.workspace_embedder(check_workspace(workspace))
            return self._load_embedder(self.config.embedder or bound)

    def embedder_named(self, spec: str | None) -> Embedder:
        """The ONNX embedder a name or a workspace's recorded key stands for (None: the default), loaded once."""
        with self._lock:
            return self._load_embedder(spec)

    def _load_embedder(self, spec: str | None) -> Embedder:
        """Load (once) the ONNX embedder that `spec` names; see HearthConfig.embedder."""
        folder = embedder_folder(spec, self.config)
        if folder.name not in self._embedders:
            self._embedders[folder.name] = load_embedder(folder, self.config)
        return self._embedders[folder.name]

    @property
    def chat_model(self) -> ChatModel:
        """The chat model, loaded on first use (see `warm_up` to load it ahead of the first question)."""
        with self._model_lock:
            if self._chat_model is None:
                loaded = load_chat_model(self.config)
                self._chat_model, self.memory_plan = loaded.model, loaded.plan
            return self._chat_model

    @property
    def check_model(self) -> ChatModel:
        """The model that checks whether an answer's line gives it, loaded on first use (the chat model unless a
        checker is installed or configured: `rag.components.check_model_name`)."""
        if self._checker_name is None:
            return self.chat_model
        with self._model_lock:
            if self._check_model is None:
                try:
                    self._check_model = load_check_model(self.config, self._checker_name)
                except HearthError as exc:  # e.g. not allowed, or a path that is gone: the check concludes nothing
                    if isinstance(exc, ModelError):
                        raise
                    raise ModelError(str(exc), hint=exc.hint) from exc
            return self._check_model

    def answer_check(self, cancel: Callable[[], bool] | None = None) -> AnswerCheck:
        """The check of an answer's lines, read with its model's bounds (rag/confirm.py)."""
        from inference.models import DEFAULT_CHAT_MODEL

        name = self._checker_name or self.config.chat_model or DEFAULT_CHAT_MODEL
        return AnswerCheck(lambda: self.check_model, cancel=cancel, bounds=self._check_bounds or bounds_for(name),
                           probe=self._probe)

    def load_chat_model(self, name: str) -> ChatModel:
        """A newly loaded chat model from the library (not the service's own), e.g. for an API request naming
        another model; under the policy's allowed models, its GPU layers planned like the service's own."""
        return load_chat_model(self.config, name).model

    def resolve_model_path(self, model: str | None) -> Path:
        """A GGUF path from a registry name, a file in the models folder, or a path (see resolve_chat_model)."""
        return resolve_chat_model(model, self.config)

    def model_to_plan(self, name: str | None) -> Path | None:
        """The GGUF a hardware plan is for, without preparing a built-in model (that happens when it loads);
        None when there is none to plan for (the model is missing, or answers come from a shared server)."""
        from inference.models import CHAT_MODELS, DEFAULT_CHAT_MODEL

        if self.config.llm_url and name is None:
            return None
        key = name or self.config.chat_model or DEFAULT_CHAT_MODEL
        try:
            if key in CHAT_MODELS:
                entry = next((m for m in self.library.models() if m.key == key), None)
                return entry.path if entry is not None else None
            return self.resolve_model_path(key)
        except HearthError:  # a model that cannot be found means no plan, not a failure
            return None

    def checker_to_plan(self, chat: str | None = None) -> Path | None:
        """The GGUF of the model that checks answers (rag/confirm.py) when it is loaded beside the chat model
        (`chat`, else the configured one), for the hardware plan; None when the chat model checks, or the checker
        is not prepared yet (its parts are joined when it first loads)."""
        name = self._checker_name
        if name is not None and chat:  # the chat model named may be the checker itself
            name = check_model_name(replace(self.config, chat_model=chat))
        return self.model_to_plan(name) if name is not None else None

    @property
    def checker_loaded(self) -> ChatModel | None:
        """The answer checker when it is a model of its own and loaded (None otherwise)."""
        return self._check_model if self._checker_name is not None else None

    # The service API.

    def add_embedder(self, folder: Path, *, name: str | None = None) -> Any:
        """Convert a user's sentence-transformers folder into the embedder library (no network; a minute or
        so); returns its `EmbedderInfo`. UsageError / ModelError say what is wrong with the folder."""
        from inference.models import add_embedder

        return add_embedder(Path(folder), self.config.cache_dir, name=name)

    def check_index(self, workspace: str = DEFAULT_WORKSPACE) -> RepairReport | None:
        """Read the local vector index once; when it is damaged, rebuild it (returns the report, else None)."""
        store = self.store
        if not store.local or not self._own_store:
            return None  # a store passed in, or a shared Chroma server
        try:
            store.count(check_workspace(workspace))
        except IndexDamaged:
            return self.repair_index()
        return None

    def repair_index(self) -> RepairReport:
        """Rebuild the local vector index from the keyword index (rag/repair.py); the damaged one is kept aside."""
        from rag.repair import rebuild_vector_index

        with self._lock:
            store = self.store
            if not store.local or not self._own_store:
                raise StoreError("Only Hearth's own local index can be rebuilt (a Chroma server repairs its own).")
            store.vectors, report = rebuild_vector_index(
                self.config.data_dir / "index", lexical=store.lexical, manifest=self.manifest,
                embedder_for=self.embedder_for,
            )  # fmt: skip
            self.last_repair = report
            return report

    def _repairing(self, run: Callable[[], Any]) -> Any:
        """Run `run`; if the vector index turns out damaged, rebuild it once and run again."""
        try:
            return run()
        except IndexDamaged:
            if not self._own_store or not self.store.local:
                raise
            log.warning("The vector index is damaged; rebuilding it from the keyword index.")
            self.repair_index()
            return run()

    @property
    def reranker(self) -> Reranker | None:
        """The cross-encoder reranker, when a folder for one is configured."""
        with self._lock:
            if self._reranker is None:
                self._reranker = load_reranker(self.config)
            return self._reranker

    # Conversations, the model library and the chat model's life.
    @property
    def conversations(self) -> ConversationStore:
        """The stored conversations of every workspace."""
        with self._lock:
            if self._conversations is None:
                from rag.conversations import ConversationStore

                self._open_data_dir()
                self._conversations = ConversationStore(self.config.data_dir / "conversations.sqlite")
            return self._conversations

    def new_conversation(self, title: str, *, workspace: str = DEFAULT_WORKSPACE) -> int:
        """Start a stored conversation (titled, say, with its first question); returns its id."""
        return self.conversations.create(check_workspace(workspace), title).id

    @property
    def library(self) -> ModelLibrary:
        """The chat models available: built-in, in the models folder, and added by path."""
        with self._lock:
            if self._library is None:
                from inference.model_library import ModelLibrary

                self._library = ModelLibrary(self.config.models_dir, self.config.cache_dir)
            return self._library

    def models(self) -> list[LibraryModel]:
        """Every chat model in the library, described from its file header (none is loaded)."""
        allowed = self.config.allowed_models
        return [m for m in self.library.models() if allowed is None or model_allowed(m.key, allowed)]

    def warm_up(self, *, wait: bool = False) -> None:
        """Load the chat model and read its fixed instructions in the background, once.

        A later question then starts from the cached instructions. A model that cannot be found is
        reported here at once; one that fails to load is reported to the question that needs it.
        """
        self._check_chat_model()  # also joins a split built-in model, once
        with self._lock:
            if self._warming is None or (not self._warming.is_alive() and self._chat_model is None):
                self._warming = threading.Thread(target=self._warm, name="hearth-warm-up", daemon=True)
                self._warming.start()
            thread = self._warming
        if wait:
            thread.join()

    def _warm(self) -> None:
        try:
            self.chat_model.prefill(fixed_messages())
        except Exception:  # noqa: BLE001 - reported by the request that needs the model
            pass

    def unload_model(self) -> bool:
        """Free the chat model's memory (it loads again on the next question); True if one was loaded."""
        with self._model_lock:
            model, self._chat_model = self._chat_model, None
            checker, self._check_model = self._check_model, None
        if checker is not None:
            checker.close()
        if model is None:
            return False
        model.close()
        return True

    def release_if_memory_low(self) -> bool:
        """Unload the chat model when the system is short of memory; True if it did."""
        from inference.cpus import available_memory

        free = available_memory()
        if free is not None and free < self.config.unload_below:
            return self.unload_model()
        return False

    def self_test(
        self,
        *,
        workspace: str = DEFAULT_WORKSPACE,
        n: int = 20,
        k: int = 5,
        seed: int = 0,
        progress: Callable[[int, int], None] | None = None,
        cancel: Callable[[], bool] | None = None,
    ) -> SelfTestReport:
        """Check how well the workspace is indexed: questions the model writes for sampled passages, searched."""
        workspace = check_workspace(workspace)
        if not 1 <= n <= 1000:
            raise UsageError(f"The number of questions must be between 1 and 1000, not {n}.")
        done = self._done_sources(workspace)
        self.store.sync_lexical(workspace, done)
        rows = [r for r in self.store.keyword_rows(workspace) if r.source in done]
        return self_test(rows, search=lambda q: self.search(q, k=k, workspace=workspace),
                         model=lambda: self.chat_model, n=n, k=k, seed=seed, progress=progress, cancel=cancel)

    def language_notice(self, *, workspace: str = DEFAULT_WORKSPACE) -> LanguageNotice | None:
        """Whether most of the workspace is in a language its embedding model does not read (with the numbers)."""
        workspace = check_workspace(workspace)
        passages = self.store.languages(workspace)
        if not passages:
            return None
        return language_notice(passages, self.embedder_for(workspace))

    def sources(self, *, workspace: str = DEFAULT_WORKSPACE) -> list[DocumentRecord]:
        """Every document the workspace knows, with its status."""
        return self.manifest.documents(check_workspace(workspace))

    def document_text(self, path: Path) -> str:
        """A document's full text as Hearth reads it: the text that passage and quote offsets point into.

        Read in a worker process under the same caps as indexing (size, time, memory), so a document
        that changed into something hostile since it was indexed costs only that process.
        """
        from rag.loaders import full_text
        from rag.page_boxes import read_sections

        return full_text(read_sections(path, self.config.ingest))

    def page_boxes(self, path: Path, page: int) -> PageBoxes | None:
        """Where the lines of a scanned page lie on its image, to mark a passage on it (rag/page_boxes.py);
        None when OCR did not read that page. Read as `document_text` is, and kept per version of the file."""
        from rag.page_boxes import read_page_boxes

        return read_page_boxes(path, page, self.config.ingest)

    def forget(self, paths: Iterable[Path], *, workspace: str = DEFAULT_WORKSPACE,
               keep_versions: bool = False) -> list[str]:
        """Remove documents (or all under folders) from a workspace with their kept versions (unless `keep_versions`),
        and their passages and quotes from its stored conversations (`last_redacted` says from how many answers);
        returns what was removed."""
        workspace = check_workspace(workspace)
        removed = forget(list(paths), workspace=workspace, store=self.store, manifest=self.manifest)
        if removed:
            self.tables.delete(workspace, removed)
            if not keep_versions:
                self.versions.delete(workspace, removed)
        self.last_redacted = self.conversations.redact_sources(workspace, removed) if removed else 0
        return removed

    def delete_workspace(self, workspace: str) -> list[str]:
        """Remove every document of a workspace from the index, and its stored conversations; returns the documents."""
        workspace = check_workspace(workspace)
        sources = [d.source for d in self.sources(workspace=workspace)]
        removed = self.forget([Path(s) for s in sources], workspace=workspace) if sources else []
        self.conversations.delete_workspace(workspace)
        self.tables.drop_workspace(workspace)
        self.versions.drop_workspace(workspace)
        return removed

    def add_model(self, path: Path, *, progress: Callable[[float], None] | None = None,
                  cancel: Callable[[], bool] | None = None) -> Path:
        """Put a GGUF file into the models folder (a hard link where possible, else a cancellable copy)."""
        return self.library.import_file(path, progress=progress, cancel=cancel)

    def export_conversation(self, conv_id: int, path: Path) -> Path:
        """Write a stored conversation as Markdown (with each answer's sources and quotes) to `path`."""
        text = self.conversations.export_markdown(conv_id)
        try:
            Path(path).write_text(text, encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"Cannot write {path}: {exc.strerror}.") from exc
        return Path(path)

    def _done_sources(self, workspace: str) -> set[str]:
        """Fully indexed documents: on a shared Chroma server those any machine finished, else this machine's."""
        return self.store.finished_sources(workspace, self.manifest)

    def _check_chat_model(self) -> None:
        """Refuse a chat model that cannot be found before any work is done (no-op once one is loaded)."""
        if self._chat_model is None and not self.config.llm_url:
            self.resolve_model_path(self.config.chat_model)

    def _check_embedder(self, workspace: str) -> Embedder:
        """The workspace's embedder, refusing one that differs from the model that indexed it."""
        embedder = self.embedder_for(workspace)
        bound = self.manifest.workspace_embedder(workspace)
        if bound is not None and bound != embedder.name:
            raise UsageError(
                f"Workspace {workspace!r} was indexed with {bound!r}, but the embedder now is "
                f"{embedder.name!r}; its vectors cannot be compared.",
                hint="Re-index the workspace with the new model (ingest with it), or search without choosing one.",
            )
        return embedder

