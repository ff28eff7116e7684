"""The model library: the built-in chat models plus every GGUF the user adds, described from file headers.

Everything shown comes from the GGUF header (read by `inference.ggufinfo` without touching the
weights): name, architecture, parameter count, quantisation, context length, licence and chat template.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from inference.errors import Cancelled, ModelError, UsageError
from inference.ggufinfo import read_gguf_info  # noqa: F401  (re-exported: a quick "is this a readable GGUF")

log = logging.getLogger(__name__)

_ADDED_FILE = "library.json"  # in the models folder: GGUF files the user added from elsewhere, by path


@dataclass(frozen=True)
class ModelCard:
    """What a GGUF header says about a chat model."""

    name: str
    architecture: str
    parameters: int  # number of weights, summed over the tensors
    quantisation: str  # e.g. "Q4_K_M", from general.file_type, else the most common tensor type
    context_length: int | None  # the context the model was trained for
    licence: str | None
    chat_template: str | None  # the file's own Jinja template, if it has one
    template: str  # what Hearth uses: "gguf" (the file's own) or a fallback's name, e.g. "gemma"
    file_size: int

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready summary (the template by name, not its text)."""
        return {
            "name": self.name,
            "architecture": self.architecture,
            "parameters": self.parameters,
            "quantisation": self.quantisation,
            "context_length": self.context_length,
            "licence": self.licence,
            "chat_template": self.template,
            "file_size": self.file_size,
        }


def read_model_card(path: Path) -> ModelCard:
    """Describe a GGUF chat model from its header; ModelError if it is not a readable GGUF file."""
    from inference.templates import fallback_name

    header = read_gguf_info(Path(path))
    meta = header.metadata
    arch = header.architecture or "unknown"
    template = meta.get("tokenizer.chat_template")
    template = template if isinstance(template, str) and template.strip() else None
    by_type: Counter[str] = Counter()
    for t in header.tensors:
        by_type[t.type_name] += t.n_elements
    ctx = meta.get(f"{arch}.context_length")
    return ModelCard(
        name=str(meta.get("general.name") or Path(path).stem),
        architecture=arch,
        parameters=sum(by_type.values()),
        quantisation=_quantisation(meta.get("general.file_type"), by_type),
        context_length=int(ctx) if isinstance(ctx, int) else None,
        licence=str(meta["general.license"]) if meta.get("general.license") else None,
        chat_template=template,
        template="gguf" if template else fallback_name(arch, _vocabulary_check(Path(path), meta)),
        file_size=header.file_size,
    )


def _vocabulary_check(path: Path, meta: dict[str, Any]) -> Callable[[str], bool]:
    """Whether the vocabulary has a token: from the header when it kept the list, else from llama.cpp."""
    tokens = meta.get("tokenizer.ggml.tokens")
    if isinstance(tokens, list):
        vocab = set(tokens)
        return vocab.__contains__
    # The header reader keeps large vocabularies as a length only; llama.cpp loads just the vocabulary.
    try:
        import llama_cpp

        from inference.llm import _no_stdio_swap

        _no_stdio_swap(llama_cpp)
        llm = llama_cpp.Llama(model_path=str(path), vocab_only=True, verbose=False)
    except Exception as exc:  # no runtime, or a vocabulary llama.cpp cannot read
        log.info("cannot read the vocabulary of %s (%s); choosing its template by architecture", path.name, exc)
        return lambda _token: False

    def has(token: str) -> bool:
        return len(llm.tokenize(token.encode("utf-8"), add_bos=False, special=True)) == 1

    return has


def _quantisation(file_type: Any, by_type: Counter[str]) -> str:
    import gguf

    if isinstance(file_type, int):
        try:
            return gguf.LlamaFileType(file_type).name.removeprefix("MOSTLY_").removeprefix("ALL_")
        except ValueError:
            pass
    return by_type.most_common(1)[0][0] if by_type else "unknown"


