"""Compare benchmark: on generated revisions of ~100-page documents with known changes, does `rag.compare`
find every change and nothing else, and how long does it take without the model?

    python -m bench.compare [--json] [--revisions 5] [--sections 80] [--seed 0]

Each revision is a generated policy document (numbered sections of sentences with figures, some with a table,
about 100 pages) and a copy with known edits, each in a section of its own: sentences changed (a figure or a
few words), added and removed; sections moved and renamed; table rows changed; and formatting-only edits that
must not be reported (doubled spaces, bold marks, a word's case, a line broken by hand); also two neighbouring
sentences changed, a sentence rewritten in other words, and a paragraph moved into another section. Two pairings:
  - same: both sides as a Word file reads (a section per heading, tables as rows);
  - cross: the old side as a Word file, the new one as its PDF reads (pages of wrapped lines, no headings, the
    table rows as plain lines) — the "DOCX against its PDF" case.

A change found counts as right when one known change has its kind and its text (the changed, added or removed
sentence; the moved section's heading; the renamed heading; the changed row). Reported per pairing:
precision (right / found), recall (known changes found / known), and seconds to compare two documents
(median of the revisions; reading excluded), and `from_store`: the seconds `hearth compare --previous` spends
once the index is open: both versions read back from the kept-version files (rag/versions.py), then compared. The baseline is difflib.SequenceMatcher over the same sentences,
read directly (replace = changed, delete = removed, insert = added; no moves): what a plain diff says. The
machine's load average is recorded before and after (bench/conditions.py).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from typing import Any

from bench.conditions import load_average, machine
from rag.compare import Change, _key, compare, units
from rag.loaders import CELL_SEPARATOR, HEADING_SEPARATOR, Section
from rag.versions import VersionStore

NOUNS = ["the employee", "the manager", "the client", "the supplier", "the office", "each team", "the partner",
         "the accountant", "the reception", "the tenant", "the contractor", "the auditor", "the trainee"]
VERBS = ["submits", "approves", "records", "reviews", "pays", "files", "signs", "checks", "archives", "reports"]
OBJECTS = ["the expense claim", "the invoice", "the timesheet", "the leave request", "the purchase order",
           "the incident report", "the travel booking", "the contract draft", "the access card", "the budget"]
TAILS = ["within {n} days", "before the {n}th of each month", "for amounts above EUR {m}", "at least {n} times a year",
         "no later than {n} working days after the event", "once the total exceeds EUR {m}", "by {n}:00 on Fridays"]
TOPICS = ["Scope", "Working hours", "Leave", "Travel", "Expenses", "Equipment", "Security", "Data protection",
          "Purchasing", "Invoices", "Training", "Health and safety", "Remote work", "Conduct", "Complaints", "Audit"]
WORDS_PER_PAGE = 400
LINE = 90  # characters per PDF line
LINES_PER_PAGE = 48


@dataclass
class Doc:
    """A generated document: sections of (heading, paragraphs of sentences, table rows or None)."""

    sections: list[tuple[str, list[list[str]], list[list[str]] | None]]


@dataclass
class Expected:
    kind: str
    old: str  # the key of the old text (empty for added)
    new: str  # the key of the new text (empty for removed)


@dataclass
class Tally:
    found: int = 0
    right: int = 0
    known: int = 0
    recalled: int = 0
    seconds: list[float] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"precision": round(self.right / self.found, 4) if self.found else 1.0,
                "recall": round(self.recalled / self.known, 4) if self.known else 1.0,
                "found": self.found, "known": self.known,
                "seconds_median": round(statistics.median(self.seconds), 3) if self.seconds else None,
                "seconds_max": round(max(self.seconds), 3) if self.seconds else None}


def sentence(rng: random.Random, serial: int) -> str:
    tail = rng.choice(TAILS).format(n=rng.randint(2, 28), m=rng.randint(2, 90) * 50)
    text = f"{rng.choice(NOUNS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)} {tail} (rule {serial})."
    return text[0].upper() + text[1:]


def generate(rng: random.Random, n_sections: int) -> Doc:
    """About 100 pages: `n_sections` sections of 3 paragraphs of sentences, one in six with a table."""
    serial = 0
    sections = []
    for s in range(n_sections):
        paragraphs = []
        for _ in range(3):
            paragraphs.append([sentence(rng, serial + k) for k in range(6)])
            serial += 6
        table = None
        if s % 6 == 3:
            table = [["Item", "Limit", "Approver"]] + [
                [f"Item {s}-{r}", f"EUR {rng.randint(1, 60) * 25}", rng.choice(["manager", "partner", "finance"])]
                for r in range(8)]
        sections.append((f"{s + 1}. {rng.choice(TOPICS)} {s + 1}", paragraphs, table))
    return Doc(sections)


def revise(doc: Doc, rng: random.Random) -> tuple[Doc, list[Expected]]:
    """A copy with known edits, each in its own section, and the list of them (formatting edits not listed)."""
    sections = [(h, [list(p) for p in ps], [list(r) for r in t] if t else None) for h, ps, t in doc.sections]
    order = list(range(len(sections)))
    rng.shuffle(order)
    with_table = [i for i in order if sections[i][2]]
    plain = [i for i in order if not sections[i][2]]
    expected: list[Expected] = []
    for i in plain[0:8]:  # changed sentences: a figure or some words
        p, k = rng.randrange(3), rng.randrange(6)
        old = sections[i][1][p][k]
        new = old.replace("EUR ", "EUR 1") if "EUR" in old and rng.random() < 0.5 else old.replace(
            " the ", " every ", 1) if " the " in old else old.replace("(rule", "(revised rule")
        sections[i][1][p][k] = new
        expected.append(Expected("changed", _key(old), _key(new)))
    for n, i in enumerate(plain[8:12]):  # added sentences
        new = f"A new requirement number {9000 + n} applies to every request filed after the first of June."
        sections[i][1][1].insert(2, new)
        expected.append(Expected("added", "", _key(new)))
    for i in plain[12:16]:  # removed sentences
        old = sections[i][1][2].pop(3)
        expected.append(Expected("removed", _key(old), ""))
    for i in plain[16:18]:  # renamed sections
        old = sections[i][0]
        sections[i] = (old.split(". ")[0] + ". Revised " + old.split(". ")[1].lower(), *sections[i][1:])
        expected.append(Expected("changed", _key(old), _key(sections[i][0])))
    for i in with_table[0:3]:  # changed table rows
        r = rng.randrange(1, len(sections[i][2]))
        old = CELL_SEPARATOR.join(sections[i][2][r])
        sections[i][2][r][1] = f"EUR {int(sections[i][2][r][1].split()[1]) + 5}"
        expected.append(Expected("changed", _key(old), _key(CELL_SEPARATOR.join(sections[i][2][r]))))
    for i in plain[18:28]:  # formatting only: none of these is a change
        p, k = rng.randrange(3), rng.randrange(6)
        text = sections[i][1][p][k]
        edit = rng.randrange(4)
        sections[i][1][p][k] = (text.replace(" ", "  ", 3) if edit == 0 else text.replace(" the ", " **the** ", 1)
                                if edit == 1 else text.upper() if edit == 2 else text.replace(" ", "\n", 1)[:1] + text[1:])
    for i in plain[30:32]:  # two neighbouring sentences changed
        k = rng.randrange(5)
        for kk in (k, k + 1):
            old = sections[i][1][0][kk]
            sections[i][1][0][kk] = new = old.replace("(rule", "(amended rule")
            expected.append(Expected("changed", _key(old), _key(new)))
    for n, i in enumerate(plain[32:34]):  # a sentence rewritten in other words
        old = sections[i][1][1][4]
        sections[i][1][1][4] = new = f"Requests of kind {n + 70} now go to the finance desk by email only."
        expected.append(Expected("changed", _key(old), _key(new)))
    for i, j in (plain[34:36], plain[36:38]):  # a paragraph moved into another section
        paragraph = sections[i][1].pop(1)
        sections[j][1].insert(2, paragraph)
        expected.append(Expected("moved", _key(" ".join(paragraph)), _key(" ".join(paragraph))))
    moved = []
    for i in plain[28:30]:  # moved sections, whole and unedited
        heading = sections[i][0]
        moved.append(heading)
        expected.append(Expected("moved", _key(heading), _key(heading)))
    for heading in moved:
        at = next(n for n, s in enumerate(sections) if s[0] == heading)
        section = sections.pop(at)
        sections.insert((at + len(sections) // 2) % len(sections), section)
    return Doc(sections), expected


def as_word(doc: Doc, title: str = "Office policy") -> list[Section]:
    """The document as the Word reader gives it: a section per heading, headings first, tables as rows."""
    out, offset = [], 0
    for heading, paragraphs, table in doc.sections:
        text = heading + "\n" + "\n\n".join(" ".join(p) for p in paragraphs)
        tables = ()
        if table:
            start = len(text) + 2
            text += "\n\n" + "\n".join(CELL_SEPARATOR.join(r) for r in table)
            tables = ((start, len(text)),)
        out.append(Section(text, None, f"{title}{HEADING_SEPARATOR}{heading}", offset, tables))
        offset += len(text) + 2
    return out


def as_pdf(doc: Doc) -> list[Section]:
    """The document as a PDF reader gives it: pages of lines wrapped at LINE characters, no headings, no tables."""
    lines: list[str] = []
    for heading, paragraphs, table in doc.sections:
        lines.append(heading)
        for paragraph in paragraphs:
            lines.extend(_wrap(" ".join(paragraph)))
        for row in table or ():
            lines.append("   ".join(row))
    pages, offset = [], 0
    for n in range(0, len(lines), LINES_PER_PAGE):
        text = "\n".join(lines[n:n + LINES_PER_PAGE])
        pages.append(Section(text, n // LINES_PER_PAGE + 1, None, offset))
        offset += len(text) + 2
    return pages


def _wrap(text: str) -> list[str]:
    out, line = [], ""
    for word in text.split(" "):
        if line and len(line) + 1 + len(word) > LINE:
            out.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    return [*out, line] if line else out


def baseline(old: list[Section], new: list[Section]) -> list[Change]:
    """A plain diff of the same sentences: difflib's opcodes read directly, no moves, no pairing by likeness."""
    a, b = units(old), units(new)
    out = []
    for op, i1, i2, j1, j2 in SequenceMatcher(None, [u.key for u in a], [u.key for u in b]).get_opcodes():
        if op == "replace":
            for n in range(max(i2 - i1, j2 - j1)):
                x, y = (a[i1 + n] if i1 + n < i2 else None), (b[j1 + n] if j1 + n < j2 else None)
                kind = "changed" if x and y else "removed" if x else "added"
                out.append(Change(kind, None, x.text if x else None, y.text if y else None, None, None))
        elif op != "equal":
            for u in (a[i1:i2] if op == "delete" else b[j1:j2]):
                kind = "removed" if op == "delete" else "added"
                out.append(Change(kind, None, u.text if kind == "removed" else None,
                                  u.text if kind == "added" else None, None, None))
    return out


