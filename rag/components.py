"""The one place that builds Hearth's parts from its configuration: the document index, the embedders, the
chat model and the reranker. `Hearth` (rag/service.py) owns what these return; no front end builds a part.

Each part has one local implementation and, where an office shares one, a shared one chosen by the
configuration: the index on this machine (ChromaDB + the keyword index) or on the office's Chroma server;
the chat model in this process (llama.cpp) or on the office's OpenAI-compatible server.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from inference.errors import HearthError, ModelError, UsageError
from rag.config import HearthConfig, model_allowed

if TYPE_CHECKING:
    from inference.budget import MemoryPlan
    from inference.chat import ChatModel
    from inference.embedder import Embedder
    from rag.retrieval import Reranker
    from rag.store import DocumentIndex

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LoadedChatModel:
    """A chat model and, when Hearth chose its GPU layers, the memory plan it followed."""

    model: ChatModel
    plan: MemoryPlan | None = None


def open_document_index(config: HearthConfig) -> DocumentIndex:
    """The document index the configuration names: the office's Chroma server, else this machine's own."""
    if config.chroma_url:
        from rag.shared_store import open_shared_store

        return open_shared_store(config.chroma_url, config.index_dir, token=config.chroma_token,
                                 refresh_seconds=config.shared_refresh_seconds)
    from rag.lexical import LexicalIndex
    from rag.store import ChromaStore, HybridStore

    return HybridStore(ChromaStore(config.data_dir / "index"), LexicalIndex(config.data_dir / "lexical.sqlite"))


def embedder_folder(spec: str | None, config: HearthConfig) -> Path:
    """The converted model folder an embedder name or a workspace's recorded key stands for."""
    from inference.models import embedder_dir

    return embedder_dir(spec, config.cache_dir)


def load_embedder(folder: Path, config: HearthConfig) -> Embedder:
    """An ONNX Runtime embedder over a converted model folder (on the GPU where a provider really works)."""
    from inference.embedder import OnnxEmbedder

    prepare_gpus()
    return OnnxEmbedder(folder, threads=config.embed_threads)


def resolve_chat_model(model: str | None, config: HearthConfig) -> Path:
    """A GGUF path from a built-in model name (prepared in the cache), a file in the models folder, or a path.

    The models folder is looked in before a relative path in the working directory, so a file there cannot
    stand in for a model of the same name. Under a policy's allowed models, only those, and never a path.
    """
    from inference.models import CHAT_MODELS, DEFAULT_CHAT_MODEL, chat_model_path

    name = model or DEFAULT_CHAT_MODEL
    allowed = config.allowed_models
    if allowed is not None and not model_allowed(name, allowed):
        raise UsageError(f"The model {name!r} is not allowed on this machine by the administrator's policy.",
                         hint="Allowed: " + ", ".join(allowed))
    if name in CHAT_MODELS:
        return chat_model_path(name, config.cache_dir)
    candidates = [config.models_dir / name] if "/" not in name and "\\" not in name else []
    if allowed is None:
        candidates.append(Path(name).expanduser())
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    raise UsageError(
        f"No model called {name!r}: not a built-in model, not a file in {config.models_dir}, "
        "not a path to a .gguf file.",
        hint="Built-in models: " + ", ".join(sorted(CHAT_MODELS)),
    )


def plan_gpu_layers(path: Path, config: HearthConfig, n_ctx: int | None = None) -> tuple[int, MemoryPlan | None]:
    """GPU layers for a model: the configured number, else as many as the memory plan fits this machine's GPU
    (for `n_ctx` tokens of context, else the configuration's).

    `HearthConfig.n_gpu_layers is None` is the one meaning of "automatic" (the settings' AUTO, `hw`'s plan).
    """
    from inference.engines import active, backend_of

    engine = active()
    if engine is not None and engine.chosen == "cpu" and engine.lib_dir and backend_of(engine.lib_dir) != "cpu":
        return 0, None  # a GPU build asked to run on the CPU alone (--engine cpu)
    if config.n_gpu_layers is not None:
        return config.n_gpu_layers, None
    from inference.hardware import detect

    prepare_gpus()  # before detect(): probing the runtimes loads llama.cpp's GPU backend in this process

    try:
        plan = detect().plan(path, n_ctx=config.n_ctx if n_ctx is None else n_ctx)
    except HearthError as exc:
        log.warning("no memory plan for %s (%s); running on the CPU", path.name, exc)
        return 0, None
    return plan.n_gpu_layers, plan