@dataclass(frozen=True)
class LibraryModel:
    """One entry of the library: what `--model` accepts for it, where it is, what its header says."""

    key: str  # the name to pass as --model: a built-in name, a file name in the models folder, or a path
    path: Path | None  # None for a built-in whose file is assembled on first use or not installed
    builtin: bool
    default: bool
    card: ModelCard | None
    error: str | None = None  # why the model cannot be used

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready description for `hearth models --json`."""
        out: dict[str, Any] = {
            "key": self.key,
            "path": str(self.path) if self.path else None,
            "builtin": self.builtin,
            "default": self.default,
            "error": self.error,
        }
        if self.card is not None:
            out.update(self.card.to_json())
        return out


class ModelLibrary:
    """The chat models Hearth can use: the built-ins, the models folder, and files added by path."""

    def __init__(self, models_dir: Path, cache_dir: Path) -> None:
        self.models_dir = Path(models_dir)
        self.cache_dir = Path(cache_dir)
        self._cards: dict[tuple[str, int, int], ModelCard] = {}

    def models(self) -> list[LibraryModel]:
        """Every model: the default first, the other built-ins, then the user's by file name."""
        from inference.models import CHAT_MODELS, DEFAULT_CHAT_MODEL

        out = sorted((self._builtin(n, n == DEFAULT_CHAT_MODEL) for n in CHAT_MODELS), key=lambda m: not m.default)
        seen: set[Path] = set()
        if self.models_dir.is_dir():
            for path in sorted(self.models_dir.glob("*.gguf"), key=lambda p: p.name.lower()):
                seen.add(path.resolve())
                out.append(self._entry(path.name, path))
        for path in self._added():
            if path not in seen:
                seen.add(path)
                out.append(self._entry(str(path), path))
        return out

    def add(self, path: Path) -> LibraryModel:
        """Remember a GGUF file kept elsewhere (it is not copied); raises if it is not a readable model."""
        path = Path(path).expanduser().resolve()
        if path.suffix.lower() != ".gguf":
            raise UsageError(f"{path.name} is not a .gguf file.")
        entry = self._entry(str(path), path)
        if entry.error:
            raise ModelError(entry.error)
        self._write_added([p for p in self._added() if p != path] + [path])
        return entry

    def import_file(self, path: Path, *, progress: Callable[[float], None] | None = None,
                    cancel: Callable[[], bool] | None = None) -> Path:
        """Put a GGUF into the models folder: a hard link where possible, else a copy (`progress` gets the share
        copied, `cancel` stops it and leaves nothing behind). A file that is not a readable GGUF is refused
        before gigabytes are copied; a different file of the same name already there is never replaced."""
        path = Path(path).expanduser()
        read_model_card(path)
        self.models_dir.mkdir(parents=True, exist_ok=True)
        target = self.models_dir / path.name
        if target.exists():
            if target.resolve() == path.resolve() or target.stat().st_size == path.stat().st_size:
                return target
            raise UsageError(f"The models folder already has a different {path.name}.",
                             hint="Rename the file and add it again.")
        try:
            os.link(path, target)
            return target
        except OSError:
            pass
        part = target.with_name(target.name + ".part")
        total, done = max(1, path.stat().st_size), 0
        try:
            with path.open("rb") as src, part.open("wb") as dst:
                while block := src.read(16 << 20):
                    if cancel is not None and cancel():
                        raise Cancelled("Copying the model stopped.")
                    dst.write(block)
                    done += len(block)
                    if progress is not None:
                        progress(done / total)
            part.replace(target)
        finally:
            part.unlink(missing_ok=True)
        shutil.copystat(path, target)
        return target

    def remove(self, path: Path) -> bool:
        """Forget a file added by path (the file itself stays); True if it was in the library."""
        path = Path(path).expanduser().resolve()
        added = self._added()
        if path not in added:
            return False
        self._write_added([p for p in added if p != path])
        return True

    def card(self, path: Path) -> ModelCard:
        """The header of one file, read once per version of the file (size and modification time)."""
        stat = Path(path).stat()
        key = (str(Path(path).resolve()), stat.st_size, stat.st_mtime_ns)
        if key not in self._cards:
            self._cards[key] = read_model_card(Path(path))
        return self._cards[key]

    def _entry(self, key: str, path: Path, *, builtin: bool = False, default: bool = False) -> LibraryModel:
        try:
            return LibraryModel(key, path, builtin, default, self.card(path))
        except FileNotFoundError:
            return LibraryModel(key, path, builtin, default, None, error=f"Model file not found: {path}")
        except (ModelError, OSError) as exc:
            return LibraryModel(key, path, builtin, default, None, error=str(exc))

    def _builtin(self, name: str, default: bool) -> LibraryModel:
        from inference.models import CHAT_MODELS, _locate_parts

        info = CHAT_MODELS[name]
        joined = self.cache_dir / "models" / info.file_name
        if len(info.parts) > 1 and joined.is_file() and joined.stat().st_size == info.size:
            entry = self._entry(name, joined, builtin=True, default=default)
        else:
            try:
                parts = _locate_parts(info)
            except ModelError as exc:
                return LibraryModel(name, None, True, default, None, error=str(exc))
            # Not joined yet: the header sits at the start of the first part, so it is read there rather
            # than building the whole file (`chat_model_path` does that, with its hash check, on first use).
            entry = self._entry(name, parts[0], builtin=True, default=default)
            if len(parts) > 1:
                entry = replace(entry, path=None)
        if entry.card is not None:
            entry = replace(entry, card=replace(entry.card, file_size=info.size,
                                                licence=entry.card.licence or info.licence))
        return entry

    def _added(self) -> list[Path]:
        try:
            data = json.loads((self.models_dir / _ADDED_FILE).read_text("utf-8"))
            return [Path(p) for p in data.get("added", []) if isinstance(p, str)]
        except (OSError, ValueError, AttributeError):
            return []

    def _write_added(self, paths: Iterable[Path]) -> None:
        self.models_dir.mkdir(parents=True, exist_ok=True)
        target = self.models_dir / _ADDED_FILE
        tmp = target.with_name(target.name + ".tmp")
        tmp.write_text(json.dumps({"added": [str(p) for p in paths]}, indent=1), "utf-8")
        tmp.replace(target)
