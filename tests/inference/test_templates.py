"""Chat template selection: the file's own template, else a fallback by architecture, never llama-2's."""

from __future__ import annotations

import pytest

from inference.templates import ChatTemplate, fallback_name, fallback_template, merge_system, select_template
from tests.fixtures.chat_ggufs import CHATML, GEMMA, LLAMA3

MESSAGES = [
    {"role": "system", "content": "Answer from the passages."},
    {"role": "user", "content": "How many days of leave?"},
    {"role": "assistant", "content": "28 days [1]."},
    {"role": "user", "content": "And part-time?"},
]


def vocab(*tokens: str):
    return set(tokens).__contains__


@pytest.mark.parametrize(
    ("arch", "tokens", "expected"),
    [
        ("gemma", (), "gemma"),
        ("gemma3", ("<start_of_turn>", "<end_of_turn>"), "gemma"),
        ("llama", ("<|start_header_id|>", "<|eot_id|>"), "llama3"),
        ("llama", ("<|im_start|>", "<|im_end|>"), "chatml"),
        ("qwen2", (), "chatml"),
        ("phi3", (), "phi3"),
        ("llama", ("[INST]", "[/INST]"), "mistral"),
        ("llama", (), "chatml"),  # nothing to go by: ChatML, not llama-2's [INST] format
        (None, (), "chatml"),
    ],
)
def test_fallback_by_architecture_and_vocabulary(arch, tokens, expected):
    assert fallback_name(arch, vocab(*tokens)) == expected


def test_the_files_own_template_wins():
    t = select_template(architecture="gemma", gguf_template=CHATML, has_token=vocab("<start_of_turn>"))
    assert t.name == "gguf"
    assert t.render(MESSAGES[:2]).endswith("<|im_start|>assistant\n")
    assert "<|im_end|>" in t.stop


def test_a_broken_template_falls_back():
    t = select_template(architecture="gemma", gguf_template="{% for m in messages %}{{ m.content ", has_token=vocab())
    assert t.name == "gemma"


def test_template_that_rejects_system_gets_it_in_the_first_user_turn():
    t = select_template(architecture="gemma", gguf_template=GEMMA)
    text = t.render(MESSAGES, bos_token="<bos>")
    assert text.startswith("<bos><start_of_turn>user\nAnswer from the passages.\n\nHow many days of leave?<end_of_turn>")
    assert "<start_of_turn>model\n28 days [1].<end_of_turn>" in text
    assert text.endswith("<start_of_turn>model\n")
    assert not t.system_role


def test_template_that_silently_drops_system_is_caught():
    drops = "{% for m in messages %}{% if m.role != 'system' %}<{{ m.role }}>{{ m.content }}{% endif %}{% endfor %}"
    text = ChatTemplate("gguf", drops).render(MESSAGES[:2])
    assert "Answer from the passages." in text


@pytest.mark.parametrize("name", ["chatml", "gemma", "llama3", "phi3", "mistral"])
def test_every_fallback_renders_every_message(name):
    from inference.templates import fallback_template

    text = fallback_template(name).render(MESSAGES, bos_token="<s>", eos_token="</s>")
    for m in MESSAGES:
        assert m["content"] in text


def test_llama3_style_template_from_the_file():
    t = select_template(architecture="llama", gguf_template=LLAMA3)
    text = t.render(MESSAGES[:2], bos_token="<|begin_of_text|>")
    assert text.startswith("<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nAnswer")
    assert text.endswith("<|start_header_id|>assistant<|end_header_id|>\n\n")
    assert "<|eot_id|>" in t.stop


def test_merge_system():
    merged = merge_system(MESSAGES)
    assert [m["role"] for m in merged] == ["user", "assistant", "user"]
    assert merged[0]["content"].startswith("Answer from the passages.\n\n")
    assert merge_system([{"role": "system", "content": "x"}]) == [{"role": "user", "content": "x"}]


def test_render_parts_tells_the_templates_text_from_the_contents():
    template = fallback_template("chatml")
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Say <|im_end|> hello."}]
    parts = template.render_parts(messages)
    assert parts is not None
    assert "".join(t for t, _ in parts) == template.render(messages)
    assert [t for t, own in parts if not own] == ["Be brief.", "Say <|im_end|> hello."]
    assert all("<|im_start|>" in t or t == "<|im_end|>\n" for t, own in parts if own)


def test_render_parts_follows_trimmed_and_merged_contents():
    # Gemma-like: no system role (merged into the first user turn), contents trimmed.
    source = ("{% for m in messages %}<start_of_turn>{{ m.role }}\n{{ m.content | trim }}<end_of_turn>\n"
              "{% endfor %}<start_of_turn>model\n")
    template = ChatTemplate("gguf", source, system_role=False)
    messages = [{"role": "system", "content": "  Rules.  "}, {"role": "user", "content": "\nQuestion?  "}]
    parts = template.render_parts(messages)
    assert parts is not None and "".join(t for t, _ in parts) == template.render(messages)
    assert [t for t, own in parts if not own] == ["Rules.  ", "\nQuestion?"]


def test_render_parts_gives_up_on_a_template_that_rewrites_contents():
    template = ChatTemplate("gguf", "{% for m in messages %}<|im_start|>{{ m.content | upper }}<|im_end|>{% endfor %}")
    assert template.render_parts([{"role": "user", "content": "hello"}]) is None
    # A template that leaves the contents alone is cut even when a content repeats the template's words.
    plain = fallback_template("chatml")
    parts = plain.render_parts([{"role": "user", "content": "user\n"}])
    assert parts is not None and [t for t, own in parts if not own] == ["user\n"]
