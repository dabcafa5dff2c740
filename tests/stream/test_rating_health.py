"""Rating health online (stream/pipeline/health.py), phase one in process against a real Redis:

* a ladder's cumulative pair accuracy and rank deviation equal ``stream evaluate --score-from 0``'s
  on the same rounds within 1e-9 (one code path), however the rounds are cut into batches, and a
  redelivered batch changes nothing;
* a newcomer who beats the ladder's best round after round is flagged as a rapid climber;
* the rolling figures cover the last HEALTH_WINDOW rounds (and at most one batch more) only.
"""

from __future__ import annotations

import asyncio
import json
import random
from pathlib import Path

import pytest
import redis
from hypothesis import Phase, given, settings as hsettings, strategies as st
from typer.testing import CliRunner

from stream.cli.main import app
from stream.contracts import RoundResult, Standing
from stream.pipeline.context import PipelineContext
from stream.pipeline.messages import Incoming, Origin
from stream.pipeline.outbox import TopicNames
from stream.pipeline.phase_one import handle_rounds
from stream.pipeline.updates_batches import phase_two_batch
from stream.settings import Settings
from stream.store import health as store_health

TOLERANCE = 1e-9
NAMES = TopicNames(player_updates="player-updates", rating_changes="rating-changes", rounds_dlq="rounds-dlq")


def game(round_id: str, players: list[str], ranks: list[int], day: float, ladder: str = "A") -> RoundResult:
    return RoundResult(round_id=round_id, ladder=ladder, occurred_at=1.7e9 + 86_400.0 * day,
                       standings=[Standing(p, r) for p, r in zip(players, ranks)])


def history(seed: int, count: int) -> list[RoundResult]:
    """Duels, 4-player rounds with ties and a few 40-player rounds (scored one by one, above
    SMALL_ROUND) over a pool of 60."""
    rng = random.Random(seed)
    pool = [f"p{i}" for i in range(60)]
    out = []
    for k in range(count):
        size = rng.choice([2, 2, 2, 4, 4, 40]) if k % 7 else 2
        players = rng.sample(pool, size)
        ranks = sorted(rng.randint(1, size) for _ in range(size)) if size > 2 else [1, rng.choice([1, 2, 2])]
        out.append(game(f"r{k}", players, ranks, day=k * 0.3))
    return out


def context(redis_url: str, **extra: object) -> PipelineContext:
    return PipelineContext.from_settings(Settings(redis_url=redis_url, partitions=2, barrier_poll_s=0.001,
                                                  barrier_max_poll_s=0.005, **extra))  # type: ignore[arg-type]


async def stream_through(ctx: PipelineContext, rounds: list[RoundResult], cuts: list[int], *,
                         again: bool = False, flush_each: bool = False) -> None:
    """Phase one batch by batch (each batch's phase two applied before the next); ``again``:
    every batch handed to phase one a second time (a redelivery)."""
    bounds = sorted({0, len(rounds), *[c for c in cuts if 0 < c < len(rounds)]})
    for a, b in zip(bounds[:-1], bounds[1:]):
        events = [Incoming(r.to_json().encode()) for r in rounds[a:b]]
        batch = await handle_rounds(ctx, events)
        if again:
            await handle_rounds(ctx, events)

        async def send(records, what):  # type: ignore[no-untyped-def]
            pass

        await phase_two_batch(ctx, NAMES, [Incoming(m.value, m.key, Origin("player-updates", m.partition, i))
                                           for i, m in enumerate(batch.messages)], send)
        if flush_each:
            await ctx.health.flush(ctx.store.client, force=True)
    await ctx.health.flush(ctx.store.client, force=True)  # the worker's timer does it within FLUSH_S


