"""The llama.cpp chat model (GGUF files), Hearth's in-process implementation of `inference.chat.ChatModel`.

`LlamaCppModel` renders prompts with the model's own chat template (or a correct fallback, see
`inference.templates`) and drives llama.cpp's token loop itself rather than through
`create_chat_completion`, so that:
- the prompt plus the answer can never overflow the context (the answer is capped to the room left);
- cancel takes effect within one token, and also during the prompt's evaluation (llama.cpp's abort callback);
- the KV cache of the prompt prefix shared with the previous request (the fixed system prompt) is reused,
  and `prefill` can compute it ahead of the first question;
- the number of threads follows the CPUs other programs leave free (`CpuMeter`);
- the template's own turn markers are the only special tokens in a prompt: messages' contents (questions,
  passages of documents) are tokenized as plain text, so a document cannot open or close a turn.
"""

from __future__ import annotations

import codecs
import ctypes
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from inference.chat import ChatModelDefaults, Message
from inference.cpus import CpuMeter, default_threads
from inference.errors import Cancelled, ModelError
from inference.layer_output import LayerReader
from inference.templates import ChatTemplate, select_template

log = logging.getLogger(__name__)

_SENTINEL = "\u2063hearth-prefix\u2063"  # marks where the variable part of a prompt starts
_C_SPACE = " \t\n\v\f\r"  # what C's isspace() strips next to a token marked lstrip/rstrip
Parts = list[tuple[str, bool]]  # a prompt's text in pieces: (text, written by the template itself)


class ContextOverflow(ModelError):
    """The prompt alone fills the model's context; nothing was run."""


class _KeepStdio:
    """Stands in for llama-cpp-python's `suppress_stdout_stderr`, without touching stdout or stderr."""

    def __init__(self, disable: bool = True) -> None:
        pass

    def __enter__(self) -> _KeepStdio:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


def _no_stdio_swap(llama_cpp: Any) -> None:
    # While it loads a model, llama-cpp-python points the whole process's stdout and stderr (the file
    # descriptors and sys.stdout/sys.stderr) at /dev/null. Hearth loads models in a background thread,
    # so output of other threads would vanish meanwhile, and a save/restore in another thread that
    # overlaps it leaves stdout pointing at /dev/null for good (a `hearth ask` printed nothing once).
    # llama.cpp's own log lines still go through llama-cpp-python's logger (errors only when not verbose).
    import llama_cpp._internals as internals
    import llama_cpp.llama as llama_module

    for module in (llama_module, internals):
        if getattr(module, "suppress_stdout_stderr", None) is not _KeepStdio:
            module.suppress_stdout_stderr = _KeepStdio


