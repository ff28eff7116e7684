"""How many tokens each chunking makes the embedder read, on the retrieval corpus, without embedding anything.

    python -m bench.chunking [--configs 200:40,200:0,240:0] [--eval] [--json]

Reads every document of bench.corpus (the English corpus, or with --eval the evaluation's, with the Debian
FAQ) through Hearth's loaders once, then chunks them as `hearth ingest` would for each CHUNK:OVERLAP and
counts what the default embedder reads: passages, and tokens of the text embedded for each (a continuation's
heading path before it, as Hearth embeds it), as it tokenises them (special tokens included, truncated at its
limit). Embedding time follows the tokens, so this sizes a chunking's saving in seconds;
whether it keeps retrieval is `python -m bench.retrieval --chunk-tokens N --overlap N` (docs/evaluation.md).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from bench import corpus


def measure(configs: list[tuple[int, int]], which: corpus.Corpus) -> list[dict[str, Any]]:
    """Passages and embedder tokens of the corpus under each (chunk_tokens, overlap_tokens)."""
    from app.config import default_cache_dir
    from inference.embedder import OnnxEmbedder
    from inference.models import default_embedder_dir
    from rag.chunking import chunk_sections, embedding_text
    from rag.loaders import load

    embedder = OnnxEmbedder(default_embedder_dir(default_cache_dir()))
    sections = [load(path) for path in corpus.documents(which=which)]
    rows = []
    for size, overlap in configs:
        texts = [embedding_text(c) for secs in sections
                 for c in chunk_sections(secs, count_tokens=embedder.count_tokens, overlap_tokens=overlap,
                                         max_tokens=min(size, embedder.max_tokens - 16))]
        tokens = sum(len(e.ids) for e in embedder._tokenizer.encode_batch(texts))
        rows.append({"chunk_tokens": size, "overlap_tokens": overlap, "passages": len(texts),
                     "distinct_passages": len(set(texts)), "tokens": tokens})
    base = rows[0]["tokens"] if rows else 0
    for row in rows:
        row["tokens_vs_first"] = round(row["tokens"] / base, 3) if base else None
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.chunking", description=__doc__.split("\n")[0])
    p.add_argument("--configs", default="200:40,200:0,240:0", help="CHUNK:OVERLAP,... (the first is the baseline)")
    p.add_argument("--eval", action="store_true", help="the evaluation's corpus (with the Debian FAQ)")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    try:
        configs = [(int(a), int(b)) for a, b in (c.split(":") for c in args.configs.split(","))]
    except ValueError:
        p.error("--configs takes CHUNK:OVERLAP pairs, comma-separated (200:40,200:0)")
    rows = measure(configs, corpus.EVAL if args.eval else corpus.ENGLISH)
    if args.json:
        print(json.dumps(rows))
    else:
        print(f"{'chunk:overlap':>14}{'passages':>10}{'distinct':>10}{'tokens':>10}{'× first':>9}")
        for r in rows:
            print(f"{r['chunk_tokens']:>9}:{r['overlap_tokens']:<4}{r['passages']:>10}{r['distinct_passages']:>10}"
                  f"{r['tokens']:>10}{r['tokens_vs_first']:>9}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
