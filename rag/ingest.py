"""Ingestion: discover files, skip unchanged ones, read them in parallel, chunk, embed and store each file.

What makes it trustworthy:
- **Incremental.** A file whose size and modification time match a finished record costs one dict
  lookup; one whose content hash matches costs a hash. A changed file's old chunks are replaced, and
  chunks whose text did not change keep their vectors (nothing is re-embedded that need not be); a
  moved or copied file reuses the vectors of the document with the same hash.
- **Rescans.** Ingesting a folder again removes the documents that are no longer in it (deleted,
  moved away, renamed). A folder that cannot be listed is never taken as emptied.
- **Crash-safe.** Each file is written on its own: manifest `begin` (the document stops counting as
  indexed), store write, manifest `finish`. A kill at any moment leaves a document either done and
  complete, or marked `indexing`, hidden from search, and redone (its leftovers deleted) next time.
- **Failures** cost one file and are reported with its path and the reason; a changed file that can
  no longer be read loses its old chunks, since they no longer say what the file says.
- **Links stay inside.** In a folder being indexed, a link (to a file or a folder) whose target lies
  outside that folder is not read and is reported (`outside_link`); links that stay inside are fine.
  A file named directly is read even when it is a link: the user chose it.
- **Parallel.** Files are read in worker processes (rag.parse_pool) while this thread embeds.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from inference.errors import Cancelled, HearthError
from rag.errors import IndexDamaged
from rag.chunking import Chunk, chunk_sections
from rag.loaders import HEADING_SEPARATOR, SUPPORTED_SUFFIXES, Limits
from rag.manifest import DocumentRecord, Manifest
from rag.parse_pool import (
    DEFAULT_MEMORY_LIMIT, ParseJob, Parsed, ParsePool, default_workers, parse_inline,
)  # fmt: skip
from rag.store import DocumentIndex

if TYPE_CHECKING:
    from inference.embedder import Embedder

__all__ = [
    "Failure", "IngestOptions", "IngestReport", "Progress", "discover", "embedding_text",
    "forget", "ingest", "leads_outside", "outside_link", "source_id",
]  # fmt: skip


@dataclass(frozen=True)
class IngestOptions:
    """Limits, chunking and parallelism settings for ingestion."""

    max_file_bytes: int = 200 * 1024 * 1024  # larger files are reported, not read
    max_pages: int = 5000  # PDF pages, slides or worksheets in one file
    max_unzipped_bytes: int = 256 * 1024 * 1024  # what a DOCX/XLSX/PPTX/ODT may unpack to (zip bombs)
    max_zip_ratio: int = 100  # unpacked / packed size above which a big office file is a zip bomb
    chunk_tokens: int = 200  # embedder tokens per chunk (the default embedder reads at most 256)
    overlap_tokens: int = 40
    include_hidden: bool = False  # dot-files and dot-folders are skipped when walking a folder
    workers: int | None = None  # reader processes; None = automatic, 0 = read in this process
    parse_timeout: float = 300.0  # seconds one file may take to read before it is given up on
    parse_memory_bytes: int | None = DEFAULT_MEMORY_LIMIT  # address space of one reader process; None = no cap
    embed_batch: int = 64  # chunks embedded between progress reports and cancel checks

    @property
    def limits(self) -> Limits:
        """The loaders' limits."""
        return Limits(
            max_pages=self.max_pages, max_unzipped_bytes=self.max_unzipped_bytes, max_zip_ratio=self.max_zip_ratio
        )


@dataclass(frozen=True)
class Failure:
    """One input that could not be indexed, and why."""

    source: str
    error: str
    kind: str  # corrupt, encrypted, empty, no_text_layer, too_large, timeout, unsupported, unreadable, missing,
    # outside_link (a link in a folder that leads out of it), error

    def to_json(self) -> dict[str, str]:
        """The contract's failure object (plus its kind)."""
        return {"source": self.source, "error": self.error, "kind": self.kind}


@dataclass(frozen=True)
class Progress:
    """Where an ingest run is; `eta` is seconds left, once there is a rate to judge by."""

    files_done: int
    files_total: int
    chunks: int
    current: str | None
    elapsed: float
    pages: int = 0
    bytes_done: int = 0  # of the files that need reading (unchanged ones count for nothing)
    bytes_total: int = 0
    eta: float | None = None

    @property
    def rate(self) -> float:
        """Chunks stored per second so far."""
        return self.chunks / self.elapsed if self.elapsed > 0 else 0.0


