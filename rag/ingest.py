"""Ingestion: discover files, skip unchanged ones, load, chunk, embed and store each file on its own."""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from inference.errors import Cancelled, HearthError, LoadError
from rag.chunking import Chunk, chunk_sections
from rag.loaders import SUPPORTED_SUFFIXES, load
from rag.manifest import Manifest
from rag.store import VectorStore

if TYPE_CHECKING:
    from inference.embedder import Embedder


@dataclass(frozen=True)
class IngestOptions:
    """Limits and chunking settings for ingestion."""

    max_file_bytes: int = 200 * 1024 * 1024  # larger files are reported, not read
    chunk_tokens: int = 200  # embedder tokens per chunk (the default embedder reads at most 256)
    overlap_tokens: int = 40
    include_hidden: bool = False  # dot-files and dot-folders are skipped when walking a folder


@dataclass(frozen=True)
class Failure:
    """One input that could not be indexed, and why."""

    source: str
    error: str
    kind: str

    def to_json(self) -> dict[str, str]:
        """The contract's failure object."""
        return {"source": self.source, "error": self.error}


@dataclass(frozen=True)
class Progress:
    """Where an ingest run is: files seen of the total, chunks written, the file at hand."""

    files_done: int
    files_total: int
    chunks: int
    current: str | None
    elapsed: float


@dataclass
class IngestReport:
    """What an ingest run did."""

    added: int = 0
    updated: int = 0
    unchanged: int = 0
    skipped: int = 0  # files in walked folders whose format Hearth does not read
    chunks: int = 0
    seconds: float = 0.0
    failed: list[Failure] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """The contract's ingest object."""
        return {
            "added": self.added,
            "updated": self.updated,
            "unchanged": self.unchanged,
            "failed": [f.to_json() for f in self.failed],
            "chunks": self.chunks,
            "seconds": round(self.seconds, 3),
            "skipped": self.skipped,
        }


def source_id(path: Path) -> str:
    """The stable identity of a file in the index: its absolute path with links resolved."""
    return str(path.resolve())


def discover(paths: Iterable[Path], *, include_hidden: bool = False) -> tuple[list[Path], list[Failure], int]:
    """Expand files and folders into readable files; returns (files, failures, skipped-unsupported)."""
    files: dict[str, Path] = {}
    failures: list[Failure] = []
    skipped = 0
    for path in paths:
        if not path.exists():
            failures.append(Failure(str(path), f"{path}: no such file or folder", "missing"))
        elif path.is_dir():
            for root, dirs, names in os.walk(path, followlinks=False, onerror=None):
                if not include_hidden:
                    dirs[:] = [d for d in dirs if not d.startswith(".")]
                dirs.sort()
                for name in sorted(names):
                    if not include_hidden and name.startswith("."):
                        continue
                    p = Path(root, name)
                    if p.suffix.lower() not in SUPPORTED_SUFFIXES or not p.is_file():
                        skipped += 1
                        continue
                    files.setdefault(source_id(p), p)
        elif path.suffix.lower() not in SUPPORTED_SUFFIXES:
            failures.append(
                Failure(source_id(path), f"{path.name}: this file type ({path.suffix or 'none'}) is not supported",
                        "unsupported")
            )
        else:
            files.setdefault(source_id(path), path)
    return list(files.values()), failures, skipped


def file_sha256(path: Path) -> str:
    """SHA-256 of a file's bytes, read in blocks."""
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def embedding_text(chunk: Chunk) -> str:
    """The text embedded for a chunk: its heading gives context the passage itself may lack."""
    if not chunk.heading or chunk.text.startswith(chunk.heading.split(" › ")[-1]):
        return chunk.text  # sections open with their own heading; later chunks of one do not
    return f"{chunk.heading}\n{chunk.text}"


