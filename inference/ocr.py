"""Reading the text on a page image: PP-OCR on ONNX Runtime, with Debian's tesseract for what PP-OCR cannot read.

    OnnxOcr(providers=None, threads=None)  .read(image) -> OcrPage; the detector on the best provider installed
    OcrPage, OcrLine                       lines in reading order, boxes as fractions of the page, confidences
    tesseract_languages()                  the tesseract languages installed; () when tesseract is not
    read_with_tesseract(image)             tesseract alone on the whole page (the benchmark's baseline)

Detection (the heavy part) and Latin recognition are PP-OCRv6 small models from the `rapidocr` wheel
(inference/models.py pins them). No freely licensed PyPI package carries a Cyrillic recogniser, so a line PP-OCR
reads with low confidence is read again by tesseract (`rus+eng`) from the same crop, and the better reading kept.
Without tesseract such lines keep PP-OCR's reading and its low confidence, which marks the page.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnxruntime as ort
from PIL import Image

from inference import ocr_layout
from inference.embedder import CPU, _mostly_on_cpu, _open_session, summarize_placement
from inference.errors import EmbedderError, ModelError
from inference.models import ocr_model_files

DEFAULT_LANGUAGES = "rus+eng"  # tesseract's order: the first is tried first
_DET_MEAN = np.array([0.485, 0.456, 0.406], np.float32)  # applied to B, G, R, as PaddleOCR's detector was trained
_DET_STD = np.array([0.229, 0.224, 0.225], np.float32)
# The detector's input is at most this long: 10 pt print on an A4 page stays about 18 px high, enough for it,
# and its cost grows with the pixels (an A4 at 300 dpi, 2480x3508, is scaled down 2.3 times).
_DET_MAX_SIDE = 1536
_REC_HEIGHT = 48  # the recogniser's fixed input height
_REC_BATCH = 16
_MAX_SIDE = 5000  # a page image larger than this is scaled down first: nothing on it gets more legible
# Lines PP-OCR reads below this confidence are read again by tesseract. PP-OCR reads Latin print at 0.95 and up
# and Cyrillic (which its dictionary lacks) at 0.3 to 0.8 (bench/ocr.py pages).
_RETRY_BELOW = 0.93
_TESSERACT_TIMEOUT = 120  # seconds for one page's lines


@dataclass(frozen=True)
class OcrLine:
    """One line of text read from a page."""

    text: str
    box: tuple[float, float, float, float]  # x0, y0, x1, y1 as fractions of the page's width and height
    confidence: float  # 0..1: mean of the recogniser's per-character probabilities (tesseract: word confidences)
    block_start: bool  # the line opens a new block (paragraph or column)
    engine: str  # "pp-ocr" or "tesseract"


@dataclass(frozen=True)
class OcrPage:
    """What OCR read on one page image."""

    lines: tuple[OcrLine, ...]
    confidence: float  # mean over the page's characters; 0.0 when nothing was read
    angle: float  # degrees the page was turned to level its lines
    size: tuple[int, int]  # the image's width and height in pixels

    @property
    def text(self) -> str:
        """The lines in reading order: lines joined by newlines, blocks separated by blank lines."""
        return "".join(("\n\n" if line.block_start and i else "\n" if i else "") + line.text
                       for i, line in enumerate(self.lines))  # fmt: skip


class OnnxOcr:
    """PP-OCR text detection and recognition on ONNX Runtime; tesseract for lines it cannot read."""

    def __init__(self, *, providers: Sequence[str] | None = None, threads: int | None = None,
                 languages: str = DEFAULT_LANGUAGES, tesseract: bool = True) -> None:  # fmt: skip
        files = ocr_model_files()
        self._det, self.provider, self.provider_note = _placed_session(files["det"], providers, threads)
        rec_providers = [CPU] if self.provider == CPU else [self.provider, CPU]
        self._rec, _, _ = _session(files["rec"], rec_providers, threads)
        characters = self._rec.get_modelmeta().custom_metadata_map.get("character", "")
        # CTC classes: 0 is the blank, then the dictionary in order, then the space PaddleOCR appends.
        self._alphabet = ["", *characters.split("\n"), " "]
        if len(self._alphabet) != self._rec.get_outputs()[0].shape[-1]:
            raise ModelError("The OCR recognition model's dictionary does not match its output.",
                             hint="pip install --no-deps --force-reinstall rapidocr==3.10.0")  # fmt: skip
        # MIGraphX compiles a graph per input shape: coarser shapes mean fewer compilations.
        self._multiple = 256 if self.provider == "MIGraphXExecutionProvider" else 32
        self.languages = languages if tesseract and _has_languages(languages) else ""

    def read(self, image: Image.Image) -> OcrPage:
        """Read one page image: deskew, find the text lines, recognise them; lines in reading order."""
        image = as_rgb(image)
        original = image.size
        angle = ocr_layout.skew_angle(image)
        if angle:
            image = image.rotate(angle, Image.Resampling.BICUBIC, expand=True, fillcolor=(255, 255, 255))
        found = self._detect(image)
        if not found:
            return OcrPage((), 0.0, angle, original)
        crops = [image.crop(tuple(round(v) for v in box)) for box, _ in found]
        # A line whose reading is far shorter than its box (letters missing from the dictionary are dropped,
        # Cyrillic ones) has its confidence scaled down by the share of the characters its box should hold.
        # Print holds two to three characters per box height of width; 1.5 leaves room for wide or spaced type.
        fits = [max(1.0, 1.5 * c.width / max(1, c.height)) for c in crops]
        readings = [(text, conf * min(1.0, len(text) / fit), "pp-ocr")
                    for (text, conf), fit in zip(self._recognise(crops), fits)]  # fmt: skip
        retry = [i for i, (text, conf, _) in enumerate(readings) if conf < _RETRY_BELOW or not text]
        if retry and self.languages:
            again = tesseract_lines([crops[i] for i in retry], self.languages)
            for i, (text, conf) in zip(retry, again):
                if text and (_cyrillic_share(text) >= 0.5 or conf * min(1.0, len(text) / fits[i]) > readings[i][1]):
                    readings[i] = (text, conf, "tesseract")
        lines = []
        w, h = original
        for (box, start), (text, conf, engine) in zip(found, readings):
            if not text.strip():
                continue
            x0, y0, x1, y1 = ocr_layout.unrotate_box(box, angle, image.size, original)
            fractions = (round(x0 / w, 4), round(y0 / h, 4), round(x1 / w, 4), round(y1 / h, 4))
            lines.append(OcrLine(" ".join(text.split()), fractions, round(conf, 3), start, engine))
        if lines and not lines[0].block_start:
            lines[0] = OcrLine(lines[0].text, lines[0].box, lines[0].confidence, True, lines[0].engine)
        return OcrPage(tuple(lines), _page_confidence(lines), angle, original)

    def _detect(self, image: Image.Image) -> list[tuple[ocr_layout.Box, bool]]:
        """Line boxes on the image (pixels), each with whether it opens a block; pieces of one line merged."""
        w, h = image.size
        scale = min(1.0, _DET_MAX_SIDE / max(w, h))
        dw = max(self._multiple, round(w * scale / self._multiple) * self._multiple)
        dh = max(self._multiple, round(h * scale / self._multiple) * self._multiple)
        pixels = np.asarray(image.resize((dw, dh), Image.Resampling.BILINEAR), dtype=np.float32)[:, :, ::-1] / 255.0
        x = ((pixels - _DET_MEAN) / _DET_STD).transpose(2, 0, 1)[None].astype(np.float32)
        prob = self._run(self._det, x)[0, 0]
        boxes = [ocr_layout.expand(b) for b in ocr_layout.text_boxes(prob)]
        sx, sy = w / dw, h / dh
        boxes = [(max(0.0, a * sx), max(0.0, b * sy), min(w, c * sx), min(h, d * sy)) for a, b, c, d in boxes]
        boxes = [b for b in boxes if b[2] - b[0] >= 4 and b[3] - b[1] >= 4]
        starts = ocr_layout.block_starts(boxes)
        merged: list[tuple[ocr_layout.Box, bool]] = []
        for box, start in zip(boxes, starts):
            if merged and not start and ocr_layout.same_line(merged[-1][0], box):
                last, first = merged[-1]
                merged[-1] = ((last[0], min(last[1], box[1]), box[2], max(last[3], box[3])), first)
            else:
                merged.append((box, start))
        return merged

    def _recognise(self, crops: list[Image.Image]) -> list[tuple[str, float]]:
        """Text and confidence of each line crop (CTC greedy decoding), batched by width."""
        widths = [max(1, min(_REC_HEIGHT * 60, round(_REC_HEIGHT * c.width / max(1, c.height)))) for c in crops]
        order = sorted(range(len(crops)), key=widths.__getitem__)
        results: list[tuple[str, float]] = [("", 0.0)] * len(crops)
        for at in range(0, len(order), _REC_BATCH):
            batch = order[at : at + _REC_BATCH]
            width = max(320, -(-max(widths[i] for i in batch) // 160) * 160)  # a few shapes, for GPU providers
            x = np.zeros((len(batch), 3, _REC_HEIGHT, width), np.float32)
            for row, i in enumerate(batch):
                line = np.asarray(crops[i].resize((widths[i], _REC_HEIGHT), Image.Resampling.BICUBIC), np.float32)
                x[row, :, :, : widths[i]] = ((line[:, :, ::-1] / 255.0 - 0.5) / 0.5).transpose(2, 0, 1)
            probs = self._run(self._rec, x)
            for row, i in enumerate(batch):
                results[i] = self._decode(probs[row])
        return results

    def _decode(self, probs: np.ndarray) -> tuple[str, float]:
        """CTC greedy decoding: best class per step, repeats collapsed, blanks dropped; confidence = mean max."""
        best = probs.argmax(axis=1)
        keep = (best != 0) & np.concatenate(([True], best[1:] != best[:-1]))
        if not keep.any():
            return "", 0.0
        text = "".join(self._alphabet[k] for k in best[keep])
        return text.strip(), float(probs.max(axis=1)[keep].mean())

    @staticmethod
    def _run(session: ort.InferenceSession, x: np.ndarray) -> np.ndarray:
        try:
            return session.run(None, {session.get_inputs()[0].name: x})[0]
        except Exception as exc:  # onnxruntime's errors share no useful base class
            raise ModelError(f"The OCR model failed on an image of shape {x.shape}: {_first_line(exc)}") from exc


def as_rgb(image: Image.Image) -> Image.Image:
    """An 8-bit RGB copy of any Pillow image (16-bit and float greys stretched, transparency on white)."""
    if image.mode in ("I;16", "I;16B", "I;16L", "I", "F"):
        values = np.asarray(image, dtype=np.float32)
        low, high = float(values.min()), float(values.max())
        image = Image.fromarray(((values - low) / max(high - low, 1e-6) * 255).astype(np.uint8))
    if image.mode in ("RGBA", "LA", "PA") or (image.mode == "P" and "transparency" in image.info):
        rgba = image.convert("RGBA")
        white = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        image = Image.alpha_composite(white, rgba)
    image = image.convert("RGB")
    if max(image.size) > _MAX_SIDE:
        scale = _MAX_SIDE / max(image.size)
        image = image.resize((max(1, round(image.width * scale)), max(1, round(image.height * scale))),
                             Image.Resampling.LANCZOS)  # fmt: skip
    return image


def tesseract_languages() -> tuple[str, ...]:
    """The languages the installed tesseract reads; () when tesseract is not installed or does not run."""
    exe = shutil.which("tesseract")
    if exe is None:
        return ()
    try:
        done = subprocess.run([exe, "--list-langs"], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):
        return ()
    return tuple(line.strip() for line in done.stdout.splitlines()[1:] if line.strip())


def _has_languages(languages: str) -> bool:
    installed = set(tesseract_languages())
    return bool(installed) and all(lang in installed for lang in languages.split("+"))


def tesseract_lines(crops: Sequence[Image.Image], languages: str = DEFAULT_LANGUAGES) -> list[tuple[str, float]]:
    """Text and confidence of each line crop read by tesseract, in one process; ("", 0.0) for a line it failed."""
    with tempfile.TemporaryDirectory(prefix="hearth-ocr-") as folder:
        names = []
        for i, crop in enumerate(crops):
            # Tesseract reads best with the text about 30 px high and a margin of paper around it.
            scale = 56 / max(1, crop.height)
            line = crop.convert("L").resize((max(1, round(crop.width * scale)), 56), Image.Resampling.BICUBIC)
            framed = Image.new("L", (line.width + 20, line.height + 20), 255)
            framed.paste(line, (10, 10))
            names.append(str(Path(folder, f"{i:05d}.png")))
            framed.save(names[-1])
        listing = Path(folder, "lines.txt")
        listing.write_text("\n".join(names) + "\n", encoding="utf-8")
        rows = _tesseract_tsv([str(listing), "stdout", "--psm", "7", "-l", languages, "tsv"],
                              timeout=_TESSERACT_TIMEOUT + 2 * len(crops))  # fmt: skip
    words: dict[int, list[tuple[str, float]]] = {}
    for row in rows:
        words.setdefault(row["page"], []).append((row["text"], row["conf"]))
    results = []
    for page in range(1, len(crops) + 1):
        found = words.get(page, [])
        text = " ".join(t for t, _ in found)
        conf = sum(c * len(t) for t, c in found) / max(1, sum(len(t) for t, _ in found))
        results.append((text, conf))
    return results


def read_with_tesseract(image: Image.Image, languages: str = DEFAULT_LANGUAGES) -> OcrPage:
    """Tesseract alone on the whole page (its own layout analysis): the baseline OnnxOcr is measured against."""
    image = as_rgb(image)
    with tempfile.TemporaryDirectory(prefix="hearth-ocr-") as folder:
        path = Path(folder, "page.png")
        image.save(path)
        rows = _tesseract_tsv([str(path), "stdout", "--psm", "3", "-l", languages, "tsv"], timeout=_TESSERACT_TIMEOUT)
    lines: list[OcrLine] = []
    keys: list[tuple[int, int, int]] = []
    w, h = image.size
    for row in rows:
        key = (row["block"], row["par"], row["line"])
        x0, y0, x1, y1 = row["box"]
        if keys and keys[-1] == key:
            last = lines[-1]
            box = (min(last.box[0], x0 / w), min(last.box[1], y0 / h),
                   max(last.box[2], x1 / w), max(last.box[3], y1 / h))
            lines[-1] = OcrLine(f"{last.text} {row['text']}", box, last.confidence, last.block_start, "tesseract")
        else:
            start = not keys or keys[-1][:2] != key[:2]
            lines.append(OcrLine(row["text"], (x0 / w, y0 / h, x1 / w, y1 / h), row["conf"], start, "tesseract"))
            keys.append(key)
    return OcrPage(tuple(lines), _page_confidence(lines), 0.0, image.size)


def _tesseract_tsv(args: list[str], *, timeout: float) -> list[dict]:
    """Run tesseract with TSV output; its words with text, confidence (0..1), box and layout numbers."""
    exe = shutil.which("tesseract")
    if exe is None:
        raise ModelError("tesseract is not installed.", hint="apt-get install tesseract-ocr tesseract-ocr-rus")
    # One thread: OCR already runs in several reader processes at once.
    env = {**os.environ, "OMP_THREAD_LIMIT": "1"}
    try:
        done = subprocess.run([exe, *args], capture_output=True, text=True, timeout=timeout, env=env, check=False)
    except subprocess.TimeoutExpired as exc:
        raise ModelError(f"tesseract took longer than {timeout:.0f} s on one page.") from exc
    except OSError as exc:
        raise ModelError(f"tesseract could not be started: {exc.strerror or exc}.") from exc
    words = []
    for line in done.stdout.splitlines()[1:]:
        cells = line.split("\t")
        if len(cells) != 12 or cells[0] != "5" or not cells[11].strip():
            continue
        left, top, width, height = (int(v) for v in cells[6:10])
        words.append({"page": int(cells[1]), "block": int(cells[2]), "par": int(cells[3]), "line": int(cells[4]),
                      "box": (left, top, left + width, top + height), "conf": max(0.0, float(cells[10])) / 100,
                      "text": cells[11].strip()})  # fmt: skip
    return words


def _cyrillic_share(text: str) -> float:
    letters = [c for c in text if c.isalpha()]
    return sum("\u0400" <= c <= "\u04ff" for c in letters) / len(letters) if letters else 0.0


def _page_confidence(lines: Sequence[OcrLine]) -> float:
    """The mean confidence over the page's characters (a long line counts more than a page number)."""
    total = sum(len(line.text) for line in lines)
    return round(sum(line.confidence * len(line.text) for line in lines) / total, 3) if total else 0.0


