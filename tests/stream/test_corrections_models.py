"""Corrections on ladders rated by a rating-only model (glicko, trueskill; ``LADDERS``) through
the handlers on a real redis-server: after voids, amends and late rounds' inserts, Redis equals
what the stream writes for the corrected history (database 1: a fresh stream of it) and
``replay_ladders`` of it, within 1e-9; events; team rounds on a trueskill ladder; a trueskill
tie split across fan-out messages (its order not stored) is ``not_correctable``."""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Sequence

import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stream.batch.models import replay_ladders
from stream.contracts import Limits, PlayerUpdate, RoundResult, parse_round
from stream.contracts.round import NOT_CORRECTABLE
from tests.engine.oracles import state_from_bytes
from stream.pipeline.context import PipelineContext
from stream.pipeline.corrections import finish_correction, handle_correction
from stream.pipeline.phase_one import handle_one
from stream.pipeline.messages import Incoming
from stream.stack.redis_server import RedisServer
from stream.store import keys
from tests.stream import pipeline_harness as harness
from tests.stream.test_backfill import stream_rounds
from tests.stream.test_corrections import History, assert_same_ladders, context, correct, other_db
from tests.stream.test_late_rounds import late_history, settle, sorted_history

LADDERS = json.dumps({"g": {"model": "glicko"}, "t": {"model": "trueskill"},
                      "k": {"model": "topcoder", "params": {"weight_noob": 0.5}}, "*": {"model": "mmr"}})
TOLERANCE = 1e-9


def untied(rounds: list[dict], ladder: str = "t") -> list[dict]:
    """The rounds, those of ``ladder`` (trueskill) without ties: TrueSkill depends on the order of
    tied players, which a fan-out split across partitions does not keep (its own test below)."""
    for r in rounds:
        if r["ladder"] == ladder:
            r["standings"] = [dict(s, rank=i + 1) for i, s in enumerate(r["standings"])]
    return rounds


def ctx_of(url: str, **extra: object) -> PipelineContext:
    return context(url, ladders=LADDERS, **extra)


def assert_equals_replay(url: str, rounds: Sequence[dict], ladders_of: PipelineContext) -> None:
    """Every player's stored rating (and packed state) equals ``replay_ladders`` of ``rounds``."""
    parsed: list[RoundResult] = [parse_round(json.dumps(r), limits=Limits()) for r in rounds]
    reference = {(ladder, player): (mu, sigma, n)
                 for ladder, player, mu, sigma, n in replay_ladders(parsed, ladders_of.ladders).ratings()}
    client = redis.Redis.from_url(url)
    stored = {(ladder, m.decode()) for ladder in {r["ladder"] for r in rounds}
              for m in client.zrange(keys.leaderboard(ladder), 0, -1)}
    assert stored == set(reference)
    for (ladder, player), (mu, sigma, n) in reference.items():
        row = client.hgetall(keys.player(ladder, player))
        assert abs(float(row[b"mu"]) - mu) <= TOLERANCE and abs(float(row[b"sigma"]) - sigma) <= TOLERANCE
        assert int(row[b"rounds"]) == n
        state = state_from_bytes(row[b"state"])
        assert (state.mu, state.sigma, state.rounds) == (float(row[b"mu"]), float(row[b"sigma"]), n)
    client.close()


def equals_corrected_stream(url: str, rounds: Sequence[dict], ladders: Sequence[str], **extra: object) -> None:
    """Redis at ``url`` holds what a fresh stream of ``rounds`` writes (database 1) and their replay."""
    fresh = other_db(url, 1)
    redis.Redis.from_url(fresh).flushdb()

    async def body() -> None:
        ctx = ctx_of(fresh, **extra)
        await stream_rounds(ctx, rounds)
        await ctx.store.close()

    asyncio.run(body())
    assert_same_ladders(url, fresh, ladders)
    assert_equals_replay(url, rounds, ctx_of(url))


