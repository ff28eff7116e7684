"""Shared-office mode's index: the workspaces live on a Chroma server (`chroma run`) that several machines use.

The local index keeps "which documents are fully indexed" in this machine's manifest; on a shared
server another machine may have indexed them, so the server itself records it. Next to each
workspace's chunk collection, a small collection holds one record per finished document
(source → version), written after its last chunk and removed before its first chunk goes:

- search counts a document only when its record exists, and only its chunks of the recorded version
  (a document being re-indexed elsewhere shows its previous version until the new one is complete);
- each machine's keyword (BM25) index is a cache of the server's chunks, brought in line with the
  records before each search: documents added or changed elsewhere are fetched, removed ones dropped.

This machine's manifest still drives incremental indexing of the files it reads itself.
"""

from __future__ import annotations

import hashlib
import re
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import numpy as np

from rag.errors import StoreError
from rag.chunking import Chunk
from rag.manifest import Manifest
from rag.lexical import LexicalIndex, LexicalRow
from rag.store import ChromaStore, DocumentWrite, Hit, HybridStore, collection_name



def connect_chroma(url: str, *, token: str | None = None) -> Any:
    """A chromadb HttpClient for `http(s)://host:port`, telemetry off; StoreError when it cannot be reached.

    `token` is sent as `Authorization: Bearer TOKEN` (Chroma's token authentication).
    """
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.path not in ("", "/"):
        raise StoreError(f"{url!r} is not a Chroma server address.", hint="Use http://HOST:PORT, e.g. http://10.0.0.5:8000.")
    try:
        import chromadb
        from chromadb.config import Settings
    except ImportError as exc:  # pragma: no cover - a hard dependency
        raise StoreError("ChromaDB is not installed.", hint="pip install chromadb") from exc
    https = parts.scheme == "https"
    try:
        client = chromadb.HttpClient(
            host=parts.hostname, port=parts.port or (443 if https else 8000), ssl=https,
            headers={"Authorization": f"Bearer {token}"} if token else None,
            settings=Settings(anonymized_telemetry=False),
        )
        client.heartbeat()
    except Exception as exc:
        raise StoreError(
            f"Cannot reach the shared Chroma server at {url}: {_reason(exc)}",
            hint="Check that the server runs (`chroma run --host ADDRESS --port PORT --path FOLDER`) "
                 "and that this machine may reach it.",
        ) from exc
    return client


def shared_folder_name(url: str) -> str:
    """A folder name for this machine's state about one Chroma server (host, port and a hash of the URL)."""
    parts = urlsplit(url.strip())
    label = re.sub(r"[^A-Za-z0-9.-]+", "-", f"{parts.hostname or 'server'}-{parts.port or ''}").strip("-")
    return f"{label}-{hashlib.sha256(url.strip().rstrip('/').encode()).hexdigest()[:8]}"


def open_shared_store(url: str, folder: Path, *, token: str | None = None,
                      refresh_seconds: float = 2.0) -> SharedHybridStore:
    """The hybrid store of shared-office mode: chunks on the server, the keyword cache in `folder`.

    The server's list of finished documents is read again after `refresh_seconds` (within that time, one
    read serves every search: other machines' changes show up after it).
    """
    folder.mkdir(parents=True, exist_ok=True)
    return SharedHybridStore(SharedChromaStore(connect_chroma(url, token=token), refresh_seconds=refresh_seconds),
                             LexicalIndex(folder / "lexical.sqlite"))


class SharedChromaStore(ChromaStore):
    """A ChromaStore on a server that also records, per workspace, which documents are complete."""

    def __init__(self, client: Any, *, refresh_seconds: float = 2.0) -> None:
        super().__init__(client=client)
        self.refresh_seconds = refresh_seconds
        self._records: dict[str, Any] = {}
        self._cache: dict[str, tuple[float, dict[str, str]]] = {}
        self._cache_lock = threading.Lock()

    def _record_collection(self, workspace: str) -> Any:
        col = self._records.get(workspace)
        if col is None:
            try:
                col = self._client.get_or_create_collection(
                    name=collection_name(workspace) + "-docs", metadata={"workspace": workspace}, embedding_function=None
                )
            except Exception as exc:
                raise StoreError(f"Cannot open workspace {workspace!r} on the shared server: {_reason(exc)}") from exc
            self._records[workspace] = col
        return col

    def replace_document(
        self, workspace: str, source: str, chunks: Sequence[Chunk], vectors: np.ndarray, *, version: str
    ) -> None:
        """Store the chunks, then record the document as complete at `version`."""
        super().replace_document(workspace, source, chunks, vectors, version=version)
        try:
            self._record_collection(workspace).upsert(
                ids=[_record_id(source)], embeddings=np.ones((1, 1), dtype=np.float32), documents=[source],
                metadatas=[{"source": source, "version": version, "chunks": len(chunks)}],
            )
        except StoreError:
            raise
        except Exception as exc:
            raise StoreError(f"Cannot record {source} as indexed on the shared server: {_reason(exc)}") from exc
        self._forget_cache(workspace)

    def delete_document(self, workspace: str, source: str) -> None:
        """Withdraw the document's record first (search stops showing it), then its chunks."""
        try:
            self._record_collection(workspace).delete(ids=[_record_id(source)])
        except StoreError:
            raise
        except Exception as exc:
            raise StoreError(f"Cannot remove {source} from the shared server: {_reason(exc)}") from exc
        self._forget_cache(workspace)
        super().delete_document(workspace, source)

    def documents(self, workspace: str) -> dict[str, str]:
        """Complete documents on the server, source → version (read at most every couple of seconds)."""
        with self._cache_lock:
            cached = self._cache.get(workspace)
            if cached is not None and time.monotonic() - cached[0] < self.refresh_seconds:
                return dict(cached[1])
        try:
            res = self._record_collection(workspace).get(include=["metadatas"])
        except StoreError:
            raise
        except Exception as exc:
            raise StoreError(f"Cannot read the shared server's document list: {_reason(exc)}") from exc
        found = {str(m["source"]): str(m["version"]) for m in res["metadatas"] if m and "source" in m}
        with self._cache_lock:
            self._cache[workspace] = (time.monotonic(), found)
        return dict(found)

    def query(self, workspace: str, vector: np.ndarray, *, k: int) -> list[Hit]:
        """The k nearest chunks of complete documents at their recorded version."""
        current = self.documents(workspace)
        return [h for h in super().query(workspace, vector, k=k + 20) if _is_current(h.chunk_id, h.source, current)][:k]

    def hits_by_id(self, workspace: str, ids: Sequence[str], vector: np.ndarray) -> dict[str, Hit]:
        """Chunks by id, leaving out those of versions that are not (or no longer) complete."""
        current = self.documents(workspace)
        return {cid: h for cid, h in super().hits_by_id(workspace, ids, vector).items()
                if _is_current(cid, h.source, current)}

    def chunks_of(self, workspace: str, sources: Sequence[str]) -> list[Hit]:
        """Every chunk of these documents at their recorded version."""
        current = self.documents(workspace)
        return [h for h in super().chunks_of(workspace, sources) if _is_current(h.chunk_id, h.source, current)]

    def drop_workspace(self, workspace: str) -> None:
        """Delete a workspace's chunks and records."""
        super().drop_workspace(workspace)
        self._records.pop(workspace, None)
        self._forget_cache(workspace)
        try:
            self._client.delete_collection(collection_name(workspace) + "-docs")
        except Exception:  # noqa: BLE001 - nothing to drop
            pass

    def _forget_cache(self, workspace: str) -> None:
        with self._cache_lock:
            self._cache.pop(workspace, None)


