"""Corrections through the handlers on a real redis-server: after voids and amends, Redis equals
what the stream writes for the corrected history (database 1: a fresh stream of it) and the
replay of it, within 1e-9; events, idempotency, dead letters, the hold.

The stream side runs the pipeline's own handlers round by round (as tests/stream/test_backfill.py);
the worker path (Kafka, two workers, a kill -9) is tests/faults/test_corrections_kill.py.
"""

from __future__ import annotations

import asyncio
import json
import math
import random
from collections.abc import Sequence
from typing import Any

import numpy as np
import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stream.contracts import PlayerUpdate, RatingChange, validate
from stream.contracts.round import (BAD_CORRECTION, CONFLICT, HISTORY_TRIMMED, NOT_CORRECTABLE,
                                    UNKNOWN_ROUND)
from stream.engine.display import tier_names
from stream.pipeline.context import PipelineContext
from stream.pipeline.corrections import CorrectionResult, finish_correction, handle_correction
from stream.pipeline.phase_one import build_fanout
from stream.pipeline.rerate import HistoryRound, Texts, encode_changes, encode_fanouts, rerate
from stream.settings import Settings
from stream.stack.redis_server import RedisServer
from stream.store import keys, player_hash
from tests.contracts.wire_oracle import entries as update_entries, reference_json
from tests.engine.oracles import state_from_bytes
from tests.stream import pipeline_harness as harness
from tests.stream.test_backfill import stream_rounds

PARTITIONS = 4
TOLERANCE = harness.TOLERANCE



def _standings(update: PlayerUpdate) -> list[dict[str, object]]:
    """A stored fan-out message's entries without ``previous_seq`` (with team and share played)."""
    return [{"player": e.player, "rank": e.rank, "performance": e.performance, "team": e.team, "weight": e.weight}
            for e in update_entries(update)]

def other_db(url: str, db: int) -> str:
    return url.rsplit("/", 1)[0] + f"/{db}"


def context(url: str, **extra: object) -> PipelineContext:
    return PipelineContext.from_settings(Settings(redis_url=url, partitions=PARTITIONS, hold_poll_s=0.01,
                                                  **extra))  # type: ignore[arg-type]


async def correct(ctx: PipelineContext, correction: dict) -> CorrectionResult:
    """One correction as the agent handles it: the handler, (the events sent), the ledger."""
    result = await handle_correction(ctx, json.dumps(correction).encode())
    for event in result.events:
        validate("rating-change", event.value)
    await finish_correction(ctx, result)
    return result


class History:
    """The published rounds in order, with the corrections applied: what replay must equal."""

    def __init__(self) -> None:
        self.rounds: list[dict] = []
        self.voided: set[tuple[str, str]] = set()

    def corrected(self) -> list[dict]:
        return [r for r in self.rounds if (r["ladder"], r["round_id"]) not in self.voided]

    def void(self, ladder: str, round_id: str) -> dict:
        self.voided.add((ladder, round_id))
        return {"kind": "void", "ladder": ladder, "round_id": round_id}

    def amend(self, ladder: str, round_id: str, standings: list[dict]) -> dict:
        i = next(i for i, r in enumerate(self.rounds) if (r["ladder"], r["round_id"]) == (ladder, round_id))
        self.rounds[i] = dict(self.rounds[i], standings=standings)
        return {"kind": "amend", "round": self.rounds[i]}


