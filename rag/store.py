"""The document index: one ChromaDB collection per workspace (vectors always supplied by Hearth) and the keyword
index beside it; `DocumentIndex` is what the service needs of either this machine's or the office's shared one."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from rag.errors import IndexDamaged, StoreError
from rag.chunking import Chunk
from rag.lexical import LexicalIndex, LexicalRow

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
    ocr_confidence: float | None = None  # of the page, when OCR read it; None for text read as text

    @property
    def low_confidence(self) -> bool:
        """True for a passage from a page OCR read poorly (below rag.loaders.LOW_OCR_CONFIDENCE)."""
        from rag.loaders import LOW_OCR_CONFIDENCE

        return self.ocr_confidence is not None and self.ocr_confidence < LOW_OCR_CONFIDENCE

    def to_json(self) -> dict[str, Any]:
        """The contract's hit object: source, page, heading, score, text, and ocr_confidence (null unless OCR
        read the page)."""
        return {
            "source": self.source,
            "page": self.page,
            "heading": self.heading,
            "score": round(self.score, 6),
            "text": self.text,
            "ocr_confidence": None if self.ocr_confidence is None else round(self.ocr_confidence, 3),
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Hit:
        """A Hit from `to_json()` plus its place ("start", "end", "chunk_id"), as conversations store it."""
        return cls(
            source=d["source"], page=d.get("page"), heading=d.get("heading"), score=float(d.get("score", 0.0)),
            text=d.get("text", ""), start=int(d.get("start", 0)), end=int(d.get("end", 0)),
            chunk_id=str(d.get("chunk_id", "")), ocr_confidence=_opt_float(d.get("ocr_confidence")),
        )


class VectorStore(Protocol):
    """What ingestion needs from a vector store: a document's chunks replaced or deleted, nearest chunks, a count."""

    def replace_document(
        self, workspace: str, source: str, chunks: Sequence[Chunk], vectors: np.ndarray, *, version: str
    ) -> None: ...

    def delete_document(self, workspace: str, source: str) -> None: ...

    def query(self, workspace: str, vector: np.ndarray, *, k: int) -> list[Hit]: ...

    def count(self, workspace: str) -> int: ...


class DoneMarks(Protocol):
    """What the index needs of the manifest (rag.manifest.Manifest, which imports this module): the documents
    whose indexing finished."""

    def done_sources(self, workspace: str) -> set[str]: ...


class DocumentIndex(VectorStore, Protocol):
    """What the service needs from a document index; this machine's (`HybridStore`) and the office's shared
    one (`rag.shared_store.SharedHybridStore`) implement all of it, so the service never asks which it has."""

    local: bool  # this machine's own files: the data folder is claimed for it, and it can be rebuilt if damaged

    def finished_sources(self, workspace: str, manifest: DoneMarks) -> set[str]:
        """The documents whose indexing finished, the only ones search may show."""
        ...

    def sync_lexical(self, workspace: str, sources: set[str]) -> None:
        """Bring the keyword index in line with the finished documents."""
        ...

    def lexical_query(self, workspace: str, text: str, *, k: int) -> list[Hit]: ...

    def rarity(self, text: str) -> dict[str, float]:
        """A question's words weighted by how rare they are in the keyword index (see rag/abstain.py)."""
        ...

    def hits_by_id(self, workspace: str, ids: Sequence[str], vector: np.ndarray) -> dict[str, Hit]: ...

    def embeddings_of(self, workspace: str, source: str) -> list[tuple[str, str | None, np.ndarray]]: ...

    def keyword_rows(self, workspace: str) -> list[LexicalRow]:
        """Every passage in the keyword index (the self-test samples them)."""
        ...

    def languages(self, workspace: str) -> dict[str, int]:
        """How many of the workspace's passages are in each language (ISO 639-1 codes)."""
        ...

    def drop_workspace(self, workspace: str) -> None:
        """Remove the workspace's collection itself (its vector size goes with it)."""
        ...

    def write_documents(self, workspace: str, docs: Sequence[DocumentWrite]) -> None:
        """Store several documents' chunks (the manifest begins them before and finishes them after)."""
        ...


