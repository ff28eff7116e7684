"""The kill -9 test's subject: ingest a folder with the fast HashEmbedder, saying what the index holds.

    python -m tests.crash_driver DATA_DIR FOLDER [--state-only]

prints, one per line: "state {json}" (the index as found), "ready", "p" after every progress report,
"report {json}", and "state {json}" again at the end. State is {source: {status, sha256, chunks,
stored: {version: chunks in Chroma}, lexical: chunks in the keyword index}}.
"""

from __future__ import annotations

import json
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from rag.ingest import IngestOptions
from rag.service import Hearth, HearthConfig
from tests.fakes import HashEmbedder

WORKSPACE = "default"


def state(h: Hearth) -> dict[str, Any]:
    """What the manifest, the vector store and the keyword index each hold, per document."""
    store = h.store
    records = {d.source: d for d in h.manifest.documents(WORKSPACE)}
    got = store.vectors._collection(WORKSPACE).get(include=["metadatas"])  # type: ignore[attr-defined]
    stored: dict[str, Counter[str]] = defaultdict(Counter)
    for meta in got["metadatas"]:
        stored[meta["source"]][meta["version"]] += 1
    lexical = Counter(row.source for row in store.lexical.all_rows(WORKSPACE))  # type: ignore[attr-defined]
    out = {}
    for source in set(records) | set(stored) | set(lexical):
        r = records.get(source)
        out[source] = {
            "status": r.status if r else None,
            "sha256": r.sha256 if r else None,
            "chunks": r.chunks if r else None,
            "stored": dict(stored.get(source, {})),
            "lexical": lexical.get(source, 0),
        }
    return out


def main(data: Path, folder: Path, state_only: bool) -> None:
    # Small chunks and batches: many store writes per file, so kills land inside them too.
    options = IngestOptions(chunk_tokens=24, overlap_tokens=4, embed_batch=4, workers=1)
    h = Hearth(HearthConfig(data_dir=data, ingest=options), embedder=HashEmbedder())
    print("state " + json.dumps(state(h)), flush=True)
    if state_only:
        return
    print("ready", flush=True)
    report = h.ingest([folder], workspace=WORKSPACE, progress=lambda p: print("p", flush=True))
    print("report " + json.dumps(report.to_json()), flush=True)
    print("state " + json.dumps(state(h)), flush=True)


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]), "--state-only" in sys.argv[3:])