def evaluate_from_zero(rounds: list[RoundResult], path: Path) -> dict:
    """``stream evaluate`` of the same rounds with the model the stream rates them by (the default
    preset, ``mmr-bounded``: drawn duels are rated, and scored, as the stream does)."""
    path.write_text("".join(r.to_json() + "\n" for r in rounds))
    result = CliRunner().invoke(app, ["evaluate", str(path), "--models", "mmr-bounded", "--score-from", "0", "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)["models"][0]


@hsettings(max_examples=4, deadline=None, phases=(Phase.explicit, Phase.generate))  # each example ~10 s
@given(seed=st.integers(0, 10_000), cuts=st.lists(st.integers(1, 119), max_size=6), again=st.booleans())
def test_online_pair_and_rank_equal_stream_evaluate(redis_server, tmp_path_factory, seed: int, cuts: list[int],
                                                    again: bool) -> None:  # type: ignore[no-untyped-def]
    client = redis.Redis.from_url(redis_server.url)
    client.flushall()
    rounds = history(seed, 120)

    async def body() -> dict:
        ctx = context(redis_server.url)
        await stream_through(ctx, rounds, cuts, again=again)
        got = await store_health.ladder_health(ctx.store.client, "A")
        await ctx.store.close()
        assert got is not None
        return got

    online = asyncio.run(body())
    offline = evaluate_from_zero(rounds, tmp_path_factory.mktemp("eval") / "rounds.jsonl")
    cumulative = online["cumulative"]
    assert cumulative["rounds"] == offline["scored_rounds"] > 0  # outcome-free rounds are rated by nobody
    for name in ("pair_all", "pair_exp", "rank_all", "rank_exp"):
        if offline[name] is None:
            assert cumulative[name] is None, name
        else:
            assert abs(cumulative[name] - offline[name]) <= TOLERANCE, (name, cumulative[name], offline[name])
    assert cumulative["pair_all_weight"] == offline["participations_all"]
    assert cumulative["pair_exp_weight"] == offline["participations_exp"]
    assert cumulative["pairs"] > 0 and 0 < cumulative["log_loss"] < 5
    assert sum(b["pairs"] for b in cumulative["calibration"]) == cumulative["pairs"]
    assert online["pool"]["players"] == len({p for r in rounds for p in r.players()})
    client.close()


def test_a_newcomer_beating_the_best_round_after_round_is_a_rapid_climber(redis_url: str) -> None:
    veterans = [f"v{i}" for i in range(8)]
    rng = random.Random(4)
    rounds = []
    for k in range(120):  # a settled ladder: v0 > v1 > ... mostly
        pair = sorted(rng.sample(range(8), 2))
        rounds.append(game(f"s{k}", [veterans[pair[0]], veterans[pair[1]]], [1, 2], day=k * 0.1))
    for k in range(5):  # the smurf wins against the top four
        rounds.append(game(f"smurf{k}", ["smurf", *veterans[:4]], [1, 2, 3, 4, 5], day=12 + k * 0.1))

    async def body() -> dict:
        ctx = context(redis_url)
        await stream_through(ctx, rounds, list(range(0, len(rounds), 16)))
        got = await store_health.ladder_health(ctx.store.client, "A")
        await ctx.store.close()
        assert got is not None
        return got

    got = asyncio.run(body())
    flagged = [c for c in got["climbers"] if c["player"] == "smurf"]
    assert flagged and flagged[0]["streak"] == 3 and flagged[0]["round_id"] == "smurf2", got["climbers"]
    assert {c["player"] for c in got["climbers"]} == {"smurf"}
    assert got["cumulative"]["climbers"] == 1


def test_rolling_figures_cover_the_window_only(redis_url: str) -> None:
    rounds = history(9, 60)

    async def body(window: int) -> dict:
        client = redis.Redis.from_url(redis_url)
        client.flushall()
        client.close()
        ctx = context(redis_url, health_window=window)
        from stream.pipeline.metrics import HEALTH_CPU_SECONDS
        exported = HEALTH_CPU_SECONDS._value.get()
        await stream_through(ctx, rounds, list(range(4, 60, 4)), flush_each=True)  # entries of 4 rounds
        got = await store_health.ladder_health(ctx.store.client, "A")
        await ctx.store.close()
        assert got is not None
        # its own CPU is counted, and exported as ems_rating_health_cpu_seconds_total
        assert ctx.health.cpu_s > 0 and HEALTH_CPU_SECONDS._value.get() - exported == pytest.approx(ctx.health.cpu_s)
        return got

    small = asyncio.run(body(10))
    # entries hold a flush's rounds: the window keeps the newest ones holding at least 10 rounds
    assert 10 <= small["window"] == small["rolling"]["rounds"] <= 10 + 3 < small["cumulative"]["rounds"]
    assert small["rolling"]["pairs"] < small["cumulative"]["pairs"]
    whole = asyncio.run(body(1000))
    for name in ("pair_all", "rank_all", "log_loss", "mean_mu"):
        assert abs(whole["rolling"][name] - whole["cumulative"][name]) <= 1e-9, name


def test_rounds_straddling_the_last_scored_one_count_once(redis_url: str) -> None:
    """A ladder's scored rounds 3..8 after 1..5 were recorded (a batch cut differently after a
    redelivery): the script refuses the whole entry, and the rounds one by one add 6..8 only."""
    import numpy as np

    from stream.store.health import FIELDS, HealthStore, ScoredRounds

    def scored(first: int, last: int) -> ScoredRounds:
        seqs = np.arange(first, last + 1)
        table = np.zeros((seqs.shape[0], len(FIELDS)))
        table[:, 0] = 1.0  # scored
        table[:, FIELDS.index("pairs")] = seqs  # round seq as its pair count: the sum tells which were added
        return ScoredRounds(seqs, table, np.full(seqs.shape[0], 1500.0))

    async def body() -> dict:
        client = redis.asyncio.Redis.from_url(redis_url)
        store = HealthStore(client)
        assert await store.record([("A", scored(1, 5), [])], 100) == [1]
        assert await store.record([("A", scored(3, 8), [])], 100) == [3]
        assert await store.record([("A", scored(1, 8), [])], 100) == [0]
        got = await store_health.ladder_health(client, "A")
        await client.aclose()
        assert got is not None
        return got

    import redis.asyncio  # noqa: F401

    got = asyncio.run(body())
    assert got["cumulative"]["rounds"] == 8 and got["cumulative"]["pairs"] == sum(range(1, 9)) and got["last_seq"] == 8
