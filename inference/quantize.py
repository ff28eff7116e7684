"""Int8 copies of converted embedding graphs, made offline from the fp32 graph and checked against it.

The weight matrices of the MatMul nodes are quantised per output channel (one scale per column);
activations are quantised per batch at run time by ONNX Runtime (dynamic quantisation). Measured on
all-MiniLM-L6-v2 (Python docstrings, 200-token chunks, 2 shared cores; bench/embeddings.py):

    recipe                                         cosine to fp32    top-5 kept   speed
    per-tensor weights (quantize_dynamic default)  mean 0.937        79 %
    "int8": per-channel, all 36 matrices           mean 0.994        91 %         1.8x fp32
    "int8-ffn32": per-channel, the 6 feed-forward  mean 0.997        93-94 %      1.4x fp32
        output projections kept fp32

`RECIPES` are tried in that order: each quantised graph is compared with its fp32 source on
`CHECK_TEXTS` on the machine that made it, and the first that stays close enough is used (else fp32).
The feed-forward output projections read GELU outputs, whose few large channels make one per-tensor
activation scale coarse; keeping them in fp32 is the fallback when the full recipe drifts.
"""

from __future__ import annotations

import logging
import os
import re
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx

from inference.errors import ModelError

# The feed-forward output projections (BERT's encoder.layer.N.output.dense).
FFN_OUTPUT = r"(^|\.)layer\.\d+\.output\.dense\.weight$"


@dataclass(frozen=True)
class Int8Recipe:
    """One way to quantise: a folder-name suffix and the weights (a regular expression) kept in fp32."""

    suffix: str
    keep_fp32: str | None


RECIPES = (Int8Recipe("int8", None), Int8Recipe("int8-ffn32", FFN_OUTPUT))
# An int8 graph whose vectors fall below these against its fp32 source is not used.
MIN_MEAN_COSINE = 0.99
MIN_COSINE = 0.97

# What retrieval embeds: short questions and passages of a few sentences, in several languages and
# scripts, with digits and code, because quantisation error grows with unusual activations.
CHECK_TEXTS: tuple[str, ...] = (
    "How many days of annual leave do new employees get?",
    "Who approves travel abroad?",
    "The meal allowance for travel abroad is 60 euros per day, paid with the next salary.",
    "Report a stolen laptop to the IT helpdesk within 24 hours and change every password you used on it.",
    "Приказ о предоставлении ежегодного оплачиваемого отпуска сотрудникам бухгалтерии.",
    "Сколько дней отпуска положено новому сотруднику в первый год работы?",
    "Договор поставки № 17/2024 от 3 марта: срок оплаты — 30 календарных дней с даты отгрузки.",
    "Der Vertrag kann mit einer Frist von drei Monaten zum Quartalsende gekündigt werden.",
    "La réunion du comité de direction est reportée au jeudi 14 à 10 h 30.",
    "東京本社の会議室は三階にあります。",
    "def total(items):\n    return sum(i.price * i.quantity for i in items)",
    "Invoice 2024-0117, VAT 20 %, net 1 250.00 EUR, gross 1 500.00 EUR, due 2024-02-15.",
    "Backups run every night at 02:00; restores are tested on the first Monday of each month. "
    "If a restore fails, the on-call engineer opens a ticket, notifies the office manager and "
    "keeps the previous night's copy until the cause is found. Copies older than ninety days are "
    "deleted automatically, except the monthly archive, which is kept for seven years as the "
    "accounting rules require. Encryption keys are stored in the safe in room 214.",
    "Все сотрудники обязаны пройти инструктаж по охране труда в течение первой недели работы. "
    "Инструктаж проводит специалист по охране труда; результаты фиксируются в журнале. "
    "Повторный инструктаж проводится не реже одного раза в шесть месяцев, а внеплановый — "
    "при изменении технологического процесса или после несчастного случая на производстве.",
    "Visitors sign in at the reception desk, wear the badge they are given, and are accompanied "
    "by their host at all times. Deliveries go to the loading bay behind the building, which is "
    "open from 8:00 to 16:00 on working days; anything larger than a pallet must be announced a "
    "day ahead so that the forklift is free.",
    "What is the deadline for submitting expense reports?",
)


