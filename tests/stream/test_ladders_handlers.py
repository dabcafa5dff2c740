"""Per-ladder models through the pipeline's handlers (no Kafka, the session's private
redis-server): LADDERS gives each ladder its model; phase one and phase two of batches mixing
ladders of Elo-MMR presets and rating-only models leave Redis equal to ``replay_ladders`` (what
``stream replay --ladders`` writes); a ladder's model is fixed once it has rated a round."""

from __future__ import annotations

import asyncio
import json
import logging
import random
from collections.abc import Sequence

import pytest

from stream.batch.models import replay_ladders
from stream.contracts import PlayerUpdate, RoundResult, Standing, validate
from stream.contracts.round import MODEL_CHANGED
from stream.engine.display import league_division
from stream.engine.ladders import parse_ladders
from tests.engine.oracles import state_from_bytes
from stream.pipeline.context import PipelineContext
from stream.pipeline.messages import Incoming, split_sections
from stream.pipeline.outbox import ListOutbox, Outbox
from stream.pipeline.phase_one import BatchResult, handle_one, handle_rounds
from stream.store import keys
from stream.settings import Settings
from test_phase_one_batch import apply
from tests.store_calls import register_round, stored_player

PARTITIONS = 4
TOLERANCE = 1e-9
LADDERS = json.dumps({"a": {"model": "mmr", "params": {"weight_limit": 0.31, "sig_limit": 60.0}}, "b": {"model": "glicko"}, "c": {"model": "trueskill"},
                      "t": {"model": "topcoder", "params": {"weight_noob": 0.5}},
                      "*": {"model": "mmr-bounded", "display": {
                          "k": 0.0, "divisions": 2, "tiers": [["Low", None], ["Mid", 1450.0], ["High", 1550.0], ["Top", 1700.0]]}}})


def context(redis_url: str, ladders: str = LADDERS, outbox: Outbox | None = None, **extra: object) -> PipelineContext:
    return PipelineContext.from_settings(Settings(redis_url=redis_url, partitions=PARTITIONS, barrier_poll_s=0.001,
                                                  barrier_max_poll_s=0.005, ladders=ladders, **extra),  # type: ignore[arg-type]
                                         outbox=outbox)


def mixed_rounds(seed: int, count: int, ladders: Sequence[str] = ("a", "b", "c", "t", "d")) -> list[RoundResult]:
    """Small rounds with ties over a pool shared by every ladder (the same ids in each ladder)."""
    rng = random.Random(seed)
    names = [f"p{i}" for i in range(9)]
    out = []
    for k in range(count):
        size = rng.randint(2, 5)
        ranks = sorted(rng.randint(1, size) for _ in range(size))
        if len(set(ranks)) == 1:
            ranks[-1] += 1
        out.append(RoundResult(round_id=f"g{k}", ladder=rng.choice(list(ladders)), occurred_at=1.7e9 + 30_000.0 * k,
                               standings=[Standing(p, r) for p, r in zip(rng.sample(names, size), ranks)]))
    return out


async def stored(ctx: PipelineContext, rounds: Sequence[RoundResult]) -> dict[tuple[str, str], tuple[float, float, int, bytes]]:
    out = {}
    for ladder, player in sorted({(r.ladder, p) for r in rounds for p in r.players()}):
        row = await stored_player(ctx.store, ladder, player)
        out[(ladder, player)] = (float(row["mu"]), float(row["sigma"]), int(row["rounds"]), row["state"])
    return out


def assert_equals_replay(ctx: PipelineContext, rounds: Sequence[RoundResult],
                         got: dict[tuple[str, str], tuple[float, float, int, bytes]]) -> None:
    reference = {(ladder, player): (mu, sigma, n)
                 for ladder, player, mu, sigma, n in replay_ladders(rounds, ctx.ladders).ratings()}
    assert set(got) == set(reference)
    for key, (mu, sigma, n, state) in got.items():
        want = reference[key]
        assert abs(mu - want[0]) <= TOLERANCE and abs(sigma - want[1]) <= TOLERANCE and n == want[2], (key, mu, want)
        packed = state_from_bytes(state)
        assert (packed.mu, packed.sigma, packed.rounds) == (mu, sigma, n)  # the state holds the same rating