@dataclass
class IngestReport:
    """What an ingest run did."""

    added: int = 0
    updated: int = 0
    unchanged: int = 0
    removed: int = 0  # documents gone from rescanned folders, or changed and no longer readable
    skipped: int = 0  # files in walked folders whose format Hearth does not read
    chunks: int = 0
    reused: int = 0  # of those chunks, how many kept the vector of an identical earlier chunk
    pages: int = 0
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
            "removed": self.removed,
            "skipped": self.skipped,
            "reused": self.reused,
            "pages": self.pages,
        }


@dataclass
class _Scan:
    files: list[Path] = field(default_factory=list)
    failures: list[Failure] = field(default_factory=list)
    skipped: int = 0
    roots: list[str] = field(default_factory=list)  # folders walked: documents under them not found are gone
    unlisted: list[str] = field(default_factory=list)  # folders that could not be listed: nothing under them is gone
    within: dict[Path, str] = field(default_factory=dict)  # file found in a folder -> that folder (resolved)
    links_out: list[str] = field(default_factory=list)  # links refused as leading out: what was under them is gone


def source_id(path: Path) -> str:
    """The stable identity of a file in the index: its absolute path with links resolved.

    For a file found in a folder this is always a path inside that folder: a link that leads out of
    the folder is never read (see `outside_link`)."""
    return str(path.resolve())


def leads_outside(path: Path, folder: str) -> bool:
    """Whether `path` (inside `folder`, a resolved path) resolves to a place outside that folder."""
    return not _under(os.path.realpath(path), folder)  # realpath: a link that loops is no error here


def outside_link(path: Path) -> Failure:
    """The report of a link in a folder being indexed whose target lies outside that folder: not read.

    An unpacked archive or a cloned share may hold `readme.txt -> ~/.ssh/id_rsa`; following it would make
    the key searchable. A file the user names directly is read even when it is a link: that is their choice.
    """
    shown = _shown(str(path.absolute()))
    why = f"{_shown(path.name)}: link leads outside the folder, so it was not read."
    return Failure(shown, why, "outside_link")


def discover(paths: Iterable[Path], *, include_hidden: bool = False) -> tuple[list[Path], list[Failure], int]:
    """Expand files and folders into readable files; returns (files, failures, skipped-unsupported)."""
    scan = _discover(paths, include_hidden=include_hidden)
    return scan.files, scan.failures, scan.skipped


def _discover(paths: Iterable[Path], *, include_hidden: bool) -> _Scan:
    scan = _Scan()
    files: dict[str, Path] = {}
    for path in paths:
        path = Path(path)
        if not path.exists():
            scan.failures.append(Failure(str(path.absolute()), f"{path}: no such file or folder", "missing"))
        elif path.is_dir():
            top = source_id(path)
            scan.roots.append(top)

            def unlisted(exc: OSError) -> None:
                scan.unlisted.append(str(Path(exc.filename).resolve()) if exc.filename else scan.roots[-1])

            for root, dirs, names in os.walk(path, followlinks=False, onerror=unlisted):
                if not include_hidden:
                    dirs[:] = [d for d in dirs if not d.startswith(".")]
                dirs.sort()
                for d in dirs:  # os.walk lists linked folders but does not enter them
                    p = Path(root, d)
                    if p.is_symlink() and leads_outside(p, top):
                        scan.failures.append(outside_link(p))
                        scan.links_out.append(os.path.join(os.path.realpath(root), d))
                for name in sorted(names):
                    if not include_hidden and name.startswith("."):
                        continue
                    p = Path(root, name)
                    if p.suffix.lower() not in SUPPORTED_SUFFIXES:
                        scan.skipped += 1
                        continue
                    if leads_outside(p, top):  # checked before anything opens or stats the target
                        scan.failures.append(outside_link(p))
                        scan.links_out.append(os.path.join(os.path.realpath(root), name))  # as a source would be
                        continue
                    refused = _refusal(p)
                    if refused is not None:
                        scan.failures.append(refused)
                        continue
                    if files.setdefault(source_id(p), p) is p:
                        scan.within[p] = top
        elif path.suffix.lower() not in SUPPORTED_SUFFIXES:
            scan.failures.append(
                Failure(
                    source_id(path),
                    f"{path.name}: this file type ({path.suffix or 'none'}) is not supported",
                    "unsupported",
                )
            )
        elif (refused := _refusal(path)) is not None:
            scan.failures.append(refused)
        else:
            files.setdefault(source_id(path), path)
    scan.files = list(files.values())
    return scan


