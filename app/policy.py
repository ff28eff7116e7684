"""The administrator's policy: settings an IT person locks for every user of a machine.

The policy is a TOML file, `/etc/hearth/policy.toml` (packaging/policy.example.toml documents every key).
When no system file exists, `HEARTH_POLICY=FILE` names one instead, for tests and for trying a policy
before installing it; when the system file exists, HEARTH_POLICY is ignored, so a user cannot swap
the administrator's file for their own. No file at all means no policy (`Policy()`: nothing locked).

A file that cannot be read or parsed, or that has a key or value Hearth does not know, raises
PolicyError instead of being half-applied: a typo must not silently unlock a setting.

API for front ends (the CLI and the server use it already; the GUI reads it the same way):

    policy = load_policy()                # once at start; raises PolicyError (show it and stop)
    policy.active                         # a policy file is in force
    policy.source                         # its path, for "set by your administrator in …"
    policy.is_locked(DATA_DIR)            # show that control read-only, with `policy.note()` as tooltip
    policy.locked()                       # {setting: enforced value} for every locked setting
    policy.allows_model("name.gguf")      # offer only these models; the first of `allowed_models` is the default
    policy.api_server                     # "allowed" | "key-only" | "forbidden" (disable the API switch)
    policy.apply(config)                  # a HearthConfig with every locked value put in (raises on conflicts)
    policy.check_data_dir(requested)      # the data folder to use; PolicyError if the user asked for another
    policy.check_remote(chroma_url, llm_url)  # the shared engines to use; PolicyError if not allowed
    api_server_config(policy, data_dir, host=…)  # the API switch: (ServerConfig, new key or None); the key is
                                          # required on loopback too; "key-only" also refuses no_key=True,
                                          # "forbidden" raises PolicyError

Setting names (stable strings for `is_locked` and `locked()`): DATA_DIR, MODELS_DIR, CHAT_MODEL
(the choice is restricted to `allowed_models`), MAX_FILE_SIZE, KEEP_VERSIONS, API_SERVER, CHROMA_URL, LLM_URL,
LLM_MODEL, REMOTE (shared engines forbidden).

The policy locks Hearth's own choices; it is not a sandbox. Pair it with file permissions (the models
folder read-only for users) and, for a machine that must stay offline, the firewall.
"""

from __future__ import annotations

import getpass
import os
import re
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from inference.errors import UsageError

if TYPE_CHECKING:
    from rag.service import HearthConfig

SYSTEM_POLICY = Path("/etc/hearth/policy.toml")
ENV_POLICY = "HEARTH_POLICY"

DATA_DIR = "data_dir"
MODELS_DIR = "models_dir"
CHAT_MODEL = "chat_model"
MAX_FILE_SIZE = "max_file_size"
KEEP_VERSIONS = "keep_versions"
API_SERVER = "api_server"
REMOTE = "remote"
CHROMA_URL = "chroma_url"
LLM_URL = "llm_url"
LLM_MODEL = "llm_model"

API_ALLOWED, API_KEY_ONLY, API_FORBIDDEN = "allowed", "key-only", "forbidden"
REMOTE_ALLOWED, REMOTE_FORBIDDEN = "allowed", "forbidden"