def test_batches_mixing_ladder_models_equal_replay_ladders(redis_url: str) -> None:
    """90 rounds over five ladders (mmr, glicko, trueskill, topcoder with a parameter, the "*"
    fallback) in batches of 16: each ladder rated by its own model, a later round of a batch from
    the ratings the earlier ones left; rating-only rounds' fan-out carries the new rating and
    their events validate (glicko/trueskill: performance null; topcoder: its performance)."""
    rounds = mixed_rounds(seed=3, count=90)

    async def body() -> None:
        ctx = context(redis_url)
        events = []
        for lo in range(0, len(rounds), 16):
            batch = await handle_rounds(ctx, [Incoming(r.to_json().encode()) for r in rounds[lo:lo + 16]])
            assert all(result is not None and result.outcome == "rated" for result in batch.results)
            for message in batch.messages:
                for section in split_sections(message.value):
                    validate("player-update", section)
                    update = PlayerUpdate.from_json(section)
                    modelled = ctx.ladder(update.ladder).rating_model is not None
                    assert (update.mu_after is not None) == modelled
            events += [json.loads(e.value) for e in await apply(ctx, batch) if e.topic == "rating-changes"]
        got = await stored(ctx, rounds)
        assert_equals_replay(ctx, rounds, got)
        # each ladder had its own parameters: the "*" preset's replay of ladder "a" differs
        fallback = {(ladder, p): mu for ladder, p, mu, _, _ in replay_ladders(rounds, parse_ladders("")).ratings()}
        assert max(abs(got[key][0] - fallback[key]) for key in got if key[0] == "a") > 1.0
        assert len(events) == sum(r.field_size for r in rounds)
        for event in events:
            validate("rating-change", event)
            model = ctx.ladder(event["ladder"]).model
            assert (event["performance"] is None) == (model in ("glicko", "trueskill")), event
        for event in events:  # RatingChange v3: the league and division of the tier
            assert (event["league"], event["division"]) == league_division(event["tier"], ctx.display(event["ladder"]))
        assert any(e["division"] is not None for e in events if e["ladder"] == "d")
        trueskill = [e for e in events if e["ladder"] == "c"]
        assert trueskill and all(e["mu_before"] != 1500.0 for e in trueskill)  # the model's own prior (25)

    asyncio.run(body())


def test_one_by_one_path_equals_replay_ladders(redis_url: str) -> None:
    """``handle_one`` (a batch of one: the fallback when a batch keeps raising) rates a rating-only ladder's
    round the same way: Redis equals the replay."""
    rounds = mixed_rounds(seed=4, count=24, ladders=("b", "c", "a"))

    async def body() -> None:
        ctx = context(redis_url)
        for round_ in rounds:
            result = await handle_one(ctx, Incoming(round_.to_json().encode()))
            assert result.outcome == "rated"
            await apply(ctx, BatchResult([result], result.updates))
        assert_equals_replay(ctx, rounds, await stored(ctx, rounds))

    asyncio.run(body())


def test_a_ladders_model_is_fixed_once_it_rated_a_round(redis_url: str, caplog: pytest.LogCaptureFixture) -> None:
    """LADDERS changed under a ladder that has rated rounds: its new rounds are dead-lettered
    ``model_changed`` (the message says it is a re-rate), logged once; its old rounds stay
    duplicates; other ladders are rated; restoring the model rates again."""
    first = RoundResult(round_id="r1", ladder="b", occurred_at=1.7e9, standings=[Standing("x", 1), Standing("y", 2)])
    later = [RoundResult(round_id=f"r{k}", ladder="b", occurred_at=1.7e9 + k, standings=[Standing("x", 2), Standing("y", 1)])
             for k in (2, 3)]
    other = RoundResult(round_id="o1", ladder="fresh", occurred_at=1.7e9, standings=[Standing("x", 1), Standing("y", 2)])

    async def body() -> None:
        ctx = context(redis_url)
        batch = await handle_rounds(ctx, [Incoming(first.to_json().encode())])
        await apply(ctx, batch)
        ladder = await ctx.store.client.hgetall(keys.ladder("b"))
        assert ladder[b"model"] == b"glicko" and ladder[b"model_params"] == ctx.ladder("b").digest.encode()

        changed = context(redis_url, ladders=json.dumps({"b": {"model": "mmr"}}))
        with caplog.at_level(logging.ERROR, logger="stream.pipeline.phase_one"):
            batch = await handle_rounds(changed, [Incoming(r.to_json().encode()) for r in [first, later[0], other]])
            one = await handle_one(changed, Incoming(later[1].to_json().encode()))
        results = batch.results
        assert results[0] is not None and results[0].outcome == "duplicate"
        for result in (results[1], one):
            assert result is not None and result.outcome == "rejected" and result.dead_letter is not None
            assert result.dead_letter.reason == MODEL_CHANGED and result.dead_letter.field == "ladder"
            assert "'glicko'" in result.dead_letter.message and "'mmr'" in result.dead_letter.message
            assert "re-rate" in result.dead_letter.message
            validate("dead-letter", result.dead_letter.to_json())
        assert results[2] is not None and results[2].outcome == "rated"
        assert len([r for r in caplog.records if "re-rate" in r.getMessage()]) == 1
        assert await ctx.store.round_record("b", "r2") == {}  # nothing registered

        batch = await handle_rounds(ctx, [Incoming(later[0].to_json().encode())])  # glicko again: rated
        assert batch.results[0] is not None and batch.results[0].outcome == "rated"

    asyncio.run(body())


