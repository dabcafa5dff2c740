"""Team rounds and partial play end to end on the real broker and Redis: a stream mixing rounds
of 2 teams of 5, free-for-alls of 10 squads of 3, partial play (a player's share of the match) and
individual rounds, over two ladders, two workers and 4 partitions; Redis equals ``stream replay``
(Elo-MMR for teams) within 1e-9, every event validates and carries the player's team and share
played, and bad team input is dead-lettered with its reason while the stream goes on."""

from __future__ import annotations

import base64
import json
import random
from pathlib import Path

import pytest

import pipeline_harness as harness
from stream import engine
from stream.contracts import RatingChange, validate

pytestmark = pytest.mark.integration

BAD = {  # standings -> the dead letter's reason
    "two-entries": ([{"team": "red", "players": ["p000", "p001"], "rank": 1},
                     {"team": "blue", "players": ["p001", "p002"], "rank": 2}], "duplicate_player"),
    "empty-team": ([{"team": "red", "players": [], "rank": 1},
                    {"team": "blue", "players": ["p002"], "rank": 2}], "empty_team"),
    "weight-zero": ([{"team": "red", "players": [{"player": "p000", "weight": 0}], "rank": 1},
                     {"team": "blue", "players": ["p002"], "rank": 2}], "bad_player_weight"),
    "weight-above-one": ([{"player": "p000", "rank": 1, "weight": 1.5}, {"player": "p002", "rank": 2}],
                         "bad_player_weight"),
}


def team_stream(seed: int, count: int, pool: int = 40) -> list[dict]:
    """Seeded rounds over a shared pool: 2x5 team matches, 10 squads of 3, individual rounds,
    partial play in all three (shares 1, 0.5, 0.25), two ladders."""
    rng = random.Random(seed)
    names = [f"p{i:03d}" for i in range(pool)]
    out = []
    for k in range(count):
        kind = k % 4
        shares = {p: rng.choice([1.0, 1.0, 1.0, 0.5, 0.25]) for p in names}

        def member(p: str) -> object:
            return p if shares[p] == 1.0 else {"player": p, "weight": shares[p]}

        if kind == 0:  # 2 teams of 5, sometimes a draw
            chosen = rng.sample(names, 10)
            ranks = rng.choice([[1, 2], [2, 1], [1, 1]]) if k else [1, 2]
            standings = [{"team": f"t{j}", "players": [member(p) for p in chosen[5 * j:5 * j + 5]], "rank": ranks[j]}
                         for j in range(2)]
        elif kind == 1:  # 10 squads of 3, ties between squads possible
            chosen = rng.sample(names, 30)
            ranks = sorted(rng.randint(1, 10) for _ in range(10))
            standings = [{"team": f"s{j}", "players": [member(p) for p in chosen[3 * j:3 * j + 3]], "rank": ranks[j]}
                         for j in range(10)]
        elif kind == 2:  # individuals with partial play
            chosen = rng.sample(names, rng.randint(2, 8))
            standings = [{"player": p, "rank": i + 1, **({} if shares[p] == 1.0 else {"weight": shares[p]})}
                         for i, p in enumerate(chosen)]
        else:  # plain individual round
            chosen = rng.sample(names, rng.randint(2, 8))
            standings = [{"player": p, "rank": i + 1} for i, p in enumerate(chosen)]
        out.append({"round_id": f"r{k:04d}", "ladder": rng.choice(["alpha", "beta"]),
                    "occurred_at": harness.BASE_TIME + k * harness.DAY_S / 4, "standings": standings})
    return out


def flat(round_: dict) -> dict[str, tuple[str | None, float]]:
    """Each player's (team, share played) as the round gives them."""
    out: dict[str, tuple[str | None, float]] = {}
    for entry in round_["standings"]:
        if "team" in entry:
            for m in entry["players"]:
                name, share = (m, 1.0) if isinstance(m, str) else (m["player"], m.get("weight", 1.0))
                out[name] = (entry["team"], share)
        else:
            out[entry["player"]] = (None, entry.get("weight", 1.0))
    return out


def has_outcome(round_: dict) -> bool:
    """Not every entry tied (a 2x5 draw is outcome-free: recorded, rates nobody)."""
    return len({e["rank"] for e in round_["standings"]}) > 1


def test_team_rounds_through_the_stream_equal_replay(local_stack, stack_redis_url: str, fresh_prefix: str,
                                                     tmp_path: Path) -> None:
    rounds = team_stream(seed=11, count=160)
    bad = [{"round_id": f"bad-{name}", "ladder": "alpha", "occurred_at": harness.BASE_TIME, "standings": standings}
           for name, (standings, _) in BAD.items()]
    stream_ = list(rounds)
    for i, letter in enumerate(bad):  # bad rounds in the middle of the stream
        stream_.insert(20 + 30 * i, letter)
    env = harness.worker_env(local_stack.bootstrap, stack_redis_url, fresh_prefix, partitions=4)
    from stream.pipeline.topics import ensure
    from stream.settings import Settings
    ensure(Settings.from_env(env))
    workers = [harness.Worker(env, tmp_path / f"worker{i}.log").start() for i in range(2)]
    try:
        harness.publish(local_stack.bootstrap, f"{fresh_prefix}rounds", stream_)
        harness.wait_drained(stack_redis_url, harness.expected_rounds(rounds), workers)
        participations = sum(len(flat(r)) for r in rounds if has_outcome(r))
        events = harness.consume_all(local_stack.bootstrap, f"{fresh_prefix}rating-changes", at_least=participations)
        letters = harness.consume_all(local_stack.bootstrap, f"{fresh_prefix}rounds-dlq", at_least=len(bad))
    finally:
        harness.stop_workers(workers)
    harness.assert_equals_reference(stack_redis_url, harness.reference(rounds, engine.preset("mmr")))

    by_id = harness.events_by_id(events)  # validated against rating-change v5
    assert all(len(contents) == 1 for contents in by_id.values())
    rated = [r for r in rounds if has_outcome(r)]
    assert len(rated) < len(rounds), "a drawn 2x5 round (no outcome) is in the stream"
    given = {(r["ladder"], r["round_id"]): flat(r) for r in rated}
    teamed = {key for key, r in zip(given, rated) if any("team" in e or "weight" in e for e in r["standings"])}
    assert set(by_id) == {f"{ladder}/{rid}/{p}" for (ladder, rid), players in given.items() for p in players}
    carried = 0
    for contents in by_id.values():
        change = RatingChange.from_json(next(iter(contents)))
        key = (change.ladder, change.round_id)
        if key in teamed:
            assert (change.team, change.weight) == given[key][change.player]
            carried += 1
        else:
            assert change.team is None and change.weight is None
    assert carried == sum(len(given[key]) for key in teamed) and carried > 1000

    reasons = {}
    for _, value in letters:
        validate("dead-letter", value)
        letter = json.loads(value)
        reasons[json.loads(base64.b64decode(letter["original"]))["round_id"]] = letter["reason"]
    assert reasons == {f"bad-{name}": reason for name, (_, reason) in BAD.items()}
