import math

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from stream.engine import PlayerBatch, PlayerState, preset
from tests.engine.oracles import state_from_bytes, state_to_bytes

finite = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False)
positive = st.floats(min_value=1e-6, max_value=1e6)
factor = st.tuples(finite, positive, positive)
states = st.builds(
    PlayerState,
    mu=finite,
    sigma=positive,
    mu0=finite,
    w0=positive,
    factors=st.lists(factor, max_size=8).map(tuple),
    rounds=st.integers(0, 2**32 - 1),
    last_time=st.none() | st.floats(0, 4e9),
)


@given(states)
def test_bytes_round_trip(state):
    data = state_to_bytes(state)
    assert len(data) == 49 + 24 * len(state.factors)
    assert state_from_bytes(data) == state


@given(st.lists(states, min_size=1, max_size=6))
def test_batch_round_trip(state_list):
    assert PlayerBatch.from_states(state_list).to_states() == state_list


def test_newcomer():
    s = PlayerState.new(preset("mmr"))
    assert (s.mu, s.sigma, s.mu0, s.w0, s.factors, s.rounds, s.last_time) == (
        1500.0, 350.0, 1500.0, 350.0**-2, (), 0, None,
    )
    b = PlayerBatch.new(3, preset("mmr"))
    assert b.p.shape == (3, 0) and np.isnan(b.last_time).all()


def test_bad_blob_rejected():
    data = state_to_bytes(PlayerState.new(preset("mmr")))
    for bad in (data[:-1], b"\x02" + data[1:], data + b"\0"):
        try:
            state_from_bytes(bad)
        except ValueError:
            continue
        raise AssertionError("accepted a malformed blob")
    assert math.isnan(np.frombuffer(data[37:45], "<f8")[0])  # last_time None -> NaN


@given(st.lists(st.none() | states, max_size=6))
def test_vectorised_pack_and_unpack_equal_the_per_player_forms(maybe_states):
    from stream.engine.state import pack_batch, unpack_batch

    params = preset("mmr")
    full = [PlayerState.new(params) if s is None else s for s in maybe_states]
    batch = unpack_batch([None if s is None else state_to_bytes(s) for s in maybe_states], params)
    assert batch.to_states() == full
    past = np.arange(batch.p.shape[1]) >= batch.n_factors[:, None]  # zero padding past each history
    assert not batch.p[past].any() and not batch.w_arg[past].any() and not batch.w_out[past].any()
    assert [a.dtype for a in (batch.p, batch.mu, batch.last_time)] == [np.float64] * 3 and batch.p.flags.c_contiguous
    assert pack_batch(batch) == [state_to_bytes(s) for s in full]
    assert pack_batch(PlayerBatch.from_states(full)) == [state_to_bytes(s) for s in full]


def test_vectorised_unpack_rejects_malformed_blobs():
    from stream.engine.state import unpack_batch

    params = preset("mmr")
    good = state_to_bytes(PlayerState(1.0, 2.0, 3.0, 4.0, ((1.0, 2.0, 3.0),), 1, 5.0))
    for bad in (good[:-1], b"\x02" + good[1:], good + b"\0", good[:10]):
        try:
            unpack_batch([good, bad], params)
        except ValueError:
            continue
        raise AssertionError("accepted a malformed blob")
