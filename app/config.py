"""One road from settings to the core: flags, HEARTH_* variables, the app's saved choices and the
administrator's policy become one `HearthConfig`.

Every front end (`hearth` commands, the window, `hearth hw`, the API server and MCP) builds its
configuration here and nowhere else, in this order of precedence:

    the administrator's policy  >  flags / the app's saved choices  >  HEARTH_* variables  >  defaults

A choice the policy forbids is an error (PolicyError), never a silent change.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path

from inference.errors import UsageError
from rag.answer import check_not_found
from rag.config import HearthConfig
from rag.ingest import IngestOptions

# The variables Hearth reads (README: "Command line"); nothing else in app/ reads HEARTH_* settings.
ENV_DATA_DIR = "HEARTH_DATA_DIR"
ENV_CACHE_DIR = "HEARTH_CACHE_DIR"  # converted and joined models, shared by every data folder of this user
ENV_THREADS = "HEARTH_THREADS"
ENV_RERANKER_DIR = "HEARTH_RERANKER_DIR"
ENV_CHROMA_URL = "HEARTH_CHROMA_URL"
ENV_CHROMA_TOKEN = "HEARTH_CHROMA_TOKEN"
ENV_LLM_URL = "HEARTH_LLM_URL"
ENV_LLM_MODEL = "HEARTH_LLM_MODEL"
ENV_LLM_API_KEY = "HEARTH_LLM_API_KEY"
ENV_MODEL_RANKING = "HEARTH_MODEL_RANKING"
ENV_NOT_FOUND = "HEARTH_NOT_FOUND"  # strict, balanced or off (rag.answer.NOT_FOUND_MODES)
# Earlier versions of a changed document whose text is kept for `hearth compare` (IngestOptions.keep_versions).
ENV_KEEP_VERSIONS = "HEARTH_KEEP_VERSIONS"
# The model that checks answers' lines: a built-in name or a path, or "chat" for the chat model (HearthConfig).
ENV_CHECK_MODEL = "HEARTH_CHECK_MODEL"


@dataclass(frozen=True)
class Requested:
    """What a front end was asked for, by flags or by the app's saved choices; None means "not asked"."""

    data_dir: Path | None = None
    chat_model: str | None = None  # a built-in name, a file in the models folder, or a path to a .gguf
    n_ctx: int | None = None
    threads: int | None = None  # CPU threads of both models
    n_gpu_layers: int | None = None  # None: automatic (as many as the memory plan fits)
    embedder: str | None = None
    chunk_tokens: int | None = None
    chroma_url: str | None = None  # the office's shared Chroma server
    llm_url: str | None = None  # the office's shared OpenAI-compatible inference server
    llm_model: str | None = None
    model_ranking: bool | None = None  # the chat model orders `ask`'s first passages (HearthConfig.model_ranking)
    not_found: str | None = None  # when the documents don't answer (HearthConfig.not_found)

    def over(self, base: Requested) -> Requested:
        """These choices, with `base`'s where these name none (flags over the app's saved choices)."""
        return replace(base, **{f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) is not None})


def requested_from_args(args: object) -> Requested:
    """The choices an argparse namespace of `hearth` holds (attributes a subcommand lacks count as not asked)."""
    data_dir = getattr(args, "data_dir", None)
    return Requested(
        data_dir=Path(data_dir).expanduser() if data_dir else None,
        chat_model=getattr(args, "model", None),
        n_ctx=getattr(args, "ctx", None),
        threads=_threads(getattr(args, "threads", None), "--threads"),
        embedder=getattr(args, "embedder_spec", None),
        chroma_url=getattr(args, "chroma_url", None),
        llm_url=getattr(args, "llm_url", None),
        llm_model=getattr(args, "llm_model", None),
        model_ranking=getattr(args, "model_ranking", None),
        not_found=getattr(args, "not_found", None),
    )


def default_data_dir(env: Mapping[str, str] | None = None) -> Path:
    """HEARTH_DATA_DIR, else the platform's user data folder."""
    env = os.environ if env is None else env
    if env.get(ENV_DATA_DIR):
        return Path(env[ENV_DATA_DIR]).expanduser()
    import platformdirs

    return Path(platformdirs.user_data_dir("hearth", appauthor=False))


def default_cache_dir(env: Mapping[str, str] | None = None) -> Path:
    """HEARTH_CACHE_DIR, else the platform's user cache folder: the embedder is converted and the built-in models
    joined there once per machine, not once per data folder (they hold no document's text)."""
    env = os.environ if env is None else env
    if env.get(ENV_CACHE_DIR):
        return Path(env[ENV_CACHE_DIR]).expanduser()
    import platformdirs

    return Path(platformdirs.user_cache_dir("hearth", appauthor=False))


