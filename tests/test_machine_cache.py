"""The models are prepared once per machine, not once per data folder (#68): the embedder's conversion and the
built-in models' joining happen in the user's cache folder, which every data folder shares."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from app.config import Requested, default_cache_dir, hearth_config
from inference.models import cache_lock

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[1]
PREPARING = "Preparing the embedding model for this machine"


def hearth(cache: Path, data: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, HEARTH_CACHE_DIR=str(cache))
    return subprocess.run([sys.executable, "-m", "app", "--threads", "2", "--data-dir", str(data), *args], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=600)


def test_a_second_data_folder_reuses_the_prepared_embedder(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "parking.md").write_text("# Parking\n\nGuests park at entrance B.\n")
    cache = tmp_path / "machine-cache"
    first = hearth(cache, tmp_path / "one", "ingest", str(docs), "--json")
    assert first.returncode == 0, first.stderr
    assert PREPARING in first.stderr  # the one-time wait says why
    second = hearth(cache, tmp_path / "two", "ingest", str(docs), "--json")
    assert second.returncode == 0, second.stderr
    assert PREPARING not in second.stderr
    assert not (tmp_path / "one" / "cache").exists() and not (tmp_path / "two" / "cache").exists()
    assert any((cache / "embedders").iterdir())
    assert (cache.stat().st_mode & 0o077) == 0  # the user's alone, like the data folder
    for run in (first, second):  # the stages account for the whole process's time (one file: nothing overlaps)
        report = json.loads(run.stdout)
        stages = report["stages"]
        assert {"startup", "model", "read", "chunk", "embed", "write", "other", "close"} <= set(stages)
        assert sum(stages.values()) == pytest.approx(report["wall"], abs=0.01)
    assert json.loads(first.stdout)["stages"]["model"] > json.loads(second.stdout)["stages"]["model"]
    # The work embedding cost, in the embedder's tokens: the one passage's "guests park at entrance b ." with
    # [CLS] and [SEP], the same in both folders.
    assert [json.loads(run.stdout)["tokens_embedded"] for run in (first, second)] == [9, 9]


def test_the_cache_folder_is_the_users_or_the_variables():
    assert default_cache_dir({"HEARTH_CACHE_DIR": "/srv/models-cache"}) == Path("/srv/models-cache")
    assert default_cache_dir({}).name == "hearth"
    config = hearth_config(Requested(data_dir=Path("/tmp/d")), env={"HEARTH_CACHE_DIR": "/tmp/c"})
    assert config.cache_dir == Path("/tmp/c") and config.data_dir == Path("/tmp/d")


def test_one_process_at_a_time_prepares_in_the_cache(tmp_path):
    order: list[str] = []
    held = threading.Event()

    def first() -> None:
        with cache_lock(tmp_path):
            held.set()
            time.sleep(0.5)
            order.append("first done")

    thread = threading.Thread(target=first)
    thread.start()
    held.wait(5)
    with cache_lock(tmp_path):  # waits for the first to finish
        order.append("second")
    thread.join()
    assert order == ["first done", "second"]
