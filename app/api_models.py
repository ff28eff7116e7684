"""The models the API offers, by id: the usable chat models, a `hearth-rag` model per workspace, the embedder.

Ids are names, never paths: a model added to the library by path is listed by its file name, and a
request's id is only ever looked up in this listing, so no request names a file. Models the
administrator's policy forbids, and models that cannot be used, are not listed. The API builds no
model itself: Hearth's own chat model is the service's, and another listed one is loaded by the service
(`Hearth.load_chat_model`), at most one at a time besides Hearth's own.
"""

from __future__ import annotations

import gc
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.openai_format import model_json, not_found

if TYPE_CHECKING:
    from inference.chat import ChatModel
    from rag.service import Hearth

RAG_MODEL = "hearth-rag"  # `hearth-rag` is the served workspace, `hearth-rag:NAME` any workspace
EMBED_MODEL = "hearth-embed"


def listed_name(key: str) -> str:
    """The id a library key is listed by: its file name when the key is a path, else the key itself."""
    return Path(key).name if ("/" in key or "\\" in key) else key


class ModelCatalog:
    """The API's model ids and the chat models behind them; `load` runs on the chat lane only."""

    def __init__(self, hearth: Hearth, *, workspace: str) -> None:
        self.hearth = hearth
        self.workspace = workspace  # the one plain `hearth-rag` answers from
        self._other: tuple[str, ChatModel] | None = None  # (id, model): at most one besides Hearth's own

    @property
    def default_id(self) -> str:
        """The id of the model Hearth answers with."""
        from inference.models import DEFAULT_CHAT_MODEL

        return listed_name(self.hearth.config.chat_model or DEFAULT_CHAT_MODEL)

    def _chat_listing(self) -> dict[str, tuple[str | None, int]]:
        """id -> (the service's name for it, None for Hearth's own; created) for every usable chat model."""
        out: dict[str, tuple[str | None, int]] = {self.default_id: (None, 0)}
        for m in self.hearth.models():  # the library, under the policy's allowed models
            name = listed_name(m.key)
            if m.error is None and name not in out:  # the first of two files with one name wins
                out[name] = (m.key, _mtime(m.path))
        return out

    def chat_models(self) -> list[tuple[str, int]]:
        """(id, created) of every usable chat model, Hearth's own first."""
        return [(mid, created) for mid, (_, created) in self._chat_listing().items()]

    def workspaces(self) -> list[str]:
        """Every workspace a `hearth-rag:NAME` id may name."""
        return sorted(set(self.hearth.manifest.workspaces()) | {self.workspace})

    def rag_workspace(self, model: str) -> str | None:
        """The workspace a `hearth-rag` id names; None for other ids; ApiError 404 for an unknown workspace."""
        if model == RAG_MODEL:
            return self.workspace
        if not model.startswith(RAG_MODEL + ":"):
            return None
        name = model[len(RAG_MODEL) + 1 :]
        if name not in self.workspaces():
            raise not_found(model)
        return name

    def listing(self) -> list[dict[str, Any]]:
        """Every model object of `/v1/models`: chat models, the rag models, the embedder."""
        out = [model_json(mid, created, "chat") for mid, created in self.chat_models()]
        out.append(model_json(RAG_MODEL, 0, "rag", workspace=self.workspace))
        out += [model_json(f"{RAG_MODEL}:{ws}", 0, "rag", workspace=ws) for ws in self.workspaces()]
        out.append(model_json(EMBED_MODEL, 0, "embedding"))
        return out

    def load(self, model_id: str) -> ChatModel:
        """The loaded chat model for a listed id; ApiError 404 for any other id."""
        if model_id == self.default_id:
            return self.hearth.chat_model
        if self._other is not None and self._other[0] == model_id:
            return self._other[1]
        listing = self._chat_listing()
        if model_id not in listing:
            raise not_found(model_id)
        name = listing[model_id][0]
        if name is None:  # Hearth's own model (its id was answered above; this keeps the type checker content)
            return self.hearth.chat_model
        if self._other is not None:  # free the previous model's memory before loading the next
            old, self._other = self._other[1], None
            old.close()
            del old
            gc.collect()
        model = self.hearth.load_chat_model(name)
        self._other = (model_id, model)
        return model


def _mtime(path: Path | None) -> int:
    try:
        return int(path.stat().st_mtime) if path is not None else 0
    except OSError:
        return 0