def close(a: Any, b: Any) -> bool:
    """JSON values equal, numbers within TOLERANCE."""
    if isinstance(a, float) or isinstance(b, float):
        return isinstance(a, (int, float)) and isinstance(b, (int, float)) and math.isclose(a, b, rel_tol=0,
                                                                                             abs_tol=TOLERANCE)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(close(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(close(x, y) for x, y in zip(a, b))
    return a == b


PLAYER_FIELDS = tuple(name.encode() for name in player_hash.VIEW)


def assert_same_ladders(url_a: str, url_b: str, ladders: Sequence[str]) -> None:
    """Players (state, history, leaderboard), round results and ladder counters of two databases
    agree within TOLERANCE (sequence numbers aside: a voided round keeps its seq)."""
    a, b = redis.Redis.from_url(url_a), redis.Redis.from_url(url_b)
    for ladder in ladders:
        board_a = a.zrange(keys.leaderboard(ladder), 0, -1, withscores=True)
        board_b = b.zrange(keys.leaderboard(ladder), 0, -1, withscores=True)
        assert sorted(m for m, _ in board_a) == sorted(m for m, _ in board_b), ladder
        assert close(dict(board_a), dict(board_b))
        for member, _ in board_a:
            player = member.decode()
            pa, pb = a.hgetall(keys.player(ladder, player)), b.hgetall(keys.player(ladder, player))
            for name in PLAYER_FIELDS:
                va, vb = pa.get(name), pb.get(name)
                assert va == vb or close(float(va), float(vb)), (ladder, player, name, va, vb)
            sa, sb = state_from_bytes(pa[b"state"]), state_from_bytes(pb[b"state"])
            assert close([sa.mu, sa.sigma, *map(list, sa.factors)], [sb.mu, sb.sigma, *map(list, sb.factors)])
            ha = [json.loads(x) for x in a.lrange(keys.history(ladder, player), 0, -1)]
            hb = [json.loads(x) for x in b.lrange(keys.history(ladder, player), 0, -1)]
            assert close(ha, hb), (ladder, player, ha, hb)
        rated_b = [m.decode() for m in b.zrange(keys.rounds(ladder), 0, -1)]
        for round_id in rated_b:
            ra = {k: json.loads(v) for k, v in a.hgetall(keys.round_results(ladder, round_id)).items()}
            rb = {k: json.loads(v) for k, v in b.hgetall(keys.round_results(ladder, round_id)).items()}
            assert close(ra, rb), (ladder, round_id)
            # the stored fan-outs' standings and performances (not previous_seq: the chain
            # bookkeeping of the batch that queued the round, which a re-rate does not re-create)
            fa = sorted(json.dumps(entry) for v in a.hvals(keys.round_perf(ladder, round_id))
                        for entry in _standings(PlayerUpdate.from_json(v)))
            fb = sorted(json.dumps(entry) for v in b.hvals(keys.round_perf(ladder, round_id))
                        for entry in _standings(PlayerUpdate.from_json(v)))
            assert close([json.loads(e) for e in fa], [json.loads(e) for e in fb]), (ladder, round_id)
        for name in (b"players", b"rounds_rated"):  # a ladder whose every round was voided: 0 (absent in b)
            assert int(a.hget(keys.ladder(ladder), name) or 0) == int(b.hget(keys.ladder(ladder), name) or 0), name
        assert a.hget(keys.ladder(ladder), b"last_round") == b.hget(keys.ladder(ladder), b"last_round"), ladder
    a.close()
    b.close()


def equals_corrected_stream(url: str, history: History, **extra: object) -> None:
    """Redis at ``url`` holds what a fresh stream of the corrected history writes (database 1), and
    the replay of it."""
    fresh = other_db(url, 1)
    redis.Redis.from_url(fresh).flushdb()

    async def body() -> None:
        ctx = context(fresh, **extra)
        await stream_rounds(ctx, history.corrected())
        await ctx.store.close()

    asyncio.run(body())
    assert_same_ladders(url, fresh, sorted({r["ladder"] for r in history.rounds}))
    harness.assert_equals_reference(url, harness.reference(history.corrected(), context(url).ladders.fallback.elo_mmr))


def test_void_and_amend_equal_the_corrected_stream(redis_url: str) -> None:
    history = History()
    history.rounds = harness.synthetic_rounds(seed=7, count=80, ladders=("alpha", "beta"), pool=20)
    events: list[CorrectionResult] = []

    async def body() -> None:
        ctx = context(redis_url, history_length=5)
        await stream_rounds(ctx, history.rounds[:60])
        alpha = [r for r in history.rounds[:60] if r["ladder"] == "alpha"]
        events.append(await correct(ctx, history.void("alpha", alpha[3]["round_id"])))
        rnd = alpha[10]
        ranks = [s["rank"] for s in rnd["standings"]]  # the finishing order reversed
        upset = [{"player": s["player"], "rank": r} for s, r in zip(reversed(rnd["standings"]), ranks)]
        events.append(await correct(ctx, history.amend("alpha", rnd["round_id"], upset)))
        await stream_rounds(ctx, history.rounds[60:])
        last = [r for r in history.rounds if r["ladder"] == "beta"][-1]
        events.append(await correct(ctx, history.void("beta", last["round_id"])))  # the ladder's last round
        await ctx.store.close()

    asyncio.run(body())
    equals_corrected_stream(redis_url, history, history_length=5)
    assert [e.outcome for e in events] == ["applied"] * 3
    assert all(e.events for e in events)
    client = redis.Redis.from_url(redis_url)
    voided = client.hgetall(keys.round_record("alpha", events[0].entry["round_id"]))  # type: ignore[index]
    assert voided[b"status"] == b"voided" and json.loads(voided[b"corrections"])[0]["kind"] == "void"
    assert not client.exists(keys.round_perf("alpha", events[0].entry["round_id"]))  # type: ignore[index]
    amended = client.hgetall(keys.round_record("alpha", events[1].entry["round_id"]))  # type: ignore[index]
    assert amended[b"status"] == b"rated" and b"amended" in amended and b"hold" not in client.hgetall(keys.ladder("alpha"))
    for result in events:
        for event in result.events:
            change = json.loads(event.value)
            assert change["kind"] == "correction" and change["correction_id"] == result.correction_id
            assert (change["mu_before"], change["sigma_before"]) != (change["mu_after"], change["sigma_after"])


def test_a_player_left_without_rounds_is_removed(redis_url: str) -> None:
    history = History()
    history.rounds = harness.synthetic_rounds(seed=2, count=30, ladders=("alpha",), pool=12, max_size=6)
    history.rounds.insert(12, {"round_id": "guest", "ladder": "alpha", "occurred_at": harness.BASE_TIME + 3 * 86400,
                               "standings": [{"player": "guest1", "rank": 1}, {"player": "p001", "rank": 2}]})

    async def body() -> CorrectionResult:
        ctx = context(redis_url)
        await stream_rounds(ctx, history.rounds)
        result = await correct(ctx, history.void("alpha", "guest"))
        await ctx.store.close()
        return result

    result = asyncio.run(body())
    equals_corrected_stream(redis_url, history)
    gone = [json.loads(e.value) for e in result.events if e.key == b"guest1"]
    assert len(gone) == 1 and gone[0]["rounds_played"] == 0 and gone[0]["rank"] is None
    client = redis.Redis.from_url(redis_url)
    assert not client.exists(keys.player("alpha", "guest1")) and not client.exists(keys.history("alpha", "guest1"))


@st.composite
def scripts(draw: st.DrawFn) -> list[tuple[str, int]]:
    """Operations: ("round", n) publishes the next n rounds; ("void"/"amend", k) corrects a
    published round chosen by k; ("again", k) re-sends an earlier correction."""
    ops = [("round", draw(st.integers(3, 12)))]
    for _ in range(draw(st.integers(1, 5))):
        ops.append((draw(st.sampled_from(["round", "void", "amend", "amend", "again"])), draw(st.integers(0, 10**6))))
    return ops


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=scripts(), seed=st.integers(0, 10**6))
def test_random_corrections_interleaved_with_rounds(redis_server: RedisServer, ops: list[tuple[str, int]],
                                                    seed: int) -> None:
    """Property: any interleaving of rounds, voids, amends and re-sent corrections leaves Redis equal
    to the stream and the replay of the corrected history."""
    url = redis_server.url
    redis.Redis.from_url(url).flushall()
    rng = random.Random(seed)
    pool = harness.synthetic_rounds(seed=seed, count=60, ladders=("alpha", "beta"), pool=14, max_size=8)
    history = History()
    sent: list[dict] = []

    async def body() -> None:
        ctx = context(url, history_length=4)
        for op, n in ops:
            if op == "round":
                batch, pool[:n] = pool[:n], []
                history.rounds += batch
                await stream_rounds(ctx, batch)
                continue
            if op == "again" and sent:
                assert (await correct(ctx, sent[n % len(sent)])).outcome in ("duplicate", "no-op")
                continue
            live = [r for r in history.rounds if (r["ladder"], r["round_id"]) not in history.voided]
            if not live:
                continue
            target = live[n % len(live)]
            if op == "void":
                correction = history.void(target["ladder"], target["round_id"])
            else:
                standings = [dict(s) for s in target["standings"]]
                rng.shuffle(standings)
                for i, s in enumerate(standings):
                    s["rank"] = i + 1
                if rng.random() < 0.3:
                    standings.append({"player": f"new{n}", "rank": len(standings) + 1})
                correction = history.amend(target["ladder"], target["round_id"], standings)
            correction["correction_id"] = f"c{len(sent)}"
            assert (await correct(ctx, correction)).outcome == "applied"
            sent.append(correction)
        await ctx.store.close()

    asyncio.run(body())
    equals_corrected_stream(url, history, history_length=4)


def test_bad_corrections_are_dead_lettered(redis_url: str) -> None:
    rounds = harness.synthetic_rounds(seed=4, count=12, ladders=("alpha",), pool=8, max_size=6)
    first = rounds[0]

    async def body() -> dict[str, str | None]:
        ctx = context(redis_url)
        await stream_rounds(ctx, rounds)
        reasons: dict[str, str | None] = {}
        cases = {
            "not json": b"{",
            "unknown kind": b'{"kind": "undo", "round_id": "r00000", "ladder": "alpha"}',
            "void with round": json.dumps({"kind": "void", "round": first}).encode(),
            "amend of another id": json.dumps({"kind": "amend", "round_id": "r00001", "ladder": "alpha",
                                               "round": first}).encode(),
            "bad amended round": json.dumps({"kind": "amend", "round": dict(first, standings=[
                {"player": "a", "rank": 0}, {"player": "b", "rank": 1}])}).encode(),
            "empty team": json.dumps({"kind": "amend", "round": dict(first, standings=[
                {"team": "x", "players": [], "rank": 1}, {"team": "y", "players": ["c"], "rank": 2}])}).encode(),
            "unknown round": b'{"kind": "void", "ladder": "alpha", "round_id": "nope"}',
        }
        for name, raw in cases.items():
            result = await handle_correction(ctx, raw)
            assert result.dead_letter is not None and not result.events, name
            validate("dead-letter", result.dead_letter.to_json())
            reasons[name] = result.dead_letter.reason
        void = {"kind": "void", "ladder": "alpha", "round_id": first["round_id"], "correction_id": "c1"}
        assert (await correct(ctx, void)).outcome == "applied"
        assert (await correct(ctx, void)).outcome == "duplicate"
        other = dict(void, round_id=rounds[1]["round_id"])
        reasons["id reused"] = (await handle_correction(ctx, json.dumps(other).encode())).dead_letter.reason  # type: ignore[union-attr]
        amend_voided = {"kind": "amend", "round": first}
        reasons["amend voided"] = (await handle_correction(ctx, json.dumps(amend_voided).encode())).dead_letter.reason  # type: ignore[union-attr]
        assert (await correct(ctx, {"kind": "void", "ladder": "alpha", "round_id": first["round_id"]})).outcome == "no-op"
        assert await ctx.store.client.hget(keys.ladder("alpha"), "hold") is None  # every rejection released it
        await ctx.store.close()
        return reasons

    reasons = asyncio.run(body())
    assert reasons == {"not json": "not_json", "unknown kind": BAD_CORRECTION, "void with round": BAD_CORRECTION,
                       "amend of another id": BAD_CORRECTION, "bad amended round": "bad_rank",
                       "empty team": "empty_team", "unknown round": UNKNOWN_ROUND, "id reused": CONFLICT,
                       "amend voided": NOT_CORRECTABLE}


def test_trimmed_fanouts_refuse_corrections(redis_url: str) -> None:
    rounds = harness.synthetic_rounds(seed=5, count=10, ladders=("alpha",), pool=6, max_size=5)

    async def body() -> CorrectionResult:
        ctx = context(redis_url)
        await stream_rounds(ctx, rounds)
        await ctx.store.client.delete(keys.round_perf("alpha", rounds[2]["round_id"]))  # what retention does
        result = await handle_correction(ctx, json.dumps({"kind": "void", "ladder": "alpha",
                                                          "round_id": rounds[8]["round_id"]}).encode())
        assert await ctx.store.client.hget(keys.ladder("alpha"), "hold") is None
        await ctx.store.close()
        return result

    result = asyncio.run(body())
    assert result.dead_letter is not None and result.dead_letter.reason == HISTORY_TRIMMED
    assert "RETAIN_FANOUTS" in result.dead_letter.message


def test_rounds_wait_while_the_ladder_is_held(redis_url: str) -> None:
    """A round published during a re-rate is registered only once the hold is released."""
    rounds = harness.synthetic_rounds(seed=6, count=6, ladders=("alpha",), pool=6, max_size=5)

    async def body() -> None:
        ctx = context(redis_url)
        await stream_rounds(ctx, rounds[:5])
        await ctx.store.client.hset(keys.ladder("alpha"), "hold", "c-test")
        waiting = asyncio.ensure_future(stream_rounds(ctx, rounds[5:]))
        await asyncio.sleep(0.3)
        assert not waiting.done()
        assert await ctx.store.client.hget(keys.round_record("alpha", rounds[5]["round_id"]), "seq") is None
        await ctx.store.client.hdel(keys.ladder("alpha"), "hold")
        await asyncio.wait_for(waiting, 10)
        assert await ctx.store.client.hget(keys.round_record("alpha", rounds[5]["round_id"]), "status") == b"rated"
        await ctx.store.close()

    asyncio.run(body())


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10**6), partitions=st.integers(1, 6), limit=st.sampled_from([400, 64 * 1024 * 1024]))
def test_bulk_encoding_equals_the_handlers(seed: int, partitions: int, limit: int) -> None:
    """The re-rate's bulk encoders write the bytes phase one (fan-out, split at MAX_MESSAGE_BYTES)
    and phase two (RatingChange) write, round by round."""
    rng = random.Random(seed)
    names = ["ann", "bé", "c\"d", "雪", "e\\f", "g", "h", "i"]
    history = []
    for k in range(12):
        chosen = rng.sample(names, rng.randint(2, len(names)))
        ranks = sorted(rng.randint(1, 4) for _ in chosen)
        ranks[-1] = max(ranks[-1], ranks[0] + 1)
        history.append(HistoryRound(f"r{k}ü", 3 * k + 1, harness.BASE_TIME + k * 3600.5, rng.choice([1.0, 0.5]),
                                    math.inf, chosen, ranks))
    ctx = context("redis://127.0.0.1:1/0", max_message_bytes=limit)
    cfg = ctx.display("lädder")
    rated = rerate(history, ctx.ladders.fallback.elo_mmr, cfg)
    ks = list(range(len(history)))
    bulk = encode_fanouts(rated, "lädder", ks, partitions, limit)
    for k, messages in zip(ks, bulk):
        lo, hi = int(rated.offsets[k]), int(rated.offsets[k + 1])
        one = build_fanout(ctx, history[k].to_round("lädder"), history[k].seq, rated.performance[lo:hi], partitions)
        assert messages == [(m.partition, m.value) for m in one]
    at = np.arange(len(rated.players))
    changes = encode_changes(rated, "lädder", at, Texts.of(rated, cfg, at))
    for k, h in enumerate(history):
        lo, hi = int(rated.offsets[k]), int(rated.offsets[k + 1])
        for i in range(lo, hi):
            want = RatingChange(ladder="lädder", round_id=h.round_id, player=h.players[i - lo], rank=h.ranks[i - lo],
                                field_size=len(h.players), performance=float(rated.performance[i]),
                                mu_before=float(rated.mu_before[i]), sigma_before=float(rated.sigma_before[i]),
                                mu_after=float(rated.mu_after[i]), sigma_after=float(rated.sigma_after[i]),
                                display_rating=float(rated.shown[i]), tier=tier_names([rated.tier[i]], cfg)[0] or None,
                                rounds_played=int(rated.rounds_played[i]), occurred_at=h.occurred_at)
            assert changes[i] == reference_json(want)


