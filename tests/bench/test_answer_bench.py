"""The answer benchmark measures raw llama-cpp-python and Hearth's stream alike (tiny real GGUF, no demo index)."""

from __future__ import annotations

import time

import pytest

pytest.importorskip("llama_cpp")

from bench import answer as bench  # noqa: E402
from inference.llm import LlamaCppModel  # noqa: E402
from rag.answer import answer  # noqa: E402
from rag.store import Hit  # noqa: E402
from tests.tinygguf import write_tiny_llama  # noqa: E402

MESSAGES = [{"role": "user", "content": "Say hello."}]
PASSAGE = Hit("/docs/a.md", None, None, 0.9, "The cat is in the hat.", 0, 22, "c1")


class SlowQuotesHearth:
    """Hearth's `ask` shape: the real answer loop on a real model, then slow work after the stream."""

    def __init__(self, model: LlamaCppModel, after: float, max_tokens: int) -> None:
        self.chat_model, self.after, self.max_tokens = model, after, max_tokens

    def ask(self, question, *, on_token, cancel):
        self.first_piece = None

        def show(piece: str) -> None:
            on_token(piece)
            if self.first_piece is None:
                self.first_piece = time.perf_counter()

        result = answer(question, [PASSAGE], self.chat_model, on_token=show, cancel=cancel,
                        max_tokens=self.max_tokens)
        self.stream_end = time.perf_counter()
        time.sleep(self.after)  # what the quote aligner does once the answer is complete
        result.timings["quotes"] = self.after
        return result


@pytest.fixture(scope="module")
def tiny_path(tmp_path_factory):
    return write_tiny_llama(tmp_path_factory.mktemp("m") / "tiny.gguf")


def test_stream_figures_count_tokens_decoded_after_the_first_piece():
    figures = bench.stream_figures(10.0, 10.5, 12.5, 100, 140)
    assert figures == {"ttft": 0.5, "tps": 20.0, "decoded": 40}
    assert bench.stream_figures(10.0, None, 11.0, 0, 0) == {"ttft": 1.0, "tps": 0.0, "decoded": 0}


def test_work_after_the_stream_is_reported_apart_not_as_slower_tokens(tiny_path):
    model = LlamaCppModel(tiny_path, n_ctx=2048, n_threads=2, adaptive_threads=False)
    hearth = SlowQuotesHearth(model, after=0.6, max_tokens=24)
    run = bench._hearth_run(hearth, "Say hello.", cold=True)
    # (The stream's end is rag.answer's own reading of it, a few ms from the bench's: 0.6 s less a little.)
    assert run["after_stream"] >= 0.55 and run["quotes"] == 0.6
    # Every token after the first was decoded within the stream, none in the 0.6 s after it.
    assert run["decoded"] == model.last_usage["completion_tokens"] - 1 > 10
    streaming = hearth.stream_end - hearth.first_piece
    assert run["decoded"] / run["tps"] == pytest.approx(streaming, abs=0.05), "time after the stream was counted"


def test_raw_and_hearth_count_the_same_tokens_for_the_same_answer_length(tiny_path):
    import llama_cpp

    raw = llama_cpp.Llama(model_path=str(tiny_path), n_ctx=512, n_threads=2, n_threads_batch=2, verbose=False)
    model = LlamaCppModel(tiny_path, n_ctx=2048, n_threads=2, adaptive_threads=False)
    # The random tiny model never ends its turn early: both paths run to the 16-token limit.
    raw_run = bench._raw_run(raw, MESSAGES, 16)
    hearth_run = bench._hearth_run(SlowQuotesHearth(model, after=0.0, max_tokens=16), "Say hello.", cold=True)
    assert model.last_usage["completion_tokens"] == 16
    assert raw_run["decoded"] == hearth_run["decoded"] == 15
    assert raw_run["tps"] > 0 and hearth_run["tps"] > 0