@dataclass(frozen=True)
class DocumentWrite:
    """One document's chunks for `DocumentIndex.write_documents`."""

    source: str
    version: str  # the content hash the chunk ids are made from
    chunks: Sequence[Chunk]
    vectors: np.ndarray
    earlier: bool  # chunks of an earlier version may be stored
    leftovers: bool  # an interrupted attempt may have left chunks under this very version


# Rows in one Chroma call (its own cap is about 5,000). The in-process client holds Python's lock for a whole
# call: 1,000 rows kept ingest's embedding threads from starting their next batch for 0.6 s, 128 rows for 0.1 s,
# at the same cost per row.
_CHROMA_CALL = 128


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
                raise _failure(f"Cannot open workspace {workspace!r} in the index", exc) from exc
            self._collections[workspace] = col
        return col

    def replace_document(
        self, workspace: str, source: str, chunks: Sequence[Chunk], vectors: np.ndarray, *, version: str
    ) -> None:
        """Store a document's chunks under `version`, then drop any chunks of other versions."""
        if len(chunks) != len(vectors):
            raise StoreError("Internal error: chunk and vector counts differ.")
        col = self._collection(workspace)
        ids = chunk_ids(source, version, chunks)
        metas = [_meta(source, version, c) for c in chunks]
        try:
            for i in range(0, len(ids), _CHROMA_CALL):
                rows = slice(i, i + _CHROMA_CALL)
                col.upsert(
                    ids=ids[rows],
                    embeddings=np.asarray(vectors[rows], dtype=np.float32),
                    documents=[c.text for c in chunks[rows]],
                    metadatas=metas[rows],
                )
            # The document's other versions, found by source and deleted by id: a `$ne` filter makes Chroma
            # scan the version of every passage in the collection, for every file written.
            held = col.get(where={"source": source}, include=["metadatas"])
            stale = [cid for cid, meta in zip(held["ids"], held["metadatas"], strict=True)
                     if (meta or {}).get("version") != version]  # fmt: skip
            if stale:
                col.delete(ids=stale)
        except Exception as exc:
            raise _failure(f"Cannot write {source} to the index", exc) from exc

    def delete_document(self, workspace: str, source: str) -> None:
        """Remove every chunk of one document."""
        try:
            self._collection(workspace).delete(where={"source": source})
        except Exception as exc:
            raise _failure(f"Cannot remove {source} from the index", exc) from exc

    def query(self, workspace: str, vector: np.ndarray, *, k: int) -> list[Hit]:
        """The k nearest chunks to a unit vector, best first."""
        res = self._nearest(workspace, vector, k, ["documents", "metadatas", "distances"])
        return [
            _hit(cid, text, meta, 1.0 - float(dist))
            for cid, text, meta, dist in zip(
                res["ids"][0], res["documents"][0], res["metadatas"][0], res["distances"][0], strict=True
            )
        ]

    def nearest(self, workspace: str, vector: np.ndarray, *, k: int) -> list[tuple[str, float]]:
        """Ids and cosine similarities of the k nearest chunks, best first: `query` without the text and
        metadata, which cost Chroma more than the search itself (~2 ms against ~10 at 100,000 passages)."""
        res = self._nearest(workspace, vector, k, ["distances"])
        return [(cid, 1.0 - float(dist)) for cid, dist in zip(res["ids"][0], res["distances"][0], strict=True)]

    def _nearest(self, workspace: str, vector: np.ndarray, k: int, include: list[str]) -> dict[str, Any]:
        col = self._collection(workspace)
        query = np.asarray([vector], dtype=np.float32)
        try:
            # No count() first: it costs more than the query itself at 100,000 passages (~12 ms against ~5),
            # and Chroma answers with what it holds when asked for more.
            return col.query(query_embeddings=query, n_results=k, include=include)
        except Exception as exc:
            # Some Chroma versions refuse more results than the collection holds: ask again within its size.
            try:
                n = col.count()
                if n >= k:
                    raise exc
                if n == 0:
                    return {name: [[]] for name in ("ids", "documents", "metadatas", "distances")}
                return col.query(query_embeddings=query, n_results=n, include=include)
            except Exception as again:
                raise _failure("Cannot search the index", again) from again

    def count(self, workspace: str) -> int:
        """How many chunks a workspace holds."""
        try:
            return int(self._collection(workspace).count())
        except Exception as exc:
            raise _failure("Cannot read the index", exc) from exc

    def hits_by_id(self, workspace: str, ids: Sequence[str], vector: np.ndarray) -> dict[str, Hit]:
        """The chunks with these ids, scored by cosine similarity to a unit vector."""
        if not ids:
            return {}
        try:
            res = self._collection(workspace).get(
                ids=list(ids), include=["documents", "metadatas", "embeddings"]
            )
        except Exception as exc:
            raise _failure("Cannot read the index", exc) from exc
        out = {}
        for cid, text, meta, emb in zip(res["ids"], res["documents"], res["metadatas"], res["embeddings"], strict=True):
            score = float(np.dot(np.asarray(emb, dtype=np.float32), vector))
            out[cid] = _hit(cid, text, meta, score)
        return out

    def similarities(self, workspace: str, ids: Sequence[str], vector: np.ndarray) -> dict[str, float]:
        """Cosine similarity to a unit vector of each stored chunk among `ids` (its vector only: no text)."""
        if not ids:
            return {}
        try:
            res = self._collection(workspace).get(ids=list(ids), include=["embeddings"])
        except Exception as exc:
            raise _failure("Cannot read the index", exc) from exc
        return {
            cid: float(np.dot(np.asarray(emb, dtype=np.float32), vector))
            for cid, emb in zip(res["ids"], res["embeddings"], strict=True)
        }

    def chunks_of(self, workspace: str, sources: Sequence[str]) -> list[Hit]:
        """Every stored chunk of some documents (score 0), to rebuild other indexes from."""
        if not sources:
            return []
        try:
            res = self._collection(workspace).get(
                where={"source": {"$in": list(sources)}}, include=["documents", "metadatas"]
            )
        except Exception as exc:
            raise _failure("Cannot read the index", exc) from exc
        return [_hit(cid, t, m, 0.0) for cid, t, m in zip(res["ids"], res["documents"], res["metadatas"], strict=True)]

    def embeddings_of(self, workspace: str, source: str) -> list[tuple[str, str | None, np.ndarray]]:
        """(text, heading, vector) of every stored chunk of one document, so unchanged chunks keep their vectors."""
        try:
            res = self._collection(workspace).get(
                where={"source": source}, include=["documents", "metadatas", "embeddings"]
            )
        except Exception as exc:
            raise _failure("Cannot read the index", exc) from exc
        return [
            (t or "", m.get("heading") or None, np.asarray(e, dtype=np.float32))
            for t, m, e in zip(res["documents"], res["metadatas"], res["embeddings"], strict=True)
        ]

    def add_rows(self, workspace: str, rows: Sequence[Any], vectors: np.ndarray, *, versions: Sequence[str]) -> None:
        """Store chunks as the keyword index keeps them (LexicalRow), with their vectors (a rebuild)."""
        metas = [_meta(row.source, version, row) for row, version in zip(rows, versions, strict=True)]
        try:
            self._collection(workspace).upsert(
                ids=[r.chunk_id for r in rows], embeddings=np.asarray(vectors, dtype=np.float32),
                documents=[r.text for r in rows], metadatas=metas,
            )  # fmt: skip
        except Exception as exc:
            raise _failure("Cannot write to the index", exc) from exc

    def drop_workspace(self, workspace: str) -> None:
        """Delete a workspace's whole collection."""
        self._collections.pop(workspace, None)
        try:
            self._client.delete_collection(collection_name(workspace))
        except Exception as exc:
            log.debug("dropping %s: %s", workspace, exc)