def team_rounds(seed: int, count: int, ladder: str) -> list[RoundResult]:
    """Team rounds (two or three teams of 1-3, some partial play, sometimes an individual entry)."""
    rng = random.Random(seed)
    names = [f"p{i}" for i in range(10)]
    out = []
    for k in range(count):
        chosen = rng.sample(names, rng.randint(4, 8))
        teams = rng.randint(2, 3)
        standings = []
        for i, player in enumerate(chosen):
            team = i % teams
            individual = team == 2 and rng.random() < 0.5
            standings.append(Standing(player, rank=team + 1, team=None if individual else f"t{team}",
                                      weight=rng.choice([1.0, 1.0, 0.5])))
        if len({s.team for s in standings if s.team is not None}) + sum(s.team is None for s in standings) < 2:
            continue
        out.append(RoundResult(round_id=f"{ladder}{k}", ladder=ladder, occurred_at=1.7e9 + 1000.0 * k,
                               standings=standings))
    return out


def test_trueskill_ladders_rate_team_rounds_through_the_stream(redis_url: str) -> None:
    """On a trueskill ladder, rounds of teams (with partial play, with individuals) are rated in
    phase one by TrueSkill's team call, in batches, and Redis equals the replay; the same team
    round on a glicko ladder (a model without a team call) is ``teams_unsupported`` (an Elo-MMR
    ladder rates it: tests/stream/test_team_rounds.py)."""
    rounds = team_rounds(seed=5, count=30, ladder="c") + mixed_rounds(seed=6, count=10, ladders=("c", "a"))

    async def body() -> None:
        ctx = context(redis_url)
        for lo in range(0, len(rounds), 8):
            batch = await handle_rounds(ctx, [Incoming(r.to_json().encode()) for r in rounds[lo:lo + 8]])
            assert all(result is not None and result.outcome == "rated" for result in batch.results), batch.results
            await apply(ctx, batch)
        assert_equals_replay(ctx, rounds, await stored(ctx, rounds))
        elsewhere = RoundResult(round_id="x", ladder="b", occurred_at=1.8e9, standings=rounds[0].standings)
        batch = await handle_rounds(ctx, [Incoming(elsewhere.to_json().encode())])
        result = batch.results[0]
        assert result is not None and result.dead_letter is not None and result.dead_letter.reason == "teams_unsupported"

    asyncio.run(body())


