"""Phase two of multi-section ``player-updates`` messages with chains (DESIGN15), in process against
the session's private redis-server: a batch holding several rounds of one player equals applying
the rounds one by one; a row whose earlier round is missing (a gap) is not applied until that
round arrives; a forged section among good ones is set aside alone; a redelivered batch re-emits."""

from __future__ import annotations

import asyncio
import json
import random
from typing import Any

import numpy as np
import pytest
import redis
from hypothesis import given, settings
from hypothesis import strategies as st

from stream.batch.replay import replay
from stream.contracts import PlayerUpdate, RoundResult, Standing, validate
from stream.engine import preset
from stream.pipeline.context import PipelineContext
from stream.pipeline.messages import FanOutMessage, Incoming, join_fanout, join_sections, split_sections
from stream.pipeline.phase_one import handle_rounds
from stream.pipeline.phase_two import PhaseTwoResult, handle_updates
from stream.settings import Settings
from stream.stack.redis_server import RedisServer
from stream.store.store import StoredStates
from tests.contracts.wire_oracle import entries as update_entries, reference_json
from tests.store_calls import stored_player

TOLERANCE = 1e-9
PARAMS = preset("mmr")


def game(round_id: str, players: str, day: int, *, ladder: str = "C", weight: float = 1.0) -> RoundResult:
    return RoundResult(round_id=round_id, ladder=ladder, occurred_at=1.7e9 + 86_400.0 * day, weight=weight,
                       standings=[Standing(p, i + 1) for i, p in enumerate(players)])


def context(url: str, partitions: int = 1) -> PipelineContext:
    return PipelineContext.from_settings(Settings(redis_url=url, partitions=partitions, engine_preset="mmr"))


async def phase_one(ctx: PipelineContext, rounds: list[RoundResult]) -> list[list[FanOutMessage]]:
    """Phase one of ``rounds`` (a fresh ladder history) as ONE batch, as the rounds agent runs it
    (``handle_rounds``: registered, fan-outs stored with each entry's ``previous_seq``): each
    round's sections, one per partition of its players, in order."""
    batch = await handle_rounds(ctx, [Incoming(r.to_json().encode()) for r in rounds])
    return [result.updates for result in batch.results if result is not None]


def snapshot(url: str) -> dict[bytes, object]:
    """Every key's content but wall-clock fields (``*_at`` of hashes, the sweeper ledger's due
    times), the token of the attempt that stored a round's fan-out (``stored_by``: random per
    phase-one batch), the digest cache and phase one's ladder leases and fences (whose owner ids
    are random per worker and whose tokens count hand-overs: which attempt rated, not what)."""
    client = redis.Redis.from_url(url)
    try:
        out: dict[bytes, object] = {}
        for key in client.keys("*"):
            kind = client.type(key)
            if key.startswith((b"ems:round-digests:", b"ems:lease:", b"ems:fence:")):
                continue
            if kind == b"hash":
                out[key] = {k: v for k, v in client.hgetall(key).items() if not k.endswith(b"_at") and k != b"stored_by"}
            elif kind == b"list":
                out[key] = client.lrange(key, 0, -1)
            elif kind == b"set":
                out[key] = client.smembers(key)
            elif kind == b"zset" and key.startswith(b"ems:incomplete:"):
                out[key] = client.zrange(key, 0, -1)
            elif kind == b"zset":
                out[key] = client.zrange(key, 0, -1, withscores=True)
            else:
                out[key] = client.get(key)
        return out
    finally:
        client.close()


def flush(url: str) -> None:
    client = redis.Redis.from_url(url)
    client.flushall()
    client.close()


def mu_of(url: str, ladder: str, player: str) -> float | None:
    client = redis.Redis.from_url(url)
    try:
        raw = client.hget(f"ems:player:{{{ladder}|{player}}}", "mu")
        return None if raw is None else float(raw)
    finally:
        client.close()


def events(result: PhaseTwoResult) -> set[tuple[bytes, bytes]]:
    return {(e.key, e.value) for e in result.events}


# ---- the contract ------------------------------------------------------------------------------

