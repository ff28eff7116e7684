"""Int8 copies of converted embedding graphs, made offline from the fp32 graph and checked against it.

The current recipes (`RECIPES`) write ONNX Runtime's fused int8 operators directly (see
`inference.bert_onnx.build_fused_model`): QAttention, DynamicQuantizeMatMul, Gelu, and plain Add and
LayerNormalization for the residuals. Weights are int8 per output column; activations are quantised per
batch at run time (uint8, one scale per tensor). Three things keep that close to fp32:

- Pair-safe weight scales. Without VNNI, x86 multiplies uint8 by int8 with `vpmaddubsw`, which adds two
  neighbouring products into a saturating int16: 255 * (a + b) overflows when two neighbouring weights
  of one column, of the same sign, add up to more than 128. Each column's scale is chosen so that no
  pair does, so the integer results are exact, and the same, on every x86 CPU.
- Smoothing of the LayerNorm outputs that feed Q/K/V and the feed-forward: a few channels carry values
  ten times larger than the rest on some tokens, and the per-tensor scale follows them. Each input channel
  is divided by s = amax^0.7 / wmax^0.3 (activation and weight maxima, normalised by the median) before
  quantisation and the weight row multiplied by s: exact in real numbers, and the ranges even out.
- The feed-forward neurons whose GELU output spikes (calibrated: above twice the 32nd largest maximum,
  at most `MAX_SPLIT` per layer; one or two in five of all-MiniLM-L6-v2's six) are computed in fp32
  beside the int8 matrices.

The activation maxima come from running the fp32 graph on `CALIBRATION_TEXTS`. Measured on
all-MiniLM-L6-v2, AMD EPYC (Zen 3: AVX2, no VNNI): cosine to the fp32 graph on `CHECK_TEXTS`; speed on
one core in CPU time, 64 chunks of ~190 tokens, against the fp32 graph (10.9 chunks/s; sentence-
transformers 11.5). The first three rows are onnxruntime's quantize_dynamic, the next two `LEGACY_RECIPES`:

    recipe                                                      mean     min      speed
    per-tensor weights (quantize_dynamic default)               0.937
    "int8": per-channel, all 36 matrices (saturates on AVX2)    0.9887   0.9742   1.61x fp32
    "int8-ffn32": feed-forward outputs kept fp32                0.9963   0.9914   1.37x fp32
    "int8-fused-v1": fused, pair-safe, smoothed, split neurons  0.9973   0.9946   1.72x fp32
    "int8-fused-v2": the same, LayerNorm not fused with Add     0.9973   0.9945   (below)

Version 2 against version 1, on a CPU with AVX-512 VNNI, 2 threads, 128 chunks of ~250 tokens: 14,781
against 12,734 tokens/s (fp32: 6,278); onnxruntime 1.32's SkipLayerNormalization took 14 % of version 1's
time.

`RECIPES` are tried in order: each graph is compared with its fp32 source on `CHECK_TEXTS` on the
machine that made it, and the first that stays close enough is used (else fp32). Legacy recipes are only
made again for a workspace that recorded one of their keys (its vectors must not change).
"""

from __future__ import annotations

import logging
import os
import re
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from inference.errors import ModelError

if TYPE_CHECKING:  # onnx takes 0.6 s to import, and only making a graph needs it, not a warm start
    import onnx

# The feed-forward output projections (BERT's encoder.layer.N.output.dense): as a weight name (legacy
# recipes, matched against initializers) and as a matrix key (fused recipes).
FFN_OUTPUT = r"(^|\.)layer\.\d+\.output\.dense\.weight$"
FFN_OUTPUT_KEY = r"(^|\.)layer\.\d+\.output\.dense$"
# Bump when the fused int8 graph or its calibration changes: a new folder (and key) is made, and workspaces
# indexed with an older one keep theirs (`LEGACY_RECIPES` makes it again where it is missing). Version 2
# writes the residual and LayerNorm as plain operators instead of SkipLayerNormalization: the same
# network, about 15 % faster on the CPU, and vectors 0.9994 (mean cosine) from version 1's.
FUSED_VERSION = 2
SMOOTH_ALPHA = 0.7
MAX_SPLIT = 8


@dataclass(frozen=True)
class Int8Recipe:
    """One way to quantise: a folder-name suffix, the matrices (a regular expression) kept in fp32, and
    the fused graph's version (None: onnxruntime's quantize_dynamic over the standard graph)."""

    suffix: str
    keep_fp32: str | None
    version: int | None = FUSED_VERSION

    @property
    def fused(self) -> bool:
        """True when the recipe writes the fused graph."""
        return self.version is not None


