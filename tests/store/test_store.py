"""The store's Lua scripts against the session's private redis-server and a real Redis Cluster:
atomic and idempotent, whatever the call layout."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import TypeVar

import numpy as np
import pytest
import redis
from hypothesis import given, settings
from hypothesis import strategies as st

from redis.asyncio.cluster import RedisCluster

from stream.stack.redis_cluster import RedisCluster as RedisClusterStack
from stream.store import keys
from stream.store.store import SAVE_REFUSED, SAVED_NOW, QueuedRound, Store
from tests.store_calls import (
    PlayerWrite, RoundWrites, apply, load_results, mark_queued, register_round, save_fanout, stored_player,
)

T = TypeVar("T")
HISTORY = 3


@dataclass(frozen=True)
class Target:
    """Where and how a test runs the store: the Redis URL, whether it is a real Cluster, and
    whether the calls carry one player each (the Cluster layout; always so on a real Cluster)."""

    url: str
    real_cluster: bool
    one_player_per_call: bool


@pytest.fixture(params=["single", "cluster-layout", "real-cluster"])
def target(request: pytest.FixtureRequest) -> Target:
    """Every test three times: a single Redis with many players per script call, the same Redis with
    the Cluster call layout (one player per call), and a real three-node Redis Cluster."""
    if request.param == "real-cluster":
        return Target(request.getfixturevalue("redis_cluster_url"), True, True)
    return Target(request.getfixturevalue("redis_url"), False, request.param == "cluster-layout")


def run(target: Target, body: Callable[[Store], Awaitable[T]]) -> T:
    async def main() -> T:
        if target.real_cluster:
            store = Store(RedisCluster.from_url(target.url), history_length=HISTORY)
            assert store.cluster and store.players_per_call == 1
        else:
            store = Store.from_url(target.url, history_length=HISTORY, cluster=target.one_player_per_call)
        try:
            return await body(store)
        finally:
            await store.close()
    return asyncio.run(main())


async def apply_one(store: Store, round_id: str, writes: list[PlayerWrite], *, now: float) -> list[bool]:
    return (await apply(store, [RoundWrites("L", round_id, writes)], now=now))[0]


def write(player: str, seq: int, mu: float, *, round_id: str = "r1", newcomer: bool = True) -> PlayerWrite:
    return PlayerWrite(player=player, seq=seq, mu=mu, sigma=80.0 + seq, rounds=seq, last_round=round_id,
                       last_time=1000.0 * seq, display_rating=mu - 100.0, tier="", state=b"\x00\x01state",
                       change=f'{{"player":"{player}","seq":{seq}}}'.encode(), newcomer=newcomer)


def test_register_assigns_sequence_once_and_detects_conflicts(target: Target) -> None:
    async def body(store: Store) -> list[tuple[str, int, str]]:
        a = await register_round(store, "L", "r1", content_hash="h1", occurred_at=1.5, received_at=2.0, field_size=3)
        b = await register_round(store, "L", "r2", content_hash="h2", occurred_at=1.5, received_at=2.0, field_size=3)
        again = await register_round(store, "L", "r1", content_hash="h1", occurred_at=1.5, received_at=9.0, field_size=3)
        clash = await register_round(store, "L", "r1", content_hash="hX", occurred_at=1.5, received_at=9.0, field_size=3)
        other = await register_round(store, "M", "r1", content_hash="hX", occurred_at=1.5, received_at=9.0, field_size=3)
        record = await store.round_record("L", "r1")
        assert record["content_hash"] == "h1" and record["received_at"] == "2.0"
        assert set(await store.client.smembers(keys.ladders())) == {b"L", b"M"}
        return [(r.outcome, r.seq, r.status) for r in (a, b, again, clash, other)]

    assert run(target, body) == [
        ("new", 1, "registered"), ("new", 2, "registered"), ("existing", 1, "registered"),
        ("conflict", 1, "registered"), ("new", 1, "registered")]


def test_fanout_is_stored_once(target: Target) -> None:
    async def body(store: Store) -> None:
        await register_round(store, "L", "r1", content_hash="h", occurred_at=0.0, received_at=0.0, field_size=2)
        assert await save_fanout(store, "L", "r1", pending=2, messages=[(3, b"m3"), (0, b"m0"), (3, b"m3b")])
        assert not await save_fanout(store, "L", "r1", pending=2, messages=[(1, b"other")])
        assert await store.load_fanout("L", "r1") == [(0, b"m0"), (3, b"m3"), (3, b"m3b")]
        record = await store.round_record("L", "r1")
        assert record["status"] == "pending" and record["pending"] == "2"

    run(target, body)


def test_apply_is_idempotent_and_completes_the_round(target: Target) -> None:
    async def body(store: Store) -> None:
        await register_round(store, "L", "r1", content_hash="h", occurred_at=0.0, received_at=0.0, field_size=2)
        await save_fanout(store, "L", "r1", pending=2, messages=[(0, b"m")])
        first = await apply_one(store, "r1", [write("a", 1, 1600.0)], now=5.0)
        assert first == [True]
        assert (await store.round_record("L", "r1"))["pending"] == "1"
        again = await apply_one(store, "r1", [write("a", 1, 9999.0), write("b", 1, 1400.0)], now=6.0)
        assert again == [False, True]
        player = await stored_player(store, "L", "a")
        assert float(player["mu"]) == 1600.0 and player["last_seq"] == b"1"
        assert await store.client.llen(keys.history("L", "a")) == 1
        record = await store.round_record("L", "r1")
        assert record["status"] == "rated" and record["pending"] == "0" and record["rated_at"] == "6.0"
        ladder = await store.client.hgetall(keys.ladder("L"))
        assert ladder[b"rounds_rated"] == b"1" and ladder[b"players"] == b"2" and ladder[b"last_round"] == b"r1"
        assert await store.client.zrange(keys.leaderboard("L"), 0, -1, withscores=True) == [(b"b", 1300.0), (b"a", 1500.0)]
        assert await store.client.zrange(keys.player_names("L"), 0, -1, withscores=True) == [(b"a", 0.0), (b"b", 0.0)]
        # a replayed batch leaves the counters alone
        await apply_one(store, "r1", [write("a", 1, 1600.0), write("b", 1, 1400.0)], now=7.0)
        assert (await store.client.hgetall(keys.ladder("L")))[b"rounds_rated"] == b"1"
        assert (await load_results(store, "L", "r1", ["a", "b", "c"]))[2] is None

    run(target, body)


def test_history_is_bounded_newest_last(target: Target) -> None:
    async def body(store: Store) -> None:
        for seq in range(1, 6):
            await apply_one(store, f"r{seq}", [write("a", seq, 1500.0 + seq, round_id=f"r{seq}")], now=0.0)
        history = await store.client.lrange(keys.history("L", "a"), 0, -1)
        assert [h.decode() for h in history] == [f'{{"player":"a","seq":{s}}}' for s in (3, 4, 5)]

    run(target, body)


def test_priors_round_trip_floats_exactly_and_hold_the_barrier(target: Target) -> None:
    mu = 1234.5678901234567 / 3.0

    async def body(store: Store) -> None:
        w = write("a", 1, mu)
        await apply_one(store, "r1", [w], now=0.0)
        await mark_queued(store, "L", ["a", "new"], 2)
        priors = await store.load_priors("L", ["a", "new", "ghost"], seq=3)
        assert priors.mu[0] == mu and priors.sigma[0] == w.sigma and priors.last_time[0] == w.last_time
        assert list(priors.known) == [True, False, False] and math.isnan(priors.mu[1])
        assert priors.blocked == ["a", "new"]
        # the round that queued them sees them as ready (a retried phase one after a crash)
        assert (await store.load_priors("L", ["a", "new"], seq=2)).blocked == []
        await apply_one(store, "r2", [write("a", 2, mu, round_id="r2"), write("new", 2, mu, round_id="r2")], now=0.0)
        assert (await store.load_priors("L", ["a", "new"], seq=3)).blocked == []

    run(target, body)


def test_scripts_reload_after_redis_forgets_them(target: Target) -> None:
    async def body(store: Store) -> None:
        await apply_one(store, "r1", [write("a", 1, 1500.0)], now=0.0)
        await store.client.script_flush()
        assert (await apply_one(store, "r2", [write("a", 2, 1510.0, round_id="r2")], now=0.0)) == [True]

    run(target, body)


def test_registration_prefetches_the_same_priors_as_load_priors(target: Target) -> None:
    async def body(store: Store) -> None:
        await apply_one(store, "r1", [write("a", 1, 1234.5678901234567 / 3.0)], now=0.0)
        r1 = await register_round(store, "L", "r1", content_hash="h1", occurred_at=0.0, received_at=0.0, field_size=2)
        await mark_queued(store, "L", ["b"], r1.seq)  # r1 queued for b too, not yet applied for him
        registration = await register_round(store, "L", "r2", content_hash="h", occurred_at=0.0, received_at=0.0,
                                                   field_size=3, prefetch=["a", "b", "new"])
        assert registration.outcome == "new" and registration.priors is not None
        direct = await store.load_priors("L", ["a", "b", "new"], registration.seq)
        for name in ("mu", "sigma", "last_time", "known"):
            np.testing.assert_array_equal(getattr(registration.priors, name), getattr(direct, name))
        assert registration.priors.blocked == direct.blocked == ["b"]
        assert registration.priors.waiting_on == direct.waiting_on == [r1.seq]
        plain = await register_round(store, "L", "r3", content_hash="h3", occurred_at=0.0, received_at=0.0, field_size=2)
        assert plain.priors is None

    run(target, body)


def test_on_a_real_cluster_the_keys_spread_over_the_nodes(redis_cluster_url: str, redis_cluster: RedisClusterStack) -> None:
    players = [f"p{i:02d}" for i in range(40)]

    async def body(store: Store) -> list[bool]:
        await register_round(store, "L", "r1", content_hash="h", occurred_at=0.0, received_at=0.0,
                                   field_size=len(players), prefetch=players)
        await save_fanout(store, "L", "r1", pending=len(players), messages=[(0, b"m")])
        return await apply_one(store, "r1", [write(p, 1, 1500.0 + i) for i, p in enumerate(players)], now=1.0)

    assert run(Target(redis_cluster_url, True, True), body) == [True] * len(players)
    sizes = []
    for node in redis_cluster.nodes:
        client = redis.Redis.from_url(node.url)
        sizes.append(client.dbsize())
        client.close()
    assert sum(size > 0 for size in sizes) == len(redis_cluster.nodes), sizes  # 80 player keys: every node holds some


def test_a_skipped_write_records_no_result(target: Target) -> None:
    """A write its script skips (a later round of the player already applied, e.g. by another
    worker around a rebalance) records no result of this round: the leaderboard keeps the later
    rating (phase two re-emits the stored result, recovering it from the history: recover_results)."""
    async def body(store: Store) -> tuple[list[bool], list[bytes | None], float | None]:
        for seq in (1, 2):
            await register_round(store, "L", f"r{seq}", content_hash=f"h{seq}", occurred_at=0.0, received_at=0.0,
                                       field_size=1)
            await save_fanout(store, "L", f"r{seq}", pending=1, messages=[(0, b"m")])
        await apply_one(store, "r1", [write("a", 1, 1600.0)], now=1.0)
        await store.client.delete(keys.round_results("L", "r1"))  # r1's result lost (a crash between the writes)
        await apply_one(store, "r2", [write("a", 2, 1700.0, round_id="r2")], now=2.0)
        skipped = await apply_one(store, "r1", [write("a", 1, 1600.0)], now=3.0)  # r1's update again
        return (skipped, await load_results(store, "L", "r1", ["a"]),
                await store.client.zscore(keys.leaderboard("L"), "a"))

    skipped, results, score = run(target, body)
    assert skipped == [False] and results == [None]
    assert score == 1600.0  # r2's display rating (mu - 100), not r1's


def test_a_lost_result_is_recovered_from_the_history(target: Target) -> None:
    """recover_results: the results of players applied without them (a crash between apply_batch's two
    round trips) are taken from their history and recorded again; None for a player without one."""
    def change(player: str) -> bytes:
        return f'{{"player":"{player}","ladder":"L","round_id":"r1","rounds_played":1}}'.encode()

    async def body(store: Store) -> tuple[list[bytes | None], ...]:
        await register_round(store, "L", "r1", content_hash="h1", occurred_at=0.0, received_at=0.0, field_size=2)
        await save_fanout(store, "L", "r1", pending=2, messages=[(0, b"m")])
        await apply_one(store, "r1", [replace(write(p, 1, 1600.0), change=change(p)) for p in "ab"],
                        now=1.0)
        before = await load_results(store, "L", "r1", ["a", "b"])
        await store.client.delete(keys.round_results("L", "r1"))
        recovered = await store.recover_results("L", "r1", ["a", "b", "ghost"], now=2.0)
        return before, recovered, await load_results(store, "L", "r1", ["a", "b"])

    before, recovered, after = run(target, body)
    assert before == [change("a"), change("b")]
    assert recovered == [*before, None] and after == before


def test_on_a_cluster_the_fan_out_is_stored_only_once_every_queued_mark_is(
        redis_cluster_url: str, redis_cluster: RedisClusterStack) -> None:
    """A node refusing writes (out of memory) while phase one queues a round: the round stays
    ``registered`` with no fan-out, so its next attempt writes the missing marks too (a cluster
    pipeline's per-node parts run concurrently: the fan-out used to be stored without them)."""
    players = [f"p{i:02d}" for i in range(30)]
    home = redis.RedisCluster.from_url(redis_cluster_url)
    ladder_node = home.get_node_from_key(keys.round_record("L", "r1"))
    others = [redis.Redis.from_url(node.url) for node in redis_cluster.nodes if node.port != ladder_node.port]
    home.close()
    assert others

    async def body(store: Store) -> tuple[str, list[tuple[int, bytes]], str, list[bytes | None]]:
        await register_round(store, "L", "r1", content_hash="h", occurred_at=0.0, received_at=0.0,
                                   field_size=len(players))
        for client in others:
            client.config_set("maxmemory-policy", "noeviction")
            client.config_set("maxmemory", 1)
        try:
            with pytest.raises(redis.ResponseError, match="maxmemory"):
                await store.queue_batch([QueuedRound("L", "r1", players, 1, len(players), [(0, b"m")])])
        finally:
            for client in others:
                client.config_set("maxmemory", 0)
        status = (await store.round_record("L", "r1"))["status"]
        fanout = await store.load_fanout("L", "r1")
        assert (await store.queue_batch([QueuedRound("L", "r1", players, 1, len(players), [(0, b"m")])])) == [SAVED_NOW]
        marks = [(await stored_player(store, "L", p)).get("queued_seq") for p in players]
        return status, fanout, (await store.round_record("L", "r1"))["status"], marks

    try:
        status, fanout, after, marks = run(Target(redis_cluster_url, True, True), body)
    finally:
        for client in others:
            client.close()
    assert (status, fanout) == ("registered", [])
    assert after == "pending" and marks == [b"1"] * len(players)


def test_a_round_is_re_driven_less_and_less_often(target: Target) -> None:
    async def body(store: Store) -> list[tuple[float, list[str], float | None]]:
        await register_round(store, "L", "r1", content_hash="h", occurred_at=0.0, received_at=0.0, field_size=2,
                                   due_at=100.0)
        seen = []
        for now in (99.0, 100.0, 105.0, 110.0, 125.0, 130.0, 170.0, 210.0):
            claimed = await store.claim_due_rounds(now=now, period=10.0, max_doublings=2, limit=10)
            due = await store.client.zscore(keys.incomplete_rounds("L"), "r1")
            seen.append((now, [d.round_id for d in claimed], due))
        return seen

    # due at 100; re-driven at 100 (next in 10 s), 110 (20 s), 130 (40 s), 170 (40 s: at most 2^2 x 10 s)
    assert run(target, body) == [
        (99.0, [], 100.0), (100.0, ["r1"], 110.0), (105.0, [], 110.0), (110.0, ["r1"], 130.0),
        (125.0, [], 130.0), (130.0, ["r1"], 170.0), (170.0, ["r1"], 210.0), (210.0, ["r1"], 250.0)]


def test_no_script_call_carries_a_whole_big_round(target: Target, monkeypatch: pytest.MonkeyPatch) -> None:
    """record_round_results and confirm_emitted go out in chunks of ROUND_PLAYERS_PER_CALL players
    (a 250,000-player round in one call blocked Redis for every client); the round still completes."""
    import stream.store.store as store_module

    monkeypatch.setattr(store_module, "ROUND_PLAYERS_PER_CALL", 7)
    players = [f"p{i:02d}" for i in range(30)]
    largest: dict[str, int] = {}
    real_eval = Store._eval

    def eval_(self: Store, pipe: object, name: str, keys_: list[str], args: list[object]) -> None:
        players_in_call = {"record_round_results": (len(args) - 2) // 3,
                           "confirm_emitted": len(args) - (len(keys_) - 1) // 2}.get(name)  # less a count per round
        if players_in_call is not None:
            largest[name] = max(largest.get(name, 0), players_in_call)
        real_eval(self, pipe, name, keys_, args)  # type: ignore[arg-type]

    monkeypatch.setattr(Store, "_eval", eval_)

    async def body(store: Store) -> tuple[list[bool], list[int], dict[str, str], int | None]:
        await register_round(store, "L", "r1", content_hash="h", occurred_at=0.0, received_at=0.0,
                                   field_size=len(players))
        await save_fanout(store, "L", "r1", pending=len(players), messages=[(0, b"m")])
        applied = await apply_one(store, "r1", [write(p, 1, 1500.0 + i) for i, p in enumerate(players)], now=1.0)
        missing = await store.confirm_emitted([("L", "r1", players[:20]), ("L", "r1", players[20:])])
        record = await store.round_record("L", "r1")
        return applied, missing, record, await store.client.zcard(keys.leaderboard("L"))

    applied, missing, record, ranked = run(target, body)
    assert applied == [True] * len(players) and ranked == len(players)
    assert record["status"] == "rated" and record["pending"] == "0" and record["emitted"] == "1"
    assert missing == [10, 0]
    assert largest == {"record_round_results": 7, "confirm_emitted": 7}


def test_confirm_emitted_confirms_a_batch_of_rounds_per_ladder_in_one_call(
        target: Target, monkeypatch: pytest.MonkeyPatch) -> None:
    """A phase-two batch's rounds of one ladder are confirmed by one confirm_emitted.lua call
    (one per ladder), each round as if alone: per round the players still unconfirmed, a fully
    confirmed round marked emitted and out of the ladder's incomplete rounds."""
    calls: list[int] = []
    real_eval = Store._eval

    def eval_(self: Store, pipe: object, name: str, keys_: list[str], args: list[object]) -> None:
        if name == "confirm_emitted":
            calls.append((len(keys_) - 1) // 2)
        real_eval(self, pipe, name, keys_, args)  # type: ignore[arg-type]

    monkeypatch.setattr(Store, "_eval", eval_)

    async def body(store: Store) -> tuple[list[int], list[str | None], list[list[bytes]]]:
        for ladder, round_id in (("L", "r1"), ("L", "r2"), ("M", "r1")):
            await register_round(store, ladder, round_id, content_hash="h" + round_id, occurred_at=0.0,
                                       received_at=0.0, field_size=2)
            await save_fanout(store, ladder, round_id, pending=2, messages=[(0, b"m")])
        missing = await store.confirm_emitted([("L", "r1", ["a", "b"]), ("L", "r2", ["a"]), ("M", "r1", ["c"]),
                                               ("L", "r2", []), ("M", "r1", ["d"])])
        records = [(await store.round_record(ladder, round_id)).get("emitted")
                   for ladder, round_id in (("L", "r1"), ("L", "r2"), ("M", "r1"))]
        incomplete = [await store.client.zrange(keys.incomplete_rounds(ladder), 0, -1) for ladder in ("L", "M")]
        return missing, records, incomplete

    missing, records, incomplete = run(target, body)
    assert missing == [0, 1, 1, 0]  # rounds with players, in order; M/r1 completed by its second entry
    assert records == ["1", None, "1"]
    assert incomplete == [[b"r2"], []]
    assert calls == [2, 2]  # one call per ladder: L's two rounds, M's round twice


def test_a_failed_round_leaves_the_ledger_and_releases_its_queued_players(target: Target) -> None:
    async def body(store: Store) -> tuple[bool, bool, dict[str, str], list[float], float | None, float | None]:
        await register_round(store, "L", "r1", content_hash="h1", occurred_at=0.0, received_at=0.0, field_size=3,
                                   body=b"{}", due_at=5.0)
        await mark_queued(store, "L", ["a", "b"], 1)
        failed = await store.fail_round("L", "r1", content_hash="h1", reason="OverflowError: x", players=["a", "b", "c"])
        again = await store.fail_round("L", "r1", content_hash="h1", reason="x", players=["a", "b", "c"])
        later = await register_round(store, "L", "r2", content_hash="h2", occurred_at=0.0, received_at=0.0,
                                           field_size=2, prefetch=["a", "b"])
        assert later.earlier == () and later.priors is not None and later.priors.blocked == []
        duplicate = await register_round(store, "L", "r1", content_hash="h1", occurred_at=0.0, received_at=0.0,
                                               field_size=3)
        assert (duplicate.outcome, duplicate.status) == ("existing", "failed")
        record = await store.round_record("L", "r1")
        last_seq = [float((await stored_player(store, "L", p)).get("last_seq", b"0")) for p in ("a", "b", "c")]
        return (failed, again, record, last_seq, await store.client.zscore(keys.registered_rounds("L"), "r1"),
                await store.client.zscore(keys.incomplete_rounds("L"), "r1"))

    failed, again, record, last_seq, registered, incomplete = run(target, body)
    assert failed and not again
    assert record["status"] == "failed" and record["failed_reason"] == "OverflowError: x" and "body" not in record
    assert last_seq == [1.0, 1.0, 0.0]  # c was never marked queued: untouched
    assert registered is None and incomplete is None  # neither completed first by later rounds nor swept


def test_a_registration_lists_the_ladder_s_earlier_rounds_still_registered(target: Target) -> None:
    """``earlier``: the ladder's rounds below the round's seq whose fan-out is not stored, in seq
    order, read once per batch after its registrations (also those of the batch itself)."""
    from stream.store.store import NewRound

    async def body(store: Store) -> list[list[tuple[str, ...]]]:
        out = []
        for batch in (["r1", "r2", "r3"], ["r4"], ["r5", "r6"]):
            registrations, _ = await store.register_batch(
                [NewRound("L", r, "h" + r, 0.0, 0.0, 2, body=b"{}", due_at=9.0) for r in batch], [])
            out.append([reg.earlier for reg in registrations])
        # fan-outs are stored in seq order: r3's is refused while r2 is registered (save_fanout.lua)
        out.append([(await store.queue_batch([QueuedRound("L", r, ["a"], seq, 1, [(0, b"x")])]))[0]
                    for r, seq in (("r1", 1), ("r3", 3))])
        registrations, _ = await store.register_batch([NewRound("L", "r7", "hr7", 0.0, 0.0, 2, body=b"{}")], [])
        out.append([reg.earlier for reg in registrations])
        return out

    assert run(target, body) == [
        [(), ("r1",), ("r1", "r2")], [("r1", "r2", "r3")], [("r1", "r2", "r3", "r4"), ("r1", "r2", "r3", "r4", "r5")],
        [SAVED_NOW, SAVE_REFUSED], [("r2", "r3", "r4", "r5", "r6")]]


def test_ids_and_seqs_of_either_reply_shape() -> None:
    from stream.store.store import _ids_and_seqs

    assert _ids_and_seqs([b"r1", b"1", b"r2", b"12"]) == (["r1", "r2"], [1, 12])
    assert _ids_and_seqs([[b"r1", 1.0], [b"r2", 12.0]]) == (["r1", "r2"], [1, 12])
    assert _ids_and_seqs([]) == ([], [])


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("ABC"), st.integers(0, 5), st.integers(0, 1), st.booleans()),
                min_size=1, max_size=14))
