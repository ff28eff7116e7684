"""Ingestion: discover files, skip unchanged ones, read them in parallel, chunk, embed and store each file.

What makes it trustworthy:
- **Incremental.** A file whose size and modification time match a finished record costs one dict
  lookup; one whose content hash matches costs a hash. A changed file's old chunks are replaced, and
  chunks whose text did not change keep their vectors (nothing is re-embedded that need not be); a
  moved or copied file reuses the vectors of the document with the same hash.
- **Rescans.** Ingesting a folder again removes the documents that are no longer in it (deleted,
  moved away, renamed). A folder that cannot be listed is never taken as emptied.
- **Crash-safe.** A document is written as manifest `begin` (it stops counting as indexed), store
  write, manifest `finish`; many small files share each step (one transaction, one Chroma call), and
  their `finish` comes only after all of their passages are stored. A kill at any moment leaves a
  document either done and complete, or marked `indexing`, hidden from search, and redone (its
  leftovers deleted) next time.
- **Failures** cost one file and are reported with its path and the reason; a changed file that can
  no longer be read loses its old chunks, since they no longer say what the file says.
- **Links stay inside.** In a folder being indexed, a link (to a file or a folder) whose target lies
  outside that folder is not read and is reported (`outside_link`); links that stay inside are fine.
  A file named directly is read even when it is a link: the user chose it.
- **Pipelined.** Files are read in worker processes; this thread chunks them and embeds the passages of
  several files together; a writer thread stores them in batches (rag.parse_pool has both). Bounded
  queues keep memory flat. With `workers=0` or `write_batch=0` each file is read, embedded and written
  in turn, in this thread.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from inference.errors import Cancelled, HearthError
from rag.errors import IndexDamaged, LoadError
from rag.chunking import Chunk, TokenCounter, _embedding_text, chunk_sections, embedding_text
from rag.discovery import Failure, _discover, discover, leads_outside, outside_link, source_id
from rag.loaders import Limits
from rag.manifest import DocumentRecord, Manifest, _remove, forget
from rag.parse_pool import (
    DEFAULT_MEMORY_LIMIT, BatchThread, ParseJob, Parsed, ParsePool, default_workers, parse_inline,
)  # fmt: skip
from rag.pinned import inside
from rag.store import DocumentIndex, DocumentWrite
from rag.table_store import TableStore
from rag.tables import Table, extract_tables
from rag.versions import VersionStore

if TYPE_CHECKING:
    from inference.embedder import Embedder

__all__ = [
    "Failure", "IngestOptions", "IngestReport", "Progress", "discover", "embedding_text",
    "forget", "ingest", "leads_outside", "outside_link", "source_id",
]  # fmt: skip


STAGES = ("read", "chunk", "embed", "write")


@dataclass(frozen=True)
class IngestOptions:
    """Limits, chunking and parallelism settings for ingestion."""

    max_file_bytes: int = 200 * 1024 * 1024  # larger files are reported, not read
    max_pages: int = 5000  # PDF pages, slides or worksheets in one file
    max_unzipped_bytes: int = 256 * 1024 * 1024  # what a DOCX/XLSX/PPTX/ODT may unpack to (zip bombs)
    max_zip_ratio: int = 100  # unpacked / packed size above which a big office file is a zip bomb
    chunk_tokens: int = 200  # embedder tokens per chunk (the default embedder reads at most 256)
    overlap_tokens: int = 0  # none: measured, no held-out retrieval lost with the heading before each chunk
    include_hidden: bool = False  # dot-files and dot-folders are skipped when walking a folder
    workers: int | None = None  # reader processes; None = automatic, 0 = read in this process
    parse_timeout: float = 300.0  # seconds one file may take to read before it is given up on
    parse_memory_bytes: int | None = DEFAULT_MEMORY_LIMIT  # address space of one reader process; None = no cap
    # Chunks embedded together, between progress reports and cancel checks (about 1.3 s on 2 cores): the embedder's
    # threads wait for each other at the end of a call; 128 against 64: 25.4–25.7 s against 26.2 s for the
    # retrieval corpus's whole ingest (docs/experiments/2026-12-08-embedding-less-work.md).
    embed_batch: int = 128
    # Passages of many files written together (one keyword-index transaction, one Chroma call, one manifest
    # transaction each side); 0 = write each file on its own. A shared server takes each document on its own.
    write_batch: int = 1024
    keep_versions: int = 5  # earlier versions of a document whose text is kept for `compare` (rag/versions.py); 0: none

    @property
    def limits(self) -> Limits:
        """The loaders' limits."""
        return Limits(max_pages=self.max_pages, max_unzipped_bytes=self.max_unzipped_bytes,
                      max_zip_ratio=self.max_zip_ratio)  # fmt: skip


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
    tokens_embedded: int = 0  # the embedder's tokens, special ones included: the work embedding costs
    pages: int = 0
    seconds: float = 0.0
    wall: float | None = None  # the whole process's seconds, where a front end counted them (stages add up to it)
    failed: list[Failure] = field(default_factory=list)
    # Seconds spent in each stage: read (in the reader processes, summed), chunk, embed, write.
    stages: dict[str, float] = field(default_factory=lambda: dict.fromkeys(STAGES, 0.0))

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
            "tokens_embedded": self.tokens_embedded,
            "pages": self.pages,
            "stages": {k: round(v, 3) for k, v in self.stages.items()},
            **({"wall": round(self.wall, 3)} if self.wall is not None else {}),
        }


