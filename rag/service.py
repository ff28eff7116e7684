"""The one service object the GUI, the CLI and the HTTP server all call: ingest, search, ask, sources, forget."""

from __future__ import annotations

import ctypes
import logging
import sys
import threading
import time
import unicodedata
import weakref
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from inference.errors import HearthError, IndexDamaged, StoreError, UsageError
from inference.llm import ChatModel
from rag.answer import Answer, Turn, answer, fixed_messages
from rag.evaluate import SelfTestReport, self_test
from rag.ingest import IngestOptions, IngestReport, Progress, forget, ingest
from rag.manifest import DocumentRecord, Manifest
from rag.lexical import LexicalIndex
from rag.quotes import align
from rag.retrieval import CrossEncoderReranker, Reranker, RetrievalOptions, contextualize, retrieve
from rag.store import ChromaStore, Hit, HybridStore, VectorStore

if TYPE_CHECKING:
    import numpy as np

    from inference.embedder import Embedder
    from inference.library import LibraryModel, ModelLibrary
    from rag.conversations import ConversationStore
    from rag.datalock import DataDirClaim
    from rag.repair import RepairReport
    from rag.watch import WatchUpdate

log = logging.getLogger(__name__)
DEFAULT_WORKSPACE = "default"


@dataclass(frozen=True)
class HearthConfig:
    """Where Hearth keeps its data and how it runs its models."""

    data_dir: Path
    chat_model: str | None = None  # a registry name or a path to a .gguf file; None = the default model
    n_ctx: int = 4096  # tokens of context the chat model is loaded with
    n_threads: int | None = None  # llama.cpp threads; None = one per physical core
    n_gpu_layers: int | None = None  # layers offloaded to the GPU; None = as many as the memory plan fits
    embed_threads: int | None = None  # ONNX Runtime intra-op threads; None = all cores
    # An embedder name ("all-MiniLM-L6-v2", "bge-small-en-v1.5", "NAME:fp32") or a workspace's recorded key.
    # None: each workspace keeps the model it was indexed with; new workspaces get the default (int8).
    # Ingesting with a different one re-embeds the whole workspace; searching with one is refused.
    embedder: str | None = None
    min_score: float = 0.2  # passages scoring below this cosine similarity are not relevant
    ingest: IngestOptions = field(default_factory=IngestOptions)
    retrieval: RetrievalOptions = field(default_factory=RetrievalOptions)
    reranker_dir: Path | None = None  # a cross-encoder ONNX folder (model.onnx + tokenizer.json), if any
    max_passage_tokens: int | None = 800  # passages given to the chat model, at most (a CPU reads ~100 tokens/s)
    unload_below: int = 512 << 20  # bytes of free memory under which `release_if_memory_low` unloads the model
    models_folder: Path | None = None  # the models folder when not DATA_DIR/models (an administrator's policy)
    allowed_models: tuple[str, ...] | None = None  # chat models that may be used (see model_allowed); None = any
    # Shared-office mode: a Chroma server holds the index, an OpenAI-compatible server answers.
    chroma_url: str | None = None  # http://HOST:PORT of `chroma run`; None = the local index
    chroma_token: str | None = field(default=None, repr=False)  # sent as a bearer token
    llm_url: str | None = None  # base URL of an OpenAI-compatible server (…/v1); None = the in-process model
    llm_model: str | None = None  # the model name asked of it; None = the first it lists
    llm_api_key: str | None = field(default=None, repr=False)

    @property
    def cache_dir(self) -> Path:
        """Converted embedders and assembled model files."""
        return self.data_dir / "cache"

    @property
    def models_dir(self) -> Path:
        """The folder where users put their own GGUF models."""
        return self.models_folder or self.data_dir / "models"

    @property
    def index_dir(self) -> Path:
        """This machine's manifest and keyword index: DATA_DIR, or a folder per shared Chroma server."""
        if not self.chroma_url:
            return self.data_dir
        from rag.remote_store import shared_folder_name

        return self.data_dir / "shared" / shared_folder_name(self.chroma_url)


def model_allowed(name: str, allowed: Sequence[str]) -> bool:
    """Whether a chat model is on an allow-list: its built-in name, or its file name (with or without .gguf).

    Paths are never allowed by name, so only built-in models and files in the models folder qualify.
    """
    if "/" in name or "\\" in name:
        return False
    return name in allowed or (name.endswith(".gguf") and name[: -len(".gguf")] in allowed) or f"{name}.gguf" in allowed