def test_void_and_amend_on_glicko_and_trueskill_ladders(redis_url: str) -> None:
    history = History()
    history.rounds = untied(harness.synthetic_rounds(seed=17, count=60, ladders=("g", "t"), pool=14, max_size=7))
    results = []

    async def body() -> None:
        ctx = ctx_of(redis_url, history_length=5)
        await stream_rounds(ctx, history.rounds[:45])
        for ladder in ("g", "t"):
            mine = [r for r in history.rounds[:45] if r["ladder"] == ladder]
            results.append(await correct(ctx, history.void(ladder, mine[2]["round_id"])))
            rnd = mine[8]
            ranks = [s["rank"] for s in rnd["standings"]]  # the finishing order reversed, and a newcomer
            upset = [{"player": s["player"], "rank": r} for s, r in zip(reversed(rnd["standings"]), ranks)]
            upset.append({"player": f"new-{ladder}", "rank": ranks[-1] + 1})
            results.append(await correct(ctx, history.amend(ladder, rnd["round_id"], upset)))
        await stream_rounds(ctx, history.rounds[45:])
        last = [r for r in history.rounds if r["ladder"] == "t"][-1]
        results.append(await correct(ctx, history.void("t", last["round_id"])))  # the ladder's last round
        first = next(r for r in history.rounds if r["ladder"] == "g")  # the ladder's first round
        results.append(await correct(ctx, history.void("g", first["round_id"])))
        await ctx.store.close()

    asyncio.run(body())
    assert [r.outcome for r in results] == ["applied"] * 6, [(r.outcome, r.dead_letter) for r in results]
    equals_corrected_stream(redis_url, history.corrected(), ("g", "t"), history_length=5)
    client = redis.Redis.from_url(redis_url)
    for result in results:
        assert result.events
        for event in result.events:
            change = json.loads(event.value)
            assert change["kind"] == "correction" and change["correction_id"] == result.correction_id
            assert change["performance"] is None  # neither glicko nor trueskill has a performance
            assert (change["mu_before"], change["sigma_before"]) != (change["mu_after"], change["sigma_after"])
            row = client.hgetall(keys.player(change["ladder"], event.key.decode()))
            if result is results[-1] and row:  # the last correction's new ratings are the stored ones
                assert (float(row[b"mu"]), float(row[b"sigma"])) == (change["mu_after"], change["sigma_after"])
    # the rewritten fan-outs carry each player's new rating, as phase one's do
    amended = results[1].entry["round_id"]  # type: ignore[index]
    updates = [PlayerUpdate.from_json(v) for v in client.hvals(keys.round_perf("g", amended))]
    assert updates and all(u.mu_after is not None and u.sigma_after is not None for u in updates)
    assert "new-g" in {p for u in updates for p in u.players}
    client.close()


def test_inserts_of_late_rounds_on_a_glicko_ladder(redis_url: str) -> None:
    """LADDER_ORDER rates ladder ``timed`` (glicko) by occurred_at: a late round is inserted in its
    place by the corrections handler; Redis equals the sorted history streamed and replayed."""
    rounds = late_history(seed=23, count=40, late_share=0.25)
    ladders = json.dumps({"timed": {"model": "glicko"}, "pub": {"model": "trueskill"}, "*": {"model": "mmr"}})
    order = '{"timed": "occurred_at"}'

    async def body() -> int:
        ctx = context(redis_url, ladders=ladders, ladder_order=order, history_length=5)
        inserts = 0
        for r in rounds:
            inserts += await settle(ctx, await handle_one(ctx, Incoming(json.dumps(r).encode())))
        await ctx.store.close()
        return inserts

    assert asyncio.run(body()) > 2
    fresh = other_db(redis_url, 1)
    redis.Redis.from_url(fresh).flushdb()
    ordered = sorted_history(rounds)

    async def stream_fresh() -> None:
        ctx = context(fresh, ladders=ladders, ladder_order=order, history_length=5)
        await stream_rounds(ctx, ordered)
        await ctx.store.close()

    asyncio.run(stream_fresh())
    assert_same_ladders(redis_url, fresh, ("timed", "pub"))
    assert_equals_replay(redis_url, ordered, context(redis_url, ladders=ladders))