class LlamaCppModel(ChatModelDefaults):
    """A GGUF chat model run in-process by llama.cpp (llama-cpp-python)."""

    def __init__(
        self,
        path: Path,
        *,
        n_ctx: int = 4096,
        n_threads: int | None = None,
        n_gpu_layers: int = 0,
        seed: int = 0,
        adaptive_threads: bool = True,
    ) -> None:
        """Load a GGUF file; `adaptive_threads` lowers generation threads while other programs hold the cores."""
        try:
            import llama_cpp
        except ImportError as exc:
            raise ModelError(
                "The llama.cpp runtime is not installed.", hint="pip install llama-cpp-python"
            ) from exc
        if not path.is_file():
            raise ModelError(f"Model file not found: {path}")
        _no_stdio_swap(llama_cpp)
        threads = n_threads or default_threads()
        t0 = time.perf_counter()
        from inference.offload import capture_llama_log, parse_load_log

        try:
            # llama.cpp says what it allocated only in its log: keep the lines for `load_report`.
            with capture_llama_log() as load_log:
                self._llm = llama_cpp.Llama(
                    model_path=str(path),
                    n_ctx=n_ctx,
                    n_threads=threads,
                    n_threads_batch=max(threads, n_threads or (os.cpu_count() or 1)),  # reading a prompt
                    n_gpu_layers=n_gpu_layers,
                    seed=seed,
                    verbose=False,
                )
        except (ValueError, RuntimeError, OSError) as exc:
            raise ModelError(
                f"Cannot load the model {path.name}: {exc}",
                hint="Check that the file is a complete GGUF model; a partial download cannot load.",
            ) from exc
        self._lib = llama_cpp
        self.load_seconds = time.perf_counter() - t0
        self.n_gpu_layers = n_gpu_layers
        self.load_report = parse_load_log(load_log)  # what llama.cpp really allocated, per device
        self.path = path
        self.name = path.stem
        # llama.cpp may round the context up, but llama-cpp-python's token buffer has the size asked for.
        self.n_ctx = min(int(self._llm.n_ctx()), len(self._llm.input_ids))
        self.n_threads = threads  # the most generation threads; fewer while the machine is busy
        self.n_threads_batch = max(threads, n_threads or (os.cpu_count() or 1))
        self.threads_in_use = threads
        self.threads_batch_in_use = self.n_threads_batch
        self._meter = CpuMeter() if adaptive_threads and n_gpu_layers == 0 else None
        self.metadata: dict[str, str] = dict(self._llm.metadata or {})
        self._vocab = llama_cpp.llama_model_get_vocab(self._llm.model)
        self._piece_buf = ctypes.create_string_buffer(64)
        self.bos_token = self._special_text(self._llm.token_bos())
        self.eos_token = self._special_text(self._llm.token_eos())
        self.template: ChatTemplate = select_template(
            architecture=self.metadata.get("general.architecture"),
            gguf_template=self.metadata.get("tokenizer.chat_template"),
            has_token=self._has_token,
        )
        self.chat_format = "gguf-template" if self.template.name == "gguf" else self.template.name
        self._lock = threading.Lock()  # one request at a time: the KV cache is shared state
        self._abort_check: Callable[[], bool] | None = None
        self._specials: list[tuple[str, int, int]] | None = None  # control tokens' (text, id, attributes)
        self._abort_cb = llama_cpp.ggml_abort_callback(self._abort_requested)
        self._no_abort_cb = llama_cpp.ggml_abort_callback()  # a NULL callback: no per-step Python call
        self._closed = False
        self._layers: LayerReader | None = None  # made on the first `layer_state`
        self.last_usage: dict[str, int] = {}

    @property
    def llama(self) -> Any:
        """The underlying `llama_cpp.Llama` (read-only; for reading back what llama.cpp did)."""
        return self._llm

    # Prompts.
    def count_tokens(self, text: str) -> int:
        """Tokens the model's own tokenizer makes of a text as a message's content (plain text, no BOS)."""
        return len(self._llm.tokenize(text.encode("utf-8", "replace"), add_bos=False, special=False))

    def render(self, messages: Sequence[Message]) -> str:
        """The prompt text for a conversation, in the model's chat template, assistant turn opened."""
        return self.template.render(self._clean(messages), bos_token=self.bos_token, eos_token=self.eos_token)

    def prompt_tokens(self, messages: Sequence[Message]) -> list[int]:
        """The token ids llama.cpp will evaluate for a conversation."""
        return self._tokenize_parts(self._prompt_parts(messages))

    def count_prompt(self, messages: Sequence[Message]) -> int:
        """How many tokens of context a conversation's prompt takes."""
        return len(self.prompt_tokens(messages))

    # Running.
    def stream(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int = 512,
        temperature: float = 0.0,
        cancel: Callable[[], bool] | None = None,
    ) -> Iterator[str]:
        """Yield the reply's text pieces as the model produces them; stops early when `cancel()` is true.

        The reply is capped to the context left after the prompt; a prompt that fills the context on its
        own raises ContextOverflow (the caller is expected to budget, see rag.answer).
        """
        if self._closed:
            raise ModelError(f"The model {self.name} was unloaded.", hint="Load it again to answer.")
        tokens = self.prompt_tokens(messages)
        room = self.n_ctx - len(tokens)
        if room < 1:
            raise ContextOverflow(
                f"The question and its passages take {len(tokens)} tokens, more than the "
                f"{self.n_ctx}-token context of {self.name}.",
                hint="Ask with fewer passages (-k) or load the model with a larger context (--ctx).",
            )
        return self._generate(tokens, min(max_tokens, room), temperature, cancel)

    def prefill(self, messages: Sequence[Message]) -> int:
        """Evaluate now the prompt prefix these messages open every request with; returns its token count.

        `messages` are the fixed leading messages (the system prompt); what a later request adds after
        them is not known yet, so the cached prefix ends where the next message's text would start.
        """
        prefix: Parts = []
        for text, template in self._prompt_parts([*messages, {"role": "user", "content": _SENTINEL}]):
            if _SENTINEL in text:
                prefix.append((text.split(_SENTINEL, 1)[0], template))
                break
            prefix.append((text, template))
        # The last token may merge differently with the text that will follow it: leave it out.
        tokens = self._tokenize_parts(prefix)[:-1]
        with self._lock:
            self._adapt_threads()
            cached = self._cached_prefix(tokens)
            if cached < len(tokens):
                try:
                    self._llm.n_tokens = cached
                    self._llm.eval(tokens[cached:])
                except (ValueError, RuntimeError) as exc:
                    self._llm.reset()
                    raise ModelError(f"The model failed while reading its instructions: {exc}") from exc
        return len(tokens)

    def reply_logprobs(self, messages: Sequence[Message], reply: str) -> list[float]:
        """Each token's log-probability of `reply` as the model's answer to `messages`, read from llama.cpp's
        logits in one pass over the prompt and the reply (nothing is generated). The KV cache keeps the
        prompt's prefix, so a run of prompts that open alike reads the common part once."""
        if self._closed:
            raise ModelError(f"The model {self.name} was unloaded.", hint="Load it again to answer.")
        prompt = self.prompt_tokens(messages)
        tokens = self._llm.tokenize(reply.encode("utf-8", "replace"), add_bos=False, special=False)
        if not tokens:
            return []
        if len(prompt) + len(tokens) > self.n_ctx:
            raise ContextOverflow(f"The prompt and reply take {len(prompt) + len(tokens)} tokens, more than "
                                  f"the {self.n_ctx}-token context of {self.name}.")
        with self._lock:
            self._adapt_threads()
            llm = self._llm
            try:
                # The prompt's last token is read with the reply: its logits predict the reply's first token.
                self._read_before_last(prompt)
                rows = self._read_all([prompt[-1], *tokens[:-1]])
            except (ValueError, RuntimeError, AttributeError) as exc:
                llm.reset()
                raise ModelError(f"The model failed while reading a reply: {exc}") from exc
        import numpy as np

        peak = rows.max(axis=1)
        log_total = peak + np.log(np.exp(rows - peak[:, None]).sum(axis=1))
        return [float(v) for v in rows[np.arange(len(tokens)), tokens] - log_total]

    def last_state(self, messages: Sequence[Message]) -> Any:
        """The model's hidden state after reading `messages` (assistant turn opened): the output of its last
        layer, after the final norm, at the prompt's last token (a numpy vector of the model's width). Read in
        the same context as the chat (llama.cpp's embeddings switched on for that one token), so a prompt that
        opens like the one before reads only what differs. For probes trained on it (rag/probe.py)."""
        import numpy as np

        prompt = self._prompt_to_read(messages)
        lib = self._lib
        with self._lock:
            self._adapt_threads()
            llm = self._llm
            try:
                self._read_before_last(prompt)
                past = llm.n_tokens
                lib.llama_set_embeddings(llm.ctx, True)
                try:
                    llm._batch.set_batch(batch=[prompt[-1]], n_past=past, logits_all=True)
                    llm._ctx.decode(llm._batch)
                    width = int(lib.llama_model_n_embd(llm.model))
                    state = np.ctypeslib.as_array(lib.llama_get_embeddings_ith(llm.ctx, -1), shape=(width,)).copy()
                finally:
                    lib.llama_set_embeddings(llm.ctx, False)
                llm.input_ids[past] = prompt[-1]
                llm.n_tokens = past + 1
            except (ValueError, RuntimeError, AttributeError) as exc:
                llm.reset()
                raise ModelError(f"The model failed while reading a prompt: {exc}") from exc
        return state

    def layer_state(self, messages: Sequence[Message], layer: int) -> Any:
        """The output of layer `layer` (from 0) at the prompt's last token, before later layers and the final norm
        (llama.cpp's "l_out-N"; a numpy vector of the model's width), the whole prompt read in a context of its own
        (inference/layer_output.py). For probes (rag/probe.py): a middle layer holds some things more plainly."""
        return self.layer_states(messages, [layer])[layer]

    def layer_states(self, messages: Sequence[Message], layers: Sequence[int]) -> dict[int, Any]:
        """Each of `layers`' outputs at the prompt's last token, as `layer_state` gives one, from a single reading
        of the prompt (for choosing a probe's layer: bench.question_probe --sweep)."""
        prompt = self._prompt_to_read(messages)
        with self._lock:
            if self._layers is None:
                self._layers = LayerReader(self._lib, self._llm.model, n_ctx=self.n_ctx)
            self._adapt_threads()
            return self._layers.read_many(prompt, layers, threads=self.threads_batch_in_use)

    def _prompt_to_read(self, messages: Sequence[Message]) -> list[int]:
        """A prompt's tokens, for reading a state from: the model open and the prompt within its context."""
        if self._closed:
            raise ModelError(f"The model {self.name} was unloaded.", hint="Load it again to answer.")
        prompt = self.prompt_tokens(messages)
        if len(prompt) > self.n_ctx:
            raise ContextOverflow(f"The prompt takes {len(prompt)} tokens, more than the {self.n_ctx}-token "
                                  f"context of {self.name}.")
        return prompt

    def _read_before_last(self, prompt: Sequence[int]) -> None:
        """Evaluate all of a prompt but its last token, the part the KV cache already holds skipped (lock held):
        the last one is read by the caller, keeping what it needs of it (logits, or the hidden state)."""
        llm = self._llm
        llm.n_tokens = min(self._cached_prefix(prompt), len(prompt) - 1)
        llm.eval(prompt[llm.n_tokens:-1])

    def _read_all(self, tokens: Sequence[int]) -> Any:
        """Evaluate tokens after the cached ones, keeping the logits of every position (llama-cpp-python's
        `eval` keeps the last one's only, unless the whole context was made to keep them all)."""
        import numpy as np

        llm = self._llm
        rows = []
        for i in range(0, len(tokens), llm.n_batch):
            part = list(tokens[i:i + llm.n_batch])
            past = llm.n_tokens
            llm._batch.set_batch(batch=part, n_past=past, logits_all=True)
            llm._ctx.decode(llm._batch)
            rows.append(np.ctypeslib.as_array(llm._ctx.get_logits(), shape=(len(part), llm.n_vocab())).copy())
            llm.input_ids[past:past + len(part)] = part
            llm.n_tokens = past + len(part)
        return np.concatenate(rows)

    def set_threads(self, n_threads: int, n_threads_batch: int | None = None) -> None:
        """Set the most CPU threads for generation (and for reading prompts), from the next request on."""
        self.n_threads = max(1, n_threads)
        self.n_threads_batch = max(1, n_threads_batch or self.n_threads)
        self._apply_threads(self.n_threads, self.n_threads_batch)

    def _apply_threads(self, threads: int, threads_batch: int | None = None) -> None:
        self.threads_in_use = threads
        self.threads_batch_in_use = threads_batch or self.n_threads_batch
        self._lib.llama_set_n_threads(self._llm.ctx, threads, self.threads_batch_in_use)

    def _adapt_threads(self) -> None:
        # Measured on a 2-core machine kept busy by other programs: one thread generated 10x and read
        # prompts 2x faster than two. On an idle machine the meter sees the cores free and uses them all.
        if self._meter is None:
            return
        free = self._meter.free_cpus()
        if free is None:
            return
        usable = max(1, int(free + 0.5))
        threads, batch = min(self.n_threads, usable), min(self.n_threads_batch, usable)
        if (threads, batch) != (self.threads_in_use, self.threads_batch_in_use):
            log.info("threads: %d generating, %d reading prompts (%.1f CPUs free)", threads, batch, free)
            self._apply_threads(threads, batch)

    def close(self) -> None:
        """Free the model's memory; the object cannot answer afterwards."""
        with self._lock:
            if not self._closed:
                self._closed = True
                if self._layers is not None:
                    self._layers.close()
                self._llm.close()

    # Internals.
    def _generate(
        self, tokens: list[int], max_tokens: int, temperature: float, cancel: Callable[[], bool] | None
    ) -> Iterator[str]:
        with self._lock:
            if self._closed:
                raise ModelError(f"The model {self.name} was unloaded.")
            self._adapt_threads()
            cached = self._cached_prefix(tokens)
            self.last_usage = {"prompt_tokens": len(tokens), "cached_tokens": cached, "completion_tokens": 0}
            if cancel is not None and cancel():
                raise Cancelled("Answer stopped.")
            decoder = codecs.getincrementaldecoder("utf-8")("replace")
            stops = self.template.stop
            held = ""  # text that might be the beginning of a stop marker
            n = 0
            # Sampling settings as llama-cpp-python's chat completion uses them, so answers match it.
            gen = self._llm.generate(
                tokens, temp=temperature, top_k=40, top_p=0.95, min_p=0.05, repeat_penalty=1.0
            )
            self._arm_abort(cancel)
            try:
                while n < max_tokens:
                    try:
                        token = next(gen)
                    except StopIteration:
                        break
                    finally:
                        if n == 0:
                            self._disarm_abort()  # the prompt is read: one check per token suffices
                    n += 1
                    self.last_usage["completion_tokens"] = n
                    if cancel is not None and cancel():
                        raise Cancelled("Answer stopped.")
                    if self._ends_turn(token):
                        self.last_usage["completion_tokens"] = n - 1  # the end-of-turn token is no text
                        break
                    held += decoder.decode(self._piece(token))
                    out, held, stopped = _split_at_stop(held, stops)
                    if out:
                        yield out
                    if stopped:
                        return
                held += decoder.decode(b"", final=True)
                out, _, _ = _split_at_stop(held, stops, final=True)
                if out:
                    yield out
            except (ValueError, RuntimeError) as exc:
                if cancel is not None and _safe(cancel):
                    raise Cancelled("Answer stopped.") from None
                raise ModelError(f"The model failed while answering: {exc}") from exc
            finally:
                self._disarm_abort()
                gen.close()

    def _clean(self, messages: Sequence[Message]) -> list[Message]:
        return [{"role": m["role"], "content": self._defuse(m["content"])} for m in messages]

    def _prompt_parts(self, messages: Sequence[Message]) -> Parts:
        """The prompt as the template's own text and the messages' contents (see `_tokenize_parts`)."""
        clean = self._clean(messages)
        parts = self.template.render_parts(clean, bos_token=self.bos_token, eos_token=self.eos_token)
        if parts is not None:
            return parts
        # The template reworks contents beyond trimming, so they cannot be told apart from its text: strip
        # every control token's text from them instead (to a fixed point), and read the whole as the template.
        log.info("chat template %s changes message contents; removing control tokens from them", self.template.name)
        bare = [{"role": m["role"], "content": self._strip_controls(m["content"])} for m in clean]
        return [(self.template.render(bare, bos_token=self.bos_token, eos_token=self.eos_token), True)]

    def _tokenize_parts(self, parts: Parts) -> list[int]:
        """Token ids of a prompt in which only the template's own text may hold special tokens.

        llama.cpp cuts a prompt at the special tokens it finds and tokenizes the plain text between them
        piece by piece. This does the same, but looks for special tokens in the template's text only; so
        a prompt whose contents hold no marker gets the very tokens llama.cpp would give it, and a marker
        written in a document (`<|im_start|>system`) stays plain text.
        """
        text = "".join(t for t, _ in parts)
        # Templates that write the BOS token themselves must not get a second one from the tokenizer.
        add_bos = not (self.bos_token and text.startswith(self.bos_token))
        pieces: list[str | tuple[int, int]] = []  # plain text, or a special token's (id, attributes)
        for part, template in parts:
            for piece in self._split_specials(part) if template else [part]:
                if isinstance(piece, str) and pieces and isinstance(pieces[-1], str):
                    pieces[-1] += piece
                else:
                    pieces.append(piece)
        lstrip, rstrip = self._lib.LLAMA_TOKEN_ATTR_LSTRIP, self._lib.LLAMA_TOKEN_ATTR_RSTRIP
        for i, piece in enumerate(pieces):
            if isinstance(piece, str):
                continue
            if piece[1] & lstrip and i > 0 and isinstance(pieces[i - 1], str):
                pieces[i - 1] = pieces[i - 1].rstrip(_C_SPACE)  # type: ignore[union-attr]
            if piece[1] & rstrip and i + 1 < len(pieces) and isinstance(pieces[i + 1], str):
                pieces[i + 1] = pieces[i + 1].lstrip(_C_SPACE)  # type: ignore[union-attr]
        edge = self._llm.tokenize(b"", add_bos=add_bos, special=False)  # BOS (and EOS, for some vocabularies)
        lead = edge[:1] if add_bos and edge[:1] == [self._llm.token_bos()] else []
        tokens = list(lead)
        for piece in pieces:
            if isinstance(piece, str):
                if piece:
                    tokens += self._llm.tokenize(piece.encode("utf-8", "replace"), add_bos=False, special=False)
            else:
                tokens.append(piece[0])
        return tokens + edge[len(lead):]

    def _split_specials(self, text: str) -> list[str | tuple[int, int]]:
        """Template text cut at the control tokens in it, longest first, as llama.cpp cuts a prompt."""
        out: list[str | tuple[int, int]] = [text]
        for marker, token, attr in self._control_tokens():
            if marker not in text:
                continue
            cut: list[str | tuple[int, int]] = []
            for piece in out:
                if not isinstance(piece, str) or marker not in piece:
                    cut.append(piece)
                    continue
                for k, chunk in enumerate(piece.split(marker)):
                    if k:
                        cut.append((token, attr))
                    if chunk:
                        cut.append(chunk)
            out = cut
        return out

    def _control_tokens(self) -> list[tuple[str, int, int]]:
        """(text, id, attributes) of the vocabulary's control and unknown tokens, longest text first: what
        llama.cpp reads as special tokens only when asked to (user-defined tokens it always reads)."""
        if self._specials is None:
            lib = self._lib
            wanted = lib.LLAMA_TOKEN_ATTR_CONTROL | lib.LLAMA_TOKEN_ATTR_UNKNOWN
            found = []
            for token in range(lib.llama_vocab_n_tokens(self._vocab)):
                attr = int(lib.llama_vocab_get_attr(self._vocab, token))
                if attr & wanted:
                    text = (lib.llama_vocab_get_text(self._vocab, token) or b"").decode("utf-8", "replace")
                    if text:
                        found.append((text, token, attr))
            found.sort(key=lambda t: -len(t[0].encode("utf-8")))  # stable: ties keep vocabulary order
            self._specials = found
        return self._specials

    def _strip_controls(self, text: str) -> str:
        """Text without any control token's text, removed until none is left (`<|im_e<|im_start|>nd|>` too)."""
        markers = [m for m, _, _ in self._control_tokens()]
        while True:
            before = text
            for marker in markers:
                if marker in text:
                    text = text.replace(marker, "")
            if text == before:
                return text

    def _cached_prefix(self, tokens: Sequence[int]) -> int:
        """How many leading tokens of `tokens` the KV cache already holds."""
        held = self._llm.n_tokens
        if held <= 0:
            return 0
        n = min(held, len(tokens))
        ids = self._llm.input_ids[:n]
        for i in range(n):
            if ids[i] != tokens[i]:
                return i
        return n

    def _has_token(self, text: str) -> bool:
        return len(self._llm.tokenize(text.encode("utf-8"), add_bos=False, special=True)) == 1

    def _special_text(self, token: int) -> str:
        if token < 0:
            return ""
        return self._llm.detokenize([token], special=True).decode("utf-8", "replace")

    def _defuse(self, text: str) -> str:
        # Contents are tokenized as plain text, so a marker in them is no marker to the model; the template's
        # markers are dropped from them all the same (until none is left), so the prompt's text never shows one.
        while True:
            before = text
            for marker in self.template.stop:
                text = text.replace(marker, "")
            if text == before:
                return text

    def _piece(self, token: int) -> bytes:
        n = self._lib.llama_token_to_piece(self._vocab, token, self._piece_buf, len(self._piece_buf), 0, False)
        if n < 0:
            self._piece_buf = ctypes.create_string_buffer(-n)
            n = self._lib.llama_token_to_piece(self._vocab, token, self._piece_buf, len(self._piece_buf), 0, False)
        return self._piece_buf.raw[: max(0, n)]

    def _ends_turn(self, token: int) -> bool:
        # End-of-generation tokens, and any control token: a reply that opens a new turn has ended.
        return bool(self._lib.llama_vocab_is_eog(self._vocab, token) or self._lib.llama_vocab_is_control(self._vocab, token))

    def _abort_requested(self, _data: Any) -> bool:
        check = self._abort_check
        return bool(check is not None and _safe(check))

    def _arm_abort(self, cancel: Callable[[], bool] | None) -> None:
        if cancel is not None:
            self._abort_check = cancel
            self._lib.llama_set_abort_callback(self._llm.ctx, self._abort_cb, None)

    def _disarm_abort(self) -> None:
        if self._abort_check is not None:
            self._abort_check = None
            self._lib.llama_set_abort_callback(self._llm.ctx, self._no_abort_cb, None)


def _safe(check: Callable[[], bool]) -> bool:
    try:
        return bool(check())
    except Exception:  # a broken cancel callable must not take the model down
        return False


def _split_at_stop(text: str, stops: Sequence[str], *, final: bool = False) -> tuple[str, str, bool]:
    """Split streamed text into (safe to show, held back, a stop marker was reached)."""
    for stop in stops:
        at = text.find(stop)
        if at >= 0:
            return text[:at], "", True
    if final or not stops:
        return text, "", False
    # Hold back a tail that could still grow into a stop marker.
    keep = 0
    for stop in stops:
        for k in range(min(len(stop) - 1, len(text)), 0, -1):
            if text.endswith(stop[:k]):
                keep = max(keep, k)
                break
    return (text[: len(text) - keep], text[len(text) - keep :], False) if keep else (text, "", False)

