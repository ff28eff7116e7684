"""Cross-encoder reranking with ONNX Runtime: scores (question, passage) pairs jointly.

No cross-encoder ships in a PyPI package, so none is bundled: a user (or an admin) can point Hearth at
a folder holding an exported cross-encoder (`model.onnx` taking input_ids/attention_mask[/token_type_ids]
and giving one relevance logit per pair, plus its `tokenizer.json`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
from tokenizers import Tokenizer

from inference.embedder import _open_session
from inference.errors import EmbedderError, ModelError


class OnnxCrossEncoder:
    """Relevance scores for (query, passage) pairs from a cross-encoder ONNX model folder."""

    def __init__(self, model_dir: Path, *, threads: int | None = None, max_tokens: int = 512, batch_size: int = 16):
        model, tok = model_dir / "model.onnx", model_dir / "tokenizer.json"
        for f in (model, tok):
            if not f.is_file():
                raise ModelError(f"The reranker folder {model_dir} has no {f.name}.")
        try:
            self._tok = Tokenizer.from_file(str(tok))
        except Exception as exc:  # tokenizers raises a bare Exception for a bad file
            raise ModelError(f"The reranker's tokenizer {tok} cannot be read: {exc}") from exc
        self._tok.no_padding()
        self._tok.enable_truncation(max_length=max_tokens)
        self._session, self.provider, self.provider_note = _open_session(model, None, threads)
        self._inputs = {i.name for i in self._session.get_inputs()}
        self.name = model_dir.name
        self.batch_size = batch_size

    def score(self, query: str, passages: Sequence[str]) -> np.ndarray:
        """One relevance score per passage (higher is more relevant)."""
        out = np.zeros(len(passages), dtype=np.float32)
        for i in range(0, len(passages), self.batch_size):
            batch = self._tok.encode_batch([(query, p) for p in passages[i : i + self.batch_size]])
            width = max(len(e.ids) for e in batch)
            feed = {
                "input_ids": np.array([e.ids + [0] * (width - len(e.ids)) for e in batch], dtype=np.int64),
                "attention_mask": np.array(
                    [e.attention_mask + [0] * (width - len(e.ids)) for e in batch], dtype=np.int64
                ),
                "token_type_ids": np.array([e.type_ids + [0] * (width - len(e.ids)) for e in batch], dtype=np.int64),
            }
            try:
                (logits,) = self._session.run(None, {k: v for k, v in feed.items() if k in self._inputs})[:1]
            except Exception as exc:  # onnxruntime's errors share no useful base class
                raise EmbedderError(f"The reranker failed: {str(exc).splitlines()[0]}") from exc
            logits = np.asarray(logits, dtype=np.float32)
            out[i : i + len(batch)] = logits.reshape(len(batch), -1)[:, -1]
        return out