def _fused_recipes(version: int) -> tuple[Int8Recipe, Int8Recipe]:
    # The graph version is part of the folder name (the key a workspace records): a new version is a new key.
    return (Int8Recipe(f"int8-fused-v{version}", None, version),
            Int8Recipe(f"int8-fused-v{version}-ffn32", FFN_OUTPUT_KEY, version))


RECIPES = _fused_recipes(FUSED_VERSION)
LEGACY_RECIPES = (*_fused_recipes(1), Int8Recipe("int8", None, None), Int8Recipe("int8-ffn32", FFN_OUTPUT, None))
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


# What the fused recipes measure activation ranges on: other texts than CHECK_TEXTS (the check must not
# grade the data the scales were fitted to), of the same kinds, some near the 256-token length limit.
CALIBRATION_TEXTS: tuple[str, ...] = (
    "Where can I find the minutes of last week's board meeting?",
    "The warranty covers parts and labour for two years from the date of purchase; batteries are covered "
    "for six months. Keep the receipt: without it the service centre will ask for the serial number and "
    "the shop's stamp in the booklet. Damage caused by water, falls or repairs made elsewhere is excluded.",
    "Pour réserver une salle, écrivez à l'accueil au moins deux jours ouvrés à l'avance en précisant le "
    "nombre de participants, l'équipement nécessaire (vidéoprojecteur, visioconférence) et le centre de coût.",
    "Die Heizungsanlage wird jedes Jahr im September gewartet. Störungen meldet der Hausmeister unter der "
    "Durchwahl 412; außerhalb der Geschäftszeiten ist der Bereitschaftsdienst zuständig.",
    "Годовой отчёт должен быть подписан генеральным директором и главным бухгалтером и сдан в налоговую "
    "инспекцию не позднее 31 марта года, следующего за отчётным. Копия хранится в архиве пять лет.",
    "新しい従業員は入社初日に身分証明書と銀行口座の情報を人事部に提出してください。",
    "class Invoice:\n    def __init__(self, lines):\n        self.lines = list(lines)\n\n    def total(self):\n"
    "        return round(sum(l.net * (1 + l.vat) for l in self.lines), 2)",
    "| Item | Qty | Unit price | Total |\n| Paper A4, 500 sheets | 20 | 4.35 | 87.00 |\n"
    "| Toner HP 26A | 2 | 71.90 | 143.80 |\n| Delivery | 1 | 12.00 | 12.00 |",
    " ".join(
        [
            "Section 4.2. Data retention. Personal data collected for recruitment is kept for twelve months "
            "after the position is filled, unless the candidate agrees in writing to a longer period.",
            "Payroll records are kept for ten years, as the tax code requires, and are then destroyed by a "
            "certified contractor who issues a certificate of destruction for each batch.",
            "Requests for access, correction or deletion are answered within one month; the data protection "
            "officer keeps a register of every request, its date, the answer given and the date it was sent.",
            "Backups that contain personal data follow the same schedule: a copy older than the retention "
            "period is overwritten at the next rotation, and no restore may bring such data back into use.",
        ]
    ),
    "What happens to my unused vacation days at the end of the year?",
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
    import onnx
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


def make_int8(fp32_dir: Path, out_path: Path, recipe: Int8Recipe) -> Path:
    """Write the int8 graph of `recipe` for the converted fp32 folder `fp32_dir` to `out_path`."""
    if not recipe.fused:
        return quantize_int8(Path(fp32_dir) / "model.onnx", out_path, keep_fp32=recipe.keep_fp32)
    import onnx

    from inference.bert_onnx import FusedPlan, build_fused_model, read_converted, save_atomically

    fp32_dir, out_path = Path(fp32_dir), Path(out_path)
    config, weights, meta = read_converted(fp32_dir / "model.onnx")
    skip_layer_norm = recipe.version == 1
    tapped = build_fused_model(config, weights, plan=FusedPlan(skip_layer_norm=skip_layer_norm), taps=True)
    onnx.helper.set_model_props(tapped, {**meta, **{p.key: p.value for p in tapped.metadata_props}})
    maxima = activation_maxima(tapped, fp32_dir / "tokenizer.json")
    pattern = re.compile(recipe.keep_fp32) if recipe.keep_fp32 else None

    def fp32(key: str) -> bool:
        return pattern is not None and pattern.search(key) is not None

    def quantize(key: str, w: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        return None if fp32(key) else pair_safe_int8(w)

    # Splitting neurons only serves a feed-forward output projection that is quantised.
    split = {i: n for i, n in spiking_neurons(maxima).items() if not fp32(f"encoder.layer.{i}.output.dense")}
    plan = FusedPlan(quantize=quantize, smooth=smoothing(weights, maxima), split=split,
                     skip_layer_norm=skip_layer_norm)
    model = build_fused_model(config, weights, plan=plan)
    onnx.helper.set_model_props(model, {**meta, **{p.key: p.value for p in model.metadata_props},
                                        "hearth.precision": "int8", "hearth.keep_fp32": recipe.keep_fp32 or "",
                                        "hearth.fused_version": str(recipe.version)})
    save_atomically(model, out_path)
    return out_path


def pair_safe_int8(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Quantise a [in, out] weight to int8 per output column, symmetric, with no saturating pair (module doc).

    Returns the int8 weight and the float32 scale of each column.
    """
    rows = w.shape[0] // 2 * 2
    even, odd = w[0:rows:2], w[1:rows:2]
    positive = (np.maximum(even, 0) + np.maximum(odd, 0)).max(axis=0, initial=0.0)
    negative = (np.maximum(-even, 0) + np.maximum(-odd, 0)).max(axis=0, initial=0.0)
    # 255 * 128 = 32640 stays below int16's 32767; a single weight still may use all of [-127, 127].
    scale = np.maximum(np.abs(w).max(axis=0) / 127, np.maximum(positive, negative) / 128)
    scale = np.where(scale > 0, scale, 1.0).astype(np.float32)
    return np.clip(np.rint(w / scale), -127, 127).astype(np.int8), scale


def smoothing(weights: dict[str, np.ndarray], maxima: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Per-input-channel divisors for the matrices that read LayerNorm outputs (Q/K/V, feed-forward input)."""
    result: dict[str, np.ndarray] = {}
    for key, amax in maxima.items():
        if key.endswith(".attention.qkv"):
            layer = key.removesuffix(".attention.qkv")
            w = np.concatenate([weights[f"{layer}.attention.self.{n}.weight"] for n in ("query", "key", "value")])
        elif key.endswith(".intermediate.dense"):
            w = weights[f"{key}.weight"]
        else:
            continue
        wmax = np.abs(w).max(axis=0)  # torch layout [out, in]: one maximum per input channel
        s = np.where((amax > 0) & (wmax > 0), np.maximum(amax, 1e-6) ** SMOOTH_ALPHA /
                     np.maximum(wmax, 1e-6) ** (1 - SMOOTH_ALPHA), 1.0)
        result[key] = (s / np.median(s)).astype(np.float32)
    return result


def spiking_neurons(maxima: dict[str, np.ndarray]) -> dict[int, np.ndarray]:
    """Per layer, the feed-forward neurons whose largest GELU output is over twice the 32nd largest."""
    result: dict[int, np.ndarray] = {}
    for key, amax in maxima.items():
        match = re.search(r"layer\.(\d+)\.output\.dense$", key)
        if match is None or amax.size <= 32:
            continue
        order = np.argsort(-amax, kind="stable")
        spikes = order[amax[order] > 2 * amax[order[31]]][:MAX_SPLIT]
        if spikes.size:
            result[int(match.group(1))] = np.sort(spikes)
    return result


def activation_maxima(tapped: onnx.ModelProto, tokenizer_path: Path, *,
                      texts: Sequence[str] = CALIBRATION_TEXTS) -> dict[str, np.ndarray]:
    """Run a graph with "tap:<key>" outputs on `texts`; return each tap's largest |value| per channel."""
    import onnxruntime as ort

    from inference.embedder import CPU, load_tokenizers

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.log_severity_level = 3
    try:
        session = ort.InferenceSession(tapped.SerializeToString(), options, providers=[CPU])
    except Exception as exc:  # onnxruntime's pybind errors share no useful base class
        raise ModelError(f"The embedding model could not be calibrated for int8: {exc}") from exc
    meta = {p.key: p.value for p in tapped.metadata_props}
    limit = min(int(meta.get("hearth.max_seq_length", 256)), int(meta.get("hearth.max_positions", 512)))
    tokenizer, _, _ = load_tokenizers(Path(tokenizer_path), limit)
    names = [o.name for o in session.get_outputs() if o.name.startswith("tap:")]
    maxima: dict[str, np.ndarray] = {}
    for encoding in tokenizer.encode_batch(list(texts)):  # one at a time: padding must not count
        ids = np.array([encoding.ids], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": np.ones_like(ids),
                "token_type_ids": np.array([encoding.type_ids], dtype=np.int64)}
        for name, value in zip(names, session.run(names, feed), strict=True):
            channel = np.abs(value.reshape(-1, value.shape[-1])).max(axis=0)
            key = name.removeprefix("tap:")
            maxima[key] = np.maximum(maxima.get(key, channel), channel)
    return maxima
