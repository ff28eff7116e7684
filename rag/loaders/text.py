"""Plain text files: guess the encoding without ever failing, normalise newlines, one Section."""

from __future__ import annotations

import codecs
import re
from pathlib import Path

from rag.errors import LoadError
from rag.loaders import DEFAULT_LIMITS, Limits, Section, build_sections, read_bytes

_BOMS: tuple[tuple[bytes, str], ...] = (
    # UTF-32 first: its LE BOM starts with the UTF-16 LE one.
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)

# A well-formed UTF-8 sequence of two or more bytes (RFC 3629: no overlongs, no surrogates).
_UTF8_MULTIBYTE = re.compile(
    rb"[\xc2-\xdf][\x80-\xbf]"
    rb"|\xe0[\xa0-\xbf][\x80-\xbf]|[\xe1-\xec\xee\xef][\x80-\xbf]{2}|\xed[\x80-\x9f][\x80-\xbf]"
    rb"|\xf0[\x90-\xbf][\x80-\xbf]{2}|[\xf1-\xf3][\x80-\xbf]{3}|\xf4[\x80-\x8f][\x80-\xbf]{2}"
)

_HIGH_BYTES = bytes(range(0x80, 0x100))

# Control characters that are never text; tabs, newlines and form feeds stay.
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f]")


def load(path: Path, limits: Limits = DEFAULT_LIMITS) -> list[Section]:
    """Read a plain text file as a single Section."""
    return build_sections([(read_text(path), None, None)])


def read_text(path: Path) -> str:
    """A text file's content as str; LoadError if it cannot be opened or is binary data."""
    return text_from_bytes(path, read_bytes(path))


def text_from_bytes(path: Path, data: bytes, *, declared: str | None = None) -> str:
    """The text in a file's bytes (`declared` is a charset the file names); LoadError for binary data."""
    if _looks_binary(data):
        raise LoadError(
            f"{path.name} does not contain text; it looks like binary data with the wrong suffix.",
            kind="corrupt",
        )
    return decode(data, declared=declared)


def decode(data: bytes, *, declared: str | None = None) -> str:
    """Decode bytes of unknown encoding to text with "\\n" newlines; never raises on bad bytes."""
    return normalise(_decode(data, declared))


def normalise(text: str) -> str:
    """Unify newlines to "\\n" and drop control characters that are never part of the text."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return _CONTROL.sub("", text)


def _decode(data: bytes, declared: str | None) -> str:
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            return data[len(bom) :].decode(encoding, errors="replace")
    if declared is not None:
        try:
            return data.decode(_known_codec(declared), errors="strict")
        except (LookupError, UnicodeError, ValueError):
            pass  # the declaration is wrong or unknown; guess as if there were none
    utf16 = _bomless_utf16(data)
    if utf16 is not None:
        return data.decode(utf16, errors="replace")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    if _mostly_utf8(data):
        # A UTF-8 file with a few damaged bytes: keep its accents, mark only the damage.
        return data.decode("utf-8", errors="replace")
    guessed = _non_western(data)
    if guessed is not None:
        return guessed
    try:
        # Office files that are not UTF-8 are nearly always Windows-1252 in Western Europe.
        return data.decode("cp1252")
    except UnicodeDecodeError:
        # cp1252 leaves five bytes undefined; latin-1 maps every byte, so this cannot fail.
        return data.decode("latin-1")


def _non_western(data: bytes) -> str | None:
    """The text of a legacy non-Western encoding (Cyrillic, Greek, CJK...), when the bytes clearly are one.

    Western European text has a few accented letters among ASCII; Cyrillic, Greek or CJK text in a
    single- or double-byte code page is mostly high bytes. Only then is a statistical detector asked:
    on short or mostly-ASCII text it guesses wildly, and Windows-1252 is the better bet.
    """
    sample = data[:65536]
    high = len(sample) - len(sample.translate(None, _HIGH_BYTES))
    visible = len(sample.translate(None, b" \t\r\n"))
    if high < 16 or high < 0.3 * visible:
        return None
    try:
        from charset_normalizer import from_bytes
    except ImportError:  # pragma: no cover - a declared dependency
        return None
    best = from_bytes(sample).best()
    if best is None or best.chaos > 0.2:
        return None
    try:
        return data.decode(best.encoding, errors="replace")
    except LookupError:
        return None


def _known_codec(name: str) -> str:
    """A codec name Python knows for a declared charset; the WHATWG rule reads latin-1 as cp1252."""
    info = codecs.lookup(name.strip().strip("\"'"))
    if info.name in {"latin-1", "iso8859-1", "ascii"}:
        return "cp1252"
    if info.name.startswith(("utf-16", "utf-32")):
        # A declaration we could read in ASCII cannot be true; browsers treat it as UTF-8 too.
        return "utf-8"
    return info.name


def _bomless_utf16(data: bytes) -> str | None:
    """'utf-16-le'/'-be' when the bytes look like UTF-16 text without a BOM (NULs in every other byte)."""
    sample = data[:4096]
    if len(sample) < 4 or len(sample) % 2:
        return None
    even_nuls = sample[0::2].count(0)
    odd_nuls = sample[1::2].count(0)
    half = len(sample) // 2
    # Latin text in UTF-16 has a NUL in nearly every high byte and almost none in the low bytes.
    if odd_nuls > 0.6 * half and even_nuls < 0.1 * half:
        return "utf-16-le"
    if even_nuls > 0.6 * half and odd_nuls < 0.1 * half:
        return "utf-16-be"
    return None


def _looks_binary(data: bytes) -> bool:
    """True for data with NUL bytes that is not UTF-16/32 text (images, archives, office binaries)."""
    sample = data[:4096]
    if b"\x00" not in sample:
        return False
    if any(sample.startswith(bom) for bom, _ in _BOMS):
        return False
    return _bomless_utf16(data) is None


def _mostly_utf8(data: bytes) -> bool:
    """True when the bytes hold more valid UTF-8 multi-byte sequences than invalid bytes."""
    valid = len(_UTF8_MULTIBYTE.findall(data))
    if valid == 0:
        return False
    # Every byte that is not part of a valid sequence and not ASCII is damage.
    stripped = _UTF8_MULTIBYTE.sub(b"", data)
    invalid = len(stripped) - len(stripped.translate(None, _HIGH_BYTES))
    return valid > invalid