def test_a_correction_rewrites_split_fanouts(redis_url: str) -> None:
    """Rounds whose fan-out message exceeds MAX_MESSAGE_BYTES are stored split (``partition.k``
    fields); a correction rewrites them split the same way and Redis equals the corrected stream."""
    limit = 1200
    history = History()
    history.rounds = harness.synthetic_rounds(seed=9, count=24, ladders=("alpha",), pool=30, min_size=14, max_size=18)

    async def body() -> None:
        ctx = PipelineContext.from_settings(Settings(redis_url=redis_url, partitions=1, hold_poll_s=0.01,
                                                     max_message_bytes=limit))
        await stream_rounds(ctx, history.rounds)
        assert (await correct(ctx, history.void("alpha", history.rounds[4]["round_id"]))).outcome == "applied"
        await ctx.store.close()

    asyncio.run(body())
    client = redis.Redis.from_url(redis_url)
    fields = {f for r in history.rounds[5:] for f in client.hkeys(keys.round_perf("alpha", r["round_id"]))}
    assert any(b"." in f for f in fields), f"no split fan-out: {sorted(fields)[:5]}"
    rerated = [r for r in history.rounds[5:] if client.hget(keys.round_record("alpha", r["round_id"]), "rerated_by")]
    assert rerated, "nothing re-rated"
    equals_corrected_stream(redis_url, history, max_message_bytes=limit)


