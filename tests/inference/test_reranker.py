from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from tokenizers import Tokenizer, models, pre_tokenizers, processors

from inference.errors import ModelError
from inference.reranker import OnnxCrossEncoder
from rag.retrieval import CrossEncoderReranker
from rag.store import Hit

WORDS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "fire", "alarm", "tested", "monday", "coffee", "machine", "garden", "when"]


def write_cross_encoder(folder: Path) -> Path:
    """A real ONNX graph: relevance = sum over passage tokens of a per-word weight ('fire', 'alarm' weigh most)."""
    folder.mkdir(parents=True, exist_ok=True)
    vocab = {w: i for i, w in enumerate(WORDS)}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", 2), ("[SEP]", 3)]
    )
    tok.save(str(folder / "tokenizer.json"))
    weights = np.zeros(len(WORDS), dtype=np.float32)
    weights[vocab["fire"]], weights[vocab["alarm"]], weights[vocab["tested"]] = 3.0, 3.0, 1.0
    nodes = [
        helper.make_node("Gather", ["w", "input_ids"], ["per_token"]),
        helper.make_node("Cast", ["token_type_ids"], ["tt"], to=TensorProto.FLOAT),
        helper.make_node("Cast", ["attention_mask"], ["am"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["per_token", "tt"], ["p1"]),
        helper.make_node("Mul", ["p1", "am"], ["p2"]),
        helper.make_node("ReduceSum", ["p2", "axes"], ["logits"], keepdims=1),
    ]
    graph = helper.make_graph(
        nodes, "toy-cross-encoder",
        [helper.make_tensor_value_info(n, TensorProto.INT64, ["b", "s"]) for n in ("input_ids", "attention_mask", "token_type_ids")],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["b", 1])],
        [helper.make_tensor("w", TensorProto.FLOAT, weights.shape, weights), helper.make_tensor("axes", TensorProto.INT64, [1], [1])],
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(folder / "model.onnx"))
    return folder


def test_cross_encoder_scores_pairs_and_reranks(tmp_path):
    enc = OnnxCrossEncoder(write_cross_encoder(tmp_path / "ce"), threads=1, batch_size=2)
    passages = ["coffee machine", "fire alarm tested monday", "garden", "alarm"]
    scores = enc.score("when fire alarm", passages)
    assert scores.tolist() == pytest.approx([0.0, 7.0, 0.0, 3.0])
    assert enc.provider == "CPUExecutionProvider"
    hits = [Hit("/d", None, None, 0.5, p, 0, 1, str(i)) for i, p in enumerate(passages)]
    order = CrossEncoderReranker(enc, top=3).rerank("when fire alarm", hits)
    assert [h.chunk_id for h in order] == ["1", "0", "2", "3"]  # the 4th was beyond `top`: kept last


def test_missing_files_are_reported(tmp_path):
    with pytest.raises(ModelError, match="no model.onnx"):
        OnnxCrossEncoder(tmp_path)
