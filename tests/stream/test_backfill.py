"""``stream backfill`` writes exactly what the stream writes, and the stream continues from it.

The stream side runs the pipeline's own handlers (phase one, phase two, the emitted
confirmation) round by round on the session's real redis-server, in database 0; the backfill
writes database 1 of the same server; every key and field is compared (wall-clock times aside).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from pathlib import Path

import pytest
import redis
from typer.testing import CliRunner

from stream.cli.main import app
from stream.contracts import Limits, RoundResult, parse_round
from stream.pipeline.backfill import BackfillRefused, backfill
from stream.pipeline.context import PipelineContext
from stream.pipeline.phase_one import handle_one
from stream.pipeline.messages import Incoming
from stream.pipeline.phase_two import handle_updates
from stream.settings import Settings
from stream.store import keys
from tests.stream import pipeline_harness as harness
from tests.stream.redis_dump import differences, dump

PARTITIONS = 4


def other_db(url: str, db: int) -> str:
    return url.rsplit("/", 1)[0] + f"/{db}"


def context(url: str, **extra: object) -> PipelineContext:
    return PipelineContext.from_settings(Settings(redis_url=url, partitions=PARTITIONS, **extra))  # type: ignore[arg-type]


def history(seed: int = 3, count: int = 120) -> list[dict]:
    """Two ladders with shared ids and ties, a re-published round, an outcome-free round and a draw
    (rated by the default preset)."""
    rounds = harness.synthetic_rounds(seed=seed, count=count, ladders=("alpha", "beta"), pool=25)
    rounds.insert(30, {"round_id": "solo", "ladder": "alpha", "occurred_at": harness.BASE_TIME + 1,
                       "standings": [{"player": "p001", "rank": 1}]})
    rounds.insert(50, {"round_id": "tied", "ladder": "beta", "occurred_at": harness.BASE_TIME + 2,
                       "standings": [{"player": "p001", "rank": 1}, {"player": "p002", "rank": 1}]})
    rounds.insert(70, dict(rounds[10]))  # re-published: a no-op
    return rounds


def parsed(rounds: Sequence[dict]) -> list[RoundResult]:
    out = []
    for raw in rounds:
        try:
            out.append(parse_round(json.dumps(raw), limits=Limits()))
        except Exception as exc:  # outcome-free rounds are valid input
            out.append(exc.round)  # type: ignore[attr-defined]
    return out


async def stream_rounds(ctx: PipelineContext, rounds: Sequence[dict]) -> None:
    """Each round through phase one, its fan-out through phase two, its events confirmed."""
    for raw in rounds:
        result = await handle_one(ctx, Incoming(json.dumps(raw).encode()))
        if result.updates:
            done = await handle_updates(ctx, [m.value for m in result.updates])
            await ctx.store.confirm_emitted(done.emitted)


def stream_and_backfill(redis_url: str, rounds: Sequence[dict], **extra: object) -> tuple[dict, dict]:
    """``rounds`` streamed into db 0 and backfilled into db 1 (contexts with ``extra`` settings):
    the two Redis dumps."""
    async def body() -> None:
        streamed, filled = context(redis_url, **extra), context(other_db(redis_url, 1), **extra)
        await stream_rounds(streamed, rounds)
        await backfill(filled, parsed(rounds))
        await streamed.store.close()
        await filled.store.close()

    asyncio.run(body())
    return dump(redis.Redis.from_url(redis_url)), dump(redis.Redis.from_url(other_db(redis_url, 1)))


def test_backfill_writes_what_the_stream_writes(redis_url: str) -> None:
    rounds = history()

    async def body() -> None:
        streamed, filled = context(redis_url, history_length=7), context(other_db(redis_url, 1), history_length=7)
        await stream_rounds(streamed, rounds)
        summary = await backfill(filled, parsed(rounds))
        assert summary.duplicates == 1 and summary.no_outcome == 1 and summary.rated == len(rounds) - 2  # a draw rates
        await streamed.store.close()
        await filled.store.close()

    asyncio.run(body())
    a, b = redis.Redis.from_url(redis_url), redis.Redis.from_url(other_db(redis_url, 1))
    stream_state, backfill_state = dump(a), dump(b)
    assert any(len(v) == 7 for k, v in backfill_state.items() if k.startswith(b"ems:history:")), "history trimmed"
    assert differences(stream_state, backfill_state) == []
    assert stream_state == backfill_state


def test_backfill_then_stream_equals_stream_of_all(redis_url: str) -> None:
    """Backfill the first half, stream the second: every key as if the stream had rated it all;
    then ``--append`` of a third part continues the same way."""
    rounds = history(seed=5)
    half, three_quarters = len(rounds) // 2, 3 * len(rounds) // 4

    async def body() -> None:
        streamed, mixed = context(redis_url), context(other_db(redis_url, 1))
        await stream_rounds(streamed, rounds)
        await backfill(mixed, parsed(rounds[:half]))
        await stream_rounds(mixed, rounds[half:three_quarters])
        with pytest.raises(BackfillRefused, match="already has"):
            await backfill(mixed, parsed(rounds[three_quarters:]))
        summary = await backfill(mixed, parsed(rounds[half - 5:]), append=True)  # the overlap is already stored
        assert summary.duplicates == three_quarters - half + 5
        await streamed.store.close()
        await mixed.store.close()

    asyncio.run(body())
    a, b = redis.Redis.from_url(redis_url), redis.Redis.from_url(other_db(redis_url, 1))
    assert differences(dump(a), dump(b)) == []
    harness.assert_equals_reference(other_db(redis_url, 1), harness.reference(rounds, context(redis_url).ladders.fallback.elo_mmr))


def test_append_refuses_a_stored_round_with_other_content(redis_url: str) -> None:
    rounds = history(count=20)

    async def body() -> None:
        ctx = context(redis_url)
        await backfill(ctx, parsed(rounds))
        changed = dict(rounds[4], standings=list(reversed(rounds[4]["standings"])))
        with pytest.raises(BackfillRefused, match="different content"):
            await backfill(ctx, parsed([changed]), append=True)
        await ctx.store.close()

    asyncio.run(body())


def test_cli_backfill(redis_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rounds = history(count=40)
    path = tmp_path / "rounds.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rounds))
    monkeypatch.setenv("REDIS_URL", redis_url)
    runner = CliRunner()
    first = runner.invoke(app, ["backfill", str(path), "--json"])
    assert first.exit_code == 0, first.output
    assert json.loads(first.stdout)["rated"] == len(rounds) - 2  # the re-published and one-player rounds; the draw rates
    again = runner.invoke(app, ["backfill", str(path)])
    assert again.exit_code == 2 and "already has" in again.output
    assert runner.invoke(app, ["backfill", str(path), "--append", "--json"]).exit_code == 0
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"round_id": "x", "standings": [{"player": "a", "rank": 0}]}\n')
    result = runner.invoke(app, ["backfill", str(bad)])
    assert result.exit_code == 2 and "bad.jsonl:1" in result.output


RATING_ONLY = json.dumps({"alpha": {"model": "glicko"}, "beta": {"model": "trueskill"}})
"""A glicko and a trueskill ladder (rating-only models: phase one rates, phase two stores)."""


def rating_only_history(seed: int) -> list[dict]:
    """``history`` on the two rating-only ladders, with team rounds and partial play on the trueskill one."""
    rounds = history(seed=seed, count=80)
    for k, at in enumerate((20, 45, 60)):
        standings = [{"team": "t0", "rank": 1, "players": [f"p00{k}", f"p01{k}"]},
                     {"team": "t1", "rank": 2, "players": [f"p02{k}", {"player": f"p03{k}", "weight": 0.5}]},
                     {"player": f"p04{k}", "rank": 2 + k % 2}]
        rounds.insert(at, {"round_id": f"team{k}", "ladder": "beta", "occurred_at": harness.BASE_TIME + 3 + k,
                           "standings": standings})
    return rounds


def test_backfill_rates_rating_only_ladders_as_the_stream(redis_url: str) -> None:
    """A glicko and a trueskill ladder: backfill writes what the stream writes; backfill the first
    half then stream the rest equals streaming it all (then ``--append`` continues the same way);
    the ratings are the models' (TrueSkill on its 25-point scale, no performance for glicko)."""
    rounds = rating_only_history(seed=7)
    half, three_quarters = len(rounds) // 2, 3 * len(rounds) // 4

    async def body() -> None:
        streamed = context(redis_url, ladders=RATING_ONLY)
        filled = context(other_db(redis_url, 1), ladders=RATING_ONLY)
        mixed = context(other_db(redis_url, 2), ladders=RATING_ONLY)
        await stream_rounds(streamed, rounds)
        await backfill(filled, parsed(rounds))
        await backfill(mixed, parsed(rounds[:half]))
        await stream_rounds(mixed, rounds[half:three_quarters])
        await backfill(mixed, parsed(rounds[half - 5:]), append=True)
        for ctx in (streamed, filled, mixed):
            await ctx.store.close()

    asyncio.run(body())
    a = dump(redis.Redis.from_url(redis_url))
    assert differences(a, dump(redis.Redis.from_url(other_db(redis_url, 1)))) == []
    assert differences(a, dump(redis.Redis.from_url(other_db(redis_url, 2)))) == []
    r = redis.Redis.from_url(other_db(redis_url, 2))
    assert r.hget(keys.ladder("beta"), "model") == b"trueskill" and r.hget(keys.ladder("alpha"), "model") == b"glicko"
    beta_mu = [float(r.hget(keys.player("beta", p), "mu") or "nan") for p in ("p001", "p002", "p010")]
    assert all(0.0 < mu < 50.0 for mu in beta_mu)  # TrueSkill's 25-point scale
    glicko_round = next(x["round_id"] for x in rounds[:half] if x["ladder"] == "alpha" and len(x["standings"]) > 1)
    changes = [json.loads(v) for v in r.hgetall(keys.round_results("alpha", glicko_round)).values()]
    assert changes and all(c["performance"] is None for c in changes)
    assert r.hget(keys.round_record("beta", "team1"), "status") == b"rated"


