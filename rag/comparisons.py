"""The comparison half of the service: what changed between two documents, or a document and its earlier version.

`Hearth` (rag/service.py) derives from `Comparisons` as it does from `Questions`. The changes are computed
(rag/compare.py) from the text kept of each version (rag/versions.py); in the chat, a question such as "what
changed in the travel policy?" or "compare X and Y" is answered with Hearth's own list of changes, each cited
on both sides, under at most one paragraph the chat model writes from that list.
"""

from __future__ import annotations

import logging
import os
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from inference.errors import Cancelled, HearthError, UsageError
from rag.compare import SHARED_MIN, Change, Comparison, Side, compare, word_changes
from rag.errors import CompareError
from rag.versions import Snapshot, VersionInfo, VersionStore, sections_from_passages
from rag.workspaces import DEFAULT_WORKSPACE, check_workspace

if TYPE_CHECKING:
    from inference.chat import ChatModel
    from rag.answer import Answer
    from rag.config import HearthConfig
    from rag.manifest import DocumentRecord, Manifest

log = logging.getLogger(__name__)
# "What changed in X?", "what's new in X", "what are the changes to X", "changes in X"
_CHANGED_IN = re.compile(r"^\s*(?:please\s+)?(?:what(?:'s| is| has| have)?\s+(?:been\s+)?(?:changed|new|different)|"
                         r"what\s+(?:are\s+)?(?:the\s+)?(?:changes|differences|revisions)|(?:list|show)\s+(?:me\s+)?"
                         r"(?:the\s+)?changes|changes)\s+(?:in|to|of)\s+(?P<doc>.+?)\s*\??\s*$", re.IGNORECASE)
# "Compare X and Y", "compare X with Y", "(what is the) difference(s) between X and Y", "what changed between X and Y"
_BETWEEN = re.compile(r"^\s*(?:please\s+)?(?:compare\s+(?P<a>.+?)\s+(?:and|with|to|against)\s+(?P<b>.+?)|"
                      r"(?:what(?:'s| is| are)?\s+)?(?:the\s+)?(?:differences?|changes?|what\s+changed)\s+between\s+"
                      r"(?P<a2>.+?)\s+and\s+(?P<b2>.+?)|what\s+changed\s+between\s+(?P<a3>.+?)\s+and\s+(?P<b3>.+?))"
                      r"\s*\??\s*$", re.IGNORECASE)
OVERVIEW_PROMPT = (
    "Below is the list of changes between two versions of an office document, as computed word for word. Write "
    "one short paragraph of plain prose, two or three sentences, saying what the main changes are. No list, no "
    "numbering, no line breaks. Use only what the list says; do not add changes, and do not repeat the list."
)
OVERVIEW_TOKENS = 120
LISTED_FOR_MODEL = 40  # changes the model's overview is written from, at most (the list shown has them all)