def test_a_batch_of_interleaved_ladders_registers_as_one_by_one(redis_server, batch) -> None:  # type: ignore[no-untyped-def]
    """Property: a batch whose rounds alternate ladders (one call per ladder, not per run of
    rounds) gets the outcomes, seqs, statuses and ``earlier`` rounds of registering its rounds one
    at a time, in order (repeats and conflicting re-uses of an id included), and leaves Redis the
    same."""
    from stream.store.store import STATUS_NO_OUTCOME, NewRound

    rounds = [NewRound(ladder, f"r{k}", f"h{k}.{variant}", 1.0 + k, 2.0, 2, body=b"{}", due_at=9.0,
                       status=STATUS_NO_OUTCOME if empty else "registered")
              for ladder, k, variant, empty in batch]
    async def register(store: Store, together: bool) -> list[tuple[str, int, str, tuple[str, ...]]]:
        if together:
            got = (await store.register_batch(rounds, []))[0]
        else:
            got = [(await store.register_batch([r], []))[0][0] for r in rounds]
        return [(r.outcome, r.seq, r.status, r.earlier) for r in got]

    _together_as_one_by_one(redis_server.url, register)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.lists(st.sampled_from("abcdef"), min_size=0, max_size=4, unique=True), min_size=1, max_size=8),
       st.integers(1, 7), st.lists(st.integers(0, 7), max_size=3))
