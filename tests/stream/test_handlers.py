"""Phase one and phase two handlers without Kafka, against the session's private redis-server."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from aiokafka.partitioner import DefaultPartitioner

from stream.batch.replay import replay
from stream.engine import preset
from stream.contracts import Limits, PlayerUpdate, RoundResult, Standing, parse_round, validate
from stream.pipeline.context import PipelineContext
from stream.pipeline.partitioner import partition_for
from stream.pipeline.messages import Incoming
from stream.pipeline.outbox import ListOutbox, Outbox
from stream.pipeline.phase_one import handle_one, handle_rounds
from stream.pipeline.phase_two import handle_updates
from stream.settings import Settings
from stream.store.store import QueuedRound
from tests.contracts.wire_oracle import entries as update_entries, reference_json
from tests.faults.injection import Injector
from tests.store_calls import mark_queued, register_round, stored_player
from tests.engine.oracles import final_state

PARTITIONS = 4


def make_round(round_id: str, players: list[str], *, day: int) -> RoundResult:
    return RoundResult(round_id=round_id, ladder="L", occurred_at=1.7e9 + 86_400.0 * day,
                       standings=[Standing(p, i + 1) for i, p in enumerate(players)])


def context(redis_url: str, outbox: Outbox | None = None, **settings: object) -> PipelineContext:
    return PipelineContext.from_settings(Settings(redis_url=redis_url, partitions=PARTITIONS, barrier_poll_s=0.001,
                                                  barrier_max_poll_s=0.005, **settings),  # type: ignore[arg-type]
                                         outbox=outbox)


def test_the_context_s_configuration_is_fixed_at_construction() -> None:
    """The outbox, settings and store come with the context: nothing installs them later."""
    ctx = context("redis://127.0.0.1:1/0")
    for name, value in (("outbox", ListOutbox(1)), ("settings", ctx.settings), ("store", ctx.store)):
        with pytest.raises(AttributeError, match="fixed at construction"):
            setattr(ctx, name, value)
    ctx.ladders = ctx.ladders  # state (a season started) may change


def test_partition_matches_kafkas_default_partitioner() -> None:
    partitions = list(range(PARTITIONS))
    for player in ["alice", "bob", "p000", "ünïcode", "x" * 100]:
        assert partition_for(player, PARTITIONS) == DefaultPartitioner()(player.encode(), partitions, partitions)


def test_redelivered_round_resends_the_same_fanout_and_tasks_apply_once(redis_url: str) -> None:
    first = make_round("r1", ["a", "b", "c", "d", "e"], day=0)

    async def body() -> None:
        outbox = ListOutbox(PARTITIONS)
        ctx = context(redis_url, outbox)
        result = await handle_one(ctx, Incoming(first.to_json().encode()))
        assert result.outcome == "rated" and result.seq == 1
        entries = [PlayerUpdate.from_json(m.value) for m in result.updates]
        assert sorted(p for u in entries for p in u.players) == ["a", "b", "c", "d", "e"]
        for message, update in zip(result.updates, entries):
            validate("player-update", message.value)
            assert {partition_for(p, PARTITIONS) for p in update.players} == {message.partition}
            assert message.key == update.players[0].encode()

        # phase two of only part of the fan-out, then the round is redelivered: same bytes, re-sent at once
        done = await handle_updates(ctx, [result.updates[0].value])
        again = await handle_one(ctx, Incoming(first.to_json().encode()))
        assert again.outcome == "resent" and outbox.resent == result.updates and again.updates == []

        # every task twice (and the first one a third time): each player applied once
        everything = await handle_updates(ctx, [m.value for m in result.updates] * 2)
        assert everything.applied == 5 - done.applied
        repeat = await handle_updates(ctx, [m.value for m in result.updates])
        assert repeat.applied == 0 and repeat.replayed == 5
        assert sorted(repeat.events, key=lambda e: e.key) == sorted(
            done.events + [e for e in everything.events if e not in done.events], key=lambda e: e.key)
        for event in repeat.events:
            validate("rating-change", event.value)
        assert (await handle_one(ctx, Incoming(first.to_json().encode()))).outcome == "duplicate"
        record = await ctx.store.round_record("L", "r1")
        assert record["status"] == "rated" and record["pending"] == "0"
        await ctx.store.close()

    asyncio.run(body())


@pytest.mark.parametrize("direct_players", [256, 0], ids=["re-reads players", "polls round status"])
def test_barrier_holds_a_round_until_shared_players_are_applied(redis_url: str, direct_players: int) -> None:
    rounds = [make_round("r1", ["a", "b", "c"], day=0), make_round("r2", ["c", "d"], day=1),
              make_round("r3", ["b", "e", "a"], day=2)]

    async def scenario() -> dict[str, float]:
        # the posterior cache off: this worker's posterior of round 1 would let round 2 through
        ctx = context(redis_url, barrier_direct_players=direct_players, barrier_full_check_s=60.0,
                      phase_one_cache_players=0)
        one = await handle_one(ctx, Incoming(rounds[0].to_json().encode()))
        two = asyncio.create_task(handle_one(ctx, Incoming(rounds[1].to_json().encode())))
        for _ in range(20):
            await asyncio.sleep(0.005)
        assert not two.done(), "round 2 read player c's prior before round 1 was applied"
        await handle_updates(ctx, [m.value for m in one.updates])
        two_result = await asyncio.wait_for(two, timeout=30)
        await handle_updates(ctx, [m.value for m in two_result.updates])
        three = await handle_one(ctx, Incoming(rounds[2].to_json().encode()))  # everyone applied: no wait
        await handle_updates(ctx, [m.value for m in three.updates])
        perf = {}
        for result in (one, two_result, three):
            for message in result.updates:
                update = PlayerUpdate.from_json(message.value)
                perf.update({f"{update.round_id}/{p}": x for p, x in zip(update.players, update.performances)})
        mu = {p: float((await stored_player(ctx.store, "L", p))["mu"]) for p in "abcde"}
        await ctx.store.close()
        return perf | mu

    got = asyncio.run(scenario())
    reference = replay(rounds, preset(Settings().engine_preset))
    for rated in reference.rounds:
        for player, x in zip(rated.players, rated.performance):
            assert abs(got[f"{rated.round_id}/{player}"] - x) <= 1e-9
    for player in "abcde":
        assert abs(got[player] - final_state(reference, "L", player).mu) <= 1e-9
    assert json.dumps(sorted(got)).count("/") == 8
    assert np.isfinite(list(got.values())).all()


def test_bulk_change_encoding_equals_the_contracts_json() -> None:
    from stream.contracts import RatingChange
    from stream.contracts.encoding import ChangeColumns, encode_changes, number_texts

    rows = [("ünï", 2, 1501.25, 1500.0, 350.0, 1490.123456789, 250.5, 989.1, "Gold", 1),
            ('q"\\/\n', 1, -0.0, 1e-300, 1e300, 2.5e-05, 7.0, -12.75, "", 4294967295)]

    def texts(k: int) -> list[str]:
        return number_texts("x", np.array([r[k] for r in rows]))

    columns = ChangeColumns(
        ladder="L.x", round_id="r/1 \u2028", field_size=3, occurred_at=1.7e9, players=[r[0] for r in rows],
        ranks=[r[1] for r in rows], performance=texts(2), mu_before=texts(3), sigma_before=texts(4),
        mu_after=texts(5), sigma_after=texts(6), display_rating=texts(7), tiers=[r[8] for r in rows],
        rounds_played=[r[9] for r in rows])
    expected = [RatingChange(ladder="L.x", round_id="r/1 \u2028", player=p, rank=rank, field_size=3, performance=x,
                             mu_before=m0, sigma_before=s0, mu_after=m1, sigma_after=s1, display_rating=d,
                             tier=tier or None, rounds_played=n, occurred_at=1.7e9)
                for p, rank, x, m0, s0, m1, s1, d, tier, n in rows]
    assert [change.to_json().encode() for change in expected] == [reference_json(c) for c in expected]
    expected = [reference_json(change) for change in expected]
    assert encode_changes(columns) == expected
    for value in expected:
        validate("rating-change", value)
    marks = [True, False]  # v5: each row's provisional status, the last member
    flagged = [RatingChange.from_json(value) for value in expected]
    for change, flag in zip(flagged, marks):
        change.provisional = flag
    assert encode_changes(dataclasses.replace(columns, provisional=marks)) == [c.to_json().encode() for c in flagged]
    for bad in (np.nan, np.inf):
        with pytest.raises(ValueError):
            number_texts("mu_after", np.array([1.0, bad]))


def test_bulk_update_encoding_equals_the_contracts_json() -> None:
    performance = np.array([1501.25, -0.0, 1e-300, 2.5e-05])
    update = PlayerUpdate(ladder="L.x", round_id='r/"1"\u2028', seq=7, occurred_at=1.7e9 + 0.125, weight=0.5,
                          field_size=9, players=["ünï", 'q"\\/\n', "b", "c d"], ranks=[1, 2, 2, 9],
                          performances=performance.tolist())
    value = update.to_json().encode()
    assert value == reference_json(update)
    validate("player-update", value)
    assert PlayerUpdate.from_json(value) == update
    assert b"previous_seq" not in value  # a message without the field is byte-identical to before

    update.previous_seqs = [0, 6, 3, 0]
    chained = update.to_json().encode()
    assert chained == reference_json(update)
    validate("player-update", chained)
    assert PlayerUpdate.from_json(chained) == update


@settings(max_examples=300, deadline=None)
@given(st.lists(st.floats(allow_nan=False, allow_infinity=False), max_size=40),
       st.lists(st.floats(min_value=1e-4, max_value=1e16, allow_nan=False, allow_infinity=False), max_size=40))
def test_number_texts_are_exactly_repr(anything: list[float], positional: list[float]) -> None:
    """The fast path (orjson) writes the very text ``repr`` writes, and any float falls back to repr."""
    from stream.contracts.encoding import number_texts

    for values in (anything, positional, [-v for v in positional], positional + [0.0, -0.0]):
        assert number_texts("x", np.array(values, dtype=np.float64)) == [repr(v) for v in values]


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=8), st.lists(st.text(max_size=8), min_size=1, max_size=3),
       st.lists(st.text(max_size=8), min_size=1, max_size=4))
def test_bulk_change_encoding_escapes_ids_as_the_contracts_json(ladder: str, round_ids: list[str],
                                                                players: list[str]) -> None:
    """Any ladder, round id and player text (quotes, backslashes, control characters,
    unicode...) gives the bytes ``RatingChange.to_json()`` gives, event id included."""
    from stream.contracts import RatingChange
    from stream.contracts.encoding import ChangeColumns, encode_changes_of_rounds

    n = len(players)
    round_of = [i % len(round_ids) for i in range(n)]
    columns = ChangeColumns(
        ladder=ladder, round_id=round_ids[0], field_size=n, occurred_at=1.7e9, players=players,
        ranks=list(range(1, n + 1)), performance=["1.5"] * n, mu_before=["2.0"] * n, sigma_before=["3.0"] * n,
        mu_after=["4.0"] * n, sigma_after=["5.0"] * n, display_rating=["6.0"] * n, tiers=[""] * n,
        rounds_played=[1] * n)
    expected = [RatingChange(ladder=ladder, round_id=round_ids[k], player=p, rank=i + 1, field_size=n, performance=1.5,
                             mu_before=2.0, sigma_before=3.0, mu_after=4.0, sigma_after=5.0, display_rating=6.0,
                             tier=None, rounds_played=1, occurred_at=1.7e9)
                for i, (k, p) in enumerate(zip(round_of, players))]
    assert [change.to_json().encode() for change in expected] == [reference_json(c) for c in expected]
    expected = [reference_json(change) for change in expected]
    got = encode_changes_of_rounds(ladder, round_ids, [n] * len(round_ids), [1.7e9] * len(round_ids), round_of,
                                   columns)
    assert got == expected


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.floats(allow_nan=False, allow_infinity=False), max_size=12), min_size=2, max_size=6),
       st.lists(st.floats(min_value=1e-4, max_value=1e16, allow_nan=False, allow_infinity=False), max_size=12))
def test_columns_texts_are_each_columns_number_texts(columns: list[list[float]], positional: list[float]) -> None:
    """The columns rendered by one call are each column's own texts (the fast path when every
    value is in orjson's range, column by column otherwise), and a column that is not finite
    raises naming that column."""
    from stream.contracts.encoding import columns_texts, number_texts

    for values in (columns, [positional, [-v for v in positional], [0.0, -0.0, 1.5]]):
        named = [(f"c{i}", np.array(v, dtype=np.float64)) for i, v in enumerate(values)]
        assert columns_texts(named) == [number_texts(name, v) for name, v in named]
    with pytest.raises(ValueError, match=r"\(sigma_after\)"):
        columns_texts([("mu_after", np.array([1.0])), ("sigma_after", np.array([2.0, np.nan]))])


def test_round_left_queued_without_its_fanout_is_completed_by_its_next_attempt(redis_url: str) -> None:
    """Phase one writes the queued marks and the fan-out in one pipeline, not a transaction: a
    worker killed mid-pipeline leaves the marks alone. The round's next attempt (redelivery) must
    still pass its own barrier, store and send the fan-out, and rate like replay."""
    rounds = [make_round("r1", ["a", "b", "c"], day=0), make_round("r2", ["c", "a", "d"], day=1)]

    async def body() -> dict[str, float]:
        ctx = context(redis_url)
        one = await handle_one(ctx, Incoming(rounds[0].to_json().encode()))
        await handle_updates(ctx, [m.value for m in one.updates])
        store = ctx.store
        real_queue_batch = store.queue_batch

        async def killed_mid_pipeline(queued: Sequence[QueuedRound], release: object = None) -> list[int]:
            (round_,) = queued
            await mark_queued(store, round_.ladder, round_.players, round_.seq)  # the first half reached Redis, then the worker died
            raise ConnectionResetError("worker killed mid-pipeline")

        store.queue_batch = killed_mid_pipeline  # type: ignore[method-assign]
        with pytest.raises(ConnectionResetError):
            await handle_one(ctx, Incoming(rounds[1].to_json().encode()))
        assert (await store.round_record("L", "r2"))["status"] == "registered"
        store.queue_batch = real_queue_batch  # type: ignore[method-assign]
        two = await asyncio.wait_for(handle_one(ctx, Incoming(rounds[1].to_json().encode())), timeout=30)
        assert two.outcome == "rated" and len(two.updates) > 0
        await handle_updates(ctx, [m.value for m in two.updates])
        assert (await store.round_record("L", "r2"))["status"] == "rated"
        mu = {p: float((await stored_player(store, "L", p))["mu"]) for p in "abcd"}
        await store.close()
        return mu

    got = asyncio.run(body())
    reference = replay(rounds, preset(Settings().engine_preset))
    for player in "abcd":
        assert abs(got[player] - final_state(reference, "L", player).mu) <= 1e-9


def test_one_batch_of_several_rounds_ladders_and_weights_equals_replay(redis_url: str) -> None:
    """Phase two rates a batch holding several rounds (two ladders, the same ids in both, different
    weights and times) in one engine call; every player ends as in replay."""
    def game(round_id: str, ladder: str, players: list[str], day: int, weight: float) -> RoundResult:
        return RoundResult(round_id=round_id, ladder=ladder, occurred_at=1.7e9 + 86_400.0 * day, weight=weight,
                           standings=[Standing(p, i + 1) for i, p in enumerate(players)])

    warmup = [game("w1", "A", ["a", "b", "c", "d"], 0, 1.0), game("w2", "B", ["a", "b", "c"], 0, 1.0)]
    batch = [game("r1", "A", ["a", "b"], 3, 0.5), game("r2", "A", ["c", "d", "e"], 5, 2.0),
             game("r3", "B", ["c", "a", "b"], 9, 1.0)]

    async def body() -> dict[tuple[str, str], tuple[float, float]]:
        ctx = context(redis_url)
        for r in warmup:
            await handle_updates(ctx, [m.value for m in (await handle_one(ctx, Incoming(r.to_json().encode()))).updates])
        messages = [m.value for r in batch for m in (await handle_one(ctx, Incoming(r.to_json().encode()))).updates]
        result = await handle_updates(ctx, messages)
        assert result.applied == sum(r.field_size for r in batch)
        out = {}
        for ladder, players in (("A", "abcde"), ("B", "abc")):
            for p in players:
                stored = await stored_player(ctx.store, ladder, p)
                out[(ladder, p)] = (float(stored["mu"]), float(stored["sigma"]))
        await ctx.store.close()
        return out

    got = asyncio.run(body())
    reference = replay(warmup + batch, preset(Settings().engine_preset))
    for (ladder, player), (mu, sigma) in got.items():
        state = final_state(reference, ladder, player)
        assert abs(mu - state.mu) <= 1e-9 and abs(sigma - state.sigma) <= 1e-9


def test_rating_changes_carry_the_apis_provisional_rule(redis_url: str) -> None:
    """Every RatingChange of a batch (two ladders, one with a provisional rule) carries
    ``provisional``, what the API's read-time rule (``pipeline.status``) says of the change's
    sigma_after and rounds_played right after the round; the events validate against v5."""
    from stream.contracts import RatingChange
    from stream.engine.ladders import parse_ladders
    from stream.pipeline.status import status_fields

    ladders = json.dumps({"A": {"model": "mmr", "display": {"provisional_rounds": 3, "provisional_sigma": 200.0}},
                          "B": {"model": "mmr"}})
    rounds = [RoundResult(round_id=f"r{k}", ladder=ladder, occurred_at=1.7e9 + 86_400.0 * k,
                          standings=[Standing(p, i + 1) for i, p in enumerate(players)])
              for k, (ladder, players) in enumerate([("A", "abcd"), ("B", "abc"), ("A", "abe"), ("A", "dcba"),
                                                     ("A", "ab"), ("B", "cab")])]

    async def body() -> list[bytes]:
        ctx = context(redis_url, ladders=ladders)
        events: list[bytes] = []
        for r in rounds:
            result = await handle_updates(ctx, [m.value for m in (await handle_one(ctx, Incoming(r.to_json().encode()))).updates])
            events += [e.value for e in result.events]
        await ctx.store.close()
        return events

    events = asyncio.run(body())
    assert len(events) == sum(r.field_size for r in rounds)
    configs = parse_ladders(ladders, engine_preset=Settings().engine_preset)
    flags: dict[str, set[bool]] = {"A": set(), "B": set()}
    for value in events:
        validate("rating-change", value)
        change = RatingChange.from_json(value)
        assert isinstance(change.provisional, bool)
        api = status_fields(configs.of(change.ladder), [change.mu_after], [change.sigma_after], [change.rounds_played],
                            [change.occurred_at], change.occurred_at)[0]
        assert change.provisional is api["provisional"]
        flags[change.ladder].add(change.provisional)
    assert flags == {"A": {True, False}, "B": {False}}


def test_a_fanout_larger_than_max_message_bytes_is_split_and_rated_whole(redis_url: str) -> None:
    """All of a big round's players on ONE partition (the topic's count, not PARTITIONS): the
    fan-out is split in messages of at most MAX_MESSAGE_BYTES, and phase two rates them all."""
    players = [f"p{i:04d}" for i in range(400)]
    r = make_round("big", players, day=0)
    raw = json.dumps({"round_id": "big", "ladder": "L", "occurred_at": r.occurred_at, "standings": players}).encode()
    assert len(raw) < 8_000

    async def body() -> None:
        ctx = context(redis_url, ListOutbox(partitions=1), max_message_bytes=8_000)
        result = await handle_one(ctx, Incoming(raw))
        assert result.outcome == "rated" and len(result.updates) > 3
        assert {m.partition for m in result.updates} == {0}
        assert all(len(m.value) <= 8_000 for m in result.updates)
        updates = [PlayerUpdate.from_json(m.value) for m in result.updates]
        assert [p for u in updates for p in u.players] == players
        assert all(m.key == u.players[0].encode() for m, u in zip(result.updates, updates))
        stored = await ctx.store.load_fanout("L", "big")
        assert [value for _, value in stored] == [m.value for m in result.updates]
        await handle_updates(ctx, [m.value for m in result.updates])
        assert (await ctx.store.round_record("L", "big"))["status"] == "rated"
        expected = replay([r], preset("mmr")).states()
        for p in players[:5] + players[-5:]:
            assert float((await stored_player(ctx.store, "L", p))["mu"]) == expected[("L", p)].mu
        await ctx.store.close()

    asyncio.run(body())


def test_a_stored_round_completes_under_tightened_limits(redis_url: str) -> None:
    """A round accepted, then left ``registered``, is completed from its stored body even if
    MAX_ID_LENGTH, MAX_ROUND_SIZE or STRICT_SCHEMA were tightened meanwhile (it must not stall)."""
    from test_phase_one_batch import complete_as_sweeper

    long_player = "q" * 100
    raw = json.dumps({"round_id": "r1", "ladder": "L", "occurred_at": 1.7e9, "extra": 1,
                      "standings": [{"player": long_player, "rank": 1}, {"player": "b", "rank": 2},
                                    {"player": "c", "rank": 3}]}).encode()

    async def body() -> None:
        loose = context(redis_url)
        r = parse_round(raw, limits=Limits())
        await register_round(loose.store, "L", "r1", content_hash=r.content_hash(), occurred_at=r.occurred_at,
                                         received_at=0.0, field_size=3, body=raw)
        await loose.store.close()
        tight = context(redis_url, max_id_length=10, max_round_size=2, strict_schema=True)
        messages = await complete_as_sweeper(tight, "L", "r1")
        assert sorted(p for m in messages for p in PlayerUpdate.from_json(m.value).players) == sorted([long_player, "b", "c"])
        assert (await tight.store.round_record("L", "r1"))["status"] == "pending"
        await tight.store.close()

    asyncio.run(body())


def test_a_stored_round_that_keeps_raising_is_failed_and_dead_lettered(redis_url: str, tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The sweeper (or a later round) completing a registered round that raises at every attempt:
    after HANDLER_ATTEMPTS the round is failed and its letter sent, so it stalls nothing."""
    from stream.pipeline import faults
    from test_phase_one_batch import complete_as_sweeper

    r = make_round("poison", ["a", "b", "c"], day=0)

    async def body() -> None:
        monkeypatch.setattr(faults, "_hook", Injector(faults.RAISE_ALWAYS_IN_PHASE_ONE, str(tmp_path / "marker")))
        outbox = ListOutbox(PARTITIONS)
        ctx = context(redis_url, outbox, handler_attempts=3)
        await register_round(ctx.store, "L", "poison", content_hash=r.content_hash(), occurred_at=r.occurred_at,
                                       received_at=0.0, field_size=3, body=r.to_json().encode())
        for _ in range(2):
            with pytest.raises(faults.InjectedFault):
                await complete_as_sweeper(ctx, "L", "poison")
        assert await complete_as_sweeper(ctx, "L", "poison") == []
        assert [(x.reason, x.original) for x in outbox.rejected] == [("internal_error", r.to_json().encode())]
        assert "InjectedFault" in outbox.rejected[0].message
        assert (await ctx.store.round_record("L", "poison"))["status"] == "failed"
        later = await handle_one(ctx, Incoming(make_round("next", ["a", "b"], day=1).to_json().encode()))
        assert later.outcome == "rated" and later.updates  # not held by the failed round
        await ctx.store.close()

    asyncio.run(body())


