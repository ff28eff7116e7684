"""The one service object the GUI, the CLI and the HTTP server all call: ingest, search, ask, sources, forget."""

from __future__ import annotations

import threading
import time
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from inference.errors import UsageError
from inference.llm import ChatModel
from rag.answer import Answer, answer
from rag.evaluate import SelfTestReport, self_test
from rag.ingest import IngestOptions, IngestReport, Progress, forget, ingest
from rag.manifest import DocumentRecord, Manifest
from rag.lexical import LexicalIndex
from rag.retrieval import CrossEncoderReranker, Reranker, RetrievalOptions, contextualize, retrieve
from rag.store import ChromaStore, Hit, HybridStore, VectorStore

if TYPE_CHECKING:
    from inference.embedder import Embedder

DEFAULT_WORKSPACE = "default"


@dataclass(frozen=True)
class HearthConfig:
    """Where Hearth keeps its data and how it runs its models."""

    data_dir: Path
    chat_model: str | None = None  # a registry name or a path to a .gguf file; None = the default model
    n_ctx: int = 4096  # tokens of context the chat model is loaded with
    n_threads: int | None = None  # llama.cpp threads; None = one per physical core
    n_gpu_layers: int = 0
    embed_threads: int | None = None  # ONNX Runtime intra-op threads; None = all cores
    min_score: float = 0.2  # passages scoring below this cosine similarity are not relevant
    ingest: IngestOptions = field(default_factory=IngestOptions)
    retrieval: RetrievalOptions = field(default_factory=RetrievalOptions)
    reranker_dir: Path | None = None  # a cross-encoder ONNX folder (model.onnx + tokenizer.json), if any

    @property
    def cache_dir(self) -> Path:
        """Converted embedders and assembled model files."""
        return self.data_dir / "cache"

    @property
    def models_dir(self) -> Path:
        """The folder where users put their own GGUF models."""
        return self.data_dir / "models"


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
        self._store = store
        self._chat_model = chat_model
        self._manifest: Manifest | None = None
        self._reranker: Reranker | None = None
        self._lock = threading.RLock()

    # Parts, made lazily so `hearth sources` never loads a model.
    @property
    def manifest(self) -> Manifest:
        """The document manifest."""
        with self._lock:
            if self._manifest is None:
                self._manifest = Manifest(self.config.data_dir / "manifest.sqlite")
            return self._manifest

    @property
    def store(self) -> VectorStore:
        """The vector store."""
        with self._lock:
            if self._store is None:
                self._store = HybridStore(
                    ChromaStore(self.config.data_dir / "index"), LexicalIndex(self.config.data_dir / "lexical.sqlite")
                )
            return self._store

    @property
    def embedder(self) -> Embedder:
        """The embedding model (the default one unless another was passed in)."""
        with self._lock:
            if self._embedder is None:
                from inference.embedder import OnnxEmbedder
                from inference.models import default_embedder_dir

                folder = default_embedder_dir(self.config.cache_dir)
                self._embedder = OnnxEmbedder(folder, threads=self.config.embed_threads)
            return self._embedder

    @property
    def chat_model(self) -> ChatModel:
        """The chat model, loaded on first use."""
        with self._lock:
            if self._chat_model is None:
                from inference.llm import LlamaCppModel

                self._chat_model = LlamaCppModel(
                    self.resolve_model_path(self.config.chat_model),
                    n_ctx=self.config.n_ctx,
                    n_threads=self.config.n_threads,
                    n_gpu_layers=self.config.n_gpu_layers,
                )
            return self._chat_model

    def resolve_model_path(self, model: str | None) -> Path:
        """A GGUF path from a registry name, a file in the models folder, or a path."""
        from inference.models import CHAT_MODELS, DEFAULT_CHAT_MODEL, chat_model_path

        name = model or DEFAULT_CHAT_MODEL
        if name in CHAT_MODELS:
            return chat_model_path(name, self.config.cache_dir)
        for candidate in (Path(name).expanduser(), self.config.models_dir / name):
            if candidate.is_file():
                return candidate
        raise UsageError(
            f"No model called {name!r}: not a built-in model, not a file in {self.config.models_dir}, "
            "not a path to a .gguf file.",
            hint="Built-in models: " + ", ".join(sorted(CHAT_MODELS)),
        )

    # The service API.
    def ingest(
        self,
        paths: Iterable[Path],
        *,
        workspace: str = DEFAULT_WORKSPACE,
        progress: Callable[[Progress], None] | None = None,
        cancel: Callable[[], bool] | None = None,
    ) -> IngestReport:
        """Index files and folders into a workspace."""
        return ingest(
            list(paths),
            workspace=check_workspace(workspace),
            embedder=self.embedder,
            store=self.store,
            manifest=self.manifest,
            options=self.config.ingest,
            progress=progress,
            cancel=cancel,
        )

    def search(
        self, query: str, *, k: int = 5, workspace: str = DEFAULT_WORKSPACE, mode: str | None = None
    ) -> list[Hit]:
        """The k passages most similar to a query, best first, from fully indexed documents only."""
        workspace = check_workspace(workspace)
        if not query.strip():
            raise UsageError("The question is empty.")
        if not 1 <= k <= 100:
            raise UsageError(f"k must be between 1 and 100, not {k}.")
        done = self.manifest.done_sources(workspace)
        if not done:
            return []
        self._check_embedder(workspace)
        store = self.store
        if not isinstance(store, HybridStore):  # a plain vector store passed in: dense ranking only
            vector = self.embedder.embed([query])[0]
            return [h for h in store.query(workspace, vector, k=k * 3 + 10) if h.source in done][:k]
        store.sync_lexical(workspace, done)
        options = replace(self.config.retrieval, mode=mode or self.config.retrieval.mode)
        # Only chunks of documents whose indexing finished count; interrupted ones are filtered out.
        return retrieve(
            query, workspace=workspace, embedder=self.embedder, store=store, done=done, k=k, options=options,
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
    ) -> Answer:
        """Answer a question from the workspace's documents, streaming the reply to `on_token`.

        `history` holds the conversation's earlier user questions: a follow-up is searched with them.
        """
        t0 = time.perf_counter()
        if self._chat_model is None:
            self.resolve_model_path(self.config.chat_model)  # a bad --model is an error even with no hits
        query = contextualize(question, history)
        hits = [h for h in self.search(query, k=k, workspace=workspace) if h.score >= self.config.min_score]
        t_search = time.perf_counter() - t0
        model = self.chat_model if hits else _NoModel()
        result = answer(question, hits, model, on_token=on_token, cancel=cancel)
        result.timings["retrieval"] = t_search
        return result

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

    def forget(self, paths: Iterable[Path], *, workspace: str = DEFAULT_WORKSPACE) -> list[str]:
        """Remove documents (or all under folders) from a workspace; returns what was removed."""
        return forget(list(paths), workspace=check_workspace(workspace), store=self.store, manifest=self.manifest)

    def _check_embedder(self, workspace: str) -> None:
        bound = self.manifest.workspace_embedder(workspace)
        if bound is not None and bound != self.embedder.name:
            raise UsageError(
                f"Workspace {workspace!r} was indexed with {bound!r}, but the embedder now is "
                f"{self.embedder.name!r}; its vectors cannot be compared.",
                hint="Re-index the workspace with the current embedding model.",
            )


class _NoModel:
    """Stands in for the chat model when there is nothing to answer from, so none is loaded."""

    name = "none"
    n_ctx = 0

    def stream(self, *args: object, **kwargs: object):  # pragma: no cover - never called without hits
        raise AssertionError("no model needed")

    def count_tokens(self, text: str) -> int:  # pragma: no cover
        return 0