def test_a_batch_applies_as_its_rounds_one_by_one_whatever_the_call_size(  # type: ignore[no-untyped-def]
        redis_server, rounds, per_call, again) -> None:
    """Property: apply_batch of several rounds (a player in several of them, rounds without rows,
    some rounds applied before: skipped rows), cut into calls of ``per_call`` players (each call
    naming its rounds and how many of its players are each one's), returns the flags of applying
    the rounds one at a time and leaves Redis the same."""
    batch = [RoundWrites("L", f"r{k}", [write(p, k + 1, 1500.0 + 10 * k + i, round_id=f"r{k}")
                                       for i, p in enumerate(players)])
             for k, players in enumerate(rounds)]
    done_before = [batch[k] for k in sorted(set(again)) if k < len(batch)]
    async def run(store: Store, together: bool) -> list[list[bool]]:
        store.players_per_call = per_call
        for r in done_before:
            await apply(store, [r], now=1.0)
        if together:
            return await apply(store, batch, now=2.0)
        return [(await apply(store, [r], now=2.0))[0] for r in batch]

    _together_as_one_by_one(redis_server.url, run)


def _together_as_one_by_one(url: str, run: Callable[[Store, bool], Awaitable[object]]) -> None:
    """``run(store, together)`` on a flushed Redis, one by one then together: the same result and
    the same Redis contents."""
    from tests.stream.redis_dump import differences, dump

    client = redis.Redis.from_url(url)

    async def once(together: bool) -> object:
        client.flushall()
        store = Store.from_url(url, history_length=HISTORY)
        try:
            return await run(store, together)
        finally:
            await store.close()

    one_by_one = asyncio.run(once(False))
    before = dump(client)
    assert asyncio.run(once(True)) == one_by_one
    assert not differences(before, dump(client))
    client.close()


