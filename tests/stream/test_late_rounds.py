"""Late rounds on a ladder rated by occurred_at (LADDER_ORDER), through the handlers on a real
redis-server: a round older than the ladder's newest one is registered ``late``, holds the
ladder, and its ``insert`` correction rates it in its place. After the stream drains, Redis equals
what a fresh stream of the history sorted by (occurred_at, publish order) writes, and the replay
of it (``first_copies`` orders it: the replay's code path), within 1e-9; a ladder rated in
publish order is untouched by all of it.

The worker path (Kafka, two workers) is tests/faults/test_late_rounds_worker.py.
"""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Sequence
from pathlib import Path

import pytest
import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from stream import engine
from stream.batch.dedup import first_copies
from stream.cli.main import app
from stream.contracts import Limits, parse_round
from stream.contracts.ordering import LadderOrder, in_ladder_order
from stream.pipeline.context import PipelineContext
from stream.pipeline.messages import Incoming
from stream.pipeline.phase_one import PhaseOneResult, handle_one, handle_rounds
from stream.pipeline.phase_two import handle_updates
from stream.stack.redis_server import RedisServer
from stream.store import keys
from tests.stream import pipeline_harness as harness
from tests.stream.test_backfill import stream_rounds
from tests.stream.test_corrections import assert_same_ladders, context, correct, other_db

ORDER = '{"timed": "occurred_at"}'
LADDERS = ("timed", "pub")


def late_history(seed: int, count: int, late_share: float, pool: int = 12) -> list[dict]:
    """Rounds on both ladders; a share of them moved back in time (late), some to the very start,
    some onto another round's occurred_at (ties keep publish order)."""
    rng = random.Random(seed)
    rounds = harness.synthetic_rounds(seed=seed, count=count, ladders=LADDERS, pool=pool, max_size=6)
    for i, r in enumerate(rounds):
        if i and rng.random() < late_share:
            pick = rng.random()
            if pick < 0.2:
                r["occurred_at"] = harness.BASE_TIME - rng.random() * harness.DAY_S
            elif pick < 0.5:
                r["occurred_at"] = rounds[rng.randrange(i)]["occurred_at"]
            else:
                r["occurred_at"] -= rng.random() * i * harness.DAY_S / 4
    return rounds


def sorted_history(rounds: Sequence[dict]) -> list[dict]:
    """The rounds in rating order (``in_ladder_order``, the replay's)."""
    parsed = [parse_round(json.dumps(r), limits=Limits()) for r in rounds]
    position = {id(p): i for i, p in enumerate(parsed)}
    return [rounds[position[id(p)]] for p in in_ladder_order(parsed, LadderOrder.parse(ORDER).by_time)]


async def settle(ctx: PipelineContext, result: PhaseOneResult | None) -> int:
    """What the agents do with one phase-one result: its fan-out through phase two, its insert
    through the corrections handler. Returns 1 for an insert."""
    if result is None:
        return 0
    if result.updates:
        done = await handle_updates(ctx, [m.value for m in result.updates])
        await ctx.store.confirm_emitted(done.emitted)
    if result.insert is not None:
        outcome = await correct(ctx, result.insert.to_dict())
        assert outcome.outcome in ("applied", "no-op"), outcome
        for event in outcome.events:
            change = json.loads(event.value)
            assert change["kind"] == "correction" and change["correction_id"] == result.insert.correction_id
        return 1
    return 0


async def stream_in_batches(ctx: PipelineContext, rounds: Sequence[dict], size: int) -> int:
    """Phase one in batches (``handle_rounds``), phase two of each batch, then its inserts, then its
    deferred rounds one by one (as rounds_batches does). Returns the number of inserts."""
    inserts = 0
    for lo in range(0, len(rounds), size):
        events = [Incoming(json.dumps(r).encode()) for r in rounds[lo:lo + size]]
        batch = await handle_rounds(ctx, events)
        if batch.messages:
            done = await handle_updates(ctx, [m.value for m in batch.messages])
            await ctx.store.confirm_emitted(done.emitted)
        for result in batch.results:
            if result is not None and result.insert is not None:
                inserts += await settle(ctx, PhaseOneResult("late", insert=result.insert))
        for i in batch.deferred:
            inserts += await settle(ctx, await handle_one(ctx, Incoming(events[i].value)))
    return inserts


