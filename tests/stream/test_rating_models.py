"""The rating-only path of the pipeline (stream/pipeline/rating_models.py), pure: phase one's
batch call over several rounds from packed states equals ``replay_model`` one round at a time,
and phase two's stored state (packed, unpacked again) is exactly the carried rating."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from stream.batch.models import replay_model
from stream.contracts import RoundResult, Standing
from stream.engine.ladders import LadderConfig, model_params
from stream.engine.models import MODELS
from stream.engine.state import pack_batch, unpack_batch
from stream.pipeline.rating_models import apply, rate_rounds

POOL = [f"p{i}" for i in range(6)]


@st.composite
def histories(draw: st.DrawFn) -> tuple[str, list[RoundResult], int]:
    """A model, rounds over a small pool (ties, repeats within the batch), and where the batch starts."""
    name = draw(st.sampled_from(sorted(MODELS)))
    rounds = []
    for k in range(draw(st.integers(2, 8))):
        players = draw(st.lists(st.sampled_from(POOL), min_size=2, max_size=5, unique=True))
        ranks = draw(st.lists(st.integers(1, 3), min_size=len(players), max_size=len(players)))
        if len(set(ranks)) == 1:
            ranks[-1] = ranks[0] + 1
        rounds.append(RoundResult(round_id=f"r{k}", ladder="x", occurred_at=1.7e9 + k,
                                  standings=[Standing(p, r) for p, r in zip(players, ranks)]))
    return name, rounds, draw(st.integers(0, len(rounds) - 1))


@settings(max_examples=60, deadline=None)
@given(histories())
def test_a_batch_from_packed_states_equals_replay_one_by_one(history: tuple[str, list[RoundResult], int]) -> None:
    name, rounds, split = history
    cfg = LadderConfig(name, model_params(name, {}, "test"))
    before = replay_model(rounds[:split], MODELS[name])  # what Redis holds before the batch
    table = before.ladders.get("x")
    states: list[bytes | None] = []
    for player in POOL:  # the stored states phase two wrote for the earlier rounds
        row = None if table is None else table.index.get(player)
        if row is None:
            states.append(None)
            continue
        one = unpack_batch([None], cfg.newcomer)
        one.rounds[:] = table.rounds[row] - 1
        states += pack_batch(apply(one, table.mu[row:row + 1], table.sigma[row:row + 1], np.array([1.7e9])))
    batch = rounds[split:]
    members = [np.array([POOL.index(p) for p in r.players()]) for r in batch]
    rated = rate_rounds(cfg, states, members, batch)

    reference = replay_model(rounds, MODELS[name])  # one round at a time, from the start
    final = reference.ladders["x"]
    last: dict[str, int] = {}
    for k, r in enumerate(batch):
        for j, player in enumerate(r.players()):
            last[player] = int(rated.offsets[k]) + j
    for player, i in last.items():
        row = final.index[player]
        assert rated.mu[i] == final.mu[row] and rated.sigma[i] == final.sigma[row], (name, player)
    # each row's previous row is the player's previous round in the batch (-1: the stored state)
    seen: dict[str, int] = {}
    for k, r in enumerate(batch):
        for j, player in enumerate(r.players()):
            assert rated.previous[int(rated.offsets[k]) + j] == seen.get(player, -1)
            seen[player] = int(rated.offsets[k]) + j


@given(st.lists(st.floats(-1e4, 1e4), min_size=1, max_size=5), st.floats(1e-3, 1e3), st.integers(0, 1000))
def test_the_stored_state_is_exactly_the_carried_rating(mu: list[float], sigma: float, played: int) -> None:
    n = len(mu)
    prior = LadderConfig("glicko", MODELS["glicko"].params).newcomer
    before = unpack_batch([None] * n, prior)
    before.rounds[:] = played
    after = apply(before, np.array(mu), np.full(n, sigma), np.full(n, 1.7e9))
    back = unpack_batch(pack_batch(after), prior)
    assert back.mu.tolist() == mu and back.sigma.tolist() == [sigma] * n
    assert back.rounds.tolist() == [played + 1] * n and back.n_factors.tolist() == [0] * n
