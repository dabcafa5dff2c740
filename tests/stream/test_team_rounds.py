"""Rounds with teams and partial play through the pipeline's handlers (phase one batched and one
by one, phase two), without Kafka, against the session's private redis-server: Redis equals
``stream replay`` (Elo-MMR for teams, ``stream.engine.teams``) within 1e-9, whatever the batching;
every fan-out section and RatingChange carries each player's team and share played and validates
against its schema; a plain round's events stay v3 events (no team, no weight)."""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Sequence

import fastjsonschema
from hypothesis import given, settings
from hypothesis import strategies as st

from stream.contracts import PlayerUpdate, RatingChange, RoundResult, Standing, validate
from stream.contracts.schemas import schema_path
from stream.pipeline.context import PipelineContext
from stream.pipeline.phase_one import handle_one, handle_rounds
from stream.pipeline.phase_two import handle_updates
from stream.pipeline.messages import Incoming, split_sections
from tests.contracts.wire_oracle import reference_json

from test_phase_one_batch import apply, assert_equals_replay, context, incoming, players_of, stored_states

BASE = 1.7e9
DAY = 86_400.0


def team_round(round_id: str, ladder: str, teams: Sequence[Sequence[str]], ranks: Sequence[int], day: float,
               weights: dict[str, float] | None = None, weight: float = 1.0) -> RoundResult:
    """A round of teams ``teams[k]`` ranked ``ranks[k]``; ``weights``: shares played (default 1)."""
    shares = weights or {}
    return RoundResult(round_id=round_id, ladder=ladder, occurred_at=BASE + DAY * day, weight=weight,
                       standings=[Standing(p, rank, f"t{k}", shares.get(p, 1.0))
                                  for k, (members, rank) in enumerate(zip(teams, ranks)) for p in members])


def solo_round(round_id: str, ladder: str, players: Sequence[str], day: float,
               weights: dict[str, float] | None = None) -> RoundResult:
    shares = weights or {}
    return RoundResult(round_id=round_id, ladder=ladder, occurred_at=BASE + DAY * day,
                       standings=[Standing(p, i + 1, None, shares.get(p, 1.0)) for i, p in enumerate(players)])


def mixed_stream(seed: int, count: int, pool: int = 24, ladders: Sequence[str] = ("A", "B")) -> list[RoundResult]:
    """Seeded rounds over a shared pool: 2 teams of 5, 10 squads of 3 (when the pool allows),
    individual rounds, individual rounds with partial play, teams with partial play and ties,
    a team beside individuals."""
    rng = random.Random(seed)
    names = [f"p{i}" for i in range(pool)]
    out: list[RoundResult] = []
    for k in range(count):
        kind = rng.randrange(6)
        ladder = rng.choice(list(ladders))
        rid = f"m{k}"
        shares = {p: rng.choice([1.0, 1.0, 0.5, 0.25, 1e-3]) for p in names}
        if kind == 0 and pool >= 10:
            chosen = rng.sample(names, 10)
            out.append(team_round(rid, ladder, [chosen[:5], chosen[5:]], rng.choice([[1, 2], [2, 1], [1, 1]]) if k else
                                  [1, 2], k * 0.3, shares))
        elif kind == 1 and pool >= 30:
            chosen = rng.sample(names, 30)
            out.append(team_round(rid, ladder, [chosen[3 * j:3 * j + 3] for j in range(10)],
                                  sorted(rng.randint(1, 10) for _ in range(10)), k * 0.3, shares))
        elif kind == 2:
            out.append(solo_round(rid, ladder, rng.sample(names, rng.randint(2, 6)), k * 0.3))
        elif kind == 3:
            out.append(solo_round(rid, ladder, rng.sample(names, rng.randint(2, 6)), k * 0.3, shares))
        elif kind == 4:
            chosen = rng.sample(names, 6)
            out.append(team_round(rid, ladder, [chosen[:3], chosen[3:5], chosen[5:]], [2, 1, 2], k * 0.3, shares))
        else:
            chosen = rng.sample(names, 5)
            team = team_round(rid, ladder, [chosen[:3]], [2], k * 0.3, shares)
            out.append(RoundResult(round_id=rid, ladder=ladder, occurred_at=team.occurred_at,
                                   standings=[*team.standings, Standing(chosen[3], 1), Standing(chosen[4], 3, None, 0.5)]))
    if not any(r.has_teams() for r in out[:1]):
        out[0] = team_round("m0", ladders[0], [names[:5], names[5:10]], [1, 2], 0.0)
    return [r for r in out if not r.is_outcome_free(draws_rate=False)]


def check_sections(messages: Sequence[bytes], rounds: dict[tuple[str, str], RoundResult]) -> None:
    """Every section validates (PlayerUpdate v2) and names each player's team and share played
    exactly for a round with teams or partial play, nothing for a plain round (a v1 entry)."""
    for value in messages:
        for section in split_sections(value):
            validate("player-update", section)
            update = PlayerUpdate.from_json(section)
            round_ = rounds[(update.ladder, update.round_id)]
            given_ = {s.player: s for s in round_.standings}
            if not (round_.has_teams() or round_.is_partial()):
                assert update.weights is None and update.teams is None
                assert b'"weight":' not in section.split(b'"entries":', 1)[1]
                continue
            assert update.weights == [given_[p].weight for p in update.players]
            assert (update.teams or [None] * len(update.players)) == [given_[p].team for p in update.players]
            assert update.to_json().encode() == section == reference_json(update)