class SharedHybridStore(HybridStore):
    """The hybrid store over a shared server, whose keyword index follows the server's document records."""

    vectors: SharedChromaStore
    local = False

    def __init__(self, vectors: SharedChromaStore, lexical: LexicalIndex) -> None:
        super().__init__(vectors, lexical)
        self._versions: dict[str, dict[str, str]] = {}  # workspace → source → version16 in the keyword index
        self._sync_lock = threading.Lock()

    def finished_sources(self, workspace: str, manifest: Manifest) -> set[str]:
        """Documents complete on the server, indexed by any machine (this machine's manifest is not asked)."""
        return set(self.vectors.documents(workspace))

    def write_documents(self, workspace: str, docs: Sequence[DocumentWrite]) -> None:
        """Each document on its own: the server records each one as complete when its chunks are in."""
        for doc in docs:
            self._write_one(workspace, doc)

    def replace_document(
        self, workspace: str, source: str, chunks: Sequence[Chunk], vectors: np.ndarray, *, version: str
    ) -> None:
        """Write to both indexes, then note the keyword index's version of the document."""
        super().replace_document(workspace, source, chunks, vectors, version=version)
        with self._sync_lock:
            self._local_versions(workspace)[source] = version[:16]

    def delete_document(self, workspace: str, source: str) -> None:
        """Remove from both indexes."""
        super().delete_document(workspace, source)
        with self._sync_lock:
            self._local_versions(workspace).pop(source, None)

    def sync_lexical(self, workspace: str, sources: set[str]) -> None:
        """Bring the keyword index in line with the server: fetch new or changed documents, drop removed ones.

        `sources` (this machine's view) is not used: the server's records say what is complete.
        """
        current = {s: v[:16] for s, v in self.vectors.documents(workspace).items()}
        with self._sync_lock:
            local = self._local_versions(workspace)
            for source in [s for s in local if current.get(s) != local[s]]:
                self.lexical.delete_document(workspace, source)
                del local[source]
            missing = sorted(s for s in current if s not in local)
            for i in range(0, len(missing), 100):
                batch = missing[i : i + 100]
                hits = self.vectors.chunks_of(workspace, batch)
                self.lexical.add_rows(workspace, (
                    (h.source, LexicalRow(h.chunk_id, h.source, h.page, h.heading, h.start, h.end, h.text,
                                          h.ocr_confidence))
                    for h in hits))
                for source in batch:
                    local[source] = current[source]

    def _local_versions(self, workspace: str) -> dict[str, str]:
        """What the keyword index holds, source → version16, read from its chunk ids once per process."""
        found = self._versions.get(workspace)
        if found is None:
            found = {}
            for row in self.lexical.all_rows(workspace):
                version = _chunk_version(row.chunk_id)
                if found.setdefault(row.source, version) != version:
                    found[row.source] = ""  # mixed versions: refetch it
            self._versions[workspace] = found
        return found


def _record_id(source: str) -> str:
    return hashlib.sha256(source.encode("utf-8", "surrogateescape")).hexdigest()[:32]


def _chunk_version(chunk_id: str) -> str:
    """The version part of a chunk id (`SOURCEKEY:VERSION16:INDEX`, see rag.store.chunk_ids)."""
    parts = chunk_id.split(":")
    return parts[1] if len(parts) == 3 else ""


def _is_current(chunk_id: str, source: str, current: dict[str, str]) -> bool:
    version = current.get(source)
    return version is not None and _chunk_version(chunk_id) == version[:16]


def _reason(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text if len(text) < 300 else text[:300] + "…"