@dataclass
class _Doc:
    """One read file on its way to the index: its chunks, and vectors as they are filled in."""

    source: str
    parsed: Parsed
    record: DocumentRecord | None
    chunks: list[Chunk]
    texts: list[str]  # what each chunk is embedded from
    vectors: np.ndarray
    todo: list[int]  # chunks without a vector yet
    tables: list[Table] = field(default_factory=list)  # its tables, typed (rag/tables.py)

    def stored(self) -> list[Chunk]:
        """The chunks as the store keeps them: a split table's header row travels with its rows."""
        return [replace(c, text=c.passage, context=None) if c.context else c for c in self.chunks]


class _Run:
    """One ingest call's state: the report, progress bookkeeping and the per-file steps."""

    def __init__(self, workspace: str, embedder: Embedder, store: DocumentIndex, manifest: Manifest,
                 options: IngestOptions, progress: Callable[[Progress], None] | None,
                 cancel: Callable[[], bool] | None, tables: TableStore | None = None,
                 versions: VersionStore | None = None) -> None:  # fmt: skip
        self.workspace, self.embedder, self.store, self.manifest = workspace, embedder, store, manifest
        self.tables, self.versions = tables, versions
        self.options, self._progress, self._cancel = options, progress, cancel
        self.report = IngestReport()
        self.t0 = time.perf_counter()
        self.t_work: float | None = None  # when the first file that needed reading started
        self.files_total = self.files_done = self.bytes_total = self.bytes_done = 0
        self.lock = threading.Lock()  # the report's counts, which the writer thread adds to
        self.unwritten: set[str] = set()  # documents handed to the writer thread and not yet stored
        self.embedded: dict[str, np.ndarray] = {}  # text -> vector of what this run embedded (at most _EMBEDDED_KEPT)

    def cancelled(self) -> bool:
        return self._cancel is not None and self._cancel()

    def check_cancel(self) -> None:
        if self.cancelled():
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

    def settle(self, parsed: Parsed) -> None:
        """Count a read file as done with (stored, unchanged or failed): progress counts only such files."""
        with self.lock:
            self.files_done += 1
            self.bytes_done += min(parsed.size, self.options.max_file_bytes)

    def drop(self, source: str) -> None:
        """Remove a document's chunks and record (stale or gone)."""
        _remove(source, workspace=self.workspace, store=self.store, manifest=self.manifest)
        with self.lock:
            self.report.removed += 1

    def prepare(self, parsed: Parsed, source: str, record: DocumentRecord | None, donors: Sequence[str],
                count_tokens: Callable[[str], int]) -> _Doc:
        """Chunk a read file and take the vectors of chunks whose text is already stored (its own or a copy's)."""
        assert parsed.sections is not None and parsed.sha256 is not None
        t0 = time.perf_counter()
        chunks = chunk_sections(parsed.sections, count_tokens=count_tokens, overlap_tokens=self.options.overlap_tokens,
                                max_tokens=min(self.options.chunk_tokens, self.embedder.max_tokens - 16))
        self.report.stages["chunk"] += time.perf_counter() - t0
        if not chunks:
            raise LoadError(f"{parsed.path.name} is empty: it contains no text to index.", kind="empty")
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
        tables = extract_tables(source, parsed.sections) if self.tables is not None else []
        return _Doc(source, parsed, record, chunks, texts, vectors, todo, tables)

    def embed(self, docs: Sequence[_Doc]) -> None:
        """Embed the chunks of some documents that have no vector yet, `embed_batch` at a time, all files together.
        A text this run embedded already (a footer every file repeats, one attachment in several e-mails) takes
        that vector: each text is embedded once."""
        fresh: dict[str, list[tuple[_Doc, int]]] = {}
        shared = 0
        for doc in docs:
            for i in doc.todo:
                seen = self.embedded.get(doc.texts[i])
                if seen is not None:
                    doc.vectors[i], shared = seen, shared + 1
                else:
                    fresh.setdefault(doc.texts[i], []).append((doc, i))
        with self.lock:
            self.report.reused += shared
        texts = list(fresh)
        step = max(1, self.options.embed_batch)
        for n in range(0, len(texts), step):
            self.check_cancel()
            batch = texts[n : n + step]
            t0 = time.perf_counter()
            counted = getattr(self.embedder, "tokens_embedded", None)
            vectors = self.embedder.embed(batch)
            self.report.stages["embed"] += time.perf_counter() - t0
            if counted is not None:
                self.report.tokens_embedded += self.embedder.tokens_embedded - counted
            for text, vector in zip(batch, vectors, strict=True):
                for doc, i in fresh[text]:
                    doc.vectors[i] = vector
                if len(self.embedded) < _EMBEDDED_KEPT:
                    self.embedded[text] = vector
            partial = int(docs[0].parsed.size * (n + len(batch)) / len(texts)) if len(docs) == 1 else 0
            self.progress(str(fresh[batch[-1]][-1][0].parsed.path), partial_bytes=partial)
        self.check_cancel()

    def write_one(self, doc: _Doc) -> None:
        """Store one document on its own: begin, replace its chunks, finish."""
        t0 = time.perf_counter()
        parsed, source, record = doc.parsed, doc.source, doc.record
        assert parsed.sha256 is not None
        # From begin() until finish() the document does not count as indexed, so a crash leaves it to redo.
        self.manifest.begin(self.workspace, source, sha256=parsed.sha256, size=parsed.size, mtime_ns=parsed.mtime_ns)
        if record is not None and record.status != "done":
            # An interrupted earlier attempt may have left chunks under this very version: start clean.
            self.store.delete_document(self.workspace, source)
        self.store.replace_document(self.workspace, source, doc.stored(), doc.vectors, version=parsed.sha256)
        self._write_tables([doc])
        self.manifest.finish(self.workspace, source, chunks=len(doc.chunks), pages=parsed.last_page, note=parsed.note)
        self._written([doc], time.perf_counter() - t0)

    def write_many(self, docs: Sequence[_Doc]) -> None:
        """Store many documents together: all begun in one manifest transaction, their passages written by the
        index in one go (`DocumentIndex.write_documents`), then all finished in one transaction."""
        if len(docs) == 1:
            self.write_one(docs[0])
            return
        t0 = time.perf_counter()
        workspace = self.workspace
        self.manifest.begin_many(workspace, [(d.source, d.parsed.sha256 or "", d.parsed.size, d.parsed.mtime_ns)
                                             for d in docs])  # fmt: skip
        self.store.write_documents(workspace, [
            DocumentWrite(d.source, d.parsed.sha256 or "", d.stored(), d.vectors, earlier=d.record is not None,
                          leftovers=d.record is not None and d.record.status != "done")
            for d in docs])  # fmt: skip
        self._write_tables(docs)
        self.manifest.finish_many(workspace, [(d.source, len(d.chunks), d.parsed.last_page, d.parsed.note)
                                              for d in docs])  # fmt: skip
        self._written(docs, time.perf_counter() - t0)

    def _write_tables(self, docs: Sequence[_Doc]) -> None:
        """Swap the documents' tables for their new ones and keep their text (before the manifest marks them done)."""
        if self.tables is not None:  # timed with the rest of the write
            self.tables.write(self.workspace, [(d.source, d.parsed.sha256 or "", d.tables) for d in docs])
        if self.versions is not None:  # and the text of this version, kept whole before the manifest says done
            self.versions.record_all(self.workspace, [(d.source, d.parsed) for d in docs], self.options.keep_versions)

    def write_batch(self, docs: list[_Doc]) -> None:
        """write_many; if that fails, each document on its own, so that a bad one costs only itself."""
        try:
            self.write_many(docs)
        except IndexDamaged:
            raise
        except HearthError:
            for doc in docs:
                try:
                    self.write_one(doc)
                except IndexDamaged:
                    raise
                except HearthError as exc:
                    self.fail(doc.source, "error", f"{doc.parsed.path.name}: {exc}")
                    self.settle(doc.parsed)
        for doc in docs:
            self.unwritten.discard(doc.source)

    def _written(self, docs: Sequence[_Doc], seconds: float) -> None:
        for doc in docs:
            self.settle(doc.parsed)
        with self.lock:
            report = self.report
            report.stages["write"] += seconds
            for doc in docs:
                if doc.record is not None and doc.record.status == "done":
                    report.updated += 1
                else:
                    report.added += 1
                report.chunks += len(doc.chunks)
                report.reused += len(doc.chunks) - len(doc.todo)

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


