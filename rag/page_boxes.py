"""Where a passage of a scanned page lies on the page image: the line boxes OCR found, for a viewer to mark.

    read_sections(path, options)      a document's Sections, read in a worker process under the indexing caps
    read_page_boxes(path, page, ...)  the PageBoxes of one OCR'd page (None when the page was not OCR'd);
                                      the document is read once per version (path, mtime, size) and kept
    PageBoxes.covering(start, end, text)  the boxes of the lines a passage covers

A passage's start and end are offsets in the document's full text (rag.loaders.full_text), and a Section's
boxes are offsets in its own text; the Section's offset joins the two. Reading only the cited page would be
cheaper, but the offset of a page depends on the text of every page before it, OCR'd or not.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from rag.errors import LoadError
from rag.loaders import Section

if TYPE_CHECKING:
    from rag.ingest import IngestOptions

Box = tuple[float, float, float, float]  # (x0, y0, x1, y1) as fractions of the page image's width and height

_KEPT = 8  # documents whose boxes are kept: a few scans open side by side
_cache: OrderedDict[tuple[str, int, int], dict[int, PageBoxes]] = OrderedDict()
_lock = threading.Lock()


@dataclass(frozen=True)
class PageBoxes:
    """One OCR'd page: its text, where that starts in the document's full text, and its lines' boxes."""

    page: int
    offset: int
    text: str
    lines: tuple[tuple[int, int, float, float, float, float], ...]  # (start, end) in `text`, then the box

    def covering(self, start: int, end: int, passage: str = "") -> list[Box]:
        """The boxes of the lines that the passage at [start, end) of the full text overlaps. When the page's
        text there is not the passage any more (the file changed), it is looked for on the page by its words."""
        a, b = start - self.offset, end - self.offset
        if passage.strip() and " ".join(self.text[max(0, a):max(0, b)].split()) != " ".join(passage.split()):
            words = re.findall(r"\S+", passage)[:12]
            found = re.search(r"\s+".join(re.escape(w) for w in words), self.text) if words else None
            if found is None:
                return []
            a, b = found.start(), found.start() + max(found.end() - found.start(), len(passage))
        return [(x0, y0, x1, y1) for s, e, x0, y0, x1, y1 in self.lines if s < b and e > a]


def read_sections(path: Path, options: IngestOptions) -> list[Section]:
    """A document's Sections as indexing reads them: in a worker process under the same caps (size, time,
    memory), so a document that changed into something hostile since it was indexed costs only that process."""
    from rag.parse_pool import ParseJob, ParsePool

    job = ParseJob(Path(path), limits=options.limits, max_file_bytes=options.max_file_bytes)
    pool = ParsePool(1, timeout=options.parse_timeout, memory_limit=options.parse_memory_bytes)
    for parsed in pool.run([job]):
        if parsed.error is not None:
            kind, message = parsed.error
            raise LoadError(message, kind=kind)
        return parsed.sections or []
    raise LoadError(f"{Path(path).name} could not be read.")


def read_page_boxes(path: Path, page: int, options: IngestOptions) -> PageBoxes | None:
    """The line boxes of `page` (1-based) of a document as it is now; None when OCR did not read that page.
    Raises LoadError when the document cannot be read."""
    path = Path(path)
    try:
        st = path.stat()
    except OSError as exc:
        raise LoadError(f"{path.name} cannot be read: it is not a file or no longer exists.",
                        kind="unreadable") from exc  # fmt: skip
    key = (str(path.resolve()), st.st_mtime_ns, st.st_size)
    with _lock:
        pages = _cache.get(key)
        if pages is not None:
            _cache.move_to_end(key)
    if pages is None:
        pages = {s.page: PageBoxes(s.page, s.offset, s.text, s.boxes) for s in read_sections(path, options)
                 if s.page is not None and s.ocr_confidence is not None and s.boxes}  # fmt: skip
        with _lock:
            _cache[key] = pages
            while len(_cache) > _KEPT:
                _cache.popitem(last=False)
    return pages.get(page)