def test_backfill_refuses_what_it_cannot_rate(redis_url: str, tmp_path) -> None:
    """Backfill refuses team rounds on a ladder whose model has no team call and a ladder whose
    recorded model is not the configured one, and records the model of the ladders it writes
    (rating-only ladders: tests/stream/test_backfill.py; their corrections:
    tests/stream/test_corrections_models.py)."""
    from stream.pipeline.backfill import BackfillRefused, backfill

    first = RoundResult(round_id="r1", ladder="b", occurred_at=1.7e9, standings=[Standing("x", 1), Standing("y", 2)])

    async def body() -> None:
        ctx = context(redis_url)
        await apply(ctx, await handle_rounds(ctx, [Incoming(first.to_json().encode())]))

        with pytest.raises(BackfillRefused, match="model 'glicko' of ladder 'b' does not rate team rounds"):
            await backfill(ctx, [RoundResult(round_id="n1", ladder="b", occurred_at=1.8e9,
                                             standings=[Standing("x", 1, team="t"), Standing("y", 2, team="u")])],
                           append=True)
        as_mmr = context(redis_url, ladders=json.dumps({"b": {"model": "mmr"}}))
        with pytest.raises(BackfillRefused, match="re-rate"):
            await backfill(as_mmr, [RoundResult(round_id="r2", ladder="b", occurred_at=1.8e9,
                                                standings=[Standing("x", 1), Standing("y", 2)])], append=True)
        summary = await backfill(ctx, [RoundResult(round_id="n1", ladder="fresh", occurred_at=1.7e9,
                                                   standings=[Standing("x", 1), Standing("y", 2)])])
        assert summary.rated == 1
        assert await ctx.store.client.hget(keys.ladder("fresh"), "model") == b"mmr-bounded"

    asyncio.run(body())


def test_replay_ladders_option_errors(tmp_path) -> None:
    """``stream replay --ladders``: a bad configuration or a clashing option is exit 2, naming it."""
    from typer.testing import CliRunner

    from stream.cli.main import app

    source = tmp_path / "rounds.jsonl"
    source.write_text(mixed_rounds(seed=1, count=1)[0].to_json() + "\n")
    runner = CliRunner()
    out = str(tmp_path / "out.csv")
    result = runner.invoke(app, ["replay", str(source), "--output", out, "--ladders", '{"b": {"model": "glikco"}}'])
    assert result.exit_code == 2 and "LADDERS['b']: unknown model 'glikco'" in result.output
    result = runner.invoke(app, ["replay", str(source), "--output", out, "--ladders", '{}', "--model", "glicko"])
    assert result.exit_code == 2 and "--ladders" in result.output
    result = runner.invoke(app, ["replay", str(source), "--output", out, "--ladders", str(tmp_path / "missing.json")])
    assert result.exit_code == 2 and "cannot read" in result.output
    config = tmp_path / "ladders.json"
    config.write_text(json.dumps({"*": {"model": "bar"}}))
    result = runner.invoke(app, ["replay", str(source), "--output", out, "--ladders", str(config), "--json"])
    assert result.exit_code == 0, result.output
    assert set(json.loads(result.output.strip().splitlines()[-1])["ladders"].values()) == {"bar"}


def test_a_round_left_registered_across_a_model_change_is_set_aside(redis_url: str) -> None:
    """A round registered under the ladder's recorded model whose phase one never finished, then
    completed (sweeper, or the ladder's next round) by a worker configured with another model:
    failed and dead-lettered ``model_changed``, not rated with the wrong model."""
    from test_phase_one_batch import complete_as_sweeper

    round_ = RoundResult(round_id="r1", ladder="b", occurred_at=1.7e9, standings=[Standing("x", 1), Standing("y", 2)])

    async def body() -> None:
        ctx = context(redis_url)
        cfg = ctx.ladder("b")
        registration = await register_round(ctx.store, 
            "b", "r1", content_hash=round_.content_hash(), occurred_at=round_.occurred_at, received_at=1.7e9,
            field_size=2, body=round_.to_json().encode(), due_at=1.7e9, model=cfg.model,
            model_params=cfg.digest)
        assert registration.outcome == "new"
        outbox = ListOutbox(PARTITIONS)
        changed = context(redis_url, ladders=json.dumps({"b": {"model": "mmr"}}), outbox=outbox)
        assert await complete_as_sweeper(changed, "b", "r1") == []
        assert (await ctx.store.round_record("b", "r1"))["status"] == "failed"
        assert [letter.reason for letter in outbox.rejected] == [MODEL_CHANGED]
        assert await stored_player(ctx.store, "b", "x") == {}  # nobody rated
        # the unchanged configuration would have completed it
        again = RoundResult(round_id="r2", ladder="b", occurred_at=1.7e9, standings=round_.standings)
        batch = await handle_rounds(ctx, [Incoming(again.to_json().encode())])
        assert batch.results[0] is not None and batch.results[0].outcome == "rated"

    asyncio.run(body())