_DAMAGE = ("hnsw", "compaction", "compactor", "backfill", "segment")


def _failure(message: str, exc: Exception) -> StoreError:
    """The StoreError for a ChromaDB failure; IndexDamaged when its own files can no longer be read."""
    text = str(exc)
    if type(exc).__name__ == "InternalError" and any(word in text.lower() for word in _DAMAGE):
        return IndexDamaged(f"{message}: the vector index is damaged ({text}).",
                            hint="Hearth rebuilds it from its keyword index; documents are not read again.")
    return StoreError(f"{message}: {text}")


def chunk_ids(source: str, version: str, chunks: Sequence[Chunk]) -> list[str]:
    """Stable ids of a document version's chunks, shared by the vector and keyword indexes."""
    key = _source_key(source)
    return [f"{key}:{version[:16]}:{c.index}" for c in chunks]


def _hit(cid: str, text: str | None, meta: dict[str, Any], score: float) -> Hit:
    return Hit(
        source=str(meta["source"]),
        page=_opt_int(meta.get("page")),
        heading=meta.get("heading") or None,
        score=score,
        text=text or "",
        start=int(meta.get("start", 0)),
        end=int(meta.get("end", 0)),
        chunk_id=cid,
        ocr_confidence=_opt_float(meta.get("ocr_confidence")),  # absent in chunks not OCR'd, and in older indexes
    )