def test_previous_seq_is_written_read_and_valid() -> None:
    performance = np.array([1501.25, -3.5])
    update = PlayerUpdate(ladder="L", round_id="r", seq=9, occurred_at=1.7e9, weight=1.0, field_size=2,
                          players=["a", 'q"\n'], ranks=[1, 2], performances=performance.tolist(), previous_seqs=[0, 7])
    value = update.to_json().encode()
    assert value == reference_json(update) and b"\n" not in value
    validate("player-update", value)
    assert PlayerUpdate.from_json(value) == update
    assert [e.previous_seq for e in update_entries(update)] == [0, 7]
    data = json.loads(value)
    del data["entries"][1]["previous_seq"]  # absent in any entry: no chain information
    assert PlayerUpdate.from_json(data).previous_seqs is None
    data["entries"][0]["previous_seq"] = -1
    with pytest.raises(ValueError):
        validate("player-update", data)
    old = PlayerUpdate("L", "r", 9, 1.7e9, 1.0, 2, ["a"], [1], [1.0])
    assert "previous_seq" not in old.to_json() and old.to_json().encode() == reference_json(old)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.binary(min_size=1, max_size=40).map(lambda b: b.replace(b"\n", b" ")), max_size=30),
       st.integers(min_value=1, max_value=120))
def test_join_sections_fits_the_limit_keeps_order_and_splits_back(sections: list[bytes], limit: int) -> None:
    messages = join_sections(sections, limit)
    assert [s for m in messages for s in split_sections(m)] == sections
    for message in messages:
        assert len(message) <= limit or b"\n" not in message  # only a lone section may exceed it
    for a, b in zip(messages, messages[1:]):  # as few as fit: the next one's first section did not fit
        assert len(a) + 1 + len(split_sections(b)[0]) > limit


def test_join_fanout_groups_partitions_and_keys_by_first_section() -> None:
    parts = [FanOutMessage(1, b"a", b"s1"), FanOutMessage(0, b"b", b"s2"), FanOutMessage(1, b"c", b"s3"),
             FanOutMessage(1, b"d", b"s4")]
    assert join_fanout(parts, 5) == [FanOutMessage(0, b"b", b"s2"), FanOutMessage(1, b"a", b"s1\ns3"),
                                     FanOutMessage(1, b"d", b"s4")]


# ---- chains ------------------------------------------------------------------------------------

async def one_by_one(url: str, rounds: list[RoundResult], partitions: int) -> set[tuple[bytes, bytes]]:
    ctx = context(url, partitions)
    out: set[tuple[bytes, bytes]] = set()
    for messages in await phase_one(ctx, rounds):
        result = await handle_updates(ctx, [m.value for m in messages])
        assert result.gaps == 0 and result.unverified == []
        out |= events(result)
    await ctx.store.close()
    return out


async def batched(url: str, rounds: list[RoundResult], partitions: int, limit: int, batches: int,
                  rng: random.Random) -> set[tuple[bytes, bytes]]:
    """Every round's sections joined per partition (at most ``limit`` bytes a message), the
    partitions' messages interleaved (each partition in order) and cut into ``batches`` batches."""
    ctx = context(url, partitions)
    joined = join_fanout([m for messages in await phase_one(ctx, rounds)
                          for m in messages], limit)
    queues = [[m.value for m in joined if m.partition == p] for p in range(partitions)]
    order: list[bytes] = []
    while any(queues):
        order.append(rng.choice([q for q in queues if q]).pop(0))
    cuts = sorted(rng.sample(range(1, len(order)), min(batches, len(order)) - 1)) if len(order) > 1 else []
    out: set[tuple[bytes, bytes]] = set()
    for lo, hi in zip([0, *cuts], [*cuts, len(order)]):
        result = await handle_updates(ctx, order[lo:hi])
        assert result.gaps == 0 and result.unverified == []
        out |= events(result)
    await ctx.store.close()
    return out