def score(found: list[Change], expected: list[Expected], tally: Tally) -> None:
    """Count the changes found that match a known one (kind and text), and the known ones found."""
    tally.found += len(found)
    tally.known += len(expected)
    hit: set[int] = set()
    for change in found:
        old, new = _key(change.old_text or ""), _key(change.new_text or "")
        for n, e in enumerate(expected):
            if n not in hit and change.kind == e.kind and (not e.old or e.old in old) and (not e.new or e.new in new):
                hit.add(n)
                tally.right += 1
                break
    tally.recalled += len(hit)


def _from_store(old: list[Section], new: list[Section]) -> float:
    """Seconds to read two kept versions back and compare them, as `Hearth.compare(previous=True)` does."""
    with tempfile.TemporaryDirectory() as folder:
        store = VersionStore(Path(folder))
        store.record("bench", "/doc.docx", "a" * 64, old, keep=5, now=1.0)
        store.record("bench", "/doc.docx", "b" * 64, new, keep=5, now=2.0)
        t0 = time.perf_counter()
        current, earlier = store.current("bench", "/doc.docx", "b" * 64)
        before, after = store.load(earlier[-1], "/doc.docx"), store.load(current, "/doc.docx")  # type: ignore[arg-type]
        compare(before.sections, after.sections)
        return time.perf_counter() - t0


