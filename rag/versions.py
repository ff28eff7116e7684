"""Earlier versions of indexed documents: the text Hearth read from each, kept so that it can say what changed.

When a document is indexed, the text it was read as (its sections with their headings, pages and tables)
is written to a file of its own, compressed, with the date: `DATA_DIR/versions/WORKSPACE/KEY/vNNNNNN.SHA256.MS.json.z`
(KEY a digest of the document's path; the name alone says the version's number, content hash and when it was
indexed). The file whose hash the manifest records is the version indexed now; the ones before it are its
earlier versions, the last `keep` of them (IngestOptions.keep_versions; 0 keeps none, which an administrator's
policy can enforce). At indexing time the file that changed is already on disk in its new form, so the old text
can only come from what was kept when the old form was indexed.

Crash safety: a version's file is written whole under a temporary name and renamed into place before the
manifest marks the document done, so a kill leaves either no file or a complete one, and a document counted as
indexed always has its text kept. The earlier versions' files were written when they were indexed; replacing
the document's passages never touches them. A file written by a run that did not finish is newer than the
version the manifest records: `current` leaves it out, and the document indexed again with the same text
reuses it. Files are not fsynced (a sync per document would slow a large ingest by minutes): after a power cut a
torn file is reported as unreadable by `load`, and the index itself is unharmed.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
import time
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from rag.errors import StoreError
from rag.loaders import CELL_SEPARATOR, Section

if TYPE_CHECKING:
    from rag.lexical import LexicalRow
    from rag.parse_pool import Parsed

# v000003.<sha256>.<indexed at, ms>.json.z: the listing alone says which versions there are
_NAME = re.compile(r"^v(\d{6})\.([0-9a-f]*)\.(\d+)\.json\.z$")
_FORMAT = 1  # the layout of a version file; a newer Hearth reads older ones


@dataclass(frozen=True)
class VersionInfo:
    """One kept version of a document: its number (1 for the first kept), content hash and when it was indexed."""

    version: int
    sha256: str
    indexed_at: float  # seconds since the epoch
    path: Path


@dataclass(frozen=True)
class Snapshot:
    """A kept version's text as Hearth read it, and which version it is."""

    source: str
    version: int | None  # None: read from the file itself (no version was kept)
    sha256: str
    indexed_at: float | None
    sections: list[Section]
    note: str | None = None  # what OCR read: "scanned, low confidence (page 2)" (rag.loaders.ocr_note)


class VersionStore:
    """The kept versions of every workspace's documents, one folder per document."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def folder(self, workspace: str, source: str) -> Path:
        """Where one document's versions are kept."""
        return self.root / workspace / _key(source)

    def versions(self, workspace: str, source: str) -> list[VersionInfo]:
        """The kept versions of a document, oldest first (the last is the newest written)."""
        folder = self.folder(workspace, source)
        try:
            names = sorted(n for n in os.listdir(folder) if _NAME.match(n))
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise StoreError(f"Cannot list the earlier versions in {folder}: {exc.strerror or exc}.") from exc
        out = []
        for name in names:
            m = _NAME.match(name)
            out.append(VersionInfo(int(m.group(1)), m.group(2), int(m.group(3)) / 1000, folder / name))  # type: ignore
        return out

    def current(self, workspace: str, source: str, sha256: str) -> tuple[VersionInfo | None, list[VersionInfo]]:
        """The version indexed now (the newest whose hash is `sha256`, the manifest's) and the ones before it,
        oldest first; files written after it by a run that never finished are left out."""
        kept = self.versions(workspace, source)
        for i in range(len(kept) - 1, -1, -1):
            if kept[i].sha256 == sha256:
                return kept[i], kept[:i]
        return None, kept

    def record(self, workspace: str, source: str, sha256: str, sections: Sequence[Section], *, keep: int,
               note: str | None = None, now: float | None = None) -> VersionInfo | None:
        """Keep the text a document is being indexed with, and its last `keep` earlier versions; with keep=0,
        keep nothing of it. Written whole before it appears (call before the index replaces the document)."""
        if keep <= 0:
            self.delete(workspace, [source])
            return None
        kept = self.versions(workspace, source)
        if kept and kept[-1].sha256 == sha256:
            return kept[-1]  # indexed again with the same text (an interrupted run redone)
        folder = self.folder(workspace, source)
        number = kept[-1].version + 1 if kept else 1
        indexed_at = time.time() if now is None else now
        body = {"format": _FORMAT, "source": source, "sha256": sha256, "version": number, "indexed_at": indexed_at,
                "note": note, "sections": [_section_json(s) for s in sections]}
        sha = sha256 if re.fullmatch(r"[0-9a-f]*", sha256) else ""
        name = f"v{number:06d}.{sha}.{int(indexed_at * 1000)}.json.z"
        try:
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            if not kept:
                _write_whole(folder / "source", source.encode("utf-8"))  # which document this folder is
            _write_whole(folder / name, zlib.compress(json.dumps(body, ensure_ascii=False).encode("utf-8"), 6))
        except OSError as exc:
            raise StoreError(f"Cannot keep the earlier version of {Path(source).name}: {exc.strerror or exc}.",
                             hint="Free some disk space, or turn keeping versions off.") from exc
        for old in kept[: max(0, len(kept) + 1 - (keep + 1))]:  # the new one, and `keep` before it
            _unlink(old.path)
        return VersionInfo(number, sha, int(indexed_at * 1000) / 1000, folder / name)

    def record_all(self, workspace: str, documents: Iterable[tuple[str, Parsed]], keep: int) -> None:
        """`record` for documents as ingestion read them: (source, what reading it gave)."""
        for source, parsed in documents:
            self.record(workspace, source, parsed.sha256 or "", parsed.sections or [], keep=keep, note=parsed.note)

    def load(self, info: VersionInfo, source: str) -> Snapshot:
        """A kept version's text; StoreError when its file cannot be read."""
        try:
            body = json.loads(zlib.decompress(info.path.read_bytes()).decode("utf-8"))
            sections = [_section(s) for s in body["sections"]]
        except (OSError, ValueError, KeyError, TypeError, zlib.error) as exc:
            raise StoreError(f"The kept version {info.version} of {Path(source).name} cannot be read "
                             f"({type(exc).__name__}).") from exc
        return Snapshot(source, info.version, body.get("sha256", info.sha256), body.get("indexed_at", info.indexed_at),
                        sections, body.get("note"))

    def delete(self, workspace: str, sources: Iterable[str]) -> None:
        """Remove every kept version of these documents."""
        for source in sources:
            shutil.rmtree(self.folder(workspace, source), ignore_errors=True)

    def prune(self, workspace: str, current: Mapping[str, str]) -> int:
        """Remove the versions of documents the workspace no longer holds (`current`: source -> hash of the done
        ones, or of all listed); returns how many documents' versions went."""
        wanted = {_key(s) for s in current}
        try:
            keys = os.listdir(self.root / workspace)
        except OSError:
            return 0
        gone = [k for k in keys if k not in wanted and not k.startswith(".")]
        for key in gone:
            shutil.rmtree(self.root / workspace / key, ignore_errors=True)
        return len(gone)

    def drop_workspace(self, workspace: str) -> None:
        """Remove the kept versions of every document of a workspace."""
        shutil.rmtree(self.root / workspace, ignore_errors=True)

    def sources_with_history(self, workspace: str, current: Mapping[str, str]) -> dict[str, int]:
        """How many earlier versions each of these documents (source -> the hash indexed now) has, where any."""
        out = {}
        for source, sha in current.items():
            if (self.root / workspace / _key(source)).is_dir():
                earlier = self.current(workspace, source, sha)[1]
                if earlier:
                    out[source] = len(earlier)
        return out


