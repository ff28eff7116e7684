"""The window's remembered state and the app's choices, in one INI file (Qt's QSettings).

Only this module reads and writes the file. Its keys are the attributes below; `version` allows
migrating them later. (Core settings will move to the TOML `Settings` of STYLE §7 when it exists.)
The choices made in Settings reach the core only through app/config.py (`hearth_config_for`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from PySide6.QtCore import QByteArray, QSettings

from app.config import ENV_DATA_DIR, Requested, hearth_config
from rag.answer import NOT_FOUND_MODES
from rag.config import HearthConfig

VERSION = 1
AUTO = -1  # gpu_layers: let the memory plan choose (HearthConfig.n_gpu_layers None: the core plans it)


def default_path() -> Path:
    """gui.ini in the platform's config folder for Hearth."""
    import platformdirs

    return Path(platformdirs.user_config_dir("hearth", appauthor=False)) / "gui.ini"


class Prefs:
    """Typed access to the INI file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._s = QSettings(str(path), QSettings.Format.IniFormat)
        if self._s.value("version") is None:
            self._s.setValue("version", VERSION)

    def _get(self, key: str, default: Any, kind: type) -> Any:
        value = self._s.value(key, default)
        try:
            if kind is bool:
                return value if isinstance(value, bool) else str(value).lower() in ("1", "true", "yes")
            return kind(value)
        except (TypeError, ValueError):
            return default

    def _json(self, key: str, default: Any) -> Any:
        try:
            return json.loads(self._s.value(key, "") or "null") or default
        except ValueError:
            return default

    def sync(self) -> None:
        """Write to disk now."""
        self._s.sync()

    # Window state.
    geometry = property(lambda self: self._s.value("window/geometry", QByteArray()),
                        lambda self, v: self._s.setValue("window/geometry", v))
    splitter = property(lambda self: self._s.value("window/splitter", QByteArray()),
                        lambda self, v: self._s.setValue("window/splitter", v))
    side_panel = property(lambda self: self._get("window/side_panel", True, bool),
                          lambda self, v: self._s.setValue("window/side_panel", bool(v)))
    side_tab = property(lambda self: self._get("window/side_tab", 0, int),
                        lambda self, v: self._s.setValue("window/side_tab", int(v)))
    last_workspace = property(lambda self: self._get("workspaces/last", "default", str),
                              lambda self, v: self._s.setValue("workspaces/last", v))
    # Workspaces the user created before indexing anything, display names, deleted ones.
    extra_workspaces = property(lambda self: self._json("workspaces/extra", []),
                                lambda self, v: self._s.setValue("workspaces/extra", json.dumps(sorted(set(v)))))
    labels = property(lambda self: self._json("workspaces/labels", {}),
                      lambda self, v: self._s.setValue("workspaces/labels", json.dumps(v, ensure_ascii=False)))
    hidden_workspaces = property(lambda self: self._json("workspaces/hidden", []),
                                 lambda self, v: self._s.setValue("workspaces/hidden", json.dumps(sorted(set(v)))))

    # Folders kept in sync, per workspace: {workspace: [folder, ...]}.
    watched = property(lambda self: self._json("workspaces/watched", {}),
                       lambda self, v: self._s.setValue("workspaces/watched", json.dumps(v, ensure_ascii=False)))

    # Choices made in Settings.
    chat_model = property(lambda self: self._get("models/chat", "", str) or None,
                          lambda self, v: self._s.setValue("models/chat", v or ""))
    n_ctx = property(lambda self: self._get("models/n_ctx", 4096, int),
                     lambda self, v: self._s.setValue("models/n_ctx", int(v)))
    gpu_layers = property(lambda self: self._get("models/gpu_layers", AUTO, int),
                          lambda self, v: self._s.setValue("models/gpu_layers", int(v)))
    chunk_tokens = property(lambda self: self._get("index/chunk_tokens", 200, int),
                            lambda self, v: self._s.setValue("index/chunk_tokens", int(v)))
    data_dir = property(lambda self: self._get("index/data_dir", "", str) or None,
                        lambda self, v: self._s.setValue("index/data_dir", str(v or "")))
    api_server = property(lambda self: self._get("server/enabled", False, bool),
                          lambda self, v: self._s.setValue("server/enabled", bool(v)))
    # Whether the chat model orders the passages of an answer (HearthConfig.model_ranking); None while never
    # chosen in Settings, so that HEARTH_MODEL_RANKING still counts.
    model_ranking = property(lambda self: self._get("answers/model_ranking", True, bool)
                             if self._s.contains("answers/model_ranking") else None,
                             lambda self, v: self._s.setValue("answers/model_ranking", bool(v)))
    # When the documents don't answer (HearthConfig.not_found); None while never chosen, so HEARTH_NOT_FOUND counts.
    not_found = property(lambda self: self._get("answers/not_found", "balanced", str) or None
                         if self._s.contains("answers/not_found") else None,
                         lambda self, v: self._s.setValue("answers/not_found", str(v or "")))
    # The llama.cpp engine (inference/engines.py): auto, cpu, vulkan or hip; None while never chosen, so that
    # HEARTH_ENGINE counts. It applies when the app starts: a process loads one engine.
    engine = property(lambda self: self._get("models/engine", "", str) or None,
                      lambda self, v: self._s.setValue("models/engine", str(v or "")))
    language = property(lambda self: self._get("ui/language", "", str),
                        lambda self, v: self._s.setValue("ui/language", v or ""))

    def requested(self, *, data_dir: bool = True) -> Requested:
        """The choices made in Settings, as app.config takes them (`data_dir`: include the data folder)."""
        folder = self.data_dir if data_dir else None
        return Requested(
            data_dir=Path(folder).expanduser() if folder else None,
            chat_model=self.chat_model,
            n_ctx=self.n_ctx,
            n_gpu_layers=None if self.gpu_layers == AUTO else max(0, self.gpu_layers),
            chunk_tokens=self.chunk_tokens,
            model_ranking=self.model_ranking,
            not_found=self.not_found if self.not_found in NOT_FOUND_MODES else None,
        )


def hearth_config_for(prefs: Prefs, flags: Requested = Requested(), *, chosen_now: bool = False,
                      env: Mapping[str, str] | None = None, policy: Any = None) -> HearthConfig:
    """The core's configuration for the window: the flags it was started with and the choices in Settings,
    then the HEARTH_* variables and the administrator's policy (app.config.hearth_config).

    At start the flags win over the saved choices, and a saved data folder counts only when neither a flag
    nor HEARTH_DATA_DIR names one; choices made just now in Settings (`chosen_now`) win over the flags.
    A data folder set by the policy is used whatever was saved (Settings cannot change it).
    """
    from app.policy import load_policy

    env = os.environ if env is None else env
    policy = load_policy() if policy is None else policy
    saved_folder = policy.data_dir is None and (chosen_now or not env.get(ENV_DATA_DIR))
    saved = prefs.requested(data_dir=saved_folder)
    requested = saved.over(flags) if chosen_now else flags.over(saved)
    return hearth_config(requested, env=env, policy=policy)
