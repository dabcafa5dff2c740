"""Replay: equals an independent per-round PlayerState path, keeps ladders apart, skips
outcome-free rounds, and returns per-round performances."""

from __future__ import annotations

import math

import numpy as np
import pytest

from stream.batch import replay, synthetic_rounds
from stream.contracts import RoundResult, Standing
from stream.engine import Params, PlayerBatch, PlayerState, preset, rate_round
from tests.engine.oracles import final_state


def reference_replay(rounds: list[RoundResult], params: Params) -> dict[tuple[str, str], PlayerState]:
    """The obvious implementation: dicts of PlayerState, from_states/to_states every round."""
    states: dict[tuple[str, str], PlayerState] = {}
    for rnd in rounds:
        if rnd.is_outcome_free(params.draws_rate):
            continue
        keys = [(rnd.ladder, p) for p in rnd.players()]
        batch = PlayerBatch.from_states([states.get(k) or PlayerState.new(params) for k in keys])
        after = rate_round(batch, rnd.ranks(), params, weight=rnd.weight, perf_ceiling=rnd.perf_ceiling,
                           time=rnd.occurred_at).after
        states.update(zip(keys, after.to_states()))
    return states


def mixed_rounds() -> list[RoundResult]:
    """Two ladders interleaved, shared player ids, weights, a ceiling, outcome-free rounds."""
    a = list(synthetic_rounds(60, 8, 20, seed=3, tie_quantum=30, ladder="a"))
    b = list(synthetic_rounds(60, 8, 25, seed=4, ladder="b"))
    out: list[RoundResult] = []
    for i, (x, y) in enumerate(zip(a, b)):
        x.weight = 0.5 if i % 3 == 0 else 1.0
        y.perf_ceiling = 1700.0 if i % 2 else math.inf
        out += [x, y]
    out.insert(3, RoundResult(round_id="solo", ladder="a", occurred_at=1.6e9, standings=[Standing("lonely", 1)]))
    out.insert(6, RoundResult(round_id="tie", ladder="b", occurred_at=1.6e9,
                              standings=[Standing("p00", 1), Standing("p01", 1)]))
    return out


@pytest.mark.parametrize("name", ["mmr", "mmr-fast", "mmx"])
def test_replay_equals_the_plain_state_dict_path(name: str) -> None:
    rounds = mixed_rounds()
    params = preset(name)
    expected = reference_replay(rounds, params)
    got = replay(rounds, params).states()
    assert set(got) == set(expected)
    for key, state in expected.items():
        mine = got[key]
        assert mine.rounds == state.rounds and mine.last_time == state.last_time
        assert abs(mine.mu - state.mu) <= 1e-9 and abs(mine.sigma - state.sigma) <= 1e-12
        assert len(mine.factors) == len(state.factors)
        assert np.allclose(mine.factors, state.factors, rtol=0, atol=1e-9) if state.factors else True


def test_bounded_history_is_respected() -> None:
    params = preset("mmr-fast")
    assert params.history_limit is not None
    rounds = list(synthetic_rounds(6, params.history_limit + 5, 6, seed=1))
    result = replay(rounds, params)
    state = final_state(result, "default", "p0")
    assert state.rounds == params.history_limit + 5
    assert len(state.factors) == params.history_limit


def test_ladders_are_independent() -> None:
    rounds = mixed_rounds()
    both = replay(rounds, preset("mmr")).states()
    only_a = replay([r for r in rounds if r.ladder == "a"], preset("mmr")).states()
    assert {k for k in both if k[0] == "a"} == set(only_a)
    for key, state in only_a.items():
        assert both[key] == state
    assert both[("a", "p00")] != both[("b", "p00")]


def test_outcome_free_rounds_are_recorded_and_rate_nobody() -> None:
    result = replay(mixed_rounds(), preset("mmr"))
    assert result.skipped == [("a", "solo"), ("b", "tie")]
    with pytest.raises(KeyError):
        final_state(result, "a", "lonely")
    assert "solo" not in [r.round_id for r in result.rounds]


def test_a_draw_is_rated_by_the_presets_that_rate_draws() -> None:
    """mmr skips the all-tied round (the authors' skip); every other preset rates it, by the
    same calls as one by one (the obvious implementation)."""
    rounds = mixed_rounds()
    for name in ("mmr-bounded", "mmr-fast", "mmx", "paper-codeforces"):
        result = replay(rounds, preset(name))
        assert result.skipped == [("a", "solo")], name
        tie = next(r for r in result.rounds if r.round_id == "tie")
        assert np.ptp(tie.performance) == 0.0
        want = reference_replay(rounds, preset(name))
        got = result.states()
        assert set(got) == set(want)
        for key, state in want.items():
            assert abs(got[key].mu - state.mu) <= 1e-9 and abs(got[key].sigma - state.sigma) <= 1e-9


def test_rated_rounds_carry_aligned_performances() -> None:
    rounds = list(synthetic_rounds(50, 3, 20, seed=9))
    result = replay(rounds, preset("mmr"))
    assert [r.round_id for r in result.rounds] == [r.round_id for r in rounds]
    first = result.rounds[0]
    assert first.players == rounds[0].players() and first.performance.shape == (20,)
    # better rank, higher performance (monotonicity of phase one)
    assert np.all(np.diff(first.performance[np.argsort(first.ranks, kind="stable")]) <= 0)
    assert sum(len(r.players) for r in result.rounds) == 60
    ratings = list(result.ratings())
    assert len(ratings) == len({p for r in rounds for p in r.players()})
    assert sum(n for *_, n in ratings) == 60