_SCHEMA: dict[str, set[str]] = {
    "data": {"folder", "max_file_size", "keep_versions"},
    "models": {"folder", "allowed"},
    "api": {"server"},
    "shared": {"remote", "chroma_url", "llm_url", "llm_model"},
}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]?i?B|bytes?)?\s*$", re.I)
_UNITS = {"": 1, "b": 1, "byte": 1, "bytes": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
          "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}


class PolicyError(UsageError):
    """The administrator's policy forbids what was asked, or the policy file itself is broken."""


@dataclass(frozen=True)
class Policy:
    """Settings locked by the administrator; None (or "allowed") for what is left to the user."""

    source: Path | None = None  # the file it came from; None when there is no policy
    data_dir: Path | None = None  # every user's data folder ({user} and ~ already expanded)
    models_dir: Path | None = None  # the folder chat models come from, besides the built-in ones
    allowed_models: tuple[str, ...] | None = None  # built-in names or file names in models_dir; first = default
    max_file_bytes: int | None = None  # larger files are reported, not indexed
    keep_versions: int | None = None  # earlier versions of a changed document kept for `compare`; 0 = none
    api_server: str = API_ALLOWED  # "allowed" | "key-only" | "forbidden"
    remote: str = REMOTE_ALLOWED  # "forbidden": no shared Chroma server, no inference server
    chroma_url: str | None = None  # the office's shared Chroma server, locked
    llm_url: str | None = None  # the office's OpenAI-compatible inference server, locked
    llm_model: str | None = None  # the model name asked of it

    @property
    def active(self) -> bool:
        """Whether a policy file is in force."""
        return self.source is not None

    def locked(self) -> dict[str, Any]:
        """Every locked setting with the value the policy enforces, by setting name."""
        values: dict[str, Any] = {
            DATA_DIR: self.data_dir, MODELS_DIR: self.models_dir, CHAT_MODEL: self.allowed_models,
            MAX_FILE_SIZE: self.max_file_bytes, KEEP_VERSIONS: self.keep_versions, CHROMA_URL: self.chroma_url, LLM_URL: self.llm_url,
            LLM_MODEL: self.llm_model,
            API_SERVER: self.api_server if self.api_server != API_ALLOWED else None,
            REMOTE: self.remote if self.remote != REMOTE_ALLOWED else None,
        }
        return {k: v for k, v in values.items() if v is not None}

    def is_locked(self, setting: str) -> bool:
        """Whether the user may not change `setting` (one of the names at the top of this module)."""
        return setting in self.locked()

    def note(self) -> str:
        """The sentence a locked control shows, naming the policy file."""
        return f"Set by your administrator in {self.source}." if self.source else ""

    def allows_model(self, name: str) -> bool:
        """Whether a chat model (built-in name or file name in the models folder) may be used."""
        from rag.service import model_allowed

        return self.allowed_models is None or model_allowed(name, self.allowed_models)

    def check_data_dir(self, requested: Path | None) -> Path | None:
        """The data folder to use: the policy's; PolicyError when the user asked for another one.

        Returns `requested` unchanged when the policy sets no folder.
        """
        if self.data_dir is None:
            return requested
        if requested is not None and not _same_path(requested, self.data_dir):
            raise PolicyError(
                f"The data folder is set to {self.data_dir} by the administrator's policy; "
                f"{requested} cannot be used.",
                hint=f"Leave out --data-dir and HEARTH_DATA_DIR (policy: {self.source}).",
            )
        return self.data_dir

    def check_remote(self, chroma_url: str | None, llm_url: str | None) -> tuple[str | None, str | None]:
        """The shared Chroma server and inference server to use, after the policy; PolicyError on a conflict."""
        if self.remote == REMOTE_FORBIDDEN and (chroma_url or llm_url):
            what = " and ".join(n for n, v in (("a Chroma server", chroma_url), ("an inference server", llm_url)) if v)
            raise PolicyError(
                f"The administrator's policy keeps everything on this machine: {what} cannot be used.",
                hint=f"Leave out --chroma-url/--llm-url and HEARTH_CHROMA_URL/HEARTH_LLM_URL (policy: {self.source}).",
            )
        out = []
        for name, asked, locked in (("Chroma server", chroma_url, self.chroma_url),
                                    ("inference server", llm_url, self.llm_url)):
            if locked and asked and asked.rstrip("/") != locked.rstrip("/"):
                raise PolicyError(f"The office's {name} is set to {locked} by the administrator's policy; "
                                  f"{asked} cannot be used.", hint=f"Policy: {self.source}.")
            out.append(locked or asked)
        return out[0], out[1]

    def check_api_server(self) -> None:
        """PolicyError when the policy forbids the local API server."""
        if self.api_server == API_FORBIDDEN:
            raise PolicyError("The administrator's policy does not allow the API server on this machine.",
                              hint=f"Policy: {self.source}.")

    def apply(self, config: HearthConfig) -> HearthConfig:
        """`config` with every locked value put in; PolicyError for a choice the policy forbids.

        Sets the data folder, models folder, allowed models (their first is the default model when the
        built-in default is not allowed), the file size cap and the shared engines.
        """
        changes: dict[str, Any] = {}
        if self.data_dir is not None:
            changes["data_dir"] = self.data_dir
        if self.models_dir is not None:
            changes["models_folder"] = self.models_dir
        if self.allowed_models is not None:
            from inference.models import DEFAULT_CHAT_MODEL

            changes["allowed_models"] = self.allowed_models
            chosen = config.chat_model
            if chosen is None and not self.allows_model(DEFAULT_CHAT_MODEL):
                changes["chat_model"] = self.allowed_models[0]
            elif chosen is not None and not self.allows_model(chosen):
                raise PolicyError(
                    f"The model {chosen!r} is not allowed by the administrator's policy.",
                    hint="Allowed: " + ", ".join(self.allowed_models) + f" (policy: {self.source}).",
                )
        if self.max_file_bytes is not None:
            changes["ingest"] = replace(config.ingest, max_file_bytes=self.max_file_bytes)
        if self.keep_versions is not None:
            changes["ingest"] = replace(changes.get("ingest", config.ingest), keep_versions=self.keep_versions)
        chroma, llm = self.check_remote(getattr(config, "chroma_url", None), getattr(config, "llm_url", None))
        changes["chroma_url"], changes["llm_url"] = chroma, llm
        if self.llm_model is not None:
            if config.llm_model and config.llm_model != self.llm_model:
                raise PolicyError(f"The inference server's model is set to {self.llm_model!r} by the administrator's "
                                  f"policy; {config.llm_model!r} cannot be used.", hint=f"Policy: {self.source}.")
            changes["llm_model"] = self.llm_model
        return replace(config, **changes)


def api_server_config(policy: Policy, data_dir: Path, *, host: str = "127.0.0.1", port: int = 8642,
                      workspace: str = "default", new_key: bool = False, no_key: bool = False,
                      cors_origins: Sequence[str] = ()) -> tuple[Any, str | None]:
    """The API server's config under the policy, and a new key when one was made (show it once).

    A key is required on every address, loopback included (made on first use); `no_key` serves without
    one on loopback only. "forbidden" raises PolicyError, and so does `no_key` under "key-only". Both
    `hearth serve` and the GUI's API switch use it; the key rules are app.api_auth.secure_config's.
    """
    from app.api_auth import secure_config

    policy.check_api_server()
    if no_key and policy.api_server == API_KEY_ONLY:
        raise PolicyError("The administrator's policy requires the API key on every address, so --no-key "
                          "cannot be used.", hint=f"Leave out --no-key (policy: {policy.source}).")
    return secure_config(data_dir, host=host, port=port, workspace=workspace, new_key=new_key, no_key=no_key,
                         cors_origins=tuple(cors_origins))


def policy_path(env: Mapping[str, str] | None = None, *, system: Path | None = None) -> Path | None:
    """The policy file in force: the system one when it exists, else HEARTH_POLICY's, else None."""
    env = os.environ if env is None else env
    system = SYSTEM_POLICY if system is None else system
    if system.exists():
        return system
    named = env.get(ENV_POLICY)
    return Path(named).expanduser() if named else None


def load_policy(path: Path | None = None, *, env: Mapping[str, str] | None = None,
                system: Path | None = None, user: Callable[[], str] = getpass.getuser) -> Policy:
    """Read the policy in force (see `policy_path`), or `path`; Policy() when there is none.

    Raises PolicyError when the file exists but cannot be read or has anything Hearth does not know.
    """
    system = SYSTEM_POLICY if system is None else system
    path = path if path is not None else policy_path(env, system=system)
    if path is None:
        return Policy()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        if path == system:
            return Policy()  # removed between the check and the read
        raise PolicyError(f"The policy file {path} named by {ENV_POLICY} does not exist.") from None
    except OSError as exc:
        raise PolicyError(f"Cannot read the administrator's policy {path}: {exc.strerror or exc}.",
                          hint="Hearth does not start without it; ask your administrator.") from exc
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise PolicyError(f"The administrator's policy {path} is not valid TOML: {exc}.",
                          hint="Hearth does not start until it is fixed.") from exc
    return parse_policy(data, source=path, user=user)


def parse_policy(data: Mapping[str, Any], *, source: Path, user: Callable[[], str] = getpass.getuser) -> Policy:
    """A Policy from the parsed TOML of a policy file; PolicyError for anything unknown or malformed."""

    def fail(message: str) -> PolicyError:
        return PolicyError(f"The administrator's policy {source}: {message}", hint="Hearth does not start until it is fixed.")

    version = data.get("version", 1)
    if version != 1:
        raise fail(f"version {version!r} is not one this Hearth knows (1).")
    for key, value in data.items():
        if key == "version":
            continue
        if key not in _SCHEMA:
            raise fail(f"unknown section or key {key!r} (known: {', '.join(sorted(_SCHEMA))}).")
        if not isinstance(value, dict):
            raise fail(f"{key!r} must be a section ([{key}]).")
        unknown = set(value) - _SCHEMA[key]
        if unknown:
            raise fail(f"unknown key {key}.{sorted(unknown)[0]} (known: {', '.join(sorted(_SCHEMA[key]))}).")

    def text(section: str, key: str) -> str | None:
        value = data.get(section, {}).get(key)
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise fail(f"{section}.{key} must be a non-empty string.")
        return value.strip() if value is not None else None

    def folder(section: str) -> Path | None:
        value = text(section, "folder")
        if value is None:
            return None
        if "{user}" in value:
            value = value.replace("{user}", user())
        path = Path(value).expanduser()
        if not path.is_absolute():
            raise fail(f"{section}.folder must be an absolute path (or start with ~), not {value!r}.")
        return path

    def choice(section: str, key: str, options: tuple[str, ...]) -> str:
        value = text(section, key) or options[0]
        if value not in options:
            raise fail(f"{section}.{key} must be one of {', '.join(map(repr, options))}, not {value!r}.")
        return value

    allowed = data.get("models", {}).get("allowed")
    if allowed is not None:
        if not isinstance(allowed, list) or not allowed or not all(isinstance(a, str) and a.strip() for a in allowed):
            raise fail("models.allowed must be a non-empty list of model names.")
        if any("/" in a or "\\" in a for a in allowed):
            raise fail("models.allowed holds names (built-in names or file names in models.folder), not paths.")
        allowed = tuple(a.strip() for a in allowed)
    size = data.get("data", {}).get("max_file_size")
    keep = data.get("data", {}).get("keep_versions")
    if keep is not None and (isinstance(keep, bool) or not isinstance(keep, int) or not 0 <= keep <= 1000):
        raise fail(f"data.keep_versions must be a whole number from 0 (keep none) to 1000, not {keep!r}.")
    urls = {key: text("shared", key) for key in ("chroma_url", "llm_url")}
    for key, url in urls.items():
        if url is not None and not re.match(r"^https?://[^/\s]+", url):
            raise fail(f"shared.{key} must be an http:// or https:// URL, not {url!r}.")
    return Policy(
        source=source,
        data_dir=folder("data"),
        models_dir=folder("models"),
        allowed_models=allowed,
        max_file_bytes=None if size is None else _parse_size(size, fail),
        keep_versions=keep,
        api_server=choice("api", "server", (API_ALLOWED, API_KEY_ONLY, API_FORBIDDEN)),
        remote=choice("shared", "remote", (REMOTE_ALLOWED, REMOTE_FORBIDDEN)),
        chroma_url=urls["chroma_url"],
        llm_url=urls["llm_url"],
        llm_model=text("shared", "llm_model"),
    )


def _parse_size(value: Any, fail: Callable[[str], PolicyError]) -> int:
    """Bytes from 52428800, "50 MB" or "2 GiB"."""
    if isinstance(value, int) and not isinstance(value, bool):
        number = float(value)
        unit = ""
    else:
        m = _SIZE.match(str(value)) if isinstance(value, str) else None
        if m is None:
            raise fail(f"data.max_file_size must be a number of bytes or a size like \"50 MB\", not {value!r}.")
        number, unit = float(m.group(1)), (m.group(2) or "").lower()
    size = int(number * _UNITS[unit])
    if size < 1:
        raise fail("data.max_file_size must be at least one byte.")
    return size


def _same_path(a: Path, b: Path) -> bool:
    try:
        return Path(a).expanduser().resolve() == Path(b).expanduser().resolve()
    except OSError:
        return Path(a) == Path(b)
