"""Chat templates: the model's own from its GGUF file, else a correct fallback chosen by architecture.

llama-cpp-python falls back to llama-2's `[INST]` format when a file has no template, which models of
other families (Gemma, Qwen, Llama 3) answer badly; Hearth renders every prompt itself instead, with
the file's Jinja template or one of the fallbacks below, picked from the architecture and the special
tokens the vocabulary really has.
"""

from __future__ import annotations

import json
import logging
import re
import secrets
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from inference.errors import ModelError

log = logging.getLogger(__name__)

Message = dict[str, str]

# Fallback templates, written for Hearth. `system_role=False` ones get the system text merged into
# the first user turn before rendering, as those model families were trained without a system role.
_CHATML = (
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
_GEMMA = (
    "{{ bos_token }}{% for m in messages %}<start_of_turn>{{ 'model' if m.role == 'assistant' else 'user' }}\n"
    "{{ m.content }}<end_of_turn>\n{% endfor %}{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}"
)
_LLAMA3 = (
    "{{ bos_token }}{% for m in messages %}<|start_header_id|>{{ m.role }}<|end_header_id|>\n\n"
    "{{ m.content }}<|eot_id|>{% endfor %}"
    "{% if add_generation_prompt %}<|start_header_id|>assistant<|end_header_id|>\n\n{% endif %}"
)
_PHI3 = (
    "{% for m in messages %}<|{{ m.role }}|>\n{{ m.content }}<|end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)
_MISTRAL = (
    "{{ bos_token }}{% for m in messages %}{% if m.role == 'user' %}[INST] {{ m.content }} [/INST]"
    "{% else %}{{ m.content }}{{ eos_token }}{% endif %}{% endfor %}"
)

# name: (source, takes a system message, stop markers)
FALLBACKS: dict[str, tuple[str, bool, tuple[str, ...]]] = {
    "chatml": (_CHATML, True, ("<|im_end|>", "<|im_start|>")),
    "gemma": (_GEMMA, False, ("<end_of_turn>", "<start_of_turn>")),
    "llama3": (_LLAMA3, True, ("<|eot_id|>", "<|start_header_id|>")),
    "phi3": (_PHI3, True, ("<|end|>", "<|user|>", "<|assistant|>")),
    "mistral": (_MISTRAL, False, ("[INST]",)),
}

# Text that ends or starts a turn in some family; a reply that writes one out has finished.
_TURN_MARKERS = (
    "<|im_end|>", "<|im_start|>", "<end_of_turn>", "<start_of_turn>", "<|eot_id|>", "<|start_header_id|>",
    "<|end|>", "<|user|>", "<|endoftext|>", "<|END_OF_TURN_TOKEN|>", "[INST]",
)


# Control-token text of the model families a shared server may run, written out as plain text: a server
# (llama-server, vLLM) renders the template and tokenizes the whole prompt with special tokens on, so any of
# these inside a message would be a real token there (a new turn, a system prompt, an end of text). `<|…|>`
# covers ChatML, Llama 3, Phi, Command R, gpt-oss and `<|endoftext|>`; `<｜…｜>` DeepSeek's; the rest are
# Gemma's, Llama 2's and Mistral's, and the tool-call tags of Qwen and Hermes templates.
_CONTROL_TEXT = re.compile(
    r"<\|[^|<>\s]{1,40}\|>|<｜[^｜<>]{1,40}｜>"
    r"|</?(?:start_of_turn|end_of_turn|bos|eos|pad|s|tool_call|tool_response)>"
    r"|\[/?(?:INST|SYSTEM_PROMPT|AVAILABLE_TOOLS|TOOL_CALLS|TOOL_RESULTS|TOOL_CONTENT)\]|<</?SYS>>"
)


def neutralise_control_text(text: str) -> str:
    """`text` with every model family's control-token text removed, until none is left (so that
    `<|im_e<|im_start|>nd|>` does not close up into a marker): for messages sent to a shared server."""
    while True:
        cleaned = _CONTROL_TEXT.sub("", text)
        if cleaned == text:
            return text
        text = cleaned


class TemplateError(ModelError):
    """A chat template cannot render the conversation."""


class ChatTemplate:
    """A Jinja chat template with what Hearth needs to use it: stop markers, system-role support."""

    def __init__(self, name: str, source: str, *, system_role: bool = True, stop: Sequence[str] = ()) -> None:
        self.name = name  # "gguf" for the file's own template, else the fallback's name
        self.source = source
        self.system_role = system_role
        self.stop = tuple(dict.fromkeys(stop))
        self._compiled = _environment().from_string(source)

    def __repr__(self) -> str:
        return f"ChatTemplate({self.name!r})"

    def render(
        self,
        messages: Sequence[Message],
        *,
        bos_token: str = "",
        eos_token: str = "",
        add_generation_prompt: bool = True,
    ) -> str:
        """The prompt text for a conversation, ending with the assistant's turn opened."""
        msgs = [{"role": m["role"], "content": m["content"]} for m in messages]
        if not self.system_role:
            msgs = merge_system(msgs)
        try:
            text = self._render(msgs, bos_token, eos_token, add_generation_prompt)
        except Exception as exc:  # jinja2 errors and the template's own raise_exception
            if not msgs or msgs[0]["role"] != "system":
                raise TemplateError(f"The model's chat template cannot render this conversation: {exc}") from exc
            # Templates of models trained without a system role raise on one (Gemma 2, Mistral):
            # give the instructions in the first user turn instead.
            log.info("chat template %s rejects a system message (%s); merging it into the user turn", self.name, exc)
            self.system_role = False
            return self.render(messages, bos_token=bos_token, eos_token=eos_token,
                               add_generation_prompt=add_generation_prompt)
        if msgs and msgs[0]["role"] == "system" and msgs[0]["content"].strip() not in text:
            # Some templates drop a system message without a word; the instructions must reach the model.
            self.system_role = False
            return self.render(messages, bos_token=bos_token, eos_token=eos_token,
                               add_generation_prompt=add_generation_prompt)
        return text

    def render_parts(
        self,
        messages: Sequence[Message],
        *,
        bos_token: str = "",
        eos_token: str = "",
        add_generation_prompt: bool = True,
    ) -> list[tuple[str, bool]] | None:
        """The prompt `render` writes, cut into the template's own text (True) and the messages' contents
        (False), so that a tokenizer may read turn markers in the template's text only.

        The template is rendered once more with a random placeholder for each content, and the real prompt
        is matched against it piece by piece (a content may come out trimmed). None when the template
        changes contents in another way, so that they cannot be told apart from its own text.
        """
        kw = {"bos_token": bos_token, "eos_token": eos_token, "add_generation_prompt": add_generation_prompt}
        text = self.render(messages, **kw)
        nonce = secrets.token_hex(8)
        marked = self.render(
            [{"role": m["role"], "content": f"\u2063{nonce}:{i}\u2063"} for i, m in enumerate(messages)], **kw
        )
        pieces = re.split(f"\u2063{nonce}:(\\d+)\u2063", marked)  # template text, index, template text, ...
        parts: list[tuple[str, bool]] = []
        pos = 0
        for n, piece in enumerate(pieces):
            if n % 2 == 0:
                if not text.startswith(piece, pos):
                    return None
                parts.append((piece, True))
                pos += len(piece)
                continue
            content = messages[int(piece)]["content"]
            after = pieces[n + 1]
            for shown in dict.fromkeys((content, content.strip(), content.lstrip(), content.rstrip())):
                if text.startswith(shown, pos) and text.startswith(after, pos + len(shown)):
                    parts.append((shown, False))
                    pos += len(shown)
                    break
            else:
                return None
        if pos != len(text):
            return None
        return [(t, template) for t, template in parts if t]

    def _render(self, msgs: list[Message], bos: str, eos: str, add_generation_prompt: bool) -> str:
        return self._compiled.render(
            messages=msgs, add_generation_prompt=add_generation_prompt, bos_token=bos, eos_token=eos
        )


def merge_system(messages: Sequence[Message]) -> list[Message]:
    """The conversation with a leading system message folded into the first user message."""
    msgs = [dict(m) for m in messages]
    if not msgs or msgs[0]["role"] != "system":
        return msgs
    system = msgs.pop(0)["content"]
    if msgs and msgs[0]["role"] == "user":
        msgs[0]["content"] = f"{system}\n\n{msgs[0]['content']}"
    else:
        msgs.insert(0, {"role": "user", "content": system})
    return msgs


def fallback_name(architecture: str | None, has_token: Callable[[str], bool]) -> str:
    """The fallback template for a model without one: by architecture, then by its special tokens."""
    arch = (architecture or "").lower()
    if arch.startswith("gemma") or has_token("<start_of_turn>"):
        return "gemma"
    if has_token("<|start_header_id|>") and has_token("<|eot_id|>"):
        return "llama3"
    if arch.startswith(("qwen", "internlm")) or has_token("<|im_start|>"):
        return "chatml"
    if arch.startswith("phi3") or (has_token("<|user|>") and has_token("<|end|>")):
        return "phi3"
    if has_token("[INST]"):
        return "mistral"
    # Most current instruction-tuned models speak ChatML; a base model reads it as plain text.
    return "chatml"


def fallback_template(name: str) -> ChatTemplate:
    """One of Hearth's fallback templates by name."""
    source, system_role, stop = FALLBACKS[name]
    return ChatTemplate(name, source, system_role=system_role, stop=stop)


def select_template(
    *,
    architecture: str | None,
    gguf_template: str | None,
    has_token: Callable[[str], bool] = lambda _: False,
) -> ChatTemplate:
    """The model's own template when it has a usable one, else the fallback for its architecture."""
    if gguf_template and gguf_template.strip():
        try:
            template = ChatTemplate(
                "gguf", gguf_template, stop=[m for m in _TURN_MARKERS if m in gguf_template]
            )
            # Render once so a template that cannot handle a plain conversation is caught here, not mid-answer.
            template.render([{"role": "system", "content": "s"}, {"role": "user", "content": "u"}])
            return template
        except Exception as exc:  # a broken template in the file: say so in the log, use a fallback
            log.warning("the model's chat template cannot be used (%s); using a fallback", exc)
    return fallback_template(fallback_name(architecture, has_token))


def _environment() -> Any:
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    # As Hugging Face renders chat templates: trimmed blocks, {% break %} / {% continue %} allowed.
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"])

    def raise_exception(message: str) -> None:
        raise ValueError(message)

    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = lambda fmt: datetime.now().strftime(fmt)
    # Templates written for Hugging Face expect json.dumps, not Jinja's HTML-escaping tojson.
    env.filters["tojson"] = lambda value, indent=None, **_: json.dumps(value, indent=indent, ensure_ascii=False)
    return env