def trueskill_team_rounds(seed: int, count: int) -> list[dict]:
    """Rounds of ladder ``t``: two or three teams of 1-3 (some partial play), or an individual
    entry, each entry at its own rank (no tie between entries)."""
    rng = random.Random(seed)
    names = [f"p{i:03d}" for i in range(10)]
    out = []
    for k in range(count):
        chosen = rng.sample(names, rng.randint(3, 7))
        entries: list[list[str]] = [[] for _ in range(rng.randint(2, 3))]
        for i, player in enumerate(chosen):
            entries[i % len(entries)].append(player)
        standings: list[dict] = []
        for rank, members in enumerate(rng.sample(entries, len(entries)), start=1):
            if len(members) == 1 and rng.random() < 0.5:
                standings.append({"player": members[0], "rank": rank})
            else:
                standings.append({"team": f"u{rank}", "rank": rank, "players": [
                    p if rng.random() < 0.7 else {"player": p, "weight": 0.5} for p in members]})
        out.append({"round_id": f"team{seed}-{k}", "ladder": "t", "occurred_at": harness.BASE_TIME + 7200.0 * k,
                    "standings": standings})
    return out


def test_team_rounds_on_a_trueskill_ladder(redis_url: str) -> None:
    """Rounds of teams and partial play on a trueskill ladder (the fan-out keeps teams and shares):
    a void, and an amend reversing a team round's order, equal the corrected stream and replay."""
    history = History()
    history.rounds = trueskill_team_rounds(seed=4, count=24)
    results = []

    async def body() -> None:
        ctx = ctx_of(redis_url)
        await stream_rounds(ctx, history.rounds)
        results.append(await correct(ctx, history.void("t", history.rounds[3]["round_id"])))
        target = history.rounds[6]
        last = len(target["standings"])
        reversed_ = [dict(s, rank=last + 1 - s["rank"]) for s in target["standings"]]
        results.append(await correct(ctx, history.amend("t", target["round_id"], reversed_)))
        await ctx.store.close()

    asyncio.run(body())
    assert [r.outcome for r in results] == ["applied", "applied"], [r.dead_letter for r in results]
    assert all(r.events for r in results)
    equals_corrected_stream(redis_url, history.corrected(), ("t",))
    client = redis.Redis.from_url(redis_url)  # the amended round's rewritten fan-out keeps its teams and shares
    entries = [e for v in client.hvals(keys.round_perf("t", history.rounds[6]["round_id"]))
               for e in json.loads(v)["entries"]]
    teams = {s["team"] for s in history.rounds[6]["standings"] if "team" in s}
    assert teams and {e.get("team") for e in entries} - {None} == teams and all("mu_after" in e for e in entries)
    client.close()


def test_a_trueskill_tie_split_across_partitions_is_not_re_rated(redis_url: str) -> None:
    """A trueskill round whose tie spans several partitions' messages, when the correction would
    re-rate it (it shares a player with the voided round): ``not_correctable``, nothing written."""
    names = [f"q{i}" for i in range(12)]
    first = {"round_id": "a", "ladder": "t", "occurred_at": harness.BASE_TIME,
             "standings": [{"player": names[0], "rank": 1}, {"player": names[1], "rank": 2}]}
    tied = {"round_id": "b", "ladder": "t", "occurred_at": harness.BASE_TIME + 60.0,
            "standings": [{"player": names[0], "rank": 1}] + [{"player": p, "rank": 2} for p in names[2:]]}

    async def body() -> None:
        ctx = ctx_of(redis_url)
        await stream_rounds(ctx, [first, tied])
        assert len(await ctx.store.client.hkeys(keys.round_perf("t", "b"))) > 1  # the tie spans partitions
        result = await correct(ctx, {"kind": "void", "ladder": "t", "round_id": "a"})
        assert result.dead_letter is not None and result.dead_letter.reason == NOT_CORRECTABLE
        assert "'b'" in result.dead_letter.message and "tie" in result.dead_letter.message
        assert (await ctx.store.round_record("t", "a"))["status"] == "rated"
        assert await ctx.store.client.hget(keys.ladder("t"), "hold") is None
        await ctx.store.close()

    asyncio.run(body())


