"""What a GGUF file's header says: metadata values and the tensors' names, types, shapes and offsets.

The `gguf` package's `GGUFReader` parses every array element into its own numpy view, which takes
~20 s on a 2-core machine for a model with a 150k-token vocabulary. Planning memory needs only the
scalar metadata and the tensor table, so this reader walks the header once with `struct` and keeps
long arrays (the vocabulary, merges, token types) as their length. The type tables (block sizes,
type ids) come from the `gguf` package, so they follow llama.cpp's.
"""

from __future__ import annotations

import mmap
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from inference.errors import ModelError

_MAGIC = b"GGUF"
_SCALARS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
_STRING, _ARRAY = 8, 9
_KEEP_ARRAY = 4096  # arrays longer than this (vocabularies) are kept as their length only


@dataclass(frozen=True)
class ArrayLength:
    """A metadata array too long to be worth keeping: only its element count."""

    length: int


@dataclass(frozen=True)
class TensorInfo:
    """One tensor of the file: `shape` in ggml order (ne0 first), `offset` from the file's start."""

    name: str
    type_name: str  # ggml type name as llama.cpp prints it in upper case: F32, Q4_K, IQ4_NL, ...
    type_id: int
    shape: tuple[int, ...]
    n_bytes: int
    offset: int

    @property
    def n_elements(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n


@dataclass(frozen=True)
class GgufInfo:
    """The header of a GGUF file."""

    path: Path
    version: int
    metadata: dict[str, Any]
    tensors: tuple[TensorInfo, ...]
    alignment: int
    data_offset: int
    file_size: int

    @property
    def architecture(self) -> str:
        return str(self.metadata.get("general.architecture", ""))

    def get(self, key: str, default: Any = None) -> Any:
        """A metadata value under the architecture's prefix (`block_count` → `llama.block_count`)."""
        return self.metadata.get(f"{self.architecture}.{key}", default)

    def tensor(self, name: str) -> TensorInfo | None:
        """The tensor called `name`, or None."""
        for t in self.tensors:
            if t.name == name:
                return t
        return None


def row_size(type_id: int, n: int) -> int:
    """Bytes of `n` consecutive elements of ggml type `type_id` (n a multiple of the block size)."""
    import gguf

    block, size = gguf.GGML_QUANT_SIZES[gguf.GGMLQuantizationType(type_id)]
    return n // block * size


def type_name(type_id: int) -> str:
    """The ggml type's name (upper case, as in gguf.GGMLQuantizationType)."""
    import gguf

    try:
        return gguf.GGMLQuantizationType(type_id).name
    except ValueError:
        return f"TYPE{type_id}"


def type_id(name: str) -> int:
    """The ggml type id of a name such as 'f16', 'q8_0', 'Q4_K'."""
    import gguf

    try:
        return int(gguf.GGMLQuantizationType[name.upper()])
    except KeyError:
        raise ValueError(f"unknown ggml type {name!r}") from None


def read_gguf_info(path: Path) -> GgufInfo:
    """Read the header of the GGUF file at `path` (metadata and tensor table, no weights)."""
    path = Path(path)
    try:
        with path.open("rb") as fh:
            size = path.stat().st_size
            if size < 24:
                raise ModelError(f"{path.name} is too small to be a GGUF model ({size} bytes).")
            with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
                return _parse(path, mm, size)
    except OSError as exc:
        raise ModelError(f"Cannot read the model file {path}: {exc.strerror or exc}.") from exc
    except (struct.error, IndexError, UnicodeDecodeError, ValueError) as exc:
        raise ModelError(
            f"{path.name} is not a readable GGUF model (its header is damaged or cut short).",
            hint="A partial download cannot be used; fetch or copy the file again.",
        ) from exc


class _Cursor:
    def __init__(self, buf: mmap.mmap, endian: str) -> None:
        self.buf = buf
        self.pos = 0
        self.e = endian

    def take(self, fmt: str) -> Any:
        value = struct.unpack_from(self.e + fmt, self.buf, self.pos)[0]
        self.pos += struct.calcsize(fmt)
        return value

    def string(self) -> str:
        n = self.take("Q")
        if n > len(self.buf) - self.pos:
            raise ValueError("string runs past the end of the file")
        s = bytes(self.buf[self.pos : self.pos + n]).decode("utf-8", "replace")
        self.pos += n
        return s

    def skip_strings(self, count: int) -> None:
        unpack, e, buf = struct.unpack_from, self.e + "Q", self.buf
        pos = self.pos
        for _ in range(count):
            pos += 8 + unpack(e, buf, pos)[0]
        if pos > len(buf):
            raise ValueError("array runs past the end of the file")
        self.pos = pos

    def value(self, vtype: int) -> Any:
        if vtype in _SCALARS:
            return self.take(_SCALARS[vtype])
        if vtype == _STRING:
            return self.string()
        if vtype == _ARRAY:
            etype = self.take("I")
            count = self.take("Q")
            if count > _KEEP_ARRAY:
                if etype == _STRING:
                    self.skip_strings(count)
                elif etype in _SCALARS:
                    self.pos += count * struct.calcsize(_SCALARS[etype])
                else:
                    raise ValueError("nested arrays are not supported")
                return ArrayLength(count)
            return [self.value(etype) for _ in range(count)]
        raise ValueError(f"unknown metadata type {vtype}")


def _parse(path: Path, mm: mmap.mmap, size: int) -> GgufInfo:
    if mm[:4] != _MAGIC:
        raise ModelError(f"{path.name} is not a GGUF model (wrong magic bytes).")
    endian = "<"
    version = struct.unpack_from("<I", mm, 4)[0]
    if version > 0xFFFF:  # a big-endian file reads as a huge number
        endian, version = ">", struct.unpack_from(">I", mm, 4)[0]
    if version < 2:
        raise ModelError(f"{path.name} is GGUF version {version}, which llama.cpp no longer reads.")
    cur = _Cursor(mm, endian)
    cur.pos = 8
    n_tensors = cur.take("Q")
    n_kv = cur.take("Q")
    metadata: dict[str, Any] = {}
    for _ in range(n_kv):
        key = cur.string()
        metadata[key] = cur.value(cur.take("I"))
    raw = []
    for _ in range(n_tensors):
        name = cur.string()
        n_dims = cur.take("I")
        shape = tuple(int(cur.take("Q")) for _ in range(n_dims))
        tid = cur.take("I")
        offset = cur.take("Q")
        raw.append((name, shape, tid, offset))
    alignment = int(metadata.get("general.alignment", 32) or 32)
    data_offset = -(-cur.pos // alignment) * alignment
    tensors = []
    for name, shape, tid, offset in raw:
        n = 1
        for d in shape:
            n *= d
        nbytes = row_size(tid, n) if shape else 0
        tensors.append(TensorInfo(name, type_name(tid), tid, shape, nbytes, data_offset + offset))
    return GgufInfo(path, version, metadata, tuple(tensors), alignment, data_offset, size)