def test_a_batch_s_later_rounds_are_not_stored_once_another_attempt_stored_an_earlier_one(target: Target) -> None:
    """save_fanout.lua decides with the store: a batch's round whose previous round of the ladder
    (``QueuedRound.after``) was not stored by the batch's own attempt (its token) is refused, and
    so, in turn, is every later one; the rounds stay ``registered`` without a fan-out, and a new
    attempt stores them."""
    from stream.store.store import SAVED_BEFORE, NewRound, QueuedRound

    def queued(round_id: str, seq: int, token: str, after: str | None) -> QueuedRound:
        return QueuedRound("L", round_id, ["a", "b"], seq, 2, [(0, f"{round_id}/{token}".encode())], token=token,
                           after=after)

    async def body(store: Store) -> tuple[list[int], list[str], list[list[tuple[int, bytes]]], list[int]]:
        await store.register_batch([NewRound("L", r, "h" + r, 0.0, 0.0, 2, body=b"{}") for r in ("r1", "r2", "r3")], [])
        assert await save_fanout(store, "L", "r1", pending=2, messages=[(0, b"r1/sweeper")])  # another attempt
        lost = await store.queue_batch([queued("r1", 1, "batch", None), queued("r2", 2, "batch", "r1"),
                                        queued("r3", 3, "batch", "r2")])
        statuses = [(await store.round_record("L", r))["status"] for r in ("r1", "r2", "r3")]
        fanouts = [await store.load_fanout("L", r) for r in ("r1", "r2", "r3")]
        again = await store.queue_batch([queued("r2", 2, "next", None), queued("r3", 3, "next", "r2")])
        return lost, statuses, fanouts, again

    lost, statuses, fanouts, again = run(target, body)
    assert lost == [SAVED_BEFORE, SAVE_REFUSED, SAVE_REFUSED]
    assert statuses == ["pending", "registered", "registered"]
    assert fanouts == [[(0, b"r1/sweeper")], [], []]
    assert again == [SAVED_NOW, SAVED_NOW]