def check_events(values: Sequence[bytes], rounds: dict[tuple[str, str], RoundResult]) -> int:
    """Every RatingChange validates (v3); a team or partial-play round's carry ``team`` and
    ``weight`` as given, a plain round's neither (and validate against v3). Returns how many."""
    old = fastjsonschema.compile(json.loads(schema_path("rating-change", "v3").read_text()))
    for value in values:
        validate("rating-change", value)
        change = RatingChange.from_json(value)
        assert change.to_json().encode() == value == reference_json(change)
        round_ = rounds[(change.ladder, change.round_id)]
        standing = next(s for s in round_.standings if s.player == change.player)
        if round_.has_teams() or round_.is_partial():
            data = json.loads(value)
            assert data["team"] == standing.team and data["weight"] == standing.weight
        else:
            assert change.team is None and change.weight is None
            assert b'"team"' not in value and b'"weight"' not in value
            data = json.loads(value)
            assert isinstance(data.pop("provisional"), bool)  # v5's one addition, on every event
            old(data)  # otherwise a plain round's event is a v3 event
    return len(values)


def run_batches(redis_url: str, rounds: Sequence[RoundResult], cuts: Sequence[int]) -> dict[tuple[str, str], tuple[float, float]]:
    by_key = {(r.ladder, r.round_id): r for r in rounds}

    async def body() -> dict[tuple[str, str], tuple[float, float]]:
        ctx = context(redis_url)
        start, events = 0, 0
        for size in cuts:
            part = rounds[start:start + size]
            batch = await handle_rounds(ctx, incoming(part))
            assert [r.outcome for r in batch.results if r] == ["rated"] * len(part)
            check_sections([m.value for m in batch.messages], by_key)
            sent = await apply(ctx, batch)
            events += check_events([o.value for o in sent if o.topic == "rating-changes"], by_key)
            start += size
        assert events == sum(r.field_size for r in rounds)
        got = await stored_states(ctx, players_of(rounds))
        await ctx.store.close()
        return got

    return asyncio.run(body())


def test_mixed_team_and_individual_batches_equal_replay(redis_url: str) -> None:
    """80 rounds (2x5, 10 squads of 3, partial play, teams beside individuals, individuals) over
    a pool of 36 in batches of 64: team rounds rated alone in their place in the batch, the
    chain of posteriors intact; Redis equals replay within 1e-9."""
    rounds = mixed_stream(seed=3, count=80, pool=36)
    assert any(len(set(r.entries()[0].tolist())) == 10 for r in rounds), "a 10-squad round"
    assert any(r.is_partial() and not r.has_teams() for r in rounds)
    assert_equals_replay(rounds, run_batches(redis_url, rounds, [64, 16]))


@settings(max_examples=10, deadline=None)
@given(st.integers(0, 10_000), st.lists(st.integers(1, 12), min_size=1, max_size=5))
def test_any_batching_of_team_rounds_equals_replay(redis_server, seed: int, cuts: list[int]) -> None:  # type: ignore[no-untyped-def]
    """Property: however a stream of team, partial-play and individual rounds over a small pool
    (a player in many rounds of one batch) is cut into batches, Redis ends as replay."""
    import redis

    client = redis.Redis.from_url(redis_server.url)
    client.flushall()
    client.close()
    rounds = mixed_stream(seed, sum(cuts), pool=12)
    cuts[-1] += len(rounds) - sum(cuts)  # outcome-free rounds were left out
    cuts = [c for c in cuts if c > 0] or [len(rounds)]
    assert_equals_replay(rounds, run_batches(redis_server.url, rounds, cuts))


def test_one_by_one_path_rates_team_rounds_as_replay(redis_url: str) -> None:
    """``handle_one`` (the fallback, a batch of one) rates a round of teams with partial play as the batch path."""
    rounds = mixed_stream(seed=5, count=20, pool=12)
    by_key = {(r.ladder, r.round_id): r for r in rounds}

    async def body() -> dict[tuple[str, str], tuple[float, float]]:
        ctx = context(redis_url)
        for r in rounds:
            result = await handle_one(ctx, Incoming(r.to_json().encode()))
            assert result.outcome == "rated"
            check_sections([m.value for m in result.updates], by_key)
            await handle_updates(ctx, [m.value for m in result.updates])
        got = await stored_states(ctx, players_of(rounds))
        await ctx.store.close()
        return got

    assert_equals_replay(rounds, asyncio.run(body()))


def test_round_api_shows_teams_and_shares(redis_url: str) -> None:
    """The read API's round page (what the dashboard's round view shows) gives every player's
    team and share of the match played for a team round, and neither for a plain round."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "api"))
    from apiclient import with_client
    from test_openapi import check

    teams = team_round("tr", "A", [["a", "b"], ["c", "d"]], [1, 2], 0.0, {"b": 0.5})
    plain = solo_round("pr", "A", ["e", "f"], 0.0)
    run_batches(redis_url, [teams, plain], [2])

    async def body(client):  # type: ignore[no-untyped-def]
        return [await (await client.get(f"/api/ladders/A/rounds/{rid}")).json() for rid in ("tr", "pr")]

    team_page, plain_page = with_client(redis_url, body)
    for page in (team_page, plain_page):
        check("/api/ladders/{ladder}/rounds/{round_id}", "get", 200, page)  # the OpenAPI document's Round
    shown = {c["player"]: (c["team"], c["weight"], c["rank"]) for c in team_page["results"]}
    assert shown == {"a": ("t0", 1.0, 1), "b": ("t0", 0.5, 1), "c": ("t1", 1.0, 2), "d": ("t1", 1.0, 2)}
    assert all("team" not in c and "weight" not in c for c in plain_page["results"])