@pytest.mark.parametrize("standings", [
    [{"team": "red", "players": ["a", "b"], "rank": 1}, {"team": "blue", "players": ["c", "d"], "rank": 2}],
    [{"team": "red", "players": ["a", "b"], "rank": 1}, {"player": "c", "rank": 2}],
    [{"player": "a", "rank": 1}, {"player": "b", "rank": 2, "weight": 0.5}],
])
def test_team_and_partial_play_rounds_are_rated(redis_url: str, standings: list[object]) -> None:
    """The stream rates teams, teams beside individuals and partial play on an Elo-MMR ladder
    (``stream.pipeline.teams``): the round is rated, its fan-out carries every player's share
    played, and the ladder's next round is rated from its posteriors."""
    ladder = f"teams{len(json.dumps(standings))}"  # one ladder per case
    raw = json.dumps({"round_id": "t1", "ladder": ladder, "occurred_at": 1.7e9, "standings": standings}).encode()

    async def body() -> None:
        ctx = context(redis_url)
        result = await handle_one(ctx, Incoming(raw))
        assert result.outcome == "rated" and result.dead_letter is None and result.seq == 1
        entries = [e for m in result.updates for e in update_entries(PlayerUpdate.from_json(m.value))]
        assert sorted(e.player for e in entries) == sorted(parse_round(raw, limits=Limits()).players())
        assert all(e.weight is not None for e in entries)
        await handle_updates(ctx, [m.value for m in result.updates])  # t2's barrier waits for t1's players
        after = await handle_one(ctx, Incoming(RoundResult(round_id="t2", ladder=ladder, occurred_at=1.7e9 + 60,
                                                    standings=[Standing("a", 1), Standing("b", 2)]).to_json().encode()))
        assert after.outcome == "rated" and after.seq == 2
        await ctx.store.close()

    asyncio.run(body())