@dataclass(frozen=True)
class QuantizationCheck:
    """How closely an int8 graph's vectors follow its fp32 source on `CHECK_TEXTS`."""

    mean_cosine: float
    min_cosine: float
    texts: int

    @property
    def passed(self) -> bool:
        """True when the int8 graph is close enough to replace the fp32 one."""
        return self.mean_cosine >= MIN_MEAN_COSINE and self.min_cosine >= MIN_COSINE

    def to_json(self) -> dict[str, float | int | bool]:
        """A JSON-ready summary."""
        return {
            "mean_cosine": round(self.mean_cosine, 5),
            "min_cosine": round(self.min_cosine, 5),
            "texts": self.texts,
            "passed": self.passed,
        }


def quantize_int8(fp32_path: Path, out_path: Path, *, keep_fp32: str | None = None) -> Path:
    """Write an int8 (dynamic, per-channel) copy of the fp32 embedding graph `fp32_path` to `out_path`.

    MatMul nodes whose weight name matches the regular expression `keep_fp32` stay in fp32.
    """
    from onnxruntime.quantization import QuantType, quantize_dynamic

    fp32_path, out_path = Path(fp32_path), Path(out_path)
    source = onnx.load(str(fp32_path), load_external_data=False)
    meta = {p.key: p.value for p in source.metadata_props}
    pattern = re.compile(keep_fp32) if keep_fp32 else None
    excluded = [
        n.name for n in source.graph.node
        if pattern is not None and n.op_type == "MatMul" and len(n.input) > 1 and pattern.search(n.input[1])
    ]
    try:
        out_path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(prefix=f".{out_path.name}.", suffix=".tmp", dir=out_path.parent)
        os.close(fd)
    except OSError as exc:
        raise ModelError(f"Cannot write the int8 embedding model to {out_path.parent}: {exc.strerror}.") from exc
    tmp = Path(tmp_name)
    previous = logging.root.manager.disable
    # quantize_dynamic logs advice ("consider pre-processing") through the root logger; not for users.
    logging.disable(logging.WARNING)
    try:
        quantize_dynamic(
            str(fp32_path),
            str(tmp),
            weight_type=QuantType.QInt8,
            per_channel=True,
            op_types_to_quantize=["MatMul"],
            nodes_to_exclude=excluded,
        )
        model = onnx.load(str(tmp))
        onnx.helper.set_model_props(model, {**meta, "hearth.precision": "int8", "hearth.keep_fp32": keep_fp32 or ""})
        onnx.save(model, str(tmp))
        os.replace(tmp, out_path)
    except OSError as exc:
        raise ModelError(f"Cannot write the int8 embedding model to {out_path}: {exc.strerror or exc}.") from exc
    except Exception as exc:  # onnxruntime.quantization raises assorted errors for graphs it cannot handle
        raise ModelError(f"The embedding model {fp32_path} could not be quantised to int8: {exc}") from exc
    finally:
        logging.disable(previous)
        tmp.unlink(missing_ok=True)
    return out_path


def check_int8(fp32_dir: Path, int8_dir: Path, *, texts: Sequence[str] = CHECK_TEXTS) -> QuantizationCheck:
    """Embed `texts` with both folders on the CPU and measure how close the int8 vectors stay."""
    from inference.embedder import CPU, OnnxEmbedder

    reference = OnnxEmbedder(fp32_dir, providers=[CPU], threads=1, verify_placement=False).embed(texts)
    quantised = OnnxEmbedder(int8_dir, providers=[CPU], threads=1, verify_placement=False).embed(texts)
    cosine = np.sum(reference * quantised, axis=1)
    return QuantizationCheck(float(cosine.mean()), float(cosine.min()), len(texts))