def _refusal(path: Path) -> Failure | None:
    """Why a document-named entry cannot be indexed before anything reads it: a link that leads nowhere,
    a pipe or device (reading one would block), or a name the index cannot store; None if it can be."""
    shown = _shown(str(path.absolute()))
    name = _shown(path.name)
    if not path.is_file():  # follows links: False for a broken or looping one, a pipe, a device
        if path.is_symlink():
            why = f"{name} is a link that leads nowhere (its target is missing, or it loops)."
            return Failure(shown, why, "unreadable")
        return Failure(shown, f"{name} is not a regular file (a pipe, socket or device).", "unreadable")
    if shown != str(path.absolute()):
        return Failure(
            shown, f"{name}: the file's name is not valid UTF-8, which the index cannot store; rename the file.",
            "unsupported",
        )  # fmt: skip
    return None


def _shown(name: str) -> str:
    """A path or name as text that can be printed and stored: bytes that are not UTF-8 become U+FFFD."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def embedding_text(chunk: Chunk) -> str:
    """The text embedded for a chunk: its heading gives context the passage itself may lack."""
    return _embedding_text(chunk.passage, chunk.heading)


def _embedding_text(passage: str, heading: str | None) -> str:
    if not heading or passage.startswith(heading.split(HEADING_SEPARATOR)[-1]):
        return passage  # sections open with their own heading; later chunks of one do not
    return f"{heading}\n{passage}"


def _under(source: str, folder: str) -> bool:
    return source == folder or source.startswith(folder.rstrip(os.sep) + os.sep)


class _Run:
    """One ingest call's state: the report, progress bookkeeping and the per-file steps."""

    def __init__(
        self,
        workspace: str,
        embedder: Embedder,
        store: DocumentIndex,
        manifest: Manifest,
        options: IngestOptions,
        progress: Callable[[Progress], None] | None,
        cancel: Callable[[], bool] | None,
    ) -> None:
        self.workspace, self.embedder, self.store, self.manifest = workspace, embedder, store, manifest
        self.options, self._progress, self._cancel = options, progress, cancel
        self.report = IngestReport()
        self.t0 = time.perf_counter()
        self.t_work: float | None = None  # when the first file that needed reading started
        self.files_total = 0
        self.files_done = 0
        self.bytes_total = 0
        self.bytes_done = 0

    def check_cancel(self) -> None:
        if self._cancel is not None and self._cancel():
            raise Cancelled("Indexing stopped; the files indexed so far are kept.")

    def progress(self, current: str | None, partial_bytes: int = 0) -> None:
        if self._progress is None:
            return
        now = time.perf_counter()
        done = self.bytes_done + partial_bytes
        eta = None
        if self.t_work is not None and done > 0 and self.bytes_total:
            eta = (now - self.t_work) / done * max(0, self.bytes_total - done)
        self._progress(
            Progress(
                files_done=self.files_done, files_total=self.files_total, chunks=self.report.chunks,
                current=current, elapsed=now - self.t0, pages=self.report.pages,
                bytes_done=done, bytes_total=self.bytes_total, eta=eta,
            )  # fmt: skip
        )

    def fail(self, source: str, kind: str, error: str) -> None:
        self.report.failed.append(Failure(source, error, kind))

    def drop(self, source: str) -> None:
        """Remove a document's chunks and record (stale or gone)."""
        _remove(source, workspace=self.workspace, store=self.store, manifest=self.manifest)
        self.report.removed += 1

    def index(self, parsed: Parsed, source: str, record: DocumentRecord | None, donors: Sequence[str]) -> None:
        """Chunk, embed (reusing vectors where the text is unchanged) and store one read file."""
        assert parsed.sections is not None and parsed.sha256 is not None
        path = parsed.path
        chunks = chunk_sections(
            parsed.sections,
            count_tokens=self.embedder.count_tokens,
            max_tokens=min(self.options.chunk_tokens, self.embedder.max_tokens - 16),
            overlap_tokens=self.options.overlap_tokens,
        )
        if not chunks:
            raise _FileFailed("empty", f"{path.name} is empty: it contains no text to index.")
        texts = [embedding_text(c) for c in chunks]
        vectors = np.zeros((len(chunks), self.embedder.dim), dtype=np.float32)
        known = self._known_vectors([*([source] if record is not None else []), *donors])
        todo = []
        for i, text in enumerate(texts):
            vector = known.get(text)
            if vector is not None and vector.shape == (self.embedder.dim,):
                vectors[i] = vector
            else:
                todo.append(i)
        step = max(1, self.options.embed_batch)
        for n in range(0, len(todo), step):
            self.check_cancel()
            batch = todo[n : n + step]
            vectors[batch] = self.embedder.embed([texts[i] for i in batch])
            self.progress(str(path), partial_bytes=int(parsed.size * (n + len(batch)) / max(1, len(todo))))
        self.check_cancel()
        # The store keeps what a reader should see: a split table's header row travels with its rows.
        stored = [replace(c, text=c.passage, context=None) if c.context else c for c in chunks]
        # From begin() until finish() the document does not count as indexed, so a crash leaves it to redo.
        self.manifest.begin(self.workspace, source, sha256=parsed.sha256, size=parsed.size, mtime_ns=parsed.mtime_ns)
        if record is not None and record.status != "done":
            # An interrupted earlier attempt may have left chunks under this very version: start clean.
            self.store.delete_document(self.workspace, source)
        self.store.replace_document(self.workspace, source, stored, vectors, version=parsed.sha256)
        self.manifest.finish(self.workspace, source, chunks=len(chunks), pages=_pages(parsed))
        if record is not None and record.status == "done":
            self.report.updated += 1
        else:
            self.report.added += 1
        self.report.chunks += len(chunks)
        self.report.reused += len(chunks) - len(todo)

    def _known_vectors(self, sources: Sequence[str]) -> dict[str, np.ndarray]:
        """Vectors of the chunks stored for these documents, by the text they were embedded from."""
        known: dict[str, np.ndarray] = {}
        for source in dict.fromkeys(sources):
            try:
                rows = self.store.embeddings_of(self.workspace, source)
            except HearthError:
                continue  # reuse is an optimisation; without it the chunks are simply embedded
            for text, heading, vector in rows:
                known.setdefault(_embedding_text(text, heading), np.asarray(vector, dtype=np.float32))
        return known


