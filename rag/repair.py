"""Rebuilding a damaged vector index from Hearth's own copy of the passages.

ChromaDB's local store can be left unusable by a forced stop in the middle of a write: on the next start
its compactor cannot apply the write-ahead log to the HNSW index ("Failed to apply logs to the hnsw
segment writer", chroma-core/chroma #7678), and every read of that collection fails from then on. The
documents' text is not lost: the keyword index (lexical.sqlite) holds every chunk with its id, place and
text, and the manifest holds each document's version. So the vectors are computed again from those
chunks (no document is read again) into a fresh index; the damaged folder is kept beside it, renamed,
for whoever wants to look at it. A document whose chunks are missing from the keyword index stops
counting as indexed, so the next ingest of its folder reads it again.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from rag.lexical import LexicalIndex
from rag.manifest import Manifest
from rag.store import ChromaStore

if TYPE_CHECKING:
    from inference.embedder import Embedder

log = logging.getLogger(__name__)
BATCH = 64


@dataclass
class RepairReport:
    """What a rebuild did."""

    damaged: Path  # where the unusable index was moved
    workspaces: int = 0
    documents: int = 0  # documents whose chunks were embedded again
    chunks: int = 0
    to_reread: list[str] = field(default_factory=list)  # documents with no chunks kept: read on next ingest
    seconds: float = 0.0


def rebuild_vector_index(
    index_dir: Path,
    *,
    lexical: LexicalIndex,
    manifest: Manifest,
    embedder_for: Callable[[str], Embedder],
) -> tuple[ChromaStore, RepairReport]:
    """Move the damaged index aside and build a new one from the keyword index; returns it and a report."""
    from rag.ingest import _embedding_text

    t0 = time.perf_counter()
    damaged = index_dir.with_name(f"{index_dir.name}.damaged-{time.strftime('%Y%m%d-%H%M%S')}")
    if index_dir.exists():
        os.replace(index_dir, damaged)
    _forget_open_clients()
    store = ChromaStore(index_dir)
    report = RepairReport(damaged)
    for workspace in manifest.workspaces():
        done = {r.source: r.sha256 for r in manifest.documents(workspace, status="done")}
        rows = [r for r in lexical.all_rows(workspace) if r.source in done]
        report.workspaces += 1
        with_rows = {r.source for r in rows}
        for source in sorted(set(done) - with_rows):
            manifest.unfinish(workspace, source)
            report.to_reread.append(source)
        if not rows:
            continue
        embedder = embedder_for(workspace)
        for i in range(0, len(rows), BATCH):
            batch = rows[i : i + BATCH]
            vectors = embedder.embed([_embedding_text(r.text, r.heading) for r in batch])
            store.add_rows(workspace, batch, np.asarray(vectors, dtype=np.float32),
                           versions=[done[r.source] for r in batch])
        report.documents += len(with_rows)
        report.chunks += len(rows)
    report.seconds = time.perf_counter() - t0
    log.warning(
        "The vector index was damaged and has been rebuilt from the keyword index: %d chunks of %d documents "
        "in %.1f s; %d documents will be read again on the next ingest; the damaged index is kept in %s",
        report.chunks, report.documents, report.seconds, len(report.to_reread), damaged,
    )
    return store, report


def _forget_open_clients() -> None:
    """Make ChromaDB open its folder afresh: it keeps one client per path for the life of the process."""
    try:
        from chromadb.api.client import SharedSystemClient

        SharedSystemClient.clear_system_cache()
    except Exception as exc:  # noqa: BLE001 - an older or newer ChromaDB without it: the new path is opened anyway
        log.debug("could not clear ChromaDB's client cache: %s", exc)
