"""The kill -9 tests' subject: a real ingest subprocess (real ChromaDB), and the checks of what it leaves.

    python -m tests.crash_driver DATA_DIR FOLDER [--state-only] [--ids] [--trace] [--embedder hash|real]
                                 [--cache DIR] [--chunk-tokens N] [--workers N] [--die-after POINT[:N]]

prints, one per line: "state {json}" (the index as found), "ready", "p" after every progress report,
"report {json}", and "state {json}" again at the end. State is {source: {status, sha256, chunks,
stored: {version: chunks in Chroma}, lexical: chunks in the keyword index}}; with --ids also the
chunk ids each index holds ("ids": Chroma's, "lexical_ids": the keyword index's), sorted.

--trace prints "w+ NAME" before and "w- NAME" after every manifest and store write (NAME: begin,
finish, remove, replace, delete, and for many small files written together begin-batch, lexical-add,
vectors-add, finish-batch), so whoever kills the process can tell where the kill landed: the last line
it wrote is the last thing it did. --die-after POINT[:N] kills the process itself (SIGKILL) right after
the Nth (default first) return of POINT: a traced name, or one of the halves of a store write
(lexical-replace, vectors-replace, lexical-delete, vectors-delete). --write-batch N sets how many
passages are written together (0: each file on its own).

--embedder hash (default) is tests/fakes.py's fast deterministic HashEmbedder; real is the default
ONNX embedder, converted once into --cache (default DATA_DIR/cache) and shared by every run.

The parent side is here too: `Driver` runs one process and reads it, `problems` checks a state.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
WORKSPACE = "default"
TRACED = ("begin", "finish", "remove", "replace", "delete", "begin-batch", "lexical-add", "vectors-add", "finish-batch")
BEGIN, FINISH = ("begin", "begin-batch"), ("finish", "finish-batch")  # a document's write starts and ends


# The subprocess.
_OUT = threading.Lock()  # the writer thread traces its writes while the ingesting thread reports progress


def _say(line: str) -> None:
    """One whole line on stdout: lines from two threads never run into each other."""
    with _OUT:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def state(h: Any, *, ids: bool = False) -> dict[str, Any]:
    """What the manifest, the vector store and the keyword index each hold, per document."""
    store = h.store
    records = {d.source: d for d in h.manifest.documents(WORKSPACE)}
    got = store.vectors._collection(WORKSPACE).get(include=["metadatas"])
    stored: dict[str, Counter[str]] = defaultdict(Counter)
    chroma_ids: dict[str, list[str]] = defaultdict(list)
    for cid, meta in zip(got["ids"], got["metadatas"], strict=True):
        stored[meta["source"]][meta["version"]] += 1
        chroma_ids[meta["source"]].append(cid)
    lexical_ids: dict[str, list[str]] = defaultdict(list)
    for row in store.lexical.all_rows(WORKSPACE):
        lexical_ids[row.source].append(row.chunk_id)
    out = {}
    for source in set(records) | set(stored) | set(lexical_ids):
        r = records.get(source)
        out[source] = {
            "status": r.status if r else None,
            "sha256": r.sha256 if r else None,
            "chunks": r.chunks if r else None,
            "stored": dict(stored.get(source, {})),
            "lexical": len(lexical_ids.get(source, ())),
        }
        if ids:
            out[source]["ids"] = sorted(chroma_ids.get(source, ()))
            out[source]["lexical_ids"] = sorted(lexical_ids.get(source, ()))
    return out


def _embedder(kind: str, cache: Path) -> Any:
    if kind == "hash":
        from tests.fakes import HashEmbedder

        return HashEmbedder()
    from inference.embedder import OnnxEmbedder
    from inference.models import default_embedder_dir

    return OnnxEmbedder(default_embedder_dir(cache), threads=1)


def _instrument(h: Any, *, trace: bool, die_after: str | None) -> None:
    """Wrap the service's manifest and store writes: trace lines, and the self-kill of --die-after."""
    store, manifest = h.store, h.manifest
    targets = {
        "begin": (manifest, "begin"), "finish": (manifest, "finish"), "remove": (manifest, "remove"),
        "replace": (store, "replace_document"), "delete": (store, "delete_document"),
        "lexical-replace": (store.lexical, "replace_document"), "lexical-delete": (store.lexical, "delete_document"),
        "vectors-replace": (store.vectors, "replace_document"), "vectors-delete": (store.vectors, "delete_document"),
        "begin-batch": (manifest, "begin_many"), "finish-batch": (manifest, "finish_many"),
        "lexical-add": (store.lexical, "add_rows"), "vectors-add": (store.vectors, "add_rows"),
    }  # fmt: skip
    point, _, nth = (die_after or "").partition(":")
    if point and point not in targets:
        raise SystemExit(f"--die-after: no point {point!r}; known: {', '.join(targets)}")
    left = [int(nth or 1)]

    def wrap(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def traced(*args: Any, **kwargs: Any) -> Any:
            if trace and name in TRACED:
                _say(f"w+ {name}")
            result = fn(*args, **kwargs)
            if trace and name in TRACED:
                _say(f"w- {name}")
            if name == point:
                left[0] -= 1
                if left[0] == 0:
                    _say(f"die {name}")
                    os.kill(os.getpid(), signal.SIGKILL)
            return result

        return traced

    for name, (obj, attr) in targets.items():
        if (trace and name in TRACED) or name == point:
            setattr(obj, attr, wrap(name, getattr(obj, attr)))


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m tests.crash_driver")
    p.add_argument("data", type=Path)
    p.add_argument("folder", type=Path)
    p.add_argument("--state-only", action="store_true", help="print the state as found and stop")
    p.add_argument("--ids", action="store_true", help="list the chunk ids each index holds, per document")
    p.add_argument("--trace", action="store_true", help="print w+/w- around every manifest and store write")
    p.add_argument("--die-after", default=None, metavar="POINT[:N]")
    p.add_argument("--embedder", choices=("hash", "real"), default="hash")
    p.add_argument("--cache", type=Path, default=None, help="where the real embedder is converted to")
    p.add_argument("--chunk-tokens", type=int, default=24)
    p.add_argument("--workers", type=int, default=1, help="reader processes (0: read in this process)")
    p.add_argument("--write-batch", type=int, default=16, help="passages written together (0: each file alone)")
    args = p.parse_args(argv)

    from rag.ingest import IngestOptions
    from rag.service import Hearth, HearthConfig

    # Small chunks and batches: many store writes per file, and many batch writes per run (when there are
    # enough files for the pipeline), so kills land inside them too.
    options = IngestOptions(chunk_tokens=args.chunk_tokens, overlap_tokens=4, embed_batch=4, workers=args.workers,
                            write_batch=args.write_batch)
    embedder = _embedder(args.embedder, args.cache or args.data / "cache")
    h = Hearth(HearthConfig(data_dir=args.data, ingest=options), embedder=embedder)
    # A kill can leave ChromaDB's own files unreadable (chroma-core/chroma #7678): Hearth rebuilds them.
    repaired = h.check_index(WORKSPACE)
    if repaired is not None:
        print(f"repaired the vector index: {repaired.chunks} chunks", file=sys.stderr, flush=True)
    _say("state " + json.dumps(state(h, ids=args.ids)))
    if args.state_only:
        return
    _instrument(h, trace=args.trace, die_after=args.die_after)
    _say("ready")
    report = h.ingest([args.folder], workspace=WORKSPACE, progress=lambda _p: _say("p"))
    _say("report " + json.dumps(report.to_json()))
    _say("state " + json.dumps(state(h, ids=args.ids)))


# The parent side.
def expected_ids(source: str, sha256: str, chunks: int) -> list[str]:
    """The chunk ids a finished document must have in both indexes: its version's, numbered 0..chunks-1."""
    from rag.store import chunk_ids

    return sorted(chunk_ids(source, sha256, [SimpleNamespace(index=i) for i in range(chunks)]))  # type: ignore[misc]


def problems(state: dict[str, dict[str, Any]]) -> list[str]:
    """What breaks the promise of a kill at any moment (empty when none): a document marked done is
    complete, of one version, without duplicates, and the same in the manifest, Chroma and the keyword
    index; one being indexed is hidden (any leftovers are redone); no index holds chunks of a document
    the manifest does not list."""
    found = []
    for source, s in sorted(state.items()):
        name = Path(source).name
        if s["status"] == "done":
            if not s["chunks"]:
                found.append(f"{name}: done with no chunks")
            if s["stored"] != {s["sha256"]: s["chunks"]}:
                found.append(f"{name}: done with {s['chunks']} chunks of {s['sha256'][:8]}, Chroma has {s['stored']}")
            if s["lexical"] != s["chunks"]:
                found.append(f"{name}: done with {s['chunks']} chunks, keyword index has {s['lexical']}")
            if "ids" in s:
                want = expected_ids(source, s["sha256"], s["chunks"])
                if s["ids"] != want:
                    found.append(f"{name}: Chroma's chunk ids differ from the manifest's")
                if s["lexical_ids"] != want:
                    found.append(f"{name}: the keyword index's chunk ids differ from the manifest's")
        elif s["status"] != "indexing" and (s["stored"] or s["lexical"]):
            found.append(f"{name}: orphaned chunks (not in the manifest): Chroma {s['stored']}, keyword {s['lexical']}")
    return found


def differences(state: dict[str, dict[str, Any]], fresh: dict[str, dict[str, Any]]) -> list[str]:
    """How a state differs from a fresh ingest of the same files into a clean folder (empty when it does not):
    the same documents, each with the same version, chunk count and chunk ids."""
    found = []
    for source in sorted(set(state) | set(fresh)):
        a, b = state.get(source), fresh.get(source)
        name = Path(source).name
        if a is None or b is None:
            found.append(f"{name}: only in the {'fresh' if a is None else 'killed'} index")
            continue
        for key in ("status", "sha256", "chunks", "stored", "lexical", "ids", "lexical_ids"):
            if key in a and key in b and a[key] != b[key]:
                found.append(f"{name}: {key} differs from a fresh ingest")
    return found


@dataclass
class Ending:
    """How a killed run ended: whether the kill came first, and where the process was when it died."""

    killed: bool
    in_write: str | None  # the manifest/store write it was inside (only with --trace)
    in_document: bool  # between a document's `begin` and its `finish` (only with --trace)
    progress: int  # progress reports it made


class Driver:
    """One driver process; its output is read as it comes (a full pipe would stall it at a false moment)."""

    def __init__(self, data: Path, docs: Path, *args: str, timeout: float = 300) -> None:
        self.timeout = timeout
        self.lines: list[str] = []  # its output after "ready"
        self.err = ""
        self.p = subprocess.Popen(
            [sys.executable, "-m", "tests.crash_driver", str(data), str(docs), *args],
            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        self._err: list[str] = []
        self._readers = [threading.Thread(target=lambda: self._err.append(self.p.stderr.read()), daemon=True)]
        self._readers[0].start()
        self._more = threading.Condition()
        self._eof = False
        first = self.p.stdout.readline()  # type: ignore[union-attr]
        if not first.startswith("state "):
            self._rest()
            raise AssertionError(f"the driver did not start: {first}{self.err}")
        self.found: dict[str, dict[str, Any]] = json.loads(first[6:])  # the index as the last run left it
        if "--state-only" in args:
            self._rest()
            return
        ready = self.p.stdout.readline().strip()  # type: ignore[union-attr]
        if ready != "ready":
            self._rest()
            raise AssertionError(f"the driver did not get ready: {ready}{self.err}")
        self._readers.append(threading.Thread(target=self._read, daemon=True))
        self._readers[1].start()

    def _read(self) -> None:
        for line in self.p.stdout:  # type: ignore[union-attr]
            with self._more:
                self.lines.append(line.rstrip("\n"))
                self._more.notify_all()
        with self._more:
            self._eof = True
            self._more.notify_all()

    def _rest(self) -> None:
        """Wait for its end (killing it if it takes longer than the timeout) and for all of its output."""
        try:
            self.p.wait(timeout=self.timeout)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
        if len(self._readers) == 1:  # never got going: read what it said here
            self.lines += self.p.stdout.read().splitlines()  # type: ignore[union-attr]
        for thread in self._readers:
            thread.join(timeout=60)
        self.err = "".join(self._err)

    def kill_after_events(self, events: int, delay: float) -> Ending:
        """Kill -9 after `events` progress reports and `delay` seconds more (unless it ended first)."""
        with self._more:
            self._more.wait_for(lambda: self._eof or self.lines.count("p") >= events, timeout=self.timeout)
        time.sleep(delay)
        return self._kill()

    def kill_after(self, seconds: float) -> Ending:
        """Kill -9 `seconds` after it said ready (unless it ended first)."""
        try:
            self.p.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            pass
        return self._kill()

    def _kill(self) -> Ending:
        killed = self.p.poll() is None
        if killed:
            os.kill(self.p.pid, signal.SIGKILL)
        self._rest()
        if killed and self.p.returncode == 0:
            killed = False  # it ended in the instant between the check and the signal: it finished first
        if not killed:
            assert self.p.returncode == 0, self.err
        elif self.p.returncode != -signal.SIGKILL:  # it died of something else just before
            raise AssertionError(f"the driver exited with {self.p.returncode}: {self.err}")
        return self.ending(killed)

    def ending(self, killed: bool) -> Ending:
        """Where the process was when it stopped, from its last trace lines."""
        in_write, in_document = None, False
        for line in self.lines:
            if line.startswith("w+ "):
                in_write = line[3:]
                in_document = in_document or in_write in BEGIN
            elif line.startswith("w- "):
                in_write = None
                if line[3:] in FINISH:
                    in_document = False
        return Ending(killed, in_write if killed else None, in_document and killed, self.lines.count("p"))

    def finish(self) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
        """Let it run to the end: (report, final state)."""
        self._rest()
        assert self.p.returncode == 0, self.err
        reports = [x for x in self.lines if x.startswith("report ")]
        assert reports, f"no report: {self.lines[-5:]} {self.err[-2000:]}"
        report = json.loads(reports[0][7:])
        return report, json.loads(next(x for x in reversed(self.lines) if x.startswith("state "))[6:])

    def died(self) -> bool:
        """Wait for a --die-after run: whether it killed itself (False: it ended first, the point never came)."""
        self._rest()
        if self.p.returncode == 0:
            return False
        assert self.p.returncode == -signal.SIGKILL, self.err
        assert any(x.startswith("die ") for x in self.lines), self.lines[-5:]
        return True


if __name__ == "__main__":
    main()