def check(url: str, rounds: list[dict], history_length: int) -> None:
    """Redis at ``url`` equals a fresh stream of the sorted history (database 1) and its replay."""
    fresh = other_db(url, 1)
    redis.Redis.from_url(fresh).flushdb()

    async def body() -> None:
        ctx = context(fresh, ladder_order=ORDER, history_length=history_length)
        await stream_rounds(ctx, sorted_history(rounds))
        await ctx.store.close()

    asyncio.run(body())
    assert_same_ladders(url, fresh, LADDERS)
    params = context(url).ladders.fallback.elo_mmr
    harness.assert_equals_reference(url, harness.reference(rounds, params, ladder_order=ORDER))
    client = redis.Redis.from_url(url)
    for ladder in LADDERS:
        assert client.hget(keys.ladder(ladder), "hold") is None
        statuses = {client.hget(keys.round_record(ladder, m.decode()), "status") for m in
                    client.zrange(keys.rounds(ladder), 0, -1)}
        assert statuses <= {b"rated", b"no_outcome"}, statuses
    client.close()


def test_order_setting() -> None:
    assert LadderOrder.parse(ORDER).order_of("timed") == "occurred_at"
    assert LadderOrder.parse(ORDER).order_of("pub") == "published"
    assert LadderOrder.parse('{"*": "occurred_at", "y": "published"}').order_of("x") == "occurred_at"
    assert LadderOrder.parse('{"*": "occurred_at", "y": "published"}').order_of("y") == "published"
    assert LadderOrder.parse("").order_of("any") == "published"
    for bad in ('{"a": "newest"}', "[1]", "{"):
        try:
            LadderOrder.parse(bad)
        except ValueError as exc:
            assert "LADDER_ORDER" in str(exc)
        else:
            raise AssertionError(bad)


def test_first_copies_orders_timed_ladders_only() -> None:
    rounds = [parse_round(json.dumps(r), limits=Limits()) for r in late_history(seed=3, count=40, late_share=0.4)]
    ordered = first_copies(rounds, LadderOrder.parse(ORDER).by_time).rounds
    timed = [r for r in ordered if r.ladder == "timed"]
    assert [r.occurred_at for r in timed] == sorted(r.occurred_at for r in timed)
    assert timed != [r for r in rounds if r.ladder == "timed"], "the history has late rounds"
    assert [r for r in ordered if r.ladder == "pub"] == [r for r in rounds if r.ladder == "pub"]
    assert [r.ladder for r in ordered] == [r.ladder for r in rounds], "each ladder keeps its places"
    assert first_copies(rounds).rounds == rounds


def test_late_rounds_one_by_one(redis_url: str) -> None:
    rounds = late_history(seed=11, count=60, late_share=0.25)

    async def body() -> int:
        ctx = context(redis_url, ladder_order=ORDER, history_length=5)
        inserts = 0
        for r in rounds:
            inserts += await settle(ctx, await handle_one(ctx, Incoming(json.dumps(r).encode())))
        again = await handle_one(ctx, Incoming(json.dumps(rounds[-1]).encode()))  # a redelivery: a no-op
        assert again.outcome in ("duplicate", "resent") and again.insert is None
        await ctx.store.close()
        return inserts

    assert asyncio.run(body()) > 3
    check(redis_url, rounds, 5)
    record = redis.Redis.from_url(redis_url).hgetall(keys.round_record("timed", rounds[0]["round_id"]))
    assert record[b"status"] == b"rated"


@st.composite
def streams(draw: st.DrawFn) -> tuple[int, int, float, int]:
    return (draw(st.integers(0, 10**6)), draw(st.integers(10, 60)), draw(st.sampled_from([0.0, 0.1, 0.3, 0.6])),
            draw(st.integers(1, 16)))


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=streams())
def test_random_late_rounds_in_batches(redis_server: RedisServer, case: tuple[int, int, float, int]) -> None:
    """Property: any stream with late rounds interleaved, in batches of any size, leaves Redis equal
    to the stream and the replay of the sorted history; the published ladder is rated in publish order."""
    seed, count, share, size = case
    url = redis_server.url
    redis.Redis.from_url(url).flushall()
    rounds = late_history(seed, count, share)

    async def body() -> int:
        ctx = context(url, ladder_order=ORDER, history_length=4)
        inserts = await stream_in_batches(ctx, rounds, size)
        await ctx.store.close()
        return inserts

    inserts = asyncio.run(body())
    if share == 0.0:
        assert inserts == 0
    check(url, rounds, 4)