def sections_from_passages(rows: Iterable[LexicalRow]) -> list[Section]:
    """A document's text put together again from its stored passages (their offsets point into its full text;
    overlaps are cut, gaps become blank lines), a section per run of passages of one page and heading; runs of
    lines with cells become tables again. For documents indexed before Hearth kept versions."""
    runs: list[tuple[int | None, str | None, int, list[str]]] = []  # (page, heading, offset, pieces)
    cursor = -1
    for row in sorted(rows, key=lambda r: (r.start, r.end)):
        piece = row.text if row.start >= cursor else row.text[cursor - row.start:]
        if not runs or (runs[-1][0], runs[-1][1]) != (row.page, row.heading):
            runs.append((row.page, row.heading, max(row.start, cursor), []))
        elif row.start > cursor:
            runs[-1][3].append("\n\n")
        runs[-1][3].append(piece)
        cursor = max(cursor, row.end)
    out = []
    for page, heading, offset, pieces in runs:
        text = "".join(pieces).strip()
        if text:
            out.append(Section(text=text, page=page, heading=heading, offset=offset, tables=_table_spans(text)))
    return out


def _table_spans(text: str) -> tuple[tuple[int, int], ...]:
    """Where runs of two or more lines with cells (as the loaders write table rows) stand in a text."""
    spans, start, count, at = [], None, 0, 0
    for line in text.split("\n") + [""]:
        if CELL_SEPARATOR in line:
            start, count = (at if start is None else start), count + 1
        else:
            if start is not None and count >= 2:
                spans.append((start, at - 1))
            start, count = None, 0
        at += len(line) + 1
    return tuple(spans)


def _key(source: str) -> str:
    return hashlib.sha256(source.encode("utf-8", "surrogateescape")).hexdigest()[:24]


def _section_json(s: Section) -> list:
    return [s.text, s.page, s.heading, s.offset, [list(t) for t in s.tables], s.ocr_confidence]


def _section(row: list) -> Section:
    text, page, heading, offset, tables, confidence = row[:6]
    return Section(text=text, page=page, heading=heading, offset=offset,
                   tables=tuple((int(a), int(b)) for a, b in tables), ocr_confidence=confidence)


def _write_whole(path: Path, data: bytes) -> None:
    """Write a file under a temporary name and rename it into place: a process killed half-way leaves no file or a
    whole one. Not fsynced (one sync per indexed document would slow a large ingest by minutes); after a power
    cut a torn file is reported as unreadable by `load`, and the index itself is unharmed."""
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        _unlink(Path(tmp))
        raise


def _unlink(path: Path) -> None:
    try:
        path.unlink()
    except FileNotFoundError:
        pass
