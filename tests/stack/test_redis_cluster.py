"""The private Redis Cluster of the tests (stream.stack.redis_cluster) and the service's cluster client."""

from __future__ import annotations

import pytest
import redis

from stream.connections import ConnectionConfigError, redis_client
from stream.settings import Settings
from stream.stack.redis_cluster import SLOTS, RedisCluster


def test_the_cluster_serves_every_slot_from_its_primaries(redis_cluster: RedisCluster) -> None:
    client = redis.RedisCluster.from_url(redis_cluster.url)
    try:
        slots = client.cluster_slots()
        covered = sorted((first, last) for first, last in slots)
        assert covered[0][0] == 0 and covered[-1][1] == SLOTS - 1
        assert all(a[1] + 1 == b[0] for a, b in zip(covered, covered[1:]))  # contiguous, no gap
        assert {info["primary"][1] for info in slots.values()} == {node.port for node in redis_cluster.nodes}
    finally:
        client.close()


def test_redis_client_is_a_cluster_client_with_redis_cluster(redis_cluster_url: str) -> None:
    client = redis_client(Settings(redis_url=redis_cluster_url, redis_cluster=True), asyncio=False)
    try:
        assert isinstance(client, redis.RedisCluster)
        for i in range(30):  # keys of 30 slots: some live on other nodes than the seed (MOVED if not a cluster client)
            client.set(f"k{i}", i)
        assert [int(client.get(f"k{i}")) for i in range(30)] == list(range(30))
    finally:
        client.close()


def test_a_database_other_than_0_with_redis_cluster_is_a_config_error() -> None:
    with pytest.raises(ConnectionConfigError, match="REDIS_URL selects database 2"):
        redis_client(Settings(redis_url="redis://127.0.0.1:1/2", redis_cluster=True))