@st.composite
def scripts(draw: st.DrawFn) -> list[tuple[str, int]]:
    """Operations: ("round", n) publishes the next n rounds; ("void"/"amend", k) corrects a
    published round chosen by k."""
    ops = [("round", draw(st.integers(3, 12)))]
    for _ in range(draw(st.integers(1, 5))):
        ops.append((draw(st.sampled_from(["round", "void", "amend", "amend"])), draw(st.integers(0, 10**6))))
    return ops


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=scripts(), seed=st.integers(0, 10**6))
def test_random_corrections_on_rating_only_ladders(redis_server: RedisServer, ops: list[tuple[str, int]],
                                                   seed: int) -> None:
    """Property: any interleaving of rounds, voids and amends on glicko, trueskill (individual
    rounds, no ties) and topcoder (a model with performances) ladders leaves Redis equal to the
    stream and ``replay_ladders`` of the corrected history; every correction applies."""
    url = redis_server.url
    redis.Redis.from_url(url).flushall()
    rng = random.Random(seed)
    pool = untied(harness.synthetic_rounds(seed=seed, count=50, ladders=("g", "t", "k"), pool=12, max_size=7))
    history = History()

    async def body() -> None:
        ctx = ctx_of(url, history_length=4)
        for step, (op, n) in enumerate(ops):
            if op == "round":
                batch, pool[:n] = pool[:n], []
                history.rounds += batch
                await stream_rounds(ctx, batch)
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
                if rng.random() < 0.3 and not any(s["player"].startswith("new") for s in standings):
                    standings.append({"player": f"new{n}", "rank": len(standings) + 1})
                correction = history.amend(target["ladder"], target["round_id"], standings)
            # distinct corrections carry distinct ids: without one, an amend identical to an earlier
            # one gets its derived id and is a duplicate (docs/history.md, step 1)
            correction["correction_id"] = f"c{step}"
            result = await correct(ctx, correction)
            assert result.outcome == "applied", result.dead_letter
            for event in result.events:
                change = json.loads(event.value)
                if change["rank"] is not None:  # (a player left without a round: no performance)
                    assert (change["performance"] is None) == (change["ladder"] != "k"), change
        await ctx.store.close()

    asyncio.run(body())
    equals_corrected_stream(url, history.corrected(), sorted({r["ladder"] for r in history.rounds}),
                            history_length=4)


def test_a_redelivered_correction_resumes_to_the_same_result(redis_url: str) -> None:
    """A correction handled twice before it is finished (a worker killed after its writes, the
    message redelivered): the second pass re-reads the rewritten fan-outs and the amendment,
    writes the same and sends the same events; Redis equals the corrected stream."""
    history = History()
    history.rounds = untied(harness.synthetic_rounds(seed=29, count=30, ladders=("g", "t"), pool=10, max_size=6))

    async def body() -> None:
        ctx = ctx_of(redis_url)
        await stream_rounds(ctx, history.rounds)
        for ladder in ("t", "g"):
            rnd = [r for r in history.rounds if r["ladder"] == ladder][3]
            upset = [dict(s, rank=len(rnd["standings"]) - i) for i, s in enumerate(rnd["standings"])]
            raw = json.dumps(history.amend(ladder, rnd["round_id"], upset)).encode()
            first = await handle_correction(ctx, raw)  # its events sent, then the worker dies
            again = await handle_correction(ctx, raw)
            assert first.outcome == again.outcome == "applied", (first.dead_letter, again.dead_letter)
            assert first.events and [(e.key, e.value) for e in first.events] == [(e.key, e.value) for e in again.events]
            await finish_correction(ctx, again)
        await ctx.store.close()

    asyncio.run(body())
    equals_corrected_stream(redis_url, history.corrected(), ("g", "t"))