class Comparisons:
    """Compare documents and versions over the parts of a `Hearth`."""

    config: HearthConfig
    manifest: Manifest
    chat_model: ChatModel
    conversations: Any

    @property
    def versions(self) -> VersionStore:
        """The text kept of each indexed version of the documents (this machine's, beside the manifest)."""
        with self._lock:  # type: ignore[attr-defined]
            if getattr(self, "_versions", None) is None:
                self._open_data_dir()  # type: ignore[attr-defined]
                self._versions = VersionStore(self.config.index_dir / "versions")
            return self._versions

    def keep_unkept_versions(self, workspace: str) -> int:
        """Before an ingest: each document indexed before Hearth kept versions whose file has changed since (it is
        about to be read again) gets its text as the index holds it kept first, as its earlier version. Returns how
        many were kept; best effort (a failure only means no earlier version to compare with)."""
        keep = self.config.ingest.keep_versions
        if keep <= 0:
            return 0
        try:
            unkept = [r for r in self.manifest.documents(workspace, status="done")
                      if not self.versions.folder(workspace, r.source).is_dir() and _changed_on_disk(r)]
            if not unkept:
                return 0
            wanted = {r.source: r for r in unkept}
            rows: dict[str, list] = {}
            for row in self.store.keyword_rows(workspace):  # type: ignore[attr-defined]
                if row.source in wanted:
                    rows.setdefault(row.source, []).append(row)
            for source, found in rows.items():
                r = wanted[source]
                self.versions.record(workspace, source, r.sha256, sections_from_passages(found), keep=keep,
                                     note=r.note, now=r.updated)
            return len(rows)
        except (HearthError, OSError):
            log.warning("The text of documents indexed before versions were kept could not be kept", exc_info=True)
            return 0

    def compare(self, old: Path | str, new: Path | str | None = None, *, previous: bool = False,
                version: int | None = None, workspace: str = DEFAULT_WORKSPACE) -> Comparison:
        """The changes from `old` to `new` (two indexed documents), or with `previous`, from an earlier kept version
        of `old` (`version`, else the one before the version indexed now) to the version indexed now.

        UsageError for a document that is not indexed or a version that is not kept; CompareError when the two
        share no sections. A document read by OCR with low confidence is compared, with a warning."""
        workspace = check_workspace(workspace)
        if previous == (new is not None):
            raise UsageError("Give two documents to compare, or one with --previous.")
        if version is not None and not previous:
            raise UsageError("--version goes with --previous (a kept version of one document).")
        first = self._one_document(old, workspace)
        if previous:
            current, earlier = self.document_versions(first, workspace=workspace)
            chosen = _chosen_version(first, earlier, current, version)
            before, after = self.versions.load(chosen, first), self._current_text(first, workspace)
        else:
            second = self._one_document(new, workspace)  # type: ignore[arg-type]
            if second == first:
                raise UsageError(f"That is {Path(first).name} twice.",
                                 hint="To see what changed since its last version, use --previous.")
            before, after = self._current_text(first, workspace), self._current_text(second, workspace)
        result = compare(before.sections, after.sections, old_side=_side(before), new_side=_side(after))
        if result.shared < SHARED_MIN:
            raise CompareError(
                f"{Path(before.source).name} and {Path(after.source).name} share no sections: they look like two "
                "different documents, so a list of changes would only list everything.",
                hint="Compare two versions of the same document.")
        return result

    def document_versions(self, path: Path | str, *, workspace: str = DEFAULT_WORKSPACE
                          ) -> tuple[VersionInfo | None, list[VersionInfo]]:
        """An indexed document's version indexed now (None when its text was not kept) and its earlier kept ones,
        oldest first."""
        workspace = check_workspace(workspace)
        source = self._one_document(path, workspace)
        record = self.manifest.get(workspace, source)
        return self.versions.current(workspace, source, record.sha256 if record else "")

    def earlier_versions(self, *, workspace: str = DEFAULT_WORKSPACE) -> dict[str, int]:
        """How many earlier versions are kept of each document of a workspace that has any (for the library)."""
        workspace = check_workspace(workspace)
        current = {r.source: r.sha256 for r in self.manifest.documents(workspace, status="done")}
        return self.versions.sources_with_history(workspace, current)

    def _one_document(self, path: Path | str, workspace: str) -> str:
        """The indexed source a path names; UsageError when it names none, or a folder."""
        from rag.questions import _forms

        scoped = self.in_scope([path], workspace=workspace)  # type: ignore[attr-defined]
        chosen = [s for s in scoped if s in _forms(path)]
        if len(chosen) != 1:
            raise UsageError(f"{path} is a folder; compare takes documents.",
                             hint="Give the path of an indexed file (see `hearth sources`).")
        return chosen[0]

    def _current_text(self, source: str, workspace: str) -> Snapshot:
        """The text a document is indexed with now: its kept version, else (indexed before versions were kept,
        or keeping is off) the file as it reads now."""
        record = self.manifest.get(workspace, source)
        current, _ = self.versions.current(workspace, source, record.sha256 if record else "")
        if current is not None:
            return self.versions.load(current, source)
        from rag.page_boxes import read_sections

        sections = read_sections(Path(source), self.config.ingest)
        from rag.loaders import ocr_note

        return Snapshot(source, None, record.sha256 if record else "", record.updated if record else None,
                        sections, ocr_note(sections))

    # The chat: "what changed in X?", "compare X and Y".
    def comparison_asked(self, question: str, *, workspace: str = DEFAULT_WORKSPACE) -> Comparison | None:
        """The comparison a chat question asks for, computed; None when it asks for none, or names no document
        this can answer for (it is then searched as usual)."""
        from rag.questions import _document_named

        m = _BETWEEN.match(question)
        done = self._done_sources(workspace)  # type: ignore[attr-defined]
        if m is not None:
            a = next(g for g in (m.group("a"), m.group("a2"), m.group("a3")) if g)
            b = next(g for g in (m.group("b"), m.group("b2"), m.group("b3")) if g)
            first, second = _named(a, done) or _document_named(a, done), _named(b, done) or _document_named(b, done)
            if first is None or second is None or first == second:
                return None
            return self.compare(first, second, workspace=workspace)
        m = _CHANGED_IN.match(question)
        if m is None:
            return None
        source = _named(m.group("doc"), done) or _document_named(m.group("doc"), done)
        if source is None or len(set(_words(m.group("doc"))) - set(_words(Path(source).stem))) > 1:
            return None  # "what is different in the leave policy for part-time staff?" asks about its content
        if self.document_versions(source, workspace=workspace)[1]:
            return self.compare(source, previous=True, workspace=workspace)
        before = _predecessor(source, done)
        return self.compare(before, source, workspace=workspace) if before is not None else None

    def _comparison_answer(self, question: str, comparison: Comparison, conv: Any, *,
                           on_token: Callable[[str], None] | None, cancel: Callable[[], bool] | None) -> Answer:
        """A chat question answered from a comparison: a paragraph by the model over Hearth's own list."""
        from rag.answer import Answer

        t0 = time.perf_counter()
        shown: list[str] = []

        def show(piece: str) -> None:
            shown.append(piece)
            if on_token is not None:
                on_token(piece)

        overview = self._overview(comparison, show, cancel) if comparison.changes else ""
        listing = change_list(comparison)
        show(("\n\n" if overview else "") + listing)
        text = (overview + "\n\n" + listing) if overview else listing
        sources = comparison_sources(comparison)
        out = Answer(text, sources, list(range(1, len(sources) + 1)), {"total": time.perf_counter() - t0},
                     searched_for=f"changes from {Path(comparison.old.source).name} to "
                                  f"{Path(comparison.new.source).name}", comparison=comparison)
        if conv is not None:
            self.conversations.add_turn(conv.id, question, out)
            out = replace(out, conversation_id=conv.id)
        return out

    def _overview(self, comparison: Comparison, show: Callable[[str], None],
                  cancel: Callable[[], bool] | None) -> str:
        """At most one paragraph from the chat model over the computed changes (streamed to `show`)."""
        lines = [_plain(c) for c in comparison.changes[:LISTED_FOR_MODEL]]
        messages = [{"role": "system", "content": OVERVIEW_PROMPT},
                    {"role": "user", "content": comparison.summary + "\n\n" + "\n".join(lines)}]
        text = ""
        for piece in self.chat_model.stream(messages, max_tokens=OVERVIEW_TOKENS, temperature=0.0, cancel=cancel):
            if cancel is not None and cancel():
                raise Cancelled("Stopped.")
            end = (text + piece).lstrip().find("\n")
            if end >= 0:  # one paragraph at most: what follows its line is neither shown nor kept
                rest = (text + piece).lstrip()[:end]
                show(rest[len(text.lstrip()):])
                text = rest
                break
            show(piece if text.strip() else piece.lstrip())
            text = (text + piece).lstrip()
        return text.strip()


