"""The core's configuration: one frozen value, built by the front ends (app/config.py) and read by every part."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from rag.ingest import IngestOptions
from rag.retrieval import RetrievalOptions


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
    # A question in another language than the workspace's main ones is also searched translated by the chat
    # model (rag/crosslingual.py; bench/russian.py --cross measures it).
    translate_queries: bool = True
    # `ask` has the chat model read its first passages with the question to order them (rag/likely.py): some 7 s
    # before the first token on 2 CPU cores. Off by default: on 80 held-out office questions it changed no answer
    # shown (docs/evaluation.md "Speed"), on the Debian held-out questions it put 3 of 99 more answers first.
    model_ranking: bool = False
    # When the documents don't seem to answer (rag.answer.NOT_FOUND_MODES): "balanced" says so when the measured
    # rule finds the reply unsupported; "strict" also when any of it is not borne out; "off" always shows the
    # model's reply, its unsupported sentences marked. `ask --not-found`, HEARTH_NOT_FOUND, the app's setting.
    not_found: str = "balanced"
    # The model that checks whether the line an answer comes from gives it (rag/confirm.py): a registry name or
    # a path; None = the built-in checker (inference.models.CHECK_MODEL) when its packages are installed, else
    # the chat model; "chat" = the chat model always (quicker: one model in memory, a weaker check).
    check_model: str | None = None
    max_passage_tokens: int | None = 800  # passages given to the chat model, at most (a CPU reads ~100 tokens/s)
    unload_below: int = 512 << 20  # bytes of free memory under which `release_if_memory_low` unloads the model
    models_folder: Path | None = None  # the models folder when not DATA_DIR/models (an administrator's policy)
    # Where converted embedders and joined built-in model files are kept: once per machine, shared by every data
    # folder (the front ends pass the user's cache folder, app.config.default_cache_dir); None = DATA_DIR/cache.
    cache_folder: Path | None = None
    allowed_models: tuple[str, ...] | None = None  # chat models that may be used (see model_allowed); None = any
    # Shared-office mode: a Chroma server holds the index, an OpenAI-compatible server answers.
    chroma_url: str | None = None  # http://HOST:PORT of `chroma run`; None = the local index
    chroma_token: str | None = field(default=None, repr=False)  # sent as a bearer token
    # Seconds a read of the server's list of finished documents is reused (other machines' changes show after it).
    shared_refresh_seconds: float = 2.0
    llm_url: str | None = None  # base URL of an OpenAI-compatible server (…/v1); None = the in-process model
    llm_model: str | None = None  # the model name asked of it; None = the first it lists
    llm_api_key: str | None = field(default=None, repr=False)

    @property
    def cache_dir(self) -> Path:
        """Converted embedders and assembled model files (model files only: no document's text)."""
        return self.cache_folder or self.data_dir / "cache"

    @property
    def models_dir(self) -> Path:
        """The folder where users put their own GGUF models."""
        return self.models_folder or self.data_dir / "models"

    @property
    def index_dir(self) -> Path:
        """This machine's manifest and keyword index: DATA_DIR, or a folder per shared Chroma server."""
        if not self.chroma_url:
            return self.data_dir
        from rag.shared_store import shared_folder_name

        return self.data_dir / "shared" / shared_folder_name(self.chroma_url)


def model_allowed(name: str, allowed: Sequence[str]) -> bool:
    """Whether a chat model is on an allow-list: its built-in name, or its file name (with or without .gguf).

    Paths are never allowed by name, so only built-in models and files in the models folder qualify.
    """
    if "/" in name or "\\" in name:
        return False
    return name in allowed or (name.endswith(".gguf") and name[: -len(".gguf")] in allowed) or f"{name}.gguf" in allowed
