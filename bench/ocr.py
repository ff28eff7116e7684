"""OCR benchmark: pages of known text rendered with Pillow, read by Hearth's OCR and by tesseract alone.

    python -m bench.ocr [--json] [--threads N] [--repeat N]

Pages: English and Russian, 150 and 300 dpi, clean; one turned 2°; one with noise and uneven light (a shadow
across the page, grey paper). Engines: "pp-ocr+ort" is Hearth's (inference/ocr.py: PP-OCRv6 detection and
recognition on ONNX Runtime, tesseract for the lines it cannot read), on the CPU and, when a GPU provider of
ONNX Runtime works, on that too; "tesseract" is tesseract alone on the whole page (`-l rus+eng`).
Reported per engine × language × dpi (× variant): pages/s and the character error rate (edit distance over
the reference's length, whitespace runs counted as one space). The font is DejaVu (`font()`), installed with
Debian's fonts-dejavu-core.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image, ImageDraw, ImageFilter, ImageFont

TEXT = {
    "en": [
        "The quarterly report was delivered on 14 March 2024.",
        "Revenue grew by 7.5% while costs fell slightly overall.",
        "Please send questions to the finance team before Friday.",
        "Quick brown foxes jump over lazy dogs near the river.",
    ],
    "ru": [
        "Квартальный отчёт был представлен 14 марта 2024 года.",
        "Выручка выросла на 7,5%, а расходы немного снизились.",
        "Съешь же ещё этих мягких французских булок, да выпей чаю.",
        "Вопросы направляйте в финансовый отдел до пятницы.",
    ],
}
_FONT_DIRS = ("/usr/share/fonts/truetype/dejavu", "/usr/share/fonts/dejavu", "/usr/local/share/fonts")


def font(name: str = "DejaVuSerif.ttf") -> Path:
    """The path of a DejaVu font file (Debian: fonts-dejavu-core), found in the usual folders or by fc-match."""
    for folder in _FONT_DIRS:
        if Path(folder, name).is_file():
            return Path(folder, name)
    try:
        found = subprocess.run(["fc-match", "-f", "%{file}", Path(name).stem], capture_output=True, text=True,
                               timeout=30, check=False).stdout.strip()  # fmt: skip
    except OSError:
        found = ""
    if found and Path(found).name == name:
        return Path(found)
    raise FileNotFoundError(f"The font {name} is not installed (apt-get install fonts-dejavu-core).")


def render_page(lines: list[str], *, dpi: int = 300, points: float = 12, width_in: float = 8.27,
                angle: float = 0.0, noise: bool = False, seed: int = 0) -> Image.Image:  # fmt: skip
    """A page image of `lines` in a serif font, one line per entry ("" leaves a blank line between blocks)."""
    size = round(points * dpi / 72)
    face = ImageFont.truetype(str(font()), size)
    margin, pitch = round(0.6 * dpi), round(size * 1.5)
    page = Image.new("L", (round(width_in * dpi), 2 * margin + pitch * len(lines)), 255)
    draw = ImageDraw.Draw(page)
    for i, line in enumerate(lines):
        draw.text((margin, margin + i * pitch), line, font=face, fill=0)
    if angle:
        page = page.rotate(angle, Image.Resampling.BICUBIC, expand=True, fillcolor=255)
    page = page.filter(ImageFilter.GaussianBlur(0.6 * dpi / 300))  # a scanner's softness
    if noise:
        pixels = np.asarray(page, dtype=np.float32)
        rng = np.random.default_rng(seed)
        light = np.linspace(1.0, 0.6, pixels.shape[1], dtype=np.float32)[None, :]  # a shadow to one side
        pixels = pixels * 0.9 * light + 10 + rng.normal(0, 14, pixels.shape)
        page = Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8))
    return page.convert("RGB")


def cer(read: str, truth: str) -> float:
    """Character error rate: edit distance over the reference's length, whitespace runs as one space."""
    a, b = " ".join(read.split()), " ".join(truth.split())
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1] / max(1, len(b))


def pages() -> list[dict[str, Any]]:
    """The benchmark's pages: (lang, dpi, variant, image, truth)."""
    out = []
    for lang, lines in TEXT.items():
        for dpi in (150, 300):
            out.append({"lang": lang, "dpi": dpi, "variant": "clean", "image": render_page(lines, dpi=dpi)})
        out.append({"lang": lang, "dpi": 300, "variant": "rotated 2°", "image": render_page(lines, angle=2)})
        out.append({"lang": lang, "dpi": 200, "variant": "noise, uneven light",
                    "image": render_page(lines, dpi=200, noise=True, seed=len(out))})  # fmt: skip
    for page in out:
        page["truth"] = "\n".join(TEXT[page["lang"]])
    return out


def run(*, threads: int | None, repeat: int) -> dict[str, Any]:
    """Read every page with every engine available; rows of CER and pages/s."""
    import onnxruntime as ort

    from inference.ocr import OnnxOcr, read_with_tesseract, tesseract_languages

    engines: list[tuple[str, Any, str]] = []
    cpu = OnnxOcr(providers=["CPUExecutionProvider"], threads=threads)
    engines.append(("pp-ocr+ort", cpu.read, cpu.provider_note))
    if set(ort.get_available_providers()) - {"CPUExecutionProvider", "AzureExecutionProvider"}:
        gpu = OnnxOcr(threads=threads)
        if gpu.provider != "CPUExecutionProvider":
            engines.append(("pp-ocr+ort", gpu.read, gpu.provider_note))
    if {"eng", "rus"} <= set(tesseract_languages()):
        engines.append(("tesseract", read_with_tesseract, "tesseract rus+eng, CPU, 1 thread"))
    rows = []
    for name, read, provider in engines:
        for page in pages():
            read(page["image"])  # warm-up: first shapes, page caches
            t0 = time.perf_counter()
            for _ in range(repeat):
                result = read(page["image"])
            seconds = (time.perf_counter() - t0) / repeat
            rows.append({"engine": name, "provider": provider, "lang": page["lang"], "dpi": page["dpi"],
                         "variant": page["variant"], "cer": round(cer(result.text, page["truth"]), 4),
                         "confidence": result.confidence, "pages_per_s": round(1 / seconds, 2)})  # fmt: skip
    return {"rows": rows, "threads": threads, "loadavg": Path("/proc/loadavg").read_text().split()[:3]
            if Path("/proc/loadavg").exists() else None, "onnxruntime": ort.__version__}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.ocr", description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument("--threads", type=int, default=1, help="ONNX Runtime threads (default 1)")
    parser.add_argument("--repeat", type=int, default=1, help="timed reads per page (default 1)")
    args = parser.parse_args(argv)
    result = run(threads=args.threads, repeat=args.repeat)
    if args.json:
        print(json.dumps(result, ensure_ascii=False, indent=1))
        return 0
    print(f"load average {' '.join(result['loadavg'] or ['?'])}, {args.threads} thread(s), "
          f"onnxruntime {result['onnxruntime']}", file=sys.stderr)  # fmt: skip
    print("| engine | provider | lang | dpi | page | CER | confidence | pages/s |")
    print("|---|---|---|---|---|---|---|---|")
    for r in result["rows"]:
        print(f"| {r['engine']} | {r['provider']} | {r['lang']} | {r['dpi']} | {r['variant']} | {r['cer']:.3f} | "
              f"{r['confidence']:.2f} | {r['pages_per_s']:.2f} |")  # fmt: skip
    return 0


if __name__ == "__main__":
    os.environ.setdefault("OMP_THREAD_LIMIT", "1")
    raise SystemExit(main())
