"""The vector store: one ChromaDB collection per workspace, vectors always supplied by Hearth."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from inference.errors import StoreError
from rag.chunking import Chunk

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Hit:
    """One retrieved chunk with its place in the source and its similarity score (higher is better)."""

    source: str
    page: int | None
    heading: str | None
    score: float
    text: str
    start: int
    end: int
    chunk_id: str

    def to_json(self) -> dict[str, Any]:
        """The contract's hit object: source, page, heading, score, text."""
        return {
            "source": self.source,
            "page": self.page,
            "heading": self.heading,
            "score": round(self.score, 6),
            "text": self.text,
        }


class VectorStore(Protocol):
    """What the rest of Hearth needs from a vector store."""

    def replace_document(
        self, workspace: str, source: str, chunks: Sequence[Chunk], vectors: np.ndarray, *, version: str
    ) -> None: ...

    def delete_document(self, workspace: str, source: str) -> None: ...

    def query(self, workspace: str, vector: np.ndarray, *, k: int) -> list[Hit]: ...

    def count(self, workspace: str) -> int: ...


def collection_name(workspace: str) -> str:
    """A Chroma-safe collection name for any workspace name (the real name lives in its metadata)."""
    return "hearth-" + hashlib.sha256(workspace.encode("utf-8")).hexdigest()[:24]


class ChromaStore:
    """ChromaDB persistent store under a folder, telemetry off, no Chroma embedding function."""

    def __init__(self, path: Path | None = None, *, client: Any = None) -> None:
        try:
            import chromadb
            from chromadb.config import Settings
        except ImportError as exc:  # pragma: no cover - a hard dependency
            raise StoreError("ChromaDB is not installed.", hint="pip install chromadb") from exc
        if client is None:
            if path is None:
                raise StoreError("No folder given for the document index.")
            path.mkdir(parents=True, exist_ok=True)
            try:
                client = chromadb.PersistentClient(
                    path=str(path), settings=Settings(anonymized_telemetry=False, allow_reset=False)
                )
            except Exception as exc:
                raise StoreError(f"Cannot open the document index in {path}: {exc}") from exc
        self._client = client
        self._collections: dict[str, Any] = {}

    def _collection(self, workspace: str) -> Any:
        col = self._collections.get(workspace)
        if col is None:
            try:
                col = self._client.get_or_create_collection(
                    name=collection_name(workspace),
                    metadata={"hnsw:space": "cosine", "workspace": workspace},
                    embedding_function=None,
                )
            except Exception as exc:
                raise StoreError(f"Cannot open workspace {workspace!r} in the index: {exc}") from exc
            self._collections[workspace] = col
        return col

    def replace_document(
        self, workspace: str, source: str, chunks: Sequence[Chunk], vectors: np.ndarray, *, version: str
    ) -> None:
        """Store a document's chunks under `version`, then drop any chunks of other versions."""
        if len(chunks) != len(vectors):
            raise StoreError("Internal error: chunk and vector counts differ.")
        col = self._collection(workspace)
        ids = [f"{_source_key(source)}:{version[:16]}:{c.index}" for c in chunks]
        metas = [_meta(source, version, c) for c in chunks]
        try:
            # Add in slices: Chroma caps the batch size of one call.
            step = 1000
            for i in range(0, len(ids), step):
                col.upsert(
                    ids=ids[i : i + step],
                    embeddings=np.asarray(vectors[i : i + step], dtype=np.float32),
                    documents=[c.text for c in chunks[i : i + step]],
                    metadatas=metas[i : i + step],
                )
            col.delete(where={"$and": [{"source": source}, {"version": {"$ne": version}}]})
        except Exception as exc:
            raise StoreError(f"Cannot write {source} to the index: {exc}") from exc

    def delete_document(self, workspace: str, source: str) -> None:
        """Remove every chunk of one document."""
        try:
            self._collection(workspace).delete(where={"source": source})
        except Exception as exc:
            raise StoreError(f"Cannot remove {source} from the index: {exc}") from exc

    def query(self, workspace: str, vector: np.ndarray, *, k: int) -> list[Hit]:
        """The k nearest chunks to a unit vector, best first."""
        col = self._collection(workspace)
        try:
            n = col.count()
            if n == 0:
                return []
            res = col.query(
                query_embeddings=np.asarray([vector], dtype=np.float32),
                n_results=min(k, n),
                include=["documents", "metadatas", "distances"],
            )
        except Exception as exc:
            raise StoreError(f"Cannot search the index: {exc}") from exc
        hits = []
        for cid, text, meta, dist in zip(
            res["ids"][0], res["documents"][0], res["metadatas"][0], res["distances"][0], strict=True
        ):
            hits.append(
                Hit(
                    source=str(meta["source"]),
                    page=_opt_int(meta.get("page")),
                    heading=meta.get("heading") or None,
                    score=1.0 - float(dist),
                    text=text or "",
                    start=int(meta.get("start", 0)),
                    end=int(meta.get("end", 0)),
                    chunk_id=cid,
                )
            )
        return hits

    def count(self, workspace: str) -> int:
        """How many chunks a workspace holds."""
        try:
            return int(self._collection(workspace).count())
        except Exception as exc:
            raise StoreError(f"Cannot read the index: {exc}") from exc

    def drop_workspace(self, workspace: str) -> None:
        """Delete a workspace's whole collection."""
        self._collections.pop(workspace, None)
        try:
            self._client.delete_collection(collection_name(workspace))
        except Exception as exc:
            log.debug("dropping %s: %s", workspace, exc)


def _source_key(source: str) -> str:
    return hashlib.sha256(source.encode("utf-8", "surrogateescape")).hexdigest()[:20]


def _meta(source: str, version: str, chunk: Chunk) -> dict[str, Any]:
    # Chroma metadata values cannot be None: leave absent fields out.
    meta: dict[str, Any] = {"source": source, "version": version, "start": chunk.start, "end": chunk.end}
    if chunk.page is not None:
        meta["page"] = chunk.page
    if chunk.heading:
        meta["heading"] = chunk.heading
    return meta


def _opt_int(value: Any) -> int | None:
    return None if value is None else int(value)