def ingest(
    paths: Iterable[Path],
    *,
    workspace: str,
    embedder: Embedder,
    store: VectorStore,
    manifest: Manifest,
    options: IngestOptions = IngestOptions(),
    progress: Callable[[Progress], None] | None = None,
    cancel: Callable[[], bool] | None = None,
) -> IngestReport:
    """Index files and folders into a workspace; one bad file never stops the batch."""
    t0 = time.perf_counter()
    report = IngestReport()
    files, report.failed, report.skipped = discover(paths, include_hidden=options.include_hidden)
    manifest.bind_workspace(workspace, embedder=embedder.name, dim=embedder.dim)
    for i, path in enumerate(files):
        if cancel is not None and cancel():
            raise Cancelled("Indexing stopped; the files indexed so far are kept.")
        if progress is not None:
            progress(Progress(i, len(files), report.chunks, str(path), time.perf_counter() - t0))
        try:
            outcome, n = _ingest_file(path, workspace, embedder, store, manifest, options)
        except LoadError as exc:
            report.failed.append(Failure(source_id(path), str(exc), exc.kind))
            continue
        except OSError as exc:
            report.failed.append(Failure(source_id(path), f"{path.name}: cannot read ({exc.strerror})", "unreadable"))
            continue
        except HearthError as exc:
            report.failed.append(Failure(source_id(path), f"{path.name}: {exc}", "error"))
            continue
        setattr(report, outcome, getattr(report, outcome) + 1)
        report.chunks += n
    report.seconds = time.perf_counter() - t0
    if progress is not None:
        progress(Progress(len(files), len(files), report.chunks, None, report.seconds))
    return report


def _ingest_file(
    path: Path, workspace: str, embedder: Embedder, store: VectorStore, manifest: Manifest, options: IngestOptions
) -> tuple[str, int]:
    """Index one file; returns ('added' | 'updated' | 'unchanged', chunks written)."""
    source = source_id(path)
    st = path.stat()
    record = manifest.get(workspace, source)
    done = record is not None and record.status == "done"
    if done and record.size == st.st_size and record.mtime_ns == st.st_mtime_ns:
        return "unchanged", 0
    if st.st_size > options.max_file_bytes:
        raise LoadError(
            f"{path.name}: too large ({st.st_size / 2**20:.0f} MiB; the limit is "
            f"{options.max_file_bytes / 2**20:.0f} MiB)",
            kind="too_large",
        )
    sha = file_sha256(path)
    if done and record.sha256 == sha:
        manifest.touch(workspace, source, mtime_ns=st.st_mtime_ns)
        return "unchanged", 0
    sections = load(path)
    chunks = chunk_sections(
        sections,
        count_tokens=embedder.count_tokens,
        max_tokens=min(options.chunk_tokens, embedder.max_tokens - 16),
        overlap_tokens=options.overlap_tokens,
    )
    if not chunks:
        raise LoadError(f"{path.name}: no text to index", kind="empty")
    vectors = embedder.embed([embedding_text(c) for c in chunks])
    # From here until finish() the document does not count as indexed, so a crash leaves it to redo.
    manifest.begin(workspace, source, sha256=sha, size=st.st_size, mtime_ns=st.st_mtime_ns)
    store.replace_document(workspace, source, chunks, vectors, version=sha)
    pages = max((s.page for s in sections if s.page is not None), default=None)
    manifest.finish(workspace, source, chunks=len(chunks), pages=pages)
    return ("updated" if done else "added"), len(chunks)


def forget(paths: Iterable[Path], *, workspace: str, store: VectorStore, manifest: Manifest) -> list[str]:
    """Remove files, or every file under folders, from a workspace; returns the sources removed."""
    known = [r.source for r in manifest.documents(workspace)]
    removed: list[str] = []
    for path in paths:
        target = str(path.absolute().resolve()) if path.exists() else str(path.absolute())
        for source in known:
            if source == target or source.startswith(target.rstrip(os.sep) + os.sep):
                if source not in removed:
                    store.delete_document(workspace, source)
                    manifest.remove(workspace, source)
                    removed.append(source)
    return removed