@pytest.mark.parametrize(("standings", "reason"), [
    ([{"team": "red", "players": ["a", "b"], "rank": 1}, {"team": "blue", "players": ["b", "c"], "rank": 2}],
     "duplicate_player"),
    ([{"team": "red", "players": ["a"], "rank": 1}, {"player": "a", "rank": 2}], "duplicate_player"),
    ([{"team": "red", "players": [], "rank": 1}, {"team": "blue", "players": ["c"], "rank": 2}], "empty_team"),
    ([{"team": "red", "players": ["a"], "rank": 1}, {"team": "red", "players": ["c"], "rank": 2}], "duplicate_team"),
    ([{"team": "red", "players": [{"player": "a", "weight": 0}], "rank": 1}, {"player": "c", "rank": 2}],
     "bad_player_weight"),
    ([{"team": "red", "players": [{"player": "a", "weight": 1.5}], "rank": 1}, {"player": "c", "rank": 2}],
     "bad_player_weight"),
    ([{"player": "a", "rank": 1, "weight": -0.5}, {"player": "c", "rank": 2}], "bad_player_weight"),
])
def test_bad_team_rounds_are_dead_lettered_with_their_reason(redis_url: str, standings: list[object],
                                                            reason: str) -> None:
    """A player in two entries, an empty team, a team name twice, a share played outside (0, 1]:
    a dead letter with its reason code, nothing registered, the ladder's next round rated."""
    ladder = "bad" + str(abs(hash(json.dumps(standings))) % 10**8)
    raw = json.dumps({"round_id": "t1", "ladder": ladder, "occurred_at": 1.7e9, "standings": standings}).encode()

    async def body() -> None:
        ctx = context(redis_url)
        result = await handle_one(ctx, Incoming(raw))
        assert result.outcome == "rejected" and result.updates == []
        assert result.dead_letter is not None and result.dead_letter.reason == reason
        validate("dead-letter", result.dead_letter.to_json())
        assert await ctx.store.round_statuses(ladder, ["t1"]) == [None]
        batch = await handle_rounds(ctx, [Incoming(raw)])
        assert batch.results[0] is not None and batch.results[0].dead_letter is not None
        assert batch.results[0].dead_letter.reason == reason
        after = await handle_one(ctx, Incoming(RoundResult(round_id="t2", ladder=ladder, occurred_at=1.7e9 + 60,
                                                    standings=[Standing("a", 1), Standing("b", 2)]).to_json().encode()))
        assert after.outcome == "rated" and after.seq == 1
        await ctx.store.close()

    asyncio.run(body())