def change_list(comparison: Comparison) -> str:
    """The changes as a Markdown list, each citing the old and the new document with its page."""
    old, new = Path(comparison.old.source).name, Path(comparison.new.source).name
    if comparison.old.source == comparison.new.source:  # two versions of one document: cite them by version
        old, new = (f"version {s.version}" if s.version else f"{old} ({label})"
                    for s, label in ((comparison.old, "earlier"), (comparison.new, "now")))
    if not comparison.changes:
        return comparison.summary
    lines = [comparison.summary, ""]
    for c in comparison.changes:
        where = f"**{c.heading.split(' › ')[-1]}** — " if c.heading else ""
        cite = _cite(c, old, new)
        if c.kind == "changed":
            words = "".join(f"~~{t}~~ " if op == "-" else f"**{t}** " if op == "+" else f"{t} "
                            for op, t in word_changes(c.old_text or "", c.new_text or "")).strip()
            what = "renamed" if c.renamed else "changed"
            lines.append(f"- {where}{what}: {words} {cite}")
        else:
            text = c.new_text if c.kind in ("added", "moved") else c.old_text
            lines.append(f"- {where}{c.kind}: “{_clip(text or '')}” {cite}")
    return "\n".join(lines)


def comparison_sources(comparison: Comparison) -> list:
    """The two documents as the answer's sources (old first), each with the changes' places on its side."""
    from rag.store import Hit

    out = []
    for n, (side, label) in enumerate(((comparison.old, "old"), (comparison.new, "new")), 1):
        pages = sorted({p for c in comparison.changes if (p := c.old_page if label == "old" else c.new_page)})
        text = f"{label} version" + (f", changes on page {', '.join(map(str, pages))}" if pages else "")
        out.append(Hit(side.source, pages[0] if pages else None, None, 1.0, text, 0, 0, f"{side.source}#{label}"))
    return out


