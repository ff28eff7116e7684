"""E-mail messages (.eml) with the standard library: headers, the readable body, attachment names."""

from __future__ import annotations

import email
import email.policy
from email.message import EmailMessage
from pathlib import Path

from rag.errors import LoadError
from rag.loaders import DEFAULT_LIMITS, Limits, Section, TextBuilder, build_sections, full_text, read_bytes
from rag.loaders.text import decode, text_from_bytes

_HEADERS = ("From", "To", "Cc", "Date", "Subject")
# Bytes kept of one header field. The email package parses a header in time quadratic in its length
# (a 100 KB Content-Type took 9 s, a 4 MB Subject would take hours); no real header comes near this.
_MAX_HEADER = 8192
_LINE_ENDS = (b"\n", b"\r\n", b"\r")


def load(path: Path, limits: Limits = DEFAULT_LIMITS) -> list[Section]:
    """Read an .eml message as one Section headed by its subject."""
    data = read_bytes(path)
    text_from_bytes(path, data[:4096])  # refuses binary data wearing an .eml name
    try:
        message = email.message_from_bytes(_capped_headers(data), policy=email.policy.default)
        assert isinstance(message, EmailMessage)
        header_lines = []
        for name in _HEADERS:
            value = _header(message, name)
            if value:
                header_lines.append(f"{name}: {value}")
        subject = _header(message, "Subject") or None
        body = _body(message)
        attachments = [_attachment_name(part) for part in message.iter_attachments()]
    except LoadError:
        raise
    except Exception as exc:  # the email package is lenient; what still fails is damage
        raise LoadError(f"{path.name} could not be read as an e-mail ({type(exc).__name__}).", kind="corrupt") from exc
    if not body.strip() and not subject and not attachments:
        return []
    builder = TextBuilder()
    builder.paragraph("\n".join(header_lines))
    builder.paragraph(body)
    names = [n for n in attachments if n]
    if names:
        builder.paragraph("Attachments: " + ", ".join(names))
    return build_sections([builder.part(None, subject)])


def _header(message: EmailMessage, name: str) -> str:
    try:
        value = message.get(name)
    except Exception:  # a malformed header the policy cannot parse: show it raw
        value = message.get_all(name, [""])[0] if hasattr(message, "get_all") else ""
    return " ".join(str(value or "").split())


def _body(message: EmailMessage) -> str:
    """The plain-text body, else the HTML body's visible text, else nothing."""
    part = message.get_body(preferencelist=("plain", "html"))
    if part is None:
        return ""
    try:
        content = part.get_content()
    except (LookupError, UnicodeError, ValueError, AssertionError):
        # An unknown or wrong charset: decode the bytes ourselves, never failing.
        payload = part.get_payload(decode=True)
        content = decode(payload if isinstance(payload, bytes) else str(payload).encode("utf-8", "replace"))
    if not isinstance(content, str):
        content = decode(content if isinstance(content, bytes) else b"")
    if part.get_content_subtype() == "html":
        from rag.loaders.html import parse

        return full_text(parse(content))
    return content.replace("\r\n", "\n").replace("\r", "\n")


def _attachment_name(part: EmailMessage) -> str:
    try:
        return " ".join((part.get_filename() or "").split())
    except Exception:
        return ""


def _capped_headers(data: bytes) -> bytes:
    """The message with every header field cut to _MAX_HEADER bytes (folded lines included).

    Header blocks are the lines from the start, or from a line that may be a MIME boundary ("--..."),
    to the next blank line; body lines elsewhere pass through untouched.
    """
    out: list[bytes] = []
    in_header = True
    field = 0  # bytes of the current header field so far
    for line in data.splitlines(keepends=True):
        if not in_header:
            out.append(line)
            if line.startswith(b"--"):
                in_header, field = True, 0
            continue
        if line in _LINE_ENDS:
            in_header = False
            out.append(line)
            continue
        if line[:1] not in (b" ", b"\t"):
            field = 0  # a new field; otherwise a folded continuation of the current one
        if field >= _MAX_HEADER:
            continue
        if len(line) > _MAX_HEADER - field:
            line = line[: _MAX_HEADER - field].rstrip(b"\r\n") + b"\n"
        field += len(line)
        out.append(line)
    return b"".join(out)