class _FileFailed(Exception):
    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def _pages(parsed: Parsed) -> int | None:
    numbered = [s.page for s in parsed.sections or () if s.page is not None]
    return max(numbered) if numbered else None


def ingest(
    paths: Iterable[Path],
    *,
    workspace: str,
    embedder: Embedder,
    store: DocumentIndex,
    manifest: Manifest,
    options: IngestOptions = IngestOptions(),
    progress: Callable[[Progress], None] | None = None,
    cancel: Callable[[], bool] | None = None,
) -> IngestReport:
    """Index files and folders into a workspace; one bad file never stops the batch.

    Folders are rescanned: documents indexed from under them that are no longer there are removed.
    """
    run = _Run(workspace, embedder, store, manifest, options, progress, cancel)
    report = run.report
    scan = _discover(paths, include_hidden=options.include_hidden)
    report.failed.extend(scan.failures)
    report.skipped = scan.skipped
    manifest.bind_workspace(workspace, embedder=embedder.name, dim=embedder.dim)
    records = {r.source: r for r in manifest.documents(workspace)}
    by_sha: dict[str, list[str]] = {}
    for r in records.values():
        if r.status == "done":
            by_sha.setdefault(r.sha256, []).append(r.source)

    run.files_total = len(scan.files)
    jobs: list[ParseJob] = []
    found: set[str] = set()
    sources: dict[Path, str] = {}  # as resolved now: a link swapped in later must not change whose file it is
    for path in scan.files:
        source = sources[path] = source_id(path)
        found.add(source)
        record = records.get(source)
        try:
            st = path.stat()
        except OSError as exc:
            run.fail(source, "unreadable", f"{path.name} cannot be opened ({exc.strerror or type(exc).__name__}).")
            run.files_done += 1
            continue
        done = record is not None and record.status == "done"
        if done and record.size == st.st_size and record.mtime_ns == st.st_mtime_ns:
            report.unchanged += 1  # O(1): no read, no hash, no store call
            run.files_done += 1
            continue
        jobs.append(
            ParseJob(
                path, known_sha256=record.sha256 if done else None,
                limits=options.limits, max_file_bytes=options.max_file_bytes, within=scan.within.get(path),
            )  # fmt: skip
        )
        run.bytes_total += min(st.st_size, options.max_file_bytes)
    run.progress(None)

    for parsed in _read(jobs, options):
        run.check_cancel()
        if run.t_work is None:
            run.t_work = time.perf_counter() - parsed.seconds
        source = sources.get(parsed.path) or source_id(parsed.path)
        record = records.get(source)
        try:
            if parsed.unchanged:
                assert record is not None
                manifest.touch(workspace, source, mtime_ns=parsed.mtime_ns)
                report.unchanged += 1
            elif parsed.error is not None:
                kind, message = parsed.error
                run.fail(source, kind, message)
                if record is not None and kind not in {"unreadable", "timeout"}:
                    run.drop(source)  # the old chunks no longer say what the file says
            else:
                report.pages += parsed.pages
                donors = by_sha.get(parsed.sha256 or "", [])[:1]
                run.index(parsed, source, record, donors)
                by_sha.setdefault(parsed.sha256 or "", []).append(source)  # a copy later in this run reuses it
        except _FileFailed as exc:
            run.fail(source, exc.kind, str(exc))
            if record is not None:
                run.drop(source)
        except (Cancelled, IndexDamaged):
            raise  # IndexDamaged: every later file would fail too; the service rebuilds the index and retries
        except HearthError as exc:
            run.fail(source, "error", f"{parsed.path.name}: {exc}")
        run.files_done += 1
        run.bytes_done += min(parsed.size, options.max_file_bytes)
        run.progress(str(parsed.path))

    # Rescan: what was indexed under a walked folder but is no longer found there is gone.
    for source, record in records.items():
        if source in found or not any(_under(source, root) for root in scan.roots):
            continue
        if not any(_under(source, link) for link in scan.links_out) and (
            any(_under(source, folder) for folder in scan.unlisted) or os.path.isfile(source)
        ):
            continue  # unlisted folder, or a file that exists but is now skipped (hidden): keep it
        run.check_cancel()
        try:
            run.drop(source)
        except IndexDamaged:
            raise
        except HearthError as exc:
            run.fail(source, "error", f"{Path(source).name}: could not be removed from the index: {exc}")
    report.seconds = time.perf_counter() - run.t0
    run.progress(None)
    return report