def resolve_chat_model(model: str | None, config: HearthConfig) -> Path:
    """A GGUF path from a built-in model name (prepared in the cache), a file in the models folder, or a path;
    under a policy's allowed models, only those, and never a path outside the models folder."""
    from inference.models import CHAT_MODELS, DEFAULT_CHAT_MODEL, chat_model_path

    name = model or DEFAULT_CHAT_MODEL
    allowed = config.allowed_models
    if allowed is not None and not model_allowed(name, allowed):
        raise UsageError(f"The model {name!r} is not allowed on this machine by the administrator's policy.",
                         hint="Allowed: " + ", ".join(allowed))
    if name in CHAT_MODELS:
        return chat_model_path(name, config.cache_dir)
    candidates = (Path(name).expanduser(), config.models_dir / name)
    for candidate in candidates[1:] if allowed is not None else candidates:
        if candidate.is_file():
            return candidate
    raise UsageError(
        f"No model called {name!r}: not a built-in model, not a file in {config.models_dir}, "
        "not a path to a .gguf file.",
        hint="Built-in models: " + ", ".join(sorted(CHAT_MODELS)),
    )


def release_free_memory() -> bool:
    """Give the C heap's free pages back to the system (glibc); False where there is no way to.

    Indexing frees much of its memory in ONNX Runtime's and ChromaDB's threads, whose malloc arenas keep
    it otherwise: over 1,000 documents resident memory grew 39 MiB without this and 14 MiB with it
    (bench/memory.py), with no growth in live Python objects.
    """
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None).malloc_trim(0)
            return True
        except (OSError, AttributeError):  # not glibc (musl): nothing to give back this way
            pass
    return False


def check_workspace(name: str) -> str:
    """A workspace name after validation: 1–100 printable characters."""
    name = name.strip()
    if not name or len(name) > 100 or any(unicodedata.category(c).startswith("C") for c in name):
        raise UsageError(f"{name!r} is not a valid workspace name.", hint="Use 1 to 100 printable characters.")
    return name