@st.composite
def round_lists(draw: st.DrawFn) -> list[RoundResult]:
    pool = draw(st.integers(min_value=2, max_value=6))
    players = [f"p{i}" for i in range(pool)]
    out = []
    for i in range(draw(st.integers(min_value=1, max_value=8))):
        chosen = draw(st.permutations(players).map(lambda ps: ps[:draw(st.integers(min_value=2, max_value=len(ps)))]))
        ranks = draw(st.lists(st.integers(min_value=1, max_value=3), min_size=len(chosen), max_size=len(chosen)))
        if len(set(ranks)) == 1:
            ranks[-1] += 1
        out.append(RoundResult(round_id=f"r{i}", ladder=draw(st.sampled_from(["A", "B"])),
                               occurred_at=1.7e9 + 3_600.0 * draw(st.integers(min_value=0, max_value=48)) + i,
                               weight=draw(st.sampled_from([1.0, 0.5, 2.0])),
                               standings=[Standing(p, r) for p, r in zip(chosen, sorted(ranks))]))
    return out


@settings(max_examples=40, deadline=None)
@given(round_lists(), st.integers(min_value=1, max_value=3), st.integers(min_value=1, max_value=600),
       st.integers(min_value=1, max_value=4), st.randoms(use_true_random=False))
def test_a_batch_of_chained_rounds_equals_applying_them_one_by_one(
        redis_server: RedisServer, rounds: list[RoundResult], partitions: int, limit: int, batches: int,
        rng: random.Random) -> None:
    """Rounds of the same players in one batch (several sections a message, messages split at
    ``limit``, a partition's messages in order, cut into batches anyhow): Redis and the events
    are exactly those of applying each round alone, in order; and equal replay."""
    url = redis_server.url
    flush(url)
    alone = asyncio.run(one_by_one(url, rounds, partitions))
    expected = snapshot(url)
    flush(url)
    together = asyncio.run(batched(url, rounds, partitions, limit, batches, rng))
    assert snapshot(url) == expected
    assert together == alone
    for (ladder, player), state in replay(rounds, PARAMS).states().items():
        assert abs(mu_of(url, ladder, player) - state.mu) <= TOLERANCE  # type: ignore[operator]


def test_a_gap_is_not_applied_until_the_earlier_round_arrives(redis_url: str) -> None:
    """r2 and r3 arrive before r1 (lost, re-sent later): the rows of a and b that need r1 are gaps
    (not applied, not confirmed, counted), c's row of r2 (its first round) is applied; once r1
    arrives and r2, r3 are re-sent, every player ends as in replay."""
    rounds = [game("r1", "ab", 0), game("r2", "ac", 1), game("r3", "ab", 2)]

    async def body() -> None:
        ctx = context(redis_url)
        one, two, three = await phase_one(ctx, rounds)
        later = join_sections([m.value for m in two + three], 10_000)
        assert len(later) == 1 and len(split_sections(later[0])) == 2
        early = await handle_updates(ctx, later)
        assert early.gaps == 3 and early.applied == 1 and [e.key for e in early.events] == [b"c"]
        assert [(r, p) for _, r, p in early.emitted if p] == [("r2", ["c"])]  # only c's row is confirmed
        assert "mu" not in await stored_player(ctx.store, "C", "a") and "mu" not in await stored_player(ctx.store, "C", "b")
        assert (await ctx.store.round_record("C", "r2"))["status"] == "pending"
        first = await handle_updates(ctx, [m.value for m in one])
        assert first.applied == 2 and first.gaps == 0
        again = await handle_updates(ctx, later)  # the sweeper re-sends the pending rounds
        assert again.gaps == 0 and again.applied == 3 and again.replayed == 1
        for r in ("r1", "r2", "r3"):
            assert (await ctx.store.round_record("C", r))["status"] == "rated"
        await ctx.store.close()

    asyncio.run(body())
    for (ladder, player), state in replay(rounds, PARAMS).states().items():
        assert abs(mu_of(redis_url, ladder, player) - state.mu) <= TOLERANCE  # type: ignore[operator]


