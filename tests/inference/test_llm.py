from __future__ import annotations

import time

import pytest

pytest.importorskip("llama_cpp")

from inference.errors import Cancelled, ModelError  # noqa: E402
from inference.llm import LlamaCppModel  # noqa: E402
from tests.tinygguf import write_tiny_llama  # noqa: E402

MESSAGES = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Say hello."}]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    path = write_tiny_llama(tmp_path_factory.mktemp("m") / "tiny.gguf")
    return LlamaCppModel(path, n_ctx=2048, n_threads=2)


def test_streams_text_with_the_files_own_template(tiny):
    pieces = list(tiny.stream(MESSAGES, max_tokens=12))
    assert pieces and all(isinstance(p, str) for p in pieces)
    assert tiny.chat_format == "gguf-template"
    assert tiny.n_ctx == 2048
    assert tiny.count_tokens("the cat is in the hat") > 0


def test_no_template_falls_back_to_chatml_not_llama2(tmp_path):
    m = LlamaCppModel(write_tiny_llama(tmp_path / "nt.gguf", chat_template=None), n_ctx=256, n_threads=2)
    assert m.chat_format == "chatml"
    assert list(m.stream(MESSAGES, max_tokens=4))


def test_cancel_stops_within_a_token_and_the_model_stays_usable(tiny):
    got = []
    t0 = time.perf_counter()
    with pytest.raises(Cancelled):
        for piece in tiny.stream(MESSAGES, max_tokens=50, cancel=lambda: len(got) >= 2):
            got.append(piece)
    assert len(got) == 2
    assert time.perf_counter() - t0 < 5
    assert list(tiny.stream(MESSAGES, max_tokens=3))


def test_bad_files_give_readable_errors(tmp_path):
    with pytest.raises(ModelError, match="not found"):
        LlamaCppModel(tmp_path / "none.gguf")
    junk = tmp_path / "junk.gguf"
    junk.write_bytes(b"GGUF" + b"\0" * 100)
    with pytest.raises(ModelError, match="Cannot load the model junk.gguf") as info:
        LlamaCppModel(junk, n_threads=1)
    assert info.value.hint
