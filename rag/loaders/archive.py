"""Zip-based office files (DOCX, PPTX, XLSX, ODT): checked for bombs and encryption before any parser sees them."""

from __future__ import annotations

import zipfile
import zlib
from pathlib import Path

from rag.errors import LoadError
from rag.loaders import Limits, empty_error, unreadable_error

# Password-protected OOXML files are not zips at all but OLE compound files holding an EncryptedPackage.
_OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_ENCRYPTED_PACKAGE = "EncryptedPackage".encode("utf-16-le")


def open_checked(path: Path, limits: Limits, *, kind: str) -> zipfile.ZipFile:
    """Open an office file as a zip after checking its declared sizes; LoadError if unsafe or not one.

    Python's zipfile never yields more bytes than a member declares (it stops there and fails the CRC),
    so checking the declared sizes bounds what any parser reading through zipfile can be made to inflate.
    """
    try:
        with path.open("rb") as handle:
            head = handle.read(8)
            if not head:
                raise empty_error(path)
            if head == _OLE_MAGIC:
                handle.seek(0)
                if _ENCRYPTED_PACKAGE in handle.read(1 << 20):
                    raise LoadError(
                        f"{path.name} is encrypted: it needs a password to open.",
                        kind="encrypted",
                        hint=f"Save an unprotected copy of the {kind} file and add that instead.",
                    )
                raise LoadError(
                    f"{path.name} is an old binary Office file with a {path.suffix} name, not a {kind} file.",
                    kind="corrupt",
                    hint=f"Open it in an office program and save it as {path.suffix}.",
                )
        archive = zipfile.ZipFile(path)
    except LoadError:
        raise
    except OSError as exc:
        raise unreadable_error(path, exc) from exc
    except (zipfile.BadZipFile, ValueError, EOFError, NotImplementedError) as exc:
        # NotImplementedError: zipfile's refusal of a zip version or compression it does not know.
        raise LoadError(f"{path.name} is not a valid {kind} file or is damaged.", kind="corrupt") from exc
    try:
        check_sizes(path, archive, limits)
    except BaseException:
        archive.close()
        raise
    return archive


def check_sizes(path: Path, archive: zipfile.ZipFile, limits: Limits) -> None:
    """Refuse archives whose members would inflate past the limits (a zip bomb, or just huge)."""
    members = archive.infolist()
    if len(members) > limits.max_zip_members:
        raise _too_large(path, f"it holds {len(members)} parts; the limit is {limits.max_zip_members}")
    unpacked = sum(m.file_size for m in members)
    packed = sum(m.compress_size for m in members)
    if unpacked > limits.max_unzipped_bytes:
        raise _too_large(
            path, f"it unpacks to {unpacked / 2**20:.0f} MiB; the limit is {limits.max_unzipped_bytes / 2**20:.0f} MiB"
        )
    # Small archives may compress well (a sheet of zeros); only a big one with an absurd ratio is a bomb.
    if unpacked > 16 * 2**20 and unpacked > limits.max_zip_ratio * max(packed, 1):
        raise _too_large(path, f"it unpacks {unpacked // max(packed, 1)} times larger than it is (a zip bomb?)")


def read_member(path: Path, archive: zipfile.ZipFile, name: str, *, kind: str) -> bytes:
    """One member's bytes; LoadError (corrupt) if it is missing or damaged."""
    try:
        return archive.read(name)
    except KeyError as exc:
        raise LoadError(f"{path.name} is not a valid {kind} file: it has no {name}.", kind="corrupt") from exc
    except (zipfile.BadZipFile, OSError, ValueError, EOFError, RuntimeError, NotImplementedError, zlib.error) as exc:
        # RuntimeError: zipfile's "encrypted member" refusal; zlib.error: a damaged deflate stream.
        raise LoadError(f"{path.name} is damaged: its {name} cannot be unpacked.", kind="corrupt") from exc


def _too_large(path: Path, why: str) -> LoadError:
    return LoadError(
        f"{path.name} is too large: {why}.",
        kind="too_large",
        hint="Raise the decompressed-size limit in the settings if the file is genuine.",
    )