def _read(jobs: list[ParseJob], options: IngestOptions) -> Iterator[Parsed]:
    """Read files in worker processes (or in this one when asked, or when there is just one file)."""
    workers = default_workers() if options.workers is None else options.workers
    if workers <= 0 or not jobs:
        yield from parse_inline(jobs)
        return
    pool = ParsePool(min(workers, len(jobs)), timeout=options.parse_timeout, memory_limit=options.parse_memory_bytes)
    yield from pool.run(jobs)


def forget(paths: Iterable[Path], *, workspace: str, store: DocumentIndex, manifest: Manifest) -> list[str]:
    """Remove files, or every file under folders, from a workspace; returns the sources removed."""
    known = [r.source for r in manifest.documents(workspace)]
    removed: list[str] = []
    for path in paths:
        target = str(path.absolute().resolve()) if path.exists() else str(path.absolute())
        for source in known:
            if _under(source, target) and source not in removed:
                _remove(source, workspace=workspace, store=store, manifest=manifest)
                removed.append(source)
    return removed


def _remove(source: str, *, workspace: str, store: DocumentIndex, manifest: Manifest) -> None:
    """Remove one document's chunks, then its record; killed half-way, it no longer counts as done."""
    manifest.unfinish(workspace, source)
    store.delete_document(workspace, source)
    manifest.remove(workspace, source)