def test_backfill_refuses_team_rounds_the_ladders_model_cannot_rate(redis_url: str) -> None:
    """Teams on a glicko ladder: refused (exit 2 from the CLI), as the stream dead-letters them."""
    team = {"round_id": "tm", "ladder": "alpha", "occurred_at": harness.BASE_TIME,
            "standings": [{"team": "x", "rank": 1, "players": ["a", "c"]}, {"team": "y", "rank": 2, "players": ["b"]}]}

    async def body() -> None:
        ctx = context(redis_url, ladders=RATING_ONLY)
        with pytest.raises(BackfillRefused, match="round 'tm'.*team rounds"):
            await backfill(ctx, parsed([team]))
        await ctx.store.close()

    asyncio.run(body())


def test_backfill_of_team_rounds_writes_what_the_stream_writes(redis_url: str) -> None:
    """Rounds of teams and partial play beside individual ones: backfill rates them with Elo-MMR
    for teams and writes the stream's bytes (fan-outs and events with team and weight)."""
    rounds = history(seed=9, count=40)
    for k in range(0, 40, 3):
        names = [f"p{i:03d}" for i in range(k % 7, k % 7 + 6)]
        rounds.insert(k, {"round_id": f"team{k}", "ladder": "alpha", "occurred_at": harness.BASE_TIME + k * 600,
                          "standings": [{"team": "red", "players": names[:3], "rank": 1 + k % 2},
                                        {"team": "blue", "players": [names[3], {"player": names[4], "weight": 0.5}],
                                         "rank": 2 - k % 2},
                                        {"player": names[5], "rank": 3, "weight": 0.25}]})

    stream_state, backfill_state = stream_and_backfill(redis_url, rounds)
    assert '"team":"blue","weight":0.5' in repr(stream_state), "the team rounds' events carry team and weight"
    assert differences(stream_state, backfill_state) == []