def test_a_forged_section_among_good_ones_is_set_aside_alone(redis_url: str) -> None:
    """One message of three sections, the middle one altered: it alone comes back unverified (its
    bytes, its message's index); the others are applied, except the row that needed it (a gap).
    The real section later completes the chain."""
    rounds = [game("r1", "ab", 0), game("r2", "cd", 1), game("r3", "ac", 2)]

    async def body() -> None:
        ctx = context(redis_url)
        one, two, three = await phase_one(ctx, rounds)
        real = two[0].value
        data = json.loads(real)
        data["entries"][0]["performance"] = 9_999.0
        fake = json.dumps(data, separators=(",", ":")).encode()
        message = b"\n".join([one[0].value, fake, three[0].value])
        c_before = await stored_player(ctx.store, "C", "c")
        result = await handle_updates(ctx, [message])
        assert [i for i, _ in result.unverified] == [0] and result.unverified_sections == [fake]
        assert "not applied" in result.unverified[0][1]
        assert result.applied == 3 and result.gaps == 1  # a, b of r1 and a of r3; c of r3 waits for r2
        assert await stored_player(ctx.store, "C", "c") == c_before and "mu" not in c_before
        assert "mu" not in await stored_player(ctx.store, "C", "d")
        done = await handle_updates(ctx, [real, three[0].value])
        assert done.unverified == [] and done.applied == 3 and done.gaps == 0
        await ctx.store.close()

    asyncio.run(body())
    for (ladder, player), state in replay(rounds, PARAMS).states().items():
        assert abs(mu_of(redis_url, ladder, player) - state.mu) <= TOLERANCE  # type: ignore[operator]


def test_a_redelivered_batch_re_emits_the_same_events(redis_url: str) -> None:
    """The same multi-section batch twice: nothing is applied the second time, every row's event
    is re-emitted with the same bytes, and Redis does not change."""
    rounds = [game("r1", "abc", 0), game("r2", "ab", 1), game("r3", "bca", 2), game("r4", "cd", 3)]

    async def body() -> None:
        ctx = context(redis_url, partitions=2)
        messages = join_fanout([m for ms in await phase_one(ctx, rounds) for m in ms], 10_000)
        assert any(len(split_sections(m.value)) > 1 for m in messages)
        first = await handle_updates(ctx, [m.value for m in messages])
        assert first.applied == 10 and first.replayed == 0
        before = snapshot(redis_url)
        second = await handle_updates(ctx, [m.value for m in messages])
        assert second.applied == 0 and second.replayed == 10 and second.gaps == 0
        assert events(second) == events(first) and len(second.events) == 10
        def confirmed(result: PhaseTwoResult) -> list[tuple[str, list[str]]]:
            return sorted((r, sorted(p)) for _, r, p in result.emitted)

        assert confirmed(second) == confirmed(first)
        assert snapshot(redis_url) == before
        await ctx.store.close()

    asyncio.run(body())


def test_a_player_released_from_a_failed_round_goes_on_with_the_next(redis_url: str) -> None:
    """r2's section is dead-lettered (its handling kept raising): release_queued moves its
    players' last_seq to r2's seq though r3 queued them since (state unchanged), so r3, whose
    previous_seq names r2, is applied on their state after r1 (not a gap forever)."""
    rounds = [game("r1", "ab", 0), game("r2", "ab", 1), game("r3", "ab", 2)]

    async def body() -> None:
        ctx = context(redis_url)
        one, two, three = await phase_one(ctx, rounds)
        await handle_updates(ctx, [m.value for m in one])
        state = await stored_player(ctx.store, "C", "a")
        assert state["queued_seq"] == b"3" and state["last_seq"] == b"1"
        assert await ctx.store.release_queued("C", ["a", "b"], 2) == 2
        released = await stored_player(ctx.store, "C", "a")
        assert released == {**state, "last_seq": b"2"}
        assert await ctx.store.release_queued("C", ["a", "b"], 2) == 0  # once
        result = await handle_updates(ctx, [m.value for m in three])
        assert result.applied == 2 and result.gaps == 0
        after = await stored_player(ctx.store, "C", "a")
        assert after["last_seq"] == b"3" and after["rounds"] == b"2" and after["mu"] != state["mu"]
        await ctx.store.close()

    asyncio.run(body())