def load_chat_model(config: HearthConfig, model: str | None = None) -> LoadedChatModel:
    """The chat model: the office's inference server when configured, else a GGUF loaded by llama.cpp
    (`model`, else the configured one) with its GPU layers planned."""
    if config.llm_url and model is None:
        from inference.shared_llm import OpenAIChatModel

        return LoadedChatModel(OpenAIChatModel(config.llm_url, model=config.llm_model, api_key=config.llm_api_key,
                                               n_ctx=config.n_ctx))
    from inference.llm import LlamaCppModel

    prepare_gpus()
    path = resolve_chat_model(model if model is not None else config.chat_model, config)
    layers, plan = plan_gpu_layers(path, config)
    def loaded(n_gpu_layers: int) -> LoadedChatModel:
        return LoadedChatModel(LlamaCppModel(path, n_ctx=config.n_ctx, n_threads=config.n_threads,
                                             n_gpu_layers=n_gpu_layers), plan)

    try:
        return loaded(layers)
    except ModelError as exc:
        if layers == 0:
            raise
        # The GPU refused what was planned (its driver ran out of memory, or the backend failed to start): the
        # model still answers, on the CPU, and the log and the hardware panel (0 layers in use) say so.
        log.warning("%s did not load with %s GPU layers (%s); loading it on the CPU", path.name, layers, exc)
        return loaded(0)


CHECK_WITH_CHAT = "chat"  # HearthConfig.check_model: check answers with the chat model
CHECK_CTX = 1024  # tokens of context the checker is loaded with (a question, a sentence and a line)


def check_model_name(config: HearthConfig) -> str | None:
    """The model that checks answers' lines (rag/confirm.py), or None for the chat model: the configured one,
    else the built-in checker when its packages are installed, the policy allows it and it is not the chat model
    already. Not with an office's inference server unless one is configured: a machine that answers through it
    keeps one model's memory."""
    from inference.models import CHAT_MODELS, CHECK_MODEL, _locate_parts

    if config.check_model == CHECK_WITH_CHAT or same_model(config.check_model or CHECK_MODEL, config.chat_model):
        return None  # the chat model checks (it may be the checker itself: one copy in memory)
    if config.check_model is not None:
        return config.check_model
    if config.llm_url or (config.allowed_models is not None and not model_allowed(CHECK_MODEL, config.allowed_models)):
        return None
    try:
        _locate_parts(CHAT_MODELS[CHECK_MODEL])
    except HearthError as exc:
        log.info("answers are checked with the chat model: %s", exc)
        return None
    return CHECK_MODEL


def same_model(a: str | None, b: str | None) -> bool:
    """Whether two model names (a built-in one, a file in the models folder, a path) name the same GGUF: the same
    name, or file names whose stem is the other's name."""
    if a is None or b is None:
        return False
    from rag.confirm import model_stem

    return model_stem(a) == model_stem(b)


def load_check_model(config: HearthConfig, name: str) -> ChatModel:
    """The checker `name` loaded by llama.cpp with a short context, its GPU layers planned like the chat model's
    (for its own context, in the GPU memory the chat model left free)."""
    from inference.llm import LlamaCppModel

    prepare_gpus()
    path = resolve_chat_model(name, config)
    layers, _plan = plan_gpu_layers(path, config, n_ctx=CHECK_CTX)  # the chat model's setting, when one is set
    return LlamaCppModel(path, n_ctx=CHECK_CTX, n_threads=config.n_threads, n_gpu_layers=layers)


def load_reranker(config: HearthConfig) -> Reranker | None:
    """The cross-encoder reranker, when a folder for one is configured."""
    if config.reranker_dir is None:
        return None
    from inference.reranker import OnnxCrossEncoder
    from rag.retrieval import CrossEncoderReranker

    return CrossEncoderReranker(OnnxCrossEncoder(config.reranker_dir, threads=config.embed_threads))


def prepare_gpus() -> None:
    """Before a GPU runtime starts in this process: hide a GPU that ROCm cannot use next to one it can
    (the user's own ROCR_VISIBLE_DEVICES / HIP_VISIBLE_DEVICES / overrides always win; a few ms)."""
    from inference.gpu_select import hide_unusable_gpus

    hide_unusable_gpus()
