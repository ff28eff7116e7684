"""Page geometry for OCR, in numpy and Pillow alone: ink, skew, text boxes from the detector's map, reading order.

    ink_mask(grey)              dark-on-local-paper pixels, robust to uneven light
    skew_angle(image)           the small rotation (degrees, Pillow's sense) that levels the text lines
    text_boxes(prob)            boxes of text in a DB probability map, in reading order (recursive XY-cut)
    block_starts(boxes)         which boxes open a new block (paragraph gap or new column)
    unrotate_box(box, ...)      a box on the deskewed page mapped back onto the page as it was scanned
"""

from __future__ import annotations

import math

import numpy as np
from PIL import Image, ImageFilter

Box = tuple[float, float, float, float]  # x0, y0, x1, y1

# A pixel is ink when darker than this share of the paper around it: the paper's brightness is taken
# locally, so a page lit unevenly (a photo, a scan with a shadow) still separates.
_INK_SHARE = 0.7
_SKEW_LIMIT = 5.0  # degrees searched either way; a page turned further is not "skewed" but rotated
_SKEW_SIDE = 900  # the long side, in pixels, at which the skew is measured


def ink_mask(grey: Image.Image) -> np.ndarray:
    """Boolean array: True where the pixel is darker than the paper around it."""
    w, h = grey.size
    small = grey.resize((max(1, w // 8), max(1, h // 8)), Image.Resampling.BOX).filter(ImageFilter.MaxFilter(5))
    paper = np.asarray(small.resize((w, h), Image.Resampling.BILINEAR), dtype=np.float32)
    return np.asarray(grey, dtype=np.float32) < paper * _INK_SHARE


def skew_angle(image: Image.Image) -> float:
    """The rotation in degrees (counter-clockwise, as `Image.rotate` takes it) that levels the lines; 0.0 if none.

    Projection profiles: the angle at which the ink's row sums are most uneven is the one where rows of
    ink and rows of paper alternate, i.e. the lines are level.
    """
    grey = image.convert("L")
    scale = _SKEW_SIDE / max(grey.size)
    if scale < 1:
        grey = grey.resize((max(1, round(grey.width * scale)), max(1, round(grey.height * scale))),
                           Image.Resampling.BOX)  # fmt: skip
    ink = ink_mask(grey)
    if ink.sum() < 50:
        return 0.0
    picture = Image.fromarray(ink.astype(np.uint8) * 255)

    def score(angle: float) -> float:
        rows = np.asarray(picture.rotate(angle, Image.Resampling.NEAREST), dtype=np.float32).sum(axis=1)
        return float(np.square(rows).sum())

    coarse = max(np.arange(-_SKEW_LIMIT, _SKEW_LIMIT + 0.01, 0.5), key=score)
    best = max(np.arange(coarse - 0.4, coarse + 0.41, 0.1), key=score)
    if score(best) <= score(0.0) * 1.02:  # not clearly better than level: leave the page alone
        return 0.0
    return round(float(best), 2)


def text_boxes(prob: np.ndarray, *, thresh: float = 0.3, box_thresh: float = 0.5) -> list[Box]:
    """Text boxes (x0, y0, x1, y1, in map pixels, before expansion) in reading order: columns left to right,
    lines top to bottom, pieces of a line left to right.

    Recursive XY-cut on the thresholded map: a region is split at its widest empty band of rows or
    columns; a column gap splits only when wider than 1.5 line heights, so the spaces between words do not.
    """
    mask = prob > thresh
    boxes: list[Box] = []
    stack = [(0, mask.shape[0], 0, mask.shape[1])]
    while stack:
        y0, y1, x0, x1 = stack.pop()
        rows = mask[y0:y1, x0:x1].any(axis=1)
        if not rows.any():
            continue
        ys = np.flatnonzero(rows)
        y0, y1 = y0 + int(ys[0]), y0 + int(ys[-1]) + 1
        cols = mask[y0:y1, x0:x1].any(axis=0)
        xs = np.flatnonzero(cols)
        x0, x1 = x0 + int(xs[0]), x0 + int(xs[-1]) + 1
        sub = mask[y0:y1, x0:x1]
        row_gaps, col_gaps = _runs(sub.any(axis=1), False), _runs(sub.any(axis=0), False)
        line = float(np.median([b - a for a, b in _runs(sub.any(axis=1), True)]))
        widest_row = max(row_gaps, key=lambda g: g[1] - g[0], default=None)
        widest_col = max(col_gaps, key=lambda g: g[1] - g[0], default=None)
        row_width = widest_row[1] - widest_row[0] if widest_row else 0
        col_width = widest_col[1] - widest_col[0] if widest_col else 0
        if col_width >= max(1.5 * line, 4) and col_width > row_width:
            cut = x0 + (widest_col[0] + widest_col[1]) // 2
            stack += [(y0, y1, cut, x1), (y0, y1, x0, cut)]  # popped left first
        elif widest_row:
            cut = y0 + (widest_row[0] + widest_row[1]) // 2
            stack += [(cut, y1, x0, x1), (y0, cut, x0, x1)]
        elif y1 - y0 >= 2 and x1 - x0 >= 3 and float(prob[y0:y1, x0:x1].mean()) >= box_thresh:
            boxes.append((float(x0), float(y0), float(x1), float(y1)))
        if len(boxes) >= 5000:  # a page of noise; what was found is more than any real page holds
            break
    return boxes


def _runs(profile: np.ndarray, value: bool) -> list[tuple[int, int]]:
    """[start, end) of each run of `value` in a 1-D boolean array."""
    padded = np.concatenate(([0], profile == value, [0])).astype(np.int8)
    edges = np.diff(padded)
    return list(zip(np.flatnonzero(edges == 1).tolist(), np.flatnonzero(edges == -1).tolist()))


def expand(box: Box, ratio: float = 1.5) -> Box:
    """The detector's shrunk text kernel grown back to the text's size (DB "unclip", for an upright box)."""
    x0, y0, x1, y1 = box
    w, h = x1 - x0, y1 - y0
    d = w * h * ratio / (2 * (w + h))
    return (x0 - d, y0 - d, x1 + d, y1 + d)


def same_line(a: Box, b: Box) -> bool:
    """True when `b` follows `a` on the same line: to its right and overlapping most of the lower one's height."""
    overlap = min(a[3], b[3]) - max(a[1], b[1])
    return b[0] >= a[2] - 1 and overlap >= 0.5 * min(a[3] - a[1], b[3] - b[1])


def block_starts(lines: list[Box]) -> list[bool]:
    """For each line box (in reading order), whether it opens a new block: a new column, or a gap above it
    clearly wider than the usual gap between lines."""
    gaps = [b[1] - a[3] for a, b in zip(lines, lines[1:]) if b[1] >= a[1]]
    heights = [b[3] - b[1] for b in lines]
    usual = float(np.median(gaps)) if gaps else 0.0
    height = float(np.median(heights)) if heights else 0.0
    limit = max(1.6 * usual, usual + 0.5 * height)
    starts = [True]
    for a, b in zip(lines, lines[1:]):
        column = b[1] < a[1] or b[0] >= a[2] or b[2] <= a[0]
        starts.append(column or b[1] - a[3] > limit)
    return starts


def unrotate_box(box: Box, angle: float, rotated: tuple[int, int], original: tuple[int, int]) -> Box:
    """Map a box on a page turned by `Image.rotate(angle, expand=True)` back onto the page before turning;
    sizes are (width, height). Returns the upright box around the four mapped corners."""
    if not angle:
        return box
    theta = math.radians(angle)
    cos, sin = math.cos(theta), math.sin(theta)
    (rw, rh), (ow, oh) = rotated, original
    xs, ys = [], []
    for x, y in ((box[0], box[1]), (box[2], box[1]), (box[0], box[3]), (box[2], box[3])):
        dx, dy = x - rw / 2, y - rh / 2
        # Pillow turns the content counter-clockwise on screen (y down); this is the inverse turn.
        xs.append(ow / 2 + dx * cos - dy * sin)
        ys.append(oh / 2 + dx * sin + dy * cos)
    return (max(0.0, min(xs)), max(0.0, min(ys)), min(float(ow), max(xs)), min(float(oh), max(ys)))
