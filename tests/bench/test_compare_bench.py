"""bench.compare at a small size: the generated revisions' known changes are found, and a plain diff finds fewer."""

from __future__ import annotations

import json
import random

from bench import compare as bench
from rag.compare import compare


def test_runs_end_to_end_at_a_small_size(capsys):
    assert bench.main(["--revisions", "1", "--sections", "45", "--seed", "3", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["known_changes_per_revision"] == 31 and "load_average" in result["machine"]
    for pairing in ("same", "cross"):
        ours, plain = result["results"][f"{pairing}/hearth"], result["results"][f"{pairing}/baseline"]
        assert ours["known"] == 31 and ours["precision"] >= 0.95 and ours["recall"] >= 0.95
        assert plain["precision"] < ours["precision"]  # moves and rewrites cost a plain diff
        assert ours["seconds_median"] < 2.0
    assert result["from_store_seconds_median"] < 2.0


def test_the_scoring_counts_a_wrong_change_against_precision():
    rng = random.Random(1)
    old = bench.generate(rng, 45)
    new, expected = bench.revise(old, rng)
    found = compare(bench.as_word(old), bench.as_word(new)).changes
    tally = bench.Tally()
    bench.score(found + [found[0]], expected, tally)  # one change reported twice: the second is wrong
    assert (tally.found, tally.right, tally.recalled) == (len(found) + 1, len(expected), len(expected))