def run(revisions: int, n_sections: int, seed: int) -> dict[str, Any]:
    """Every pairing over `revisions` generated documents; the summary."""
    load_before = load_average()
    results: dict[str, Tally] = {}
    pages: list[float] = []
    stored: list[float] = []
    for r in range(revisions):
        rng = random.Random(seed + r)
        old = generate(rng, n_sections)
        new, expected = revise(old, rng)
        pages.append(sum(len(" ".join(" ".join(p) for p in ps).split()) for _, ps, _ in old.sections) / WORDS_PER_PAGE)
        for pairing, (a, b) in {"same": (as_word(old), as_word(new)), "cross": (as_word(old), as_pdf(new))}.items():
            for method, fn in (("hearth", lambda a, b: compare(a, b).changes), ("baseline", baseline)):
                tally = results.setdefault(f"{pairing}/{method}", Tally())
                t0 = time.perf_counter()
                found = fn(a, b)
                tally.seconds.append(time.perf_counter() - t0)
                score(found, expected, tally)
        stored.append(_from_store(as_word(old), as_word(new)))
        print(f"revision {r + 1}/{revisions} done", file=sys.stderr)
    return {"revisions": revisions, "pages_per_document": round(statistics.mean(pages), 1),
            "known_changes_per_revision": len(expected),
            "results": {k: v.to_json() for k, v in results.items()},
            "from_store_seconds_median": round(statistics.median(stored), 3),
            "machine": machine(), "load_before": load_before, "load_after": load_average()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.compare", description=__doc__.split("\n\n")[0])
    parser.add_argument("--revisions", type=int, default=5)
    parser.add_argument("--sections", type=int, default=170, help="sections per document (170: about 100 pages)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if args.sections < 45:
        parser.error("--sections must be at least 45 (the known edits each take a section of their own)")
    summary = run(args.revisions, args.sections, args.seed)
    if args.json:
        print(json.dumps(summary, indent=2))
        return 0
    print(f"{summary['revisions']} revisions of ~{summary['pages_per_document']} pages, "
          f"{summary['known_changes_per_revision']} known changes each; load average "
          f"{summary['load_before']} before, {summary['load_after']} after; read from the kept versions and "
          f"compared: {summary['from_store_seconds_median']} s (median)")
    print(f"{'pairing/method':<18} {'precision':>9} {'recall':>7} {'found':>6} {'known':>6} {'s median':>9} {'s max':>7}")
    for name, r in summary["results"].items():
        print(f"{name:<18} {r['precision']:>9.3f} {r['recall']:>7.3f} {r['found']:>6} {r['known']:>6} "
              f"{r['seconds_median']:>9.3f} {r['seconds_max']:>7.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
