"""Memory bounds, quick version of `python -m bench.memory` (the long run is `make soak`).

One subprocess (its memory is its own, not the test runner's) indexes 600 generated documents in
batches of 100 into the real index (Chroma and the keyword index; a hashing stand-in for the embedding
model keeps it to a minute), then holds a 20-question stored conversation with a real small chat model
through llama.cpp (SmolLM2-135M, answers cut to 8 tokens, a 768-token context so that from about the
tenth question on the oldest turns are dropped every time). Threads are set to one: on a busy 2-core
machine two llama.cpp threads answered 4 times slower. Samples are taken after `malloc_trim`, so what
they show is memory in use: a leak survives it, memory the allocator keeps after it was freed does not
(without it, glibc's per-thread arenas held about 25 MiB more after 1,000 documents).

Bounds, from repeated runs on a 2-core machine (figures in the comments below): each is several times the
largest growth measured, and far below what keeping one batch's or one answer's data would add.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[1]
SMALL_MODEL = "smollm2-135m-instruct-q4_1"


@pytest.fixture(scope="module")
def result() -> dict:
    r = subprocess.run(
        [sys.executable, "-m", "bench.memory", "--docs", "600", "--batch", "100", "--embedder", "hash",
         "--turns", "20", "--every", "5", "--chat-docs", "20", "--model", SMALL_MODEL, "--ctx", "768",
         "--threads", "1", "--trim", "--json"],
        cwd=ROOT, capture_output=True, text=True, timeout=900,
    )
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    i, c = out["ingest"], out["chat"]
    print(f"\ningest: {i['first_rss_mib']:.1f} -> {i['last_rss_mib']:.1f} MiB, second-half slope "
          f"{i['second_half_slope_mib']:+.1f} MiB/1000 docs, retained {i['retained_mib']:+.1f} MiB; chat: "
          f"{c['first_rss_mib']:.1f} -> {c['last_rss_mib']:.1f} MiB, "
          f"second half {c['second_half_growth_mib']:+.1f} MiB")
    return out


def test_ingest_memory_stays_flat(result):
    ingest = result["ingest"]
    assert [s["done"] for s in ingest["samples"]] == [0, 100, 200, 300, 400, 500, 600]
    # Measured in three runs: +12.5 to +14.7 MiB per 1,000 documents over the second half (the index grows:
    # Chroma keeps its vectors and graph in memory). Keeping each batch's parsed text, chunks and
    # vectors would add far more.
    assert ingest["second_half_slope_mib"] < 50
    # Measured in three runs: the long-running process holds 4.8 to 7.5 MiB more than a new process
    # that opens the same index and indexes one batch.
    assert ingest["retained_mib"] < 40


def test_long_chat_memory_stays_flat(result):
    chat = result["chat"]
    assert chat["stored_turns"] == 20 and chat["answers_with_sources"] == 20
    assert chat["turns_dropped_max"] > 0  # the second half ran with a full context, dropping old turns
    # Measured in three runs of 30 turns: +1.2 to +1.4 MiB over turns 15–30 (and +1.1 MiB over turns 50–100
    # of a 100-turn run with the default model: it does not keep rising); in a 20-turn run, +0.45 MiB over
    # turns 10–20. Keeping half a MiB per answer (a prompt's tokens and logits, a llama.cpp batch) would add
    # 5 MiB over 10 turns.
    assert chat["second_half_growth_mib"] < 4
    assert chat["max_rss_mib"] - chat["first_rss_mib"] < 40
