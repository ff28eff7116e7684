"""llama.cpp's Vulkan engine, really run: on Mesa's lavapipe (a software Vulkan device) where there is no GPU.

Needs the engine (`make vulkan`; .ci/run builds it) and a Vulkan device (mesa-vulkan-drivers); skipped, saying
which is missing, where either is absent. lavapipe runs its shaders on the CPU and compiles them on first use, so
these tests are few: one plan-against-actual load with every layer offloaded, one with a forced small heap, and
one answer compared with the CPU engine's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from inference import engines
from inference.vulkan import HEAP_ENV, devices

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "assets" / "demo"
QUESTION = "What is the mileage rate?"
MODEL = "qwen2.5-coder-0.5b-instruct-q4_k_m"  # the smallest model Hearth ships

pytestmark = [
    pytest.mark.skipif("vulkan" not in engines.installed(),
                       reason="the Vulkan engine is not built here (make vulkan; .ci/run builds it)"),
    pytest.mark.skipif(not devices().devices, reason="no Vulkan device (apt-get install mesa-vulkan-drivers)"),
]


def hearth(data: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if k not in ("HEARTH_ENGINE", HEAP_ENV, engines.VISIBLE_ENV)}
    # One checking model fewer to run on lavapipe: the chat model checks its own answers (HEARTH_CHECK_MODEL).
    base["HEARTH_CHECK_MODEL"] = "chat"
    return subprocess.run([sys.executable, "-m", "app", "--data-dir", str(data), "--threads", "2", *args],
                          cwd=ROOT, env={**base, **(env or {})}, capture_output=True, text=True, timeout=900)


def load_json(data: Path, env: dict[str, str] | None = None) -> dict:
    r = hearth(data, "hw", "--engine", "vulkan", "--model", MODEL, "--ctx", "1024", "--load", "--json", env=env)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_every_layer_goes_to_the_vulkan_device_as_planned(tmp_path):
    out = load_json(tmp_path / "data")
    engine, loaded = out["engine"], out["loaded"]
    assert engine["chosen"] == "vulkan" and engine["device"]["name"] == out["vulkan_devices"][0]["name"]
    assert loaded["engine"] == "vulkan"
    assert loaded["actual_layers"] == loaded["n_layers"] == out["plan"]["n_layers"]
    assert abs(loaded["planned_layers"] - loaded["actual_layers"]) <= 1
    assert loaded["buffers"].get("Vulkan0", 0) > 100 << 20  # the weights really went to the device
    assert out["plan"]["device"].startswith("Vulkan0")


def test_a_small_heap_gives_a_partial_offload_that_llama_cpp_follows(tmp_path):
    # 700 MiB less the plan's spare 384 MiB and a 177 MiB compute buffer leaves room for about half the layers.
    heap = 700 << 20
    out = load_json(tmp_path / "data", env={HEAP_ENV: str(heap)})
    loaded = out["loaded"]
    assert out["vulkan_devices"][0]["heap_bytes"] == heap and out["plan"]["gpu"]["free"] == heap
    assert 0 < loaded["planned_layers"] < loaded["n_layers"], loaded
    assert abs(loaded["planned_layers"] - loaded["actual_layers"]) <= 1
    assert 0 < loaded["buffers"]["Vulkan0"] <= heap - out["plan"]["gpu"]["margin"]
    assert loaded["buffers"]["CPU_Mapped"] > 0  # the layers left over are read from the file on the CPU


def test_the_vulkan_engine_answers_the_demo_question_as_the_cpu_engine_does(tmp_path):
    data = tmp_path / "data"
    r = hearth(data, "ingest", str(DEMO))
    assert r.returncode == 0, r.stderr
    answers = {}
    # lavapipe reads a prompt at a few tokens a second: one passage (the one that answers), and the model's reply
    # shown as it is (no second pass reading the reply's probabilities), keep this near a minute and a half.
    for engine in ("cpu", "vulkan"):
        r = hearth(data, "ask", QUESTION, "-k", "1", "--not-found", "off", "--engine", engine, "--json")
        assert r.returncode == 0, r.stderr
        answers[engine] = json.loads(r.stdout)["answer"]
    assert "0.30" in answers["cpu"]  # the demo policy's rate per kilometre
    assert answers["vulkan"] == answers["cpu"]  # greedy decoding: the same reply on either engine
