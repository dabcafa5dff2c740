"""What-if through the real pipeline: ask the API what a round would do, publish the round to the
real broker, let the worker rate it, and compare: every player's performance, mu/sigma after,
display rating and tier equal what the stream wrote within 1e-9 (plain rounds with ties and
newcomers, team rounds with partial play, a rating-only model's ladder), and the what-if wrote
nothing."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import quote
from typing import Any

import pytest
import redis

import pipeline_harness as harness
from stream.settings import Settings
from whatif_data import settled_snapshot, snapshot
from stream.store import keys

pytestmark = pytest.mark.integration

LADDERS = json.dumps({"alpha": {"model": "mmr"}, "gl": {"model": "glicko"},
                      "*": {"model": "mmr", "display": {"mode": "conservative", "k": 1.0}}})


def history(ladder: str, count: int, start: int = 0, pool: int = 30) -> list[dict]:
    rounds = harness.synthetic_rounds(seed=7 + start, count=count, ladders=(ladder,), pool=pool, max_size=10)
    for k, r in enumerate(rounds):
        r["round_id"] = f"{ladder}-h{start + k}"
        r["occurred_at"] = harness.BASE_TIME + (start + k) * harness.DAY_S / 3
    return rounds


def ask(url: str, ladder: str, body: dict | None, explain: list[tuple[str, str]] = ()) -> Any:
    """The API's what-if answer (the app served on a real socket over the stack's Redis), or with
    ``explain`` the explanations of those (player, round) changes."""
    import asyncio

    import redis.asyncio as aioredis
    from aiohttp.test_utils import TestClient, TestServer

    from stream.api.app import create_app

    async def go() -> dict[str, Any]:
        r = aioredis.Redis.from_url(url)
        client = TestClient(TestServer(create_app(r, Settings(redis_url=url, ladders=LADDERS, engine_preset="mmr"))))
        await client.start_server()
        try:
            if explain:
                out = []
                for player, round_id in explain:
                    resp = await client.get(f"/api/ladders/{ladder}/players/{quote(player, safe='')}/changes/"
                                            f"{round_id}/explain")
                    assert resp.status == 200, await resp.text()
                    out.append(await resp.json())
                return out
            resp = await client.post(f"/api/ladders/{ladder}/what-if", data=json.dumps(body))
            assert resp.status == 200, await resp.text()
            return await resp.json()
        finally:
            await client.close()
            await r.aclose()
    return asyncio.run(go())


def stored_results(url: str, ladder: str, round_id: str) -> dict[str, dict[str, Any]]:
    client = redis.Redis.from_url(url)
    try:
        return {k.decode(): json.loads(v) for k, v in client.hgetall(keys.round_results(ladder, round_id)).items()}
    finally:
        client.close()


def compare(asked: dict[str, Any], stored: dict[str, dict[str, Any]]) -> None:
    changes = {c["player"]: c for c in asked["changes"]}
    assert set(changes) == set(stored)
    for player, want in stored.items():
        got = changes[player]
        assert got["rank"] == want["rank"]
        for name in ("mu_before", "sigma_before", "mu_after", "sigma_after", "display_rating"):
            assert abs(got[name] - want[name]) <= harness.TOLERANCE, (player, name, got[name], want[name])
        if want["performance"] is None:
            assert got["performance"] is None
        else:
            assert abs(got["performance"] - want["performance"]) <= harness.TOLERANCE, (player, got, want)
        assert "tier" in want and got["tier"] == want["tier"], (player, got["tier"], want["tier"])
        assert got["rounds_played"] == want["rounds_played"]


def test_what_if_equals_what_the_stream_then_writes(local_stack, stack_redis_url: str, fresh_prefix: str,
                                                     tmp_path: Path) -> None:
    url = stack_redis_url
    env = harness.worker_env(local_stack.bootstrap, url, fresh_prefix, partitions=3, LADDERS=LADDERS)
    from stream.pipeline.topics import ensure
    ensure(Settings.from_env(env))
    worker = harness.Worker(env, tmp_path / "worker.log").start()
    try:
        past = history("alpha", 40) + history("gl", 25)
        harness.publish(local_stack.bootstrap, f"{fresh_prefix}rounds", past)
        harness.wait_drained(url, harness.expected_rounds(past), [worker])
        later = harness.BASE_TIME + 60 * harness.DAY_S  # drift: weeks since anyone's last round
        probes = [
            ("alpha", {"round_id": "plain", "occurred_at": later, "standings": [
                {"player": f"p{i:03d}", "rank": r} for i, r in zip(range(0, 30, 2), [1, 2, 2, 4, 5, 5, 5, 8, 9, 10, 11, 12, 13, 14, 15])]
                + [{"player": "newcomer-é", "rank": 3}, {"player": "newcomer-2", "rank": 16}]}),
            ("alpha", {"round_id": "teams", "occurred_at": later + 3600, "weight": 0.75, "standings": [
                {"team": "red", "players": ["p001", {"player": "p003", "weight": 0.5}, "p005"], "rank": 2},
                {"team": "blue", "players": ["p007", "p009", "newcomer-3"], "rank": 1},
                {"player": "p011", "rank": 3}]}),
            ("gl", {"round_id": "glicko", "occurred_at": later, "standings": [
                {"player": f"p{i:03d}", "rank": i // 2 + 1} for i in range(12)] + [{"player": "g-new", "rank": 9}]}),
        ]
        for ladder, body in probes:
            before = settled_snapshot(url)
            asked = ask(url, ladder, {k: v for k, v in body.items() if k != "round_id"} | {"round_id": body["round_id"]})
            assert asked["writes"] is False and snapshot(url) == before  # the what-if wrote nothing
            assert asked["in_flight"] == []  # drained: every prior is final
            round_ = {**body, "ladder": ladder}
            harness.publish(local_stack.bootstrap, f"{fresh_prefix}rounds", [round_])
            harness.wait_drained(url, harness.expected_rounds([round_]), [worker])
            stored = stored_results(url, ladder, body["round_id"])
            compare(asked, stored)
            # explain, from what the stream stored: its terms give back the stored change
            for e in ask(url, ladder, None, explain=[(p, body["round_id"]) for p in sorted(stored)]):
                want = stored[e["player"]]
                assert e["change"] == want and e["text"]
                assert abs(e["reconstructed"]["display_rating"] - want["display_rating"]) <= harness.TOLERANCE
                assert e["reconstructed"]["tier"] == want["tier"]
                if ladder == "alpha":
                    assert e["round"]["weight"] == body.get("weight", 1.0)
                    assert abs(e["reconstructed"]["sigma_after"] - want["sigma_after"]) <= harness.TOLERANCE, e
                    assert e["drift"]["newcomer"] == (want["rounds_played"] == 1)
    finally:
        worker.stop()