def env_threads(env: Mapping[str, str] | None = None) -> int | None:
    """HEARTH_THREADS as a number of threads, or None when unset; UsageError when it is not one."""
    env = os.environ if env is None else env
    value = env.get(ENV_THREADS, "").strip()
    if not value:
        return None
    try:
        return _threads(int(value), ENV_THREADS)
    except ValueError:
        raise UsageError(f"{ENV_THREADS} must be a whole number of threads, not {value!r}.") from None


def env_model_ranking(env: Mapping[str, str] | None = None) -> bool | None:
    """HEARTH_MODEL_RANKING as a yes or no (1/0, true/false, yes/no, on/off), or None when unset; UsageError
    for anything else."""
    env = os.environ if env is None else env
    value = env.get(ENV_MODEL_RANKING, "").strip().lower()
    if not value:
        return None
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    raise UsageError(f"{ENV_MODEL_RANKING} must be 1 or 0 (on or off), not {env[ENV_MODEL_RANKING]!r}.")


def env_keep_versions(env: Mapping[str, str] | None = None) -> int | None:
    """HEARTH_KEEP_VERSIONS as a number of earlier versions to keep (0: none), or None when unset."""
    env = os.environ if env is None else env
    value = env.get(ENV_KEEP_VERSIONS, "").strip()
    if not value:
        return None
    if not value.isdigit() or int(value) > 1000:
        raise UsageError(f"{ENV_KEEP_VERSIONS} must be a whole number from 0 to 1000, not {value!r}.")
    return int(value)


def data_dir(requested: Requested, *, policy: object | None = None, env: Mapping[str, str] | None = None) -> Path:
    """The data folder: the policy's (refusing another one asked for), else the flag, else the variable or default."""
    policy = _policy(policy)
    env = os.environ if env is None else env
    asked = requested.data_dir or (Path(env[ENV_DATA_DIR]).expanduser() if env.get(ENV_DATA_DIR) else None)
    return (policy.check_data_dir(asked) or default_data_dir(env)).expanduser()


def hearth_config(requested: Requested = Requested(), *, policy: object | None = None,
                  env: Mapping[str, str] | None = None) -> HearthConfig:
    """The core's configuration for these choices, the variables and the administrator's policy."""
    env = os.environ if env is None else env
    policy = _policy(policy)
    threads = requested.threads or env_threads(env)
    ingest = IngestOptions(chunk_tokens=requested.chunk_tokens) if requested.chunk_tokens else IngestOptions()
    keep = env_keep_versions(env)
    ingest = replace(ingest, keep_versions=keep) if keep is not None else ingest
    ranking = requested.model_ranking if requested.model_ranking is not None else env_model_ranking(env)
    config = HearthConfig(
        data_dir=data_dir(requested, policy=policy, env=env),
        cache_folder=default_cache_dir(env),
        chat_model=requested.chat_model,
        n_ctx=requested.n_ctx or HearthConfig.n_ctx,
        n_threads=threads,
        embed_threads=threads,
        n_gpu_layers=requested.n_gpu_layers,
        embedder=requested.embedder,
        ingest=ingest,
        reranker_dir=Path(env[ENV_RERANKER_DIR]).expanduser() if env.get(ENV_RERANKER_DIR) else None,
        chroma_url=requested.chroma_url or env.get(ENV_CHROMA_URL) or None,
        chroma_token=env.get(ENV_CHROMA_TOKEN) or None,
        llm_url=requested.llm_url or env.get(ENV_LLM_URL) or None,
        llm_model=requested.llm_model or env.get(ENV_LLM_MODEL) or None,
        llm_api_key=env.get(ENV_LLM_API_KEY) or None,
        model_ranking=HearthConfig.model_ranking if ranking is None else ranking,
        check_model=env.get(ENV_CHECK_MODEL, "").strip() or None,
        not_found=check_not_found(requested.not_found or env.get(ENV_NOT_FOUND, "").strip() or HearthConfig.not_found),
    )
    return policy.apply(config)


def _threads(value: int | None, name: str) -> int | None:
    if value is not None and value < 1:
        raise UsageError(f"{name} must be at least 1.")
    return value


def _policy(policy: object | None):
    if policy is not None:
        return policy
    from app.policy import load_policy

    return load_policy()