def test_writes_applied_elsewhere_after_the_load_are_re_emitted_not_applied_again(
        redis_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Rows whose players another worker applied between this batch's read and its writes (the
    script skips them): their stored results are re-emitted (the same bytes), the rest of the batch
    is applied, and Redis ends as when the batch reads what is stored."""
    rounds = [game("r1", "abc", 0), game("r2", "ab", 1), game("r3", "cd", 2)]

    async def run(stale: bool) -> tuple[dict[bytes, object], set[tuple[bytes, bytes]], PhaseTwoResult]:
        flush(redis_url)
        ctx = context(redis_url, partitions=2)
        messages = [m.value for ms in await phase_one(ctx, rounds) for m in ms]
        first = await handle_updates(ctx, [m for m in messages if b'"round_id":"r3"' not in m])
        assert first.applied == 5
        if stale:  # the states as read before the first batch applied (every player new then)
            load = ctx.store.load_states

            async def load_states(*args: Any, **kwargs: Any) -> StoredStates:
                stored = await load(*args, **kwargs)
                return StoredStates(np.zeros_like(stored.last_seq), [None] * len(stored.states),
                                    [None] * len(stored.tiers), stored.verified)

            monkeypatch.setattr(ctx.store, "load_states", load_states)
        again = await handle_updates(ctx, messages)
        monkeypatch.undo()
        await ctx.store.confirm_emitted(again.emitted)
        await ctx.store.close()
        return snapshot(redis_url), events(first) | events(again), again

    fresh, sent, _ = asyncio.run(run(stale=False))
    stale, sent_stale, again = asyncio.run(run(stale=True))
    assert again.applied == 2 and again.replayed == 5 and again.gaps == 0 and len(again.events) == 7
    assert sorted((r, sorted(p)) for _, r, p in again.emitted) == [
        ("r1", ["a", "b", "c"]), ("r2", ["a", "b"]), ("r3", ["c", "d"])]
    assert sent_stale == sent
    assert stale == fresh


def _chain_rule_row_by_row(key: list[int], seq: list[int], previous: list[int],
                           last_seq: list[int]) -> tuple[list[int], list[int]]:
    """The chain rule (chains.py's docstring) one row at a time: each player's rows in seq order."""
    from stream.pipeline.chains import APPLY, DONE, GAP, NO_PREVIOUS

    status, wave = [GAP] * len(key), [0] * len(key)
    cursor, seen = list(last_seq), [0] * len(last_seq)
    for row in sorted(range(len(key)), key=lambda r: (key[r], seq[r])):
        player = key[row]
        wave[row], seen[player] = seen[player], seen[player] + 1
        if last_seq[player] >= seq[row]:
            status[row] = DONE
        elif cursor[player] < seq[row] and (previous[row] == NO_PREVIOUS or cursor[player] >= previous[row]):
            status[row], cursor[player] = APPLY, seq[row]
    return status, wave


@settings(max_examples=300, deadline=None)
@given(st.integers(min_value=1, max_value=6), st.integers(min_value=0, max_value=12), st.randoms())
def test_plan_chains_follows_the_chain_rule_row_by_row(players: int, n: int, rng: random.Random) -> None:
    """plan_chains (its one-wave path when every player has one row, its waves otherwise) gives
    each row the status of the rule applied row by row, and each player's k-th row wave k."""
    from stream.pipeline.chains import APPLY, NO_PREVIOUS, plan_chains

    distinct = rng.random() < 0.5
    key = rng.sample(range(players), min(n, players)) if distinct else [rng.randrange(players) for _ in range(n)]
    seq = rng.sample(range(1, 40), len(key))
    previous = [rng.choice((NO_PREVIOUS, rng.randrange(0, 40))) for _ in key]
    last_seq = [rng.randrange(0, 30) for _ in range(players)]
    plan = plan_chains(np.array(key, dtype=np.int64), np.array(seq, dtype=np.int64),
                       np.array(previous, dtype=np.int64), np.array(last_seq, dtype=np.int64))
    status, wave = _chain_rule_row_by_row(key, seq, previous, last_seq)
    assert plan.status.tolist() == status
    applied = [w for w, s in zip(wave, status) if s == APPLY]
    assert plan.wave[plan.status == APPLY].tolist() == applied