def test_corrections_of_ladders_with_team_rounds_equal_the_corrected_stream(redis_url: str) -> None:
    """Voids and amends on ladders holding rounds of 2 teams of 5, 10 squads of 3 and partial
    play: the re-rate rates them as the stream does (Elo-MMR for teams, the shares played read
    back from the stored fan-outs), so Redis equals a fresh stream and the replay of the
    corrected history; an individual round amended into a team round too."""
    from test_team_pipeline import team_stream

    history = History()
    history.rounds = team_stream(seed=4, count=48, pool=36)
    events: list[CorrectionResult] = []

    async def body() -> None:
        ctx = context(redis_url)
        await stream_rounds(ctx, history.rounds[:40])
        alpha = [r for r in history.rounds[:40] if r["ladder"] == "alpha"]
        teamed = [r for r in alpha if "team" in r["standings"][0]]
        events.append(await correct(ctx, history.void("alpha", teamed[1]["round_id"])))
        squads = teamed[2]["standings"]
        upset = [dict(e, rank=len(squads) + 1 - e["rank"]) for e in squads]  # the ranking reversed
        events.append(await correct(ctx, history.amend("alpha", teamed[2]["round_id"], upset)))
        solo = next(r for r in alpha if "player" in r["standings"][0] and len(r["standings"]) >= 4)
        names = [e["player"] for e in solo["standings"]]
        as_teams = [{"team": "x", "players": [names[0], {"player": names[1], "weight": 0.5}], "rank": 2},
                    {"team": "y", "players": names[2:], "rank": 1}]
        events.append(await correct(ctx, history.amend("alpha", solo["round_id"], as_teams)))
        await stream_rounds(ctx, history.rounds[40:])
        await ctx.store.close()

    asyncio.run(body())
    equals_corrected_stream(redis_url, history)
    assert [e.outcome for e in events] == ["applied"] * 3
