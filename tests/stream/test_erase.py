"""``stream erase``: the player's keys and leaderboard entry go, his id is nowhere in Redis any more,
nobody else's state changes, and a re-rate from the stored rounds (pseudonym in his place) gives
every other player the rating he has."""

from __future__ import annotations

import json

import pytest
import redis
from typer.testing import CliRunner

from stream.batch.replay import replay
from stream.cli.main import app
from stream.contracts import PlayerUpdate, RoundResult, Standing
from stream.store import keys
from stream.store.erase import pseudonym
from tests.stream import pipeline_harness as harness
from tests.stream.redis_dump import dump
from tests.stream.test_backfill import context
from tests.stream.test_snapshot import stream
from tests.engine.oracles import final_state

SECRET = "test-secret"
VICTIM = "p003"


def rounds_from_fanouts(client: redis.Redis, ladder: str) -> list[RoundResult]:
    """The ladder's rounds as stored (standings from the fan-outs), in sequence order."""
    out = []
    for round_id in client.zrange(keys.rounds(ladder), 0, -1):
        updates = [PlayerUpdate.from_json(v) for v in client.hgetall(keys.round_perf(ladder, round_id.decode())).values()]
        if not updates:
            continue
        standings = [Standing(p, r) for u in updates for p, r in zip(u.players, u.ranks)]
        out.append(RoundResult(round_id=round_id.decode(), ladder=ladder, occurred_at=updates[0].occurred_at,
                               standings=standings, weight=updates[0].weight))
    return out


def test_erase_removes_the_player_and_keeps_everyone_else(redis_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    rounds = [dict(r, ladder="cup") for r in harness.synthetic_rounds(seed=4, count=50, ladders=("cup",), pool=10, max_size=6)]
    assert sum(VICTIM in json.dumps(r) for r in rounds) > 10
    stream(redis_url, rounds)
    client = redis.Redis.from_url(redis_url)
    before = dump(client)
    players_before = int(client.hget(keys.ladder("cup"), "players"))

    monkeypatch.setenv("REDIS_URL", redis_url)
    runner = CliRunner()
    assert runner.invoke(app, ["erase", "cup", VICTIM]).exit_code == 2  # no ERASURE_SECRET
    monkeypatch.setenv("ERASURE_SECRET", SECRET)
    result = runner.invoke(app, ["erase", "cup", VICTIM, "--json"])
    assert result.exit_code == 0, result.output
    alias = json.loads(result.stdout)["pseudonym"]
    assert alias == pseudonym(SECRET, "cup", VICTIM)
    played = sum(VICTIM in {s["player"] for s in r["standings"]} for r in rounds)
    assert json.loads(result.stdout)["rounds"] == played

    after = dump(client)
    assert VICTIM.encode() not in repr(after).encode(), "the erased id is still stored somewhere"
    assert not client.exists(keys.player("cup", VICTIM), keys.history("cup", VICTIM))
    assert client.zscore(keys.leaderboard("cup"), VICTIM) is None
    assert int(client.hget(keys.ladder("cup"), "players")) == players_before - 1
    assert client.hexists(keys.erased("cup"), alias)
    # nobody else's keys changed
    others = [k for k in before if b"{cup|" in k and VICTIM.encode() not in k]
    assert others and all(before[k] == after[k] for k in others)
    # his results are kept under the pseudonym (rank, performance, ratings unchanged)
    for r in rounds:
        if VICTIM in {s["player"] for s in r["standings"]}:
            old = json.loads(before[keys.round_results("cup", r["round_id"]).encode()][VICTIM.encode()])
            new = json.loads(client.hget(keys.round_results("cup", r["round_id"]), alias))
            assert new.pop("player") == alias and new.pop("event_id") == f"cup/{r['round_id']}/{alias}"
            assert {k: v for k, v in old.items() if k not in ("player", "event_id")} == new

    # a re-rate of the stored rounds gives everyone else exactly the rating they have
    rerated = replay(rounds_from_fanouts(client, "cup"), context(redis_url).ladders.fallback.elo_mmr, keep_rounds=False)
    stored = {k: v for k, v in harness.reference(rounds, context(redis_url).ladders.fallback.elo_mmr).items() if k[1] != VICTIM}
    for (ladder, player), state in stored.items():
        again = final_state(rerated, ladder, player)
        assert abs(again.mu - state.mu) <= 1e-9 and abs(again.sigma - state.sigma) <= 1e-9, player
    assert final_state(rerated, "cup", alias).rounds == played

    again = runner.invoke(app, ["erase", "cup", VICTIM])
    assert again.exit_code == 2 and "no player" in again.output
    assert runner.invoke(app, ["erase", "nope", VICTIM]).exit_code == 2


def test_the_stream_goes_on_after_an_erasure(redis_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Later rounds rate the erased id as a newcomer; the others continue from their states."""
    rounds = [dict(r, ladder="cup") for r in harness.synthetic_rounds(seed=6, count=40, ladders=("cup",), pool=10, max_size=6)]
    stream(redis_url, rounds[:20])
    monkeypatch.setenv("REDIS_URL", redis_url)
    monkeypatch.setenv("ERASURE_SECRET", SECRET)
    assert CliRunner().invoke(app, ["erase", "cup", VICTIM]).exit_code == 0
    stream(redis_url, rounds[20:])
    client = redis.Redis.from_url(redis_url)
    played_later = sum(VICTIM in {s["player"] for s in r["standings"]} for r in rounds[20:])
    assert int(client.hget(keys.player("cup", VICTIM), "rounds")) == played_later
