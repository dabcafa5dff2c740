"""Smallest end-to-end path: one worker, one ladder, 20 rounds; Redis equals the in-process replay.
On the session's single Redis, and on a real three-node Redis Cluster (REDIS_CLUSTER=true: a cluster
client, one player per script call), where the worker's keys must spread over every node."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import redis
from aiohttp.test_utils import TestClient, TestServer

from stream import engine
from stream.api.app import create_app
from stream.connections import redis_client
from stream.settings import Settings
from stream.stack.redis_cluster import RedisCluster
import pipeline_harness as harness

pytestmark = pytest.mark.integration


LADDER = "solo"


def run_and_check(local_stack, redis_url: str, prefix: str, tmp_path: Path, **env: str) -> dict[str, Any]:
    """Rate 20 rounds through one worker, check Redis against replay; the reference states by player."""
    rounds = harness.synthetic_rounds(seed=1, count=20, ladders=(LADDER,), pool=12)
    worker = harness.Worker(harness.worker_env(local_stack.bootstrap, redis_url, prefix, **env),
                            tmp_path / "worker.log").start()
    try:
        harness.publish(local_stack.bootstrap, f"{prefix}rounds", rounds)
        harness.wait_drained(redis_url, harness.expected_rounds(rounds), [worker])
    finally:
        worker.stop()
    reference = harness.reference(rounds, engine.preset("mmr"))
    harness.assert_equals_reference(redis_url, reference)
    return {player: state for (_, player), state in reference.items()}


def read_api(settings: Settings, paths: list[str]) -> list[tuple[int, Any]]:
    """GET each path from the read API built on ``settings`` (its own Redis client)."""
    async def go() -> list[tuple[int, Any]]:
        client = redis_client(settings)
        http = TestClient(TestServer(create_app(client, settings)))
        await http.start_server()
        try:
            answers = []
            for path in paths:
                response = await http.get(path)
                answers.append((response.status, await response.json()))
            return answers
        finally:
            await http.close()
            await client.aclose()
    return asyncio.run(go())


def test_one_worker_on_a_single_redis_equals_replay(local_stack, stack_redis_url: str, fresh_prefix: str,
                                                    tmp_path: Path) -> None:
    run_and_check(local_stack, stack_redis_url, fresh_prefix, tmp_path)


def test_one_worker_on_a_real_redis_cluster_equals_replay(local_stack, redis_cluster_url: str,
                                                          redis_cluster: RedisCluster, fresh_prefix: str,
                                                          tmp_path: Path) -> None:
    players = run_and_check(local_stack, redis_cluster_url, fresh_prefix, tmp_path, REDIS_CLUSTER="true")
    sizes = []
    for node in redis_cluster.nodes:
        client = redis.Redis.from_url(node.url)
        sizes.append(client.dbsize())
        client.close()
    assert all(size > 0 for size in sizes), sizes  # the worker's keys really are spread over the nodes

    # the read API and the CLI on the cluster: every player, the leaderboard, a search, a round
    settings = Settings(redis_url=redis_cluster_url, redis_cluster=True)
    best = max(players, key=lambda p: players[p].mu)
    answers = read_api(settings, ["/health", f"/api/ladders/{LADDER}", f"/api/ladders/{LADDER}/leaderboard?limit=50",
                                  f"/api/ladders/{LADDER}/leaderboard?search={best}", f"/api/ladders/{LADDER}/rounds/r00000",
                                  *(f"/api/ladders/{LADDER}/players/{p}" for p in sorted(players))])
    (s_health, health), (s_ladder, ladder), (s_board, board), (s_found, found), (s_round, rnd), *views = answers
    assert (s_health, health["redis"]) == (200, True)
    assert s_ladder == 200 and ladder["rounds_rated"] == 20
    assert s_board == 200 and sorted(row["player"] for row in board["rows"]) == sorted(players)
    assert s_found == 200 and best in [row["player"] for row in found["rows"]]
    assert s_round == 200 and rnd["record"]["status"] == "rated" and rnd["results"]
    assert [(status, view["mu"]) for status, view in views] == [(200, pytest.approx(players[p].mu, abs=1e-9))
                                                                for p in sorted(players)]
    env = {**os.environ, "REDIS_URL": redis_cluster_url, "REDIS_CLUSTER": "true"}
    cli = subprocess.run([sys.executable, "-m", "stream", "leaderboard", LADDER, "--top", "50", "--json"],
                         env=env, capture_output=True, text=True, timeout=60)
    assert cli.returncode == 0, cli.stderr
    assert sorted(row["player"] for row in json.loads(cli.stdout)["rows"]) == sorted(players)