_WRITE_WAIT = 2.0  # seconds an embedded document may wait for others to share its batch
_EMBEDDED_KEPT = 20_000  # texts whose vectors a run keeps to share (about 35 MB with 384 dimensions)
_PIPELINE_FILES = 16  # files to read from which the pipeline (and batched writing) is worth it


def ingest(paths: Iterable[Path], *, workspace: str, embedder: Embedder, store: DocumentIndex, manifest: Manifest,
           options: IngestOptions = IngestOptions(), progress: Callable[[Progress], None] | None = None,
           cancel: Callable[[], bool] | None = None, tables: TableStore | None = None,
           versions: VersionStore | None = None, within: Sequence[Path] = ()) -> IngestReport:  # fmt: skip
    """Index files and folders into a workspace; one bad file never stops the batch.
    Folders are rescanned: documents indexed from under them that are no longer there are removed.
    With `tables` (and `versions`), every document's typed tables (its text) are kept too, in step with the manifest.
    `within`: folders (a watcher's) that files named in `paths` were found in: their link rule holds."""
    run = _Run(workspace, embedder, store, manifest, options, progress, cancel, tables, versions)
    report = run.report
    scan = _discover(paths, include_hidden=options.include_hidden, within=[source_id(Path(f)) for f in within])
    report.failed.extend(scan.failures)
    report.skipped = scan.skipped
    manifest.bind_workspace(workspace, embedder=embedder.name, dim=embedder.dim)
    records = {r.source: r for r in manifest.documents(workspace)}
    jobs, sources = _jobs(run, scan, records)
    run.progress(None)
    # A handful of files goes one by one (progress and cancel per file); many go through the pipeline.
    pipelined = options.write_batch > 0 and options.workers != 0 and len(jobs) >= _PIPELINE_FILES
    feed = _Feed(run, records, sources, pipelined=pipelined)
    try:
        for parsed in _read(jobs, options):
            feed.take(parsed)
        feed.finish()
    except BaseException:
        feed.abort()
        raise
    _forget_gone(run, records, set(sources.values()), scan)
    if tables is not None:  # tables of documents dropped, or of a run killed before it marked them done
        tables.prune(workspace, {r.source: r.sha256 for r in manifest.documents(workspace, status="done")})
    report.seconds = time.perf_counter() - run.t0
    run.progress(None)
    return report