def _source_key(source: str) -> str:
    return hashlib.sha256(source.encode("utf-8", "surrogateescape")).hexdigest()[:20]


def _meta(source: str, version: str, chunk: Any) -> dict[str, Any]:  # a Chunk or a LexicalRow
    # Chroma metadata values cannot be None: leave absent fields out.
    meta: dict[str, Any] = {"source": source, "version": version, "start": chunk.start, "end": chunk.end}
    if chunk.page is not None:
        meta["page"] = chunk.page
    if chunk.heading:
        meta["heading"] = chunk.heading
    if getattr(chunk, "ocr_confidence", None) is not None:
        meta["ocr_confidence"] = float(chunk.ocr_confidence)
    return meta


def _opt_int(value: Any) -> int | None:
    return None if value is None else int(value)


def _opt_float(value: Any) -> float | None:
    return None if value is None else float(value)


class HybridStore:
    """This machine's document index: the vector store and the keyword index written together, so both always
    hold the same chunks (a `DocumentIndex`)."""

    local = True

    def __init__(self, vectors: ChromaStore, lexical: LexicalIndex) -> None:
        self.vectors = vectors
        self.lexical = lexical
        self._synced: set[str] = set()

    def replace_document(
        self, workspace: str, source: str, chunks: Sequence[Chunk], vectors: np.ndarray, *, version: str
    ) -> None:
        """Write a document's chunks to both indexes (keywords first; the manifest marks it done after)."""
        rows = [
            LexicalRow(cid, source, c.page, c.heading, c.start, c.end, c.text, c.ocr_confidence)
            for cid, c in zip(chunk_ids(source, version, chunks), chunks, strict=True)
        ]
        self.lexical.replace_document(workspace, source, rows)
        self.vectors.replace_document(workspace, source, chunks, vectors, version=version)

    def delete_document(self, workspace: str, source: str) -> None:
        """Remove a document from both indexes."""
        self.vectors.delete_document(workspace, source)
        self.lexical.delete_document(workspace, source)

    def write_documents(self, workspace: str, docs: Sequence[DocumentWrite]) -> None:
        """Store many documents together: what they had stored is deleted, then their passages go to the
        keyword index in one transaction (keywords first, as `replace_document`) and to Chroma in as few
        calls as its cap allows. Many small files cost one write each way instead of one per file."""
        if len(docs) == 1:
            self._write_one(workspace, docs[0])
            return
        for doc in docs:
            if doc.earlier or doc.leftovers:
                self.delete_document(workspace, doc.source)
        rows: list[LexicalRow] = []
        versions: list[str] = []
        for doc in docs:
            for cid, c in zip(chunk_ids(doc.source, doc.version, doc.chunks), doc.chunks, strict=True):
                rows.append(LexicalRow(cid, doc.source, c.page, c.heading, c.start, c.end, c.text, c.ocr_confidence))
                versions.append(doc.version)
        if not rows:
            return
        vectors = np.concatenate([np.asarray(d.vectors, dtype=np.float32) for d in docs])
        self.lexical.add_rows(workspace, ((r.source, r) for r in rows))
        for i in range(0, len(rows), _CHROMA_CALL):
            self.vectors.add_rows(workspace, rows[i : i + _CHROMA_CALL], vectors[i : i + _CHROMA_CALL],
                                  versions=versions[i : i + _CHROMA_CALL])  # fmt: skip

    def _write_one(self, workspace: str, doc: DocumentWrite) -> None:
        if doc.leftovers:  # replace_document keeps chunks under its own version: start clean
            self.delete_document(workspace, doc.source)
        self.replace_document(workspace, doc.source, doc.chunks, doc.vectors, version=doc.version)

    def query(self, workspace: str, vector: np.ndarray, *, k: int) -> list[Hit]:
        """Nearest chunks by vector; on this machine their text and place are read from the keyword index,
        which holds every passage of the vector index (it is written first), by id."""
        if not self.local:  # a shared server's store chooses which versions count (rag/shared_store.py)
            return self.vectors.query(workspace, vector, k=k)
        nearest = self.vectors.nearest(workspace, vector, k=k)
        return self._with_passages(workspace, dict(nearest), vector)

    def _with_passages(self, workspace: str, scores: dict[str, float], vector: np.ndarray) -> list[Hit]:
        """Hits for scored chunk ids, in the order given; passages the keyword index lacks are read from Chroma."""
        rows = self.lexical.rows_by_id(workspace, list(scores))
        missing = [cid for cid in scores if cid not in rows]
        fetched = self.vectors.hits_by_id(workspace, missing, vector) if missing else {}
        hits = []
        for cid, score in scores.items():
            row = rows.get(cid)
            if row is not None:
                hits.append(Hit(row.source, row.page, row.heading, score, row.text, row.start, row.end, cid,
                                row.ocr_confidence))
            elif cid in fetched:
                hits.append(fetched[cid])
        return hits

    def count(self, workspace: str) -> int:
        """Chunks in the vector store."""
        return self.vectors.count(workspace)

    def embeddings_of(self, workspace: str, source: str) -> list[tuple[str, str | None, np.ndarray]]:
        """(text, heading, vector) of a document's stored chunks."""
        return self.vectors.embeddings_of(workspace, source)

    def finished_sources(self, workspace: str, manifest: DoneMarks) -> set[str]:
        """The documents this machine finished indexing (the manifest's done-marks)."""
        return manifest.done_sources(workspace)

    def keyword_rows(self, workspace: str) -> list[LexicalRow]:
        """Every passage in the keyword index."""
        return list(self.lexical.all_rows(workspace))

    def languages(self, workspace: str) -> dict[str, int]:
        """How many of the workspace's passages are in each language, from the keyword index."""
        return self.lexical.languages(workspace)

    def drop_workspace(self, workspace: str) -> None:
        """Remove the workspace's vector collection (its documents were forgotten first)."""
        self.vectors.drop_workspace(workspace)

    def lexical_query(self, workspace: str, text: str, *, k: int) -> list[Hit]:
        """The k best chunks by BM25 (score is the BM25 score, higher is better)."""
        return [
            Hit(r.source, r.page, r.heading, score, r.text, r.start, r.end, r.chunk_id, r.ocr_confidence)
            for r, score in self.lexical.search(workspace, text, k=k)
        ]

    def rarity(self, text: str) -> dict[str, float]:
        """A question's words weighted by how rare they are in the keyword index (see rag/abstain.py)."""
        return self.lexical.rarity(text)

    def hits_by_id(self, workspace: str, ids: Sequence[str], vector: np.ndarray) -> dict[str, Hit]:
        """Chunks by id with their cosine similarity to a vector (on this machine: only the vectors from Chroma)."""
        if not self.local:
            return self.vectors.hits_by_id(workspace, ids, vector)
        return {h.chunk_id: h for h in self._with_passages(workspace, self.vectors.similarities(workspace, ids, vector),
                                                           vector)}

    def sync_lexical(self, workspace: str, sources: set[str]) -> None:
        """Fill the keyword index for documents the vector store has but it lacks (an index from before it existed)."""
        if workspace in self._synced:
            return
        missing = sorted(sources - self.lexical.sources(workspace))
        for i in range(0, len(missing), 100):
            hits = self.vectors.chunks_of(workspace, missing[i : i + 100])
            self.lexical.add_rows(
                workspace,
                ((h.source, LexicalRow(h.chunk_id, h.source, h.page, h.heading, h.start, h.end, h.text,
                                       h.ocr_confidence)) for h in hits),
            )
        self._synced.add(workspace)