def _cite(c: Change, old: str, new: str) -> str:
    parts = []
    if c.old_text is not None:
        parts.append(f"old: {old}" + (f", p. {c.old_page}" if c.old_page else ""))
    if c.new_text is not None:
        parts.append(f"new: {new}" + (f", p. {c.new_page}" if c.new_page else ""))
    if c.kind == "removed":
        parts.append(f"not in {new}")
    if c.kind == "added":
        parts.append(f"not in {old}")
    return "[" + "; ".join(parts) + "]"


def _plain(c: Change) -> str:
    where = f" in {c.heading}" if c.heading else ""
    if c.kind == "changed":
        return f"- changed{where}: “{_clip(c.old_text or '')}” became “{_clip(c.new_text or '')}”"
    return f"- {c.kind}{where}: “{_clip((c.new_text if c.kind != 'removed' else c.old_text) or '')}”"


def _clip(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rsplit(" ", 1)[0] + "…"


def _changed_on_disk(record: DocumentRecord) -> bool:
    """Whether an indexed file's size or modification time differs from the manifest's (it will be read again)."""
    try:
        st = os.stat(record.source)
    except OSError:
        return False
    return (st.st_size, st.st_mtime_ns) != (record.size, record.mtime_ns)


def _side(snapshot: Snapshot) -> Side:
    return Side(snapshot.source, snapshot.version, snapshot.indexed_at, snapshot.note)


def _chosen_version(source: str, earlier: list[VersionInfo], current: VersionInfo | None,
                    version: int | None) -> VersionInfo:
    """The kept version asked for, or the one before the current; UsageError naming what is kept otherwise."""
    name = Path(source).name
    if not earlier:
        why = ("its text was not kept when it was indexed (keeping versions is off, or it was indexed before "
               "Hearth kept them)" if current is None else "it has been indexed in one version only")
        raise UsageError(f"{name} has no earlier version to compare with: {why}.",
                         hint="Earlier versions are kept from now on each time it is indexed again after a change.")
    if version is None:
        return earlier[-1]
    for info in earlier:
        if info.version == version:
            return info
    kept = ", ".join(str(v.version) for v in earlier)
    now = f"; version {current.version} is the one indexed now" if current is not None else ""
    raise UsageError(f"{name} has no earlier version {version}: the versions kept are {kept}{now}.")


def _named(text: str, sources: set[str]) -> str | None:
    """The one document whose file name's words all appear in the text, in any order ("the 2025 contract" names
    contract-2025.docx); the longest name wins; None if none or several."""
    wanted = set(_words(text))
    found = [s for s in sources if _words(Path(s).stem) and set(_words(Path(s).stem)) <= wanted]
    if not found:
        return None
    best = max(len(set(_words(Path(s).stem))) for s in found)
    found = [s for s in found if len(set(_words(Path(s).stem))) == best]
    return found[0] if len(found) == 1 else None


def _predecessor(source: str, sources: set[str]) -> str | None:
    """The document this one revises when no earlier version of it is kept: the one whose file name is the same
    but for its numbers (contract-2024.docx before contract-2025.docx, price-list-v6 before -v7), the latest
    before it."""
    def split(name: str) -> tuple[str, tuple[int, ...]]:
        words = _words(Path(name).stem)
        letters = " ".join(re.sub(r"\d+", "#", w) for w in words)
        return letters, tuple(int(n) for n in re.findall(r"\d+", Path(name).stem))

    base, numbers = split(source)
    if not numbers:
        return None
    older = [(split(s)[1], s) for s in sources if s != source and split(s)[0] == base and split(s)[1] < numbers]
    return max(older)[1] if older else None


def _words(text: str) -> list[str]:
    return [w for w in re.split(r"[^\w]+", text.lower()) if w and w not in _FILLER]


_FILLER = frozenset({"the", "a", "an", "of", "in", "to", "my", "our", "this", "that", "version", "document", "file"})