def _jobs(run: _Run, scan: Any, records: dict[str, Any]) -> tuple[list[ParseJob], dict[Path, str]]:
    """The files to read (those changed since they were indexed, and new ones), and every file found with its
    source id as resolved now (a link swapped in later must not change whose file it is). Unchanged files are
    counted without a read; a file that cannot be opened fails."""
    options, report = run.options, run.report
    run.files_total = len(scan.files)
    jobs: list[ParseJob] = []
    sources: dict[Path, str] = {}
    for path in scan.files:
        source = sources[path] = source_id(path)
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
        jobs.append(ParseJob(path, known_sha256=record.sha256 if done else None, limits=options.limits,
                             max_file_bytes=options.max_file_bytes, within=scan.within.get(path)))  # fmt: skip
        run.bytes_total += min(st.st_size, options.max_file_bytes)
    return jobs, sources


class _Feed:
    """The files read, handed on: embedded and written one by one, or (`pipelined`) the passages of several files
    embedded together and written by a writer thread in order with the manifest's other writes."""

    def __init__(self, run: _Run, records: dict[str, Any], sources: dict[Path, str], *, pipelined: bool) -> None:
        self.run, self.records, self.sources = run, records, sources
        options = run.options
        self.writer: BatchThread[_Doc] | None = BatchThread(
            run.write_batch, limit=options.write_batch, wait=_WRITE_WAIT, size=lambda d: len(d.chunks),
            stopped=run.cancelled) if pipelined else None  # fmt: skip
        # One token counter for the whole run: each distinct word is counted by the tokenizer once.
        self.count_tokens = TokenCounter(run.embedder.count_tokens) if pipelined else run.embedder.count_tokens
        self.waiting: list[_Doc] = []  # chunked, not yet embedded
        self.by_sha: dict[str, list[str]] = {}  # content hash -> documents with it: a copy reuses their vectors
        for r in records.values():
            if r.status == "done":
                self.by_sha.setdefault(r.sha256, []).append(r.source)

    def send_on(self) -> None:
        """Embed the waiting documents (one file at a time when a batch fails: a text the embedder cannot take
        costs only its file) and hand them to the writer."""
        run = self.run
        try:
            run.embed(self.waiting)
        except HearthError as exc:
            if isinstance(exc, Cancelled):
                raise
            for doc in list(self.waiting):
                try:
                    run.embed([doc])
                except HearthError as exc:
                    if isinstance(exc, Cancelled):
                        raise
                    run.fail(doc.source, "error", f"{doc.parsed.path.name}: {exc}")
                    run.settle(doc.parsed)
                    self.waiting.remove(doc)
        for doc in self.waiting:
            run.unwritten.add(doc.source)
            self.writer.put(doc)  # type: ignore[union-attr]
        self.waiting.clear()

    def later(self, source: str, write: Callable[[], None]) -> None:
        """Run a manifest or store write in order with the documents before it (on the writer, if any)."""
        def call() -> None:
            try:
                write()
            except HearthError as exc:
                if isinstance(exc, IndexDamaged):
                    raise
                self.run.fail(source, "error", f"{Path(source).name}: {exc}")
        self.writer.call(call) if self.writer is not None else call()

    def take(self, parsed: Parsed) -> None:
        """One file read: unchanged, failed, or its passages on their way to the store."""
        run = self.run
        run.check_cancel()
        run.t_work = run.t_work or time.perf_counter() - parsed.seconds
        run.report.stages["read"] += parsed.seconds
        source = self.sources.get(parsed.path) or source_id(parsed.path)
        record = self.records.get(source)
        handed = False  # to the store: counted as done once written
        try:
            if parsed.unchanged:
                assert record is not None
                workspace = run.workspace
                self.later(source, lambda s=source, m=parsed.mtime_ns: run.manifest.touch(workspace, s, mtime_ns=m))
                run.report.unchanged += 1
            elif parsed.error is not None:
                kind, message = parsed.error
                run.fail(source, kind, message)
                if record is not None and kind not in {"unreadable", "timeout"}:
                    self.later(source, lambda s=source: run.drop(s))  # its old chunks no longer say what it says
            else:
                self._hand_on(parsed, source, record)
                handed = True
        except LoadError as exc:
            run.fail(source, exc.kind, str(exc))
            if record is not None:
                self.later(source, lambda s=source: run.drop(s))
        except (Cancelled, IndexDamaged):
            raise  # IndexDamaged: every later file would fail too; the service rebuilds the index and retries
        except HearthError as exc:
            run.fail(source, "error", f"{parsed.path.name}: {exc}")
        if not handed:
            run.settle(parsed)
        run.progress(str(parsed.path))

    def _hand_on(self, parsed: Parsed, source: str, record: Any) -> None:
        """A file read whole: chunked, and embedded and written (now, or with the next batch)."""
        run = self.run
        run.report.pages += parsed.pages
        donors = self.by_sha.get(parsed.sha256 or "", [])[:1]
        if self.writer is not None and any(d in run.unwritten or d in {w.source for w in self.waiting}
                                           for d in donors):  # fmt: skip
            self.send_on()  # a copy of a file read earlier in this run: its vectors must be stored first
            self.writer.sync()
        doc = run.prepare(parsed, source, record, donors, self.count_tokens)
        if self.writer is None:
            run.embed([doc])
            run.write_one(doc)
        else:
            self.waiting.append(doc)
        if sum(len(d.todo) for d in self.waiting) >= run.options.embed_batch:
            self.send_on()
        self.by_sha.setdefault(parsed.sha256 or "", []).append(source)  # a copy later in this run reuses it

    def finish(self) -> None:
        """What is still waiting embedded and written; the writer closed."""
        if self.writer is not None:
            self.send_on()
            self.writer.close()
            self.run.check_cancel()  # a stop seen by the writer skipped what was left: the run did not finish

    def abort(self) -> None:
        if self.writer is not None:
            self.writer.abort()


def _forget_gone(run: _Run, records: dict[str, Any], found: set[str], scan: Any) -> None:
    """Rescan: what was indexed under a walked folder but is no longer found there is gone from the index."""
    for source in records:
        if source in found or not any(inside(source, root) for root in scan.roots):
            continue
        if not any(inside(source, link) for link in scan.links_out) and (
            any(inside(source, folder) for folder in scan.unlisted) or os.path.isfile(source)
        ):
            continue  # unlisted folder, or a file that exists but is now skipped (hidden): keep it
        run.check_cancel()
        try:
            run.drop(source)
        except IndexDamaged:
            raise
        except HearthError as exc:
            run.fail(source, "error", f"{Path(source).name}: could not be removed from the index: {exc}")


def _read(jobs: list[ParseJob], options: IngestOptions) -> Iterator[Parsed]:
    """Read files in worker processes (or in this one when asked, or when there is just one file)."""
    workers = default_workers() if options.workers is None else options.workers
    if workers <= 0 or not jobs:
        yield from parse_inline(jobs)
        return
    pool = ParsePool(min(workers, len(jobs)), timeout=options.parse_timeout, memory_limit=options.parse_memory_bytes)
    yield from pool.run(jobs)

