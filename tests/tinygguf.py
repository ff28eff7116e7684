"""Writes tiny random-weight GGUF chat models for fast tests (llama architecture, byte vocabulary)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

CHATML_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def write_tiny_llama(
    path: Path,
    *,
    n_embd: int = 64,
    n_layer: int = 2,
    n_head: int = 4,
    n_head_kv: int = 2,
    n_ff: int = 128,
    n_ctx: int = 2048,
    chat_template: str | None = CHATML_TEMPLATE,
    seed: int = 0,
) -> Path:
    """Write a llama-architecture GGUF with random weights and a byte-fallback vocabulary."""
    import gguf

    rng = np.random.default_rng(seed)
    tokens: list[bytes] = [b"<unk>", b"<s>", b"</s>"]
    types = [gguf.TokenType.UNKNOWN, gguf.TokenType.CONTROL, gguf.TokenType.CONTROL]
    for b in range(256):
        tokens.append(f"<0x{b:02X}>".encode())
        types.append(gguf.TokenType.BYTE)
    # A few whole words so the tokenizer has merges to find, as real vocabularies do.
    for word in ["▁the", "▁a", "▁is", "▁of", "▁and", "▁to", "▁in", "e", "t", "a", "o", "n", "s", "▁"]:
        tokens.append(word.encode())
        types.append(gguf.TokenType.NORMAL)
    n_vocab = len(tokens)
    scores = [0.0] * 3 + [-1000.0] * 256 + [-float(i) for i in range(len(tokens) - 259)]

    w = gguf.GGUFWriter(str(path), "llama")
    w.add_name("tiny-test-llama")
    w.add_context_length(n_ctx)
    w.add_embedding_length(n_embd)
    w.add_block_count(n_layer)
    w.add_feed_forward_length(n_ff)
    w.add_head_count(n_head)
    w.add_head_count_kv(n_head_kv)
    w.add_rope_dimension_count(n_embd // n_head)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_scores(scores)
    w.add_token_types(types)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_add_bos_token(True)
    if chat_template is not None:
        w.add_chat_template(chat_template)

    def t(name: str, *shape: int) -> None:
        w.add_tensor(name, (rng.standard_normal(shape) * 0.05).astype(np.float32))

    head_dim = n_embd // n_head
    t("token_embd.weight", n_vocab, n_embd)
    for i in range(n_layer):
        w.add_tensor(f"blk.{i}.attn_norm.weight", np.ones(n_embd, dtype=np.float32))
        t(f"blk.{i}.attn_q.weight", n_embd, n_embd)
        t(f"blk.{i}.attn_k.weight", n_head_kv * head_dim, n_embd)
        t(f"blk.{i}.attn_v.weight", n_head_kv * head_dim, n_embd)
        t(f"blk.{i}.attn_output.weight", n_embd, n_embd)
        w.add_tensor(f"blk.{i}.ffn_norm.weight", np.ones(n_embd, dtype=np.float32))
        t(f"blk.{i}.ffn_gate.weight", n_ff, n_embd)
        t(f"blk.{i}.ffn_up.weight", n_ff, n_embd)
        t(f"blk.{i}.ffn_down.weight", n_embd, n_ff)
    w.add_tensor("output_norm.weight", np.ones(n_embd, dtype=np.float32))
    t("output.weight", n_vocab, n_embd)

    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path