def _session(path: Path, providers: Sequence[str] | None, threads: int | None,
             profile_dir: str | None = None) -> tuple[ort.InferenceSession, str, str]:  # fmt: skip
    """The embedder's session opening (provider choice and fallback), its errors named for OCR."""
    try:
        return _open_session(path, providers, threads, profile_dir=profile_dir)
    except EmbedderError as exc:
        raise ModelError(f"The OCR model {path.name} could not be loaded.",
                         hint="pip install --no-deps --force-reinstall rapidocr==3.10.0") from exc  # fmt: skip


def _placed_session(path: Path, providers: Sequence[str] | None,
                    threads: int | None) -> tuple[ort.InferenceSession, str, str]:  # fmt: skip
    """Like `_session`, and on a GPU provider a profiled probe proves the graph runs there, else the CPU."""
    requested = list(providers) if providers else None
    if requested == [CPU] or (requested is None and not set(ort.get_available_providers()) - {CPU}):
        return _session(path, [CPU], threads)
    with tempfile.TemporaryDirectory(prefix="hearth-placement-") as profile_dir:
        session, provider, note = _session(path, requested, threads, profile_dir)
        if provider == CPU:
            return session, provider, note
        try:
            session.run(None, {session.get_inputs()[0].name: np.zeros((1, 3, 64, 64), np.float32)})
            events = json.loads(Path(session.end_profiling()).read_text(encoding="utf-8"))
        except Exception as exc:  # the check must never be why OCR fails
            return session, provider, f"{note} (placement not checked: {_first_line(exc)})"
    placement = summarize_placement(events, provider)
    if _mostly_on_cpu(placement):
        session, _, _ = _session(path, [CPU], threads)
        return session, CPU, f"fell back to CPU because {placement.note}"
    return session, provider, placement.note


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