class Hearth:
    """Hearth's core, built once with its parts; parts not passed in are made on first use."""

    def __init__(
        self,
        config: HearthConfig,
        *,
        embedder: Embedder | None = None,
        store: VectorStore | None = None,
        chat_model: ChatModel | None = None,
    ) -> None:
        self.config = config
        self._embedder = embedder
        self._embedders: dict[str, Embedder] = {}  # loaded ONNX embedders by folder (the key workspaces record)
        self._store = store
        self._chat_model = chat_model
        self._manifest: Manifest | None = None
        self._reranker: Reranker | None = None
        self.memory_plan: MemoryPlan | None = None  # how the chat model was placed, when Hearth chose it
        self._lock = threading.RLock()
        # The chat model has its own lock, so that loading it never holds up search.
        self._model_lock = threading.Lock()
        self._warming: threading.Thread | None = None
        self._conversations: ConversationStore | None = None
        self._library: ModelLibrary | None = None
        # This process's hold on the data folder (rag.datalock), taken when the local index is opened.
        self._claim: DataDirClaim | None = None
        self._unclaim: weakref.finalize | None = None
        self._own_store = False
        self.last_repair: RepairReport | None = None  # the last rebuild of a damaged vector index, if any

    # Parts, made lazily so `hearth sources` never loads a model.
    @property
    def manifest(self) -> Manifest:
        """The document manifest."""
        with self._lock:
            if self._manifest is None:
                self._manifest = Manifest(self.config.index_dir / "manifest.sqlite")
            return self._manifest

    @property
    def store(self) -> VectorStore:
        """The vector store."""
        with self._lock:
            if self._store is None and self.config.chroma_url:
                from rag.remote_store import open_shared_store

                self._store = open_shared_store(self.config.chroma_url, self.config.index_dir,
                                                token=self.config.chroma_token)
            if self._store is None:
                self.claim_data_dir()  # ChromaDB's files must never be open in two processes
                self._store = HybridStore(
                    ChromaStore(self.config.data_dir / "index"), LexicalIndex(self.config.data_dir / "lexical.sqlite")
                )
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

    def embedder_for(self, workspace: str) -> Embedder:
        """The embedder for a workspace: the configured one, else the one it was indexed with, else the default."""
        with self._lock:
            if self._embedder is not None:
                return self._embedder
            bound = self.manifest.workspace_embedder(check_workspace(workspace))
            return self._load_embedder(self.config.embedder or bound)

    def _load_embedder(self, spec: str | None) -> Embedder:
        """Load (once) the ONNX embedder that `spec` names; see HearthConfig.embedder."""
        from inference.embedder import OnnxEmbedder
        from inference.models import embedder_dir

        folder = embedder_dir(spec, self.config.cache_dir)
        if folder.name not in self._embedders:
            self._embedders[folder.name] = OnnxEmbedder(folder, threads=self.config.embed_threads)
        return self._embedders[folder.name]

    @property
    def chat_model(self) -> ChatModel:
        """The chat model, loaded on first use (see `warm_up` to load it ahead of the first question)."""
        with self._model_lock:
            if self._chat_model is None and self.config.llm_url:
                from inference.remote import OpenAIChatModel

                self._chat_model = OpenAIChatModel(self.config.llm_url, model=self.config.llm_model,
                                                   api_key=self.config.llm_api_key, n_ctx=self.config.n_ctx)
            if self._chat_model is None:
                from inference.llm import LlamaCppModel

                path = self.resolve_model_path(self.config.chat_model)
                layers = self.config.n_gpu_layers
                if layers is None:
                    layers = self.plan_gpu_layers(path)
                self._chat_model = LlamaCppModel(
                    path, n_ctx=self.config.n_ctx, n_threads=self.config.n_threads, n_gpu_layers=layers
                )
            return self._chat_model

    def plan_gpu_layers(self, path: Path) -> int:
        """How many layers to offload: as many as the memory plan says fit this machine's best GPU."""
        from inference.hardware import detect

        try:
            self.memory_plan = detect().plan(path, n_ctx=self.config.n_ctx)
        except HearthError as exc:
            log.warning("no memory plan for %s (%s); running on the CPU", path.name, exc)
            return 0
        return self.memory_plan.n_gpu_layers

    def resolve_model_path(self, model: str | None) -> Path:
        """A GGUF path from a registry name, a file in the models folder, or a path (see resolve_chat_model)."""
        return resolve_chat_model(model, self.config)

    # The service API.
    def ingest(
        self,
        paths: Iterable[Path],
        *,
        workspace: str = DEFAULT_WORKSPACE,
        progress: Callable[[Progress], None] | None = None,
        cancel: Callable[[], bool] | None = None,
    ) -> IngestReport:
        """Index files and folders into a workspace (re-embedding all of it when the embedder changed)."""
        workspace = check_workspace(workspace)
        embedder = self.embedder_for(workspace)
        paths = list(paths)
        bound = self.manifest.workspace_embedder(workspace)
        if bound is not None and bound != embedder.name:
            paths = self._unbind_for_reembedding(workspace, embedder) + paths
        self.check_index(workspace)
        try:
            return self._repairing(lambda: ingest(
                paths,
                workspace=workspace,
                embedder=embedder,
                store=self.store,
                manifest=self.manifest,
                options=self.config.ingest,
                progress=progress,
                cancel=cancel,
            ))
        finally:
            release_free_memory()

    def check_index(self, workspace: str = DEFAULT_WORKSPACE) -> RepairReport | None:
        """Read the local vector index once; when it is damaged, rebuild it (returns the report, else None)."""
        store = self.store
        if not isinstance(store, HybridStore) or not self._own_store:
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
            if not isinstance(store, HybridStore) or not self._own_store:
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
            if not self._own_store:
                raise
            log.warning("The vector index is damaged; rebuilding it from the keyword index.")
            self.repair_index()
            return run()

    def search(
        self, query: str, *, k: int = 5, workspace: str = DEFAULT_WORKSPACE, mode: str | None = None
    ) -> list[Hit]:
        """The k passages most similar to a query, best first, from fully indexed documents only."""
        workspace = check_workspace(workspace)
        if not query.strip():
            raise UsageError("The question is empty.")
        if not 1 <= k <= 100:
            raise UsageError(f"k must be between 1 and 100, not {k}.")
        return self._repairing(lambda: self._search(query, k=k, workspace=workspace, mode=mode))

    def _search(self, query: str, *, k: int, workspace: str, mode: str | None) -> list[Hit]:
        done = self._done_sources(workspace)
        if not done:
            return []
        embedder = _QueryEmbedder(self._check_embedder(workspace))
        store = self.store
        if not isinstance(store, HybridStore):  # a plain vector store passed in: dense ranking only
            vector = embedder.embed([query])[0]
            return [h for h in store.query(workspace, vector, k=k * 3 + 10) if h.source in done][:k]
        store.sync_lexical(workspace, done)
        options = replace(self.config.retrieval, mode=mode or self.config.retrieval.mode)
        # Only chunks of documents whose indexing finished count; interrupted ones are filtered out.
        return retrieve(
            query, workspace=workspace, embedder=embedder, store=store, done=done, k=k, options=options,
            reranker=self.reranker if options.mode == "hybrid" else None,
        )

    @property
    def reranker(self) -> Reranker | None:
        """The cross-encoder reranker, when a folder for one is configured."""
        with self._lock:
            if self._reranker is None and self.config.reranker_dir is not None:
                from inference.reranker import OnnxCrossEncoder

                scorer = OnnxCrossEncoder(self.config.reranker_dir, threads=self.config.embed_threads)
                self._reranker = CrossEncoderReranker(scorer)
            return self._reranker

    def ask(
        self,
        question: str,
        *,
        k: int = 5,
        workspace: str = DEFAULT_WORKSPACE,
        on_token: Callable[[str], None] | None = None,
        cancel: Callable[[], bool] | None = None,
        history: Sequence[str] = (),
        turns: Sequence[Turn] = (),
        conversation: int | None = None,
    ) -> Answer:
        """Answer a question from the workspace's documents, streaming the reply to `on_token`.

        `history` holds the conversation's earlier user questions: a follow-up is searched with them.
        `turns` are the earlier questions with their answers, which the model sees (trimmed to fit).
        With `conversation` (an id from `new_conversation`), both come from the stored conversation and
        the question and its answer are added to it.
        """
        t0 = time.perf_counter()
        workspace = check_workspace(workspace)
        if self._chat_model is None and not self.config.llm_url:
            self.resolve_model_path(self.config.chat_model)  # a bad --model is an error even with no hits
        conv = self.conversations.require(conversation, workspace) if conversation is not None else None
        if conv is not None:
            turns = conv.history()
        if turns and not history:
            history = [t.question for t in turns]
        query = contextualize(question, history)
        hits = [h for h in self.search(query, k=k, workspace=workspace) if h.score >= self.config.min_score]
        t_search = time.perf_counter() - t0
        model = self.chat_model if hits else _NoModel()
        shown: list[str] = []

        def show(piece: str) -> None:
            shown.append(piece)
            if on_token is not None:
                on_token(piece)

        try:
            result = answer(question, hits, model, history=turns, on_token=show, cancel=cancel,
                            max_passage_tokens=self.config.max_passage_tokens)
        except Exception as exc:
            if conv is not None:  # keep what the user saw, and why it ended
                self.conversations.add_turn(conv.id, question, None, text="".join(shown), error=str(exc))
            raise
        result.timings["retrieval"] = t_search
        if hits:
            # Align against the passages as stored (the prompt's copies are tidied; offsets point at these).
            stored = {h.chunk_id: h for h in hits}
            given = [stored.get(h.chunk_id, h) for h in result.sources]
            t_align = time.perf_counter()
            support = align(result.text, question, given, embedder=self.embedder_for(workspace))
            result = replace(result, support=support)
            result.timings["quotes"] = time.perf_counter() - t_align
        if conv is not None:
            self.conversations.add_turn(conv.id, question, result)
            result = replace(result, conversation_id=conv.id)
        return result

    # Conversations, the model library and the chat model's life.
    @property
    def conversations(self) -> ConversationStore:
        """The stored conversations of every workspace."""
        with self._lock:
            if self._conversations is None:
                from rag.conversations import ConversationStore

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
                from inference.library import ModelLibrary

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
        if self._chat_model is None and not getattr(self.config, "llm_url", None):
            self.resolve_model_path(self.config.chat_model)  # also joins a split built-in model, once
        with self._lock:
            if self._warming is None or (not self._warming.is_alive() and self._chat_model is None):
                self._warming = threading.Thread(target=self._warm, name="hearth-warm-up", daemon=True)
                self._warming.start()
            thread = self._warming
        if wait:
            thread.join()

    def _warm(self) -> None:
        try:
            model = self.chat_model
            prefill = getattr(model, "prefill", None)
            if prefill is not None:
                prefill(fixed_messages())
        except Exception:  # noqa: BLE001 - reported by the request that needs the model
            pass

    def unload_model(self) -> bool:
        """Free the chat model's memory (it loads again on the next question); True if one was loaded."""
        with self._model_lock:
            model, self._chat_model = self._chat_model, None
        if model is None:
            return False
        close = getattr(model, "close", None)
        if close is not None:
            close()
        return True

    def release_if_memory_low(self) -> bool:
        """Unload the chat model when the system is short of memory; True if it did."""
        from inference.llm import available_memory

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
        store = self.store
        if not isinstance(store, HybridStore):
            raise UsageError("The self-test needs Hearth's own document index.")
        store.sync_lexical(workspace, self.manifest.done_sources(workspace))
        return self_test(self, workspace=workspace, n=n, k=k, seed=seed, progress=progress, cancel=cancel)

    def sources(self, *, workspace: str = DEFAULT_WORKSPACE) -> list[DocumentRecord]:
        """Every document the workspace knows, with its status."""
        return self.manifest.documents(check_workspace(workspace))

    def document_text(self, path: Path) -> str:
        """A document's full text as Hearth reads it: the text that passage and quote offsets point into.

        Read in a worker process under the same caps as indexing (size, time, memory), so a document
        that changed into something hostile since it was indexed costs only that process.
        """
        from inference.errors import LoadError
        from rag.loaders import full_text
        from rag.parse_pool import ParseJob, ParsePool

        options = self.config.ingest
        job = ParseJob(Path(path), limits=options.limits, max_file_bytes=options.max_file_bytes)
        pool = ParsePool(1, timeout=options.parse_timeout, memory_limit=options.parse_memory_bytes)
        for parsed in pool.run([job]):
            if parsed.error is not None:
                kind, message = parsed.error
                raise LoadError(message, kind=kind)
            return full_text(parsed.sections or [])
        raise LoadError(f"{Path(path).name} could not be read.")

    def forget(self, paths: Iterable[Path], *, workspace: str = DEFAULT_WORKSPACE) -> list[str]:
        """Remove documents (or all under folders) from a workspace; returns what was removed."""
        return forget(list(paths), workspace=check_workspace(workspace), store=self.store, manifest=self.manifest)

    def watch(
        self,
        folders: Iterable[Path],
        *,
        stop: threading.Event,
        on_update: Callable[[WatchUpdate], None],
        workspace: str = DEFAULT_WORKSPACE,
        progress: Callable[[Progress], None] | None = None,
        force_polling: bool | None = None,
        lock: AbstractContextManager[Any] | None = None,
    ) -> None:
        """Sync folders into a workspace, then keep them in sync until `stop` is set; `lock` (the window's)
        is held around each batch of index writes, so that they take turns with the caller's other writes."""
        from rag.watch import watch

        workspace = check_workspace(workspace)
        guard = lock if lock is not None else nullcontext()

        def add(paths: list[Path]) -> IngestReport:
            with guard:
                return self.ingest(paths, workspace=workspace, progress=progress)

        def remove(paths: list[Path]) -> list[str]:
            with guard:
                return self.forget(paths, workspace=workspace)

        watch(
            list(folders),
            ingest=add,
            forget=remove,
            on_update=on_update,
            stop=stop,
            include_hidden=self.config.ingest.include_hidden,
            force_polling=force_polling,
        )

    def _done_sources(self, workspace: str) -> set[str]:
        """Fully indexed documents: on a shared Chroma server those any machine finished, else this machine's."""
        if self.config.chroma_url:
            return self.store.shared_sources(workspace)  # type: ignore[attr-defined]
        return self.manifest.done_sources(workspace)

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

    def _unbind_for_reembedding(self, workspace: str, embedder: Embedder) -> list[Path]:
        """Empty a workspace indexed with another model and bind it to `embedder`; return its files to redo.

        Vectors of two models are never mixed: every document is removed first, then indexed again.
        """
        sources = [r.source for r in self.manifest.documents(workspace)]
        forget([Path(s) for s in sources], workspace=workspace, store=self.store, manifest=self.manifest)
        # The collection itself remembers the old vector size (and may hold chunks of interrupted files).
        vectors = getattr(self.store, "vectors", self.store)  # HybridStore keeps its ChromaStore there
        drop = getattr(vectors, "drop_workspace", None)
        if drop is not None:
            drop(workspace)
        self.manifest.rebind_workspace(workspace, embedder=embedder.name, dim=embedder.dim)
        return [Path(s) for s in sources]


class _QueryEmbedder:
    """Presents an embedder's query side (`embed_query`: e5's "query: " prompt) as `embed` to retrieval."""

    def __init__(self, embedder: Embedder) -> None:
        self._embedder = embedder
        self.name, self.dim, self.max_tokens = embedder.name, embedder.dim, embedder.max_tokens

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        from inference.embedder import query_vectors

        return query_vectors(self._embedder, texts)

    def count_tokens(self, text: str) -> int:
        return self._embedder.count_tokens(text)


class _NoModel:
    """Stands in for the chat model when there is nothing to answer from, so none is loaded."""

    name = "none"
    n_ctx = 0

    def stream(self, *args: object, **kwargs: object):  # pragma: no cover - never called without hits
        raise AssertionError("no model needed")

    def count_tokens(self, text: str) -> int:  # pragma: no cover
        return 0
