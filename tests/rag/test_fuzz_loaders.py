"""Fuzzing every loader: valid seed files, mutated (bytes flipped, cut, inserted, repeated; the XML inside
office zips damaged), must give Sections or a LoadError, never another exception, never take long.

A bounded session (HEARTH_FUZZ_EXAMPLES per suffix, 100 by default) runs with the tests; `make soak` runs
bench/fuzz_loaders.py, the same mutations by the thousand through the worker pool.
"""

from __future__ import annotations

import os
import tempfile
from datetime import timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rag.errors import LoadError
from rag.loaders import _REGISTRY, LOAD_ERROR_KINDS, Section, load
from tests.hostile_corpus import MUTATIONS, mutate, seed_files

EXAMPLES = int(os.environ.get("HEARTH_FUZZ_EXAMPLES", "100"))

operations = st.lists(
    st.tuples(st.sampled_from(MUTATIONS), st.integers(0, 2**32 - 1), st.binary(max_size=64)), min_size=1, max_size=8
)


@pytest.fixture(scope="module")
def folder():
    with tempfile.TemporaryDirectory(prefix="hearth-fuzz-") as name:
        yield Path(name)


def test_every_loader_has_a_seed_that_loads() -> None:
    seeds = seed_files()
    assert set(seeds) == set(_REGISTRY)
    with tempfile.TemporaryDirectory() as name:
        for suffix, data in seeds.items():
            path = Path(name, "seed" + suffix)
            path.write_bytes(data)
            assert any("Fuzzing seeds" in s.text for s in load(path)), suffix


@pytest.mark.parametrize("suffix", sorted(_REGISTRY))
def test_mutated_files_load_or_fail_cleanly(suffix: str, folder: Path) -> None:
    seed = seed_files()[suffix]
    path = folder / ("fuzz" + suffix)

    @settings(
        # A picture that still decodes is read by OCR (a tenth of a second or more); Pillow's decoders are
        # fuzzed far harder elsewhere, so pictures get a quarter of the examples.
        max_examples=EXAMPLES // 4 if _REGISTRY[suffix] == "image" else EXAMPLES,
        deadline=timedelta(seconds=10),  # a reader that stalls on a small file is a bug (the seeds are < 40 KB)
        database=None,
        derandomize=True,  # the same examples on every run: CI failures reproduce
        suppress_health_check=[HealthCheck.too_slow],
    )
    @given(ops=operations)
    def check(ops: list[tuple[str, int, bytes]]) -> None:
        path.write_bytes(mutate(seed, suffix, ops))
        try:
            sections = load(path)
        except LoadError as exc:
            assert exc.kind in LOAD_ERROR_KINDS
            assert str(exc).strip()
            return
        assert sections and all(isinstance(s, Section) and s.text.strip() for s in sections)

    check()