def test_erase_backfill_and_export_refuse_a_held_ladder(redis_url: str, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """While a correction holds a ladder (here a late round's insert, not yet applied), ``stream
    erase``, ``stream backfill --append`` and ``stream export`` exit non-zero naming the hold; once the
    insert is applied they work; a backfill into an occurred_at ladder refuses rounds older than
    its newest."""
    rounds = [r for r in late_history(seed=5, count=30, late_share=0.0) if r["ladder"] == "timed"]
    late = dict(rounds[3], round_id="late-one", occurred_at=rounds[0]["occurred_at"] - 1.0)

    async def publish(rs: list[dict]) -> PhaseOneResult | None:
        ctx = context(redis_url, ladder_order=ORDER)
        result = None
        for r in rs:
            result = await handle_one(ctx, Incoming(json.dumps(r).encode()))
            if result.updates:
                done = await handle_updates(ctx, [m.value for m in result.updates])
                await ctx.store.confirm_emitted(done.emitted)
        await ctx.store.close()
        return result

    assert asyncio.run(publish(rounds)) is not None
    result = asyncio.run(publish([late]))
    assert result is not None and result.outcome == "late" and result.insert is not None
    holder = redis.Redis.from_url(redis_url).hget(keys.ladder("timed"), "hold")
    assert holder == result.insert.correction_id.encode()

    monkeypatch.setenv("REDIS_URL", redis_url)
    monkeypatch.setenv("ERASURE_SECRET", "s3cret")
    monkeypatch.setenv("LADDER_ORDER", ORDER)
    more = tmp_path / "more.jsonl"
    newer = dict(rounds[-1], round_id="newer", occurred_at=rounds[-1]["occurred_at"] + 10.0)
    more.write_text(json.dumps(newer) + "\n")
    runner = CliRunner()
    player = rounds[0]["standings"][0]["player"]
    commands = (["erase", "timed", player], ["backfill", str(more), "--append"],
                ["export", "timed", "--output", str(tmp_path / "snap.jsonl")])
    for command in commands:
        refused = runner.invoke(app, command)
        assert refused.exit_code != 0 and "held by correction" in refused.output, (command, refused.output)

    async def insert() -> None:
        ctx = context(redis_url, ladder_order=ORDER)
        await settle(ctx, result)
        await ctx.store.close()

    asyncio.run(insert())
    older = tmp_path / "older.jsonl"
    older.write_text(json.dumps(dict(newer, round_id="older", occurred_at=rounds[0]["occurred_at"])) + "\n")
    refused = runner.invoke(app, ["backfill", str(older), "--append"])
    assert refused.exit_code == 2 and "older than its newest round" in refused.output, refused.output
    for command in reversed(commands):  # export, backfill, erase
        done = runner.invoke(app, command)
        assert done.exit_code == 0, (command, done.output)


def test_stream_replay_orders_by_ladder_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``stream replay`` rates an occurred_at ladder's rounds in (occurred_at, input order), through
    the same ``first_copies`` as the stream's reference; without LADDER_ORDER in input order."""
    rounds = late_history(seed=8, count=50, late_share=0.4)
    path = tmp_path / "rounds.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rounds))
    params = engine.preset("mmr")

    def replayed(env: str) -> dict[tuple[str, str], tuple[float, float]]:
        monkeypatch.setenv("LADDER_ORDER", env)
        out = tmp_path / "out.csv"
        result = CliRunner().invoke(app, ["replay", str(path), "--output", str(out), "--preset", "mmr"])
        assert result.exit_code == 0, result.output
        lines = out.read_text().splitlines()[1:]
        return {(f[0], f[1]): (float(f[2]), float(f[3])) for f in (line.split(",") for line in lines)}

    def expected(order: str) -> dict[tuple[str, str], tuple[float, float]]:
        states = harness.reference(rounds, params, ladder_order=order)
        return {k: (s.mu, s.sigma) for k, s in states.items()}

    timed, plain = replayed(ORDER), replayed("")
    for got, want in ((timed, expected(ORDER)), (plain, expected(""))):
        assert got.keys() == want.keys()
        assert all(abs(got[k][0] - want[k][0]) <= 1e-9 and abs(got[k][1] - want[k][1]) <= 1e-9 for k in got)
    assert any(abs(timed[k][0] - plain[k][0]) > 1e-6 for k in timed if k[0] == "timed"), "the order matters"
    assert all(timed[k] == plain[k] for k in timed if k[0] == "pub")
