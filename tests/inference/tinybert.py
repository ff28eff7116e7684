"""Small random-weight BERT sentence-transformers folders, written by tests (no weights exist offline).

Two tokenizers, as real models bring them: a WordPiece one like bge-small-en-v1.5's, and a Unigram
(SentencePiece) one with <s>/</s>/<pad> like multilingual-e5-small's XLM-R tokenizer, whose pieces
include Russian words. `numpy_embed` is an independent forward pass to compare the ONNX graph with.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
from safetensors.numpy import save_file
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

WORDS = (
    "the meal allowance for travel abroad is sixty euros per day report a stolen laptop to it at once "
    "отпуск приказ договор сотрудник бухгалтерия оплата срок дней работы новому положено сколько"
).split()


def wordpiece_tokenizer() -> Tokenizer:
    """A lower-casing BERT WordPiece tokenizer over WORDS (+ letters), [CLS] x [SEP]."""
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]"]
    letters = sorted({c for w in WORDS for c in w})
    vocab = {t: i for i, t in enumerate(specials + sorted(set(WORDS)) + letters + ["##" + c for c in letters])}
    tok = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]", max_input_chars_per_word=100))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])]
    )
    tok.decoder = decoders.WordPiece()
    return tok


def unigram_tokenizer() -> Tokenizer:
    """An XLM-R-style Unigram tokenizer: <s>=0, <pad>=1, </s>=2, <unk>=3, Metaspace pieces, <s> x </s>."""
    letters = sorted({c for w in WORDS for c in w} | set("abcdefghijklmnopqrstuvwxyz"))
    pieces = [("<s>", 0.0), ("<pad>", 0.0), ("</s>", 0.0), ("<unk>", 0.0)]
    pieces += [("▁" + w, -2.0) for w in sorted(set(WORDS))] + [("▁", -3.0)] + [(c, -5.0) for c in letters]
    tok = Tokenizer(models.Unigram(pieces, unk_id=3))
    tok.normalizer = normalizers.NFKC()
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    tok.post_processor = processors.TemplateProcessing(single="<s> $A </s>", special_tokens=[("<s>", 0), ("</s>", 2)])
    tok.decoder = decoders.Metaspace()
    return tok


def write_folder(
    folder: Path,
    *,
    tokenizer: Tokenizer,
    hidden: int = 32,
    heads: int = 4,
    layers: int = 2,
    pooling: str = "mean",
    prompts: dict[str, str] | None = None,
    max_seq_length: int = 24,
    seed: int = 0,
    prefix: str = "",
) -> Path:
    """Write a sentence-transformers folder with random weights; returns it."""
    rng = np.random.default_rng(seed)
    vocab = max(tokenizer.get_vocab().values()) + 1  # ids, duplicates included
    inter, positions = hidden * 2, 64

    def w(*shape: int, scale: float = 0.2) -> np.ndarray:
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    weights = {
        "embeddings.word_embeddings.weight": w(vocab, hidden, scale=1.0),
        "embeddings.position_embeddings.weight": w(positions, hidden),
        "embeddings.token_type_embeddings.weight": w(2, hidden),
        "embeddings.LayerNorm.weight": 1 + w(hidden, scale=0.1),
        "embeddings.LayerNorm.bias": w(hidden, scale=0.1),
        "pooler.dense.weight": w(hidden, hidden),  # present in real checkpoints, unused by the graph
        "pooler.dense.bias": w(hidden),
    }
    for i in range(layers):
        p = f"encoder.layer.{i}"
        for name in ("attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense"):
            weights[f"{p}.{name}.weight"], weights[f"{p}.{name}.bias"] = w(hidden, hidden), w(hidden, scale=0.05)
        weights[f"{p}.intermediate.dense.weight"], weights[f"{p}.intermediate.dense.bias"] = w(inter, hidden), w(inter)
        weights[f"{p}.output.dense.weight"], weights[f"{p}.output.dense.bias"] = w(hidden, inter), w(hidden)
        for ln in ("attention.output.LayerNorm", "output.LayerNorm"):
            weights[f"{p}.{ln}.weight"], weights[f"{p}.{ln}.bias"] = 1 + w(hidden, scale=0.1), w(hidden, scale=0.1)
    folder.mkdir(parents=True, exist_ok=True)
    save_file({prefix + k: v for k, v in weights.items()}, str(folder / "model.safetensors"))
    config = {
        "model_type": "bert", "architectures": ["BertModel"], "hidden_size": hidden, "num_attention_heads": heads,
        "num_hidden_layers": layers, "intermediate_size": inter, "max_position_embeddings": positions,
        "vocab_size": vocab, "type_vocab_size": 2, "hidden_act": "gelu", "layer_norm_eps": 1e-12,
        "position_embedding_type": "absolute",
    }
    (folder / "config.json").write_text(json.dumps(config))
    tokenizer.save(str(folder / "tokenizer.json"))
    (folder / "1_Pooling").mkdir(exist_ok=True)
    (folder / "1_Pooling" / "config.json").write_text(
        json.dumps({"word_embedding_dimension": hidden, f"pooling_mode_{pooling}_token{'s' if pooling == 'mean' else ''}": True})
    )
    (folder / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": max_seq_length}))
    st_config: dict[str, object] = {"__version__": {"sentence_transformers": "3.0.0"}}
    if prompts:
        st_config["prompts"] = prompts
    (folder / "config_sentence_transformers.json").write_text(json.dumps(st_config))
    return folder


def numpy_embed(folder: Path, texts: list[str], *, heads: int = 4) -> np.ndarray:
    """Embed `texts` with a plain numpy BERT forward pass of `folder` (one text at a time, no padding)."""
    from safetensors.numpy import load_file

    config = json.loads((folder / "config.json").read_text())
    pooling = json.loads((folder / "1_Pooling" / "config.json").read_text())
    cls = bool(pooling.get("pooling_mode_cls_token"))
    max_len = json.loads((folder / "sentence_bert_config.json").read_text())["max_seq_length"]
    raw = load_file(str(folder / "model.safetensors"))
    wts = {k.removeprefix("bert."): v.astype(np.float64) for k, v in raw.items()}
    tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tok.enable_truncation(max_length=max_len)

    def norm(x: np.ndarray, key: str) -> np.ndarray:
        mu, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + 1e-12) * wts[f"{key}.weight"] + wts[f"{key}.bias"]

    def dense(x: np.ndarray, key: str) -> np.ndarray:
        return x @ wts[f"{key}.weight"].T + wts[f"{key}.bias"]

    erf = np.vectorize(math.erf)
    out = []
    for text in texts:
        ids = np.array(tok.encode(text).ids)
        x = wts["embeddings.word_embeddings.weight"][ids] + wts["embeddings.token_type_embeddings.weight"][0]
        x = norm(x + wts["embeddings.position_embeddings.weight"][: len(ids)], "embeddings.LayerNorm")
        s, h = x.shape
        d = h // heads
        for i in range(config["num_hidden_layers"]):
            p = f"encoder.layer.{i}"
            q, k, v = (dense(x, f"{p}.attention.self.{n}").reshape(s, heads, d).transpose(1, 0, 2)
                       for n in ("query", "key", "value"))
            scores = q @ k.transpose(0, 2, 1) / math.sqrt(d)
            probs = np.exp(scores - scores.max(-1, keepdims=True))
            probs /= probs.sum(-1, keepdims=True)
            context = (probs @ v).transpose(1, 0, 2).reshape(s, h)
            x = norm(dense(context, f"{p}.attention.output.dense") + x, f"{p}.attention.output.LayerNorm")
            inner = dense(x, f"{p}.intermediate.dense")
            inner = 0.5 * inner * (1.0 + erf(inner / math.sqrt(2.0)))
            x = norm(dense(inner, f"{p}.output.dense") + x, f"{p}.output.LayerNorm")
        pooled = x[0] if cls else x.mean(0)
        out.append(pooled / np.linalg.norm(pooled))
    return np.array(out, dtype=np.float32)
