"""Pictures (PNG, JPEG, TIFF, WebP) read by OCR: one Section per page, a TIFF's frames being its pages."""

from __future__ import annotations

import warnings
from pathlib import Path

from PIL import Image, ImageOps, UnidentifiedImageError

from inference.errors import HearthError
from rag.errors import LoadError
from rag.loaders import DEFAULT_LIMITS, Limits, Section, build_sections, empty_error, read_bytes, too_many_pages
from rag.loaders import scan


def load(path: Path, limits: Limits = DEFAULT_LIMITS) -> list[Section]:
    """Read the text on a picture, one Section per frame of a multi-page TIFF; LoadError if it is not a picture."""
    data = read_bytes(path)
    if not data:
        raise empty_error(path)
    pages = {}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)  # our own pixel cap decides
            image = scan.open_picture(data)
            # Only a TIFF's frames are pages; an animated PNG or WebP is one picture.
            frames = getattr(image, "n_frames", 1) if image.format == "TIFF" else 1
            if frames > limits.max_pages or frames > limits.max_ocr_pages:
                raise too_many_pages(path, frames, min(limits.max_pages, limits.max_ocr_pages))
            for index in range(frames):
                image.seek(index)
                pixels = image.width * image.height
                if pixels > limits.max_image_pixels:
                    raise LoadError(
                        f"{path.name} is too large: a picture of {image.width} x {image.height} pixels; "
                        f"the limit is {limits.max_image_pixels / 1e6:.0f} million.",
                        kind="too_large",
                        hint="Scan or save it at a lower resolution (300 dpi is plenty).",
                    )
                page = ImageOps.exif_transpose(image) if index == 0 else image.copy()
                page.load()
                if not scan.is_blank(page):
                    pages[index + 1] = scan.read(page)
    except LoadError:
        raise
    except HearthError as exc:  # the OCR models or runtime, not the file
        raise scan.unavailable(path, exc) from exc
    except Image.DecompressionBombError as exc:
        raise LoadError(f"{path.name} is too large: {exc}", kind="too_large") from exc
    except UnidentifiedImageError as exc:  # no format Hearth reads: never handed to another program to find out
        raise _not_a_picture(path, data) from exc
    except MemoryError:
        raise
    except Exception as exc:  # Pillow raises OSError, ValueError, SyntaxError, struct.error… on damaged data
        raise _damaged(path) from exc
    sections = build_sections((page.text, number, None) for number, page in pages.items())
    return scan.attach(sections, pages)


def _not_a_picture(path: Path, data: bytes) -> LoadError:
    """The LoadError for a file named as a picture in no format Hearth reads: PostScript says so, junk is damaged."""
    what = scan.format_name(data)
    if what is None:
        return _damaged(path)
    return LoadError(
        f"{path.name} is not a PNG, JPEG, TIFF or WebP picture (it holds {what}), the only pictures Hearth reads.",
        kind="unsupported",
        hint="Open it in the program that made it and save or export it as PNG or JPEG, or as PDF.",
    )


def _damaged(path: Path) -> LoadError:
    return LoadError(
        f"{path.name} is not a picture Hearth can read, or it is damaged.",
        kind="corrupt",
        hint="Open it in an image viewer and save it again as PNG or JPEG.",
    )
