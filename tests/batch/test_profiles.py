"""The realistic generators: contest-history's shape (growing rounds, heavy-tailed activity,
newcomers, ties) and matches; seeded; reachable from the CLI."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from stream.batch import read_rounds
from stream.batch.profiles import contest_history_rounds, match_rounds
from stream.cli.main import app


def test_contest_history_shape_at_small_scale() -> None:
    rounds = list(contest_history_rounds(0.1, seed=3))
    assert rounds == list(contest_history_rounds(0.1, seed=3))
    assert len(rounds) == 100
    sizes = np.array([r.field_size for r in rounds])
    assert sizes[-25:].mean() > 3 * sizes[:25].mean()  # rounds grow over time
    assert sizes.mean() > np.median(sizes)  # right-skewed sizes
    played = np.array(list(Counter(p for r in rounds for p in r.players()).values()))
    assert np.median(played) < np.percentile(played, 99) / 5  # heavy-tailed activity
    seen: set[str] = set()
    shares, tied = [], []
    for r in rounds:
        players = r.players()
        assert len(set(players)) == len(players)
        if seen:
            shares.append(sum(p not in seen for p in players) / len(players))
        seen.update(players)
        _, counts = np.unique(r.ranks(), return_counts=True)
        tied.append(counts[counts > 1].sum() / r.field_size)
        ranks = r.ranks()
        assert all(rank == 1 + int((ranks < rank).sum()) for rank in ranks.tolist())  # competition ranks
    assert 0.07 < np.mean(shares) < 0.13
    assert 0.4 < np.mean(tied) < 0.6
    assert [r.occurred_at for r in rounds] == sorted(r.occurred_at for r in rounds)


def test_matches_are_rounds_of_the_given_size_from_the_pool() -> None:
    rounds = list(match_rounds(50, 200, 10, seed=1))
    assert rounds == list(match_rounds(50, 200, 10, seed=1))
    assert all(r.field_size == 10 and r.ranks().tolist() == list(range(1, 11)) for r in rounds)
    assert len({p for r in rounds for p in r.players()}) == 50
    with pytest.raises(ValueError):
        next(match_rounds(5, 1, 6))


@pytest.mark.parametrize("args,count", [(["--profile", "contest-history", "--scale", "0.01"], 10),
                                        (["--profile", "matches", "--rounds", "30", "--round-size", "2"], 30)])
def test_cli_writes_the_profiles(tmp_path: Path, args: list[str], count: int) -> None:
    out = tmp_path / "r.jsonl"
    run = CliRunner().invoke(app, ["generate-synthetic", str(out), *args])
    assert run.exit_code == 0, run.output
    assert len(read_rounds(out)) == count


@pytest.mark.parametrize("args", [["--profile", "nope"], ["--profile", "contest-history", "--scale", "2"]])
def test_cli_rejects_bad_profile_options(tmp_path: Path, args: list[str]) -> None:
    run = CliRunner().invoke(app, ["generate-synthetic", str(tmp_path / "r.jsonl"), *args])
    assert run.exit_code == 2 and not (tmp_path / "r.jsonl").exists()
