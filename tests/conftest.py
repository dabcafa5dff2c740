"""Shared fixtures: a private redis-server per test session, a private Redis Cluster (three local
primaries, started when a test asks for it), and the local stack (Kafka + Redis).

``local_stack`` (session): Kafka bootstrap + Redis URL. With a reachable Docker engine it runs
Kafka and Redis containers (testcontainers); otherwise the embedded Tansu broker and the
session's private redis-server, the workers the tests start on them with the embedded broker's
workarounds and a shorter consumer-group session (``EMBEDDED_GROUP_TIMING``: joins in 2 s, not
3). ``fresh_prefix`` gives each test its own topic prefix / app id; ``stack_redis_url`` is the
stack's Redis, flushed before the test.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from hypothesis import settings as hypothesis_settings

from stream.stack.redis_cluster import RedisCluster
from stream.stack.redis_server import RedisServer

# Tests never assert on wall time: hypothesis' per-example deadline (200 ms by default) failed
# examples on a loaded machine, so it is off for every property test.
hypothesis_settings.register_profile("no-deadline", deadline=None)
hypothesis_settings.load_profile("no-deadline")


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    """A redis-server of this test session only, on a free port."""
    server = RedisServer().start()
    yield server
    server.close()


@pytest.fixture()
def redis_url(redis_server: RedisServer) -> Iterator[str]:
    """URL of the session's private Redis, flushed before each test."""
    import redis

    client = redis.Redis.from_url(redis_server.url)
    client.flushall()
    client.close()
    yield redis_server.url


@pytest.fixture(scope="session")
def redis_cluster() -> Iterator[RedisCluster]:
    """A Redis Cluster of this test session only: three local primaries on free ports."""
    cluster = RedisCluster(primaries=3).start()
    yield cluster
    cluster.close()


@pytest.fixture()
def redis_cluster_url(redis_cluster: RedisCluster) -> str:
    """A seed node's URL of the session's Redis Cluster, every node flushed before the test."""
    import redis

    for node in redis_cluster.nodes:
        client = redis.Redis.from_url(node.url)
        client.flushall()
        client.close()
    return redis_cluster.url


#: Images of the container branch of ``local_stack`` (used only when Docker is reachable).
KAFKA_IMAGE = "confluentinc/cp-kafka:7.6.0"
REDIS_IMAGE = "redis:7"


@dataclass(frozen=True)
class StackEndpoints:
    """Where the test session's broker and Redis listen; ``kind`` is "embedded" or "containers"."""

    bootstrap: str
    redis_url: str
    kind: str

    def env(self) -> dict[str, str]:
        """Environment variables pointing the service (e.g. a worker subprocess) at this stack
        (with EMBEDDED_BROKER on the embedded broker: its workarounds on)."""
        embedded = {"EMBEDDED_BROKER": "true"} if self.kind == "embedded" else {}
        return {"KAFKA_BOOTSTRAP": self.bootstrap, "REDIS_URL": self.redis_url, **embedded}


def _docker_available() -> bool:
    """Whether a Docker engine answers (then tests run against real Kafka/Redis containers)."""
    try:
        import docker

        client = docker.from_env()
        try:
            return bool(client.ping())
        finally:
            client.close()
    except Exception:
        return False


def _container_stack() -> Iterator[StackEndpoints]:
    """Kafka (KRaft) and Redis containers for the session."""
    try:
        from testcontainers.community.kafka import KafkaContainer
        from testcontainers.community.redis import RedisContainer
    except ImportError:  # older testcontainers layout
        from testcontainers.kafka import KafkaContainer
        from testcontainers.redis import RedisContainer

    with KafkaContainer(KAFKA_IMAGE).with_kraft() as kafka, RedisContainer(REDIS_IMAGE) as redis_container:
        redis_url = f"redis://{redis_container.get_container_host_ip()}:{redis_container.get_exposed_port(6379)}/0"
        yield StackEndpoints(kafka.get_bootstrap_server(), redis_url, "containers")


EMBEDDED_GROUP_TIMING = {"BROKER_SESSION_TIMEOUT_S": "4", "BROKER_HEARTBEAT_S": "0.5"}
"""Consumer-group timing of the workers the tests start on the embedded broker (the production
defaults are 6 s and 1 s). Tansu answers a JoinGroup about half the session timeout after it
came, rounded up to a whole second (measured: 6 s -> 3.0 s, 4 and 3 s -> 2.0 s, 2 s -> 1.0 s),
and every worker start, restart and rebalance waits for one: 4 s saves a second per join (and
drops a killed worker's ghost membership 2 s sooner), with 8 heartbeats per session (the
defaults allow 6), so a loaded machine does not drop a live worker. 0.5 s heartbeats also let
the members see a rebalance sooner. A real Kafka refuses a session timeout below its
group.min.session.timeout.ms (6 s by default): the container branch keeps the defaults."""


@pytest.fixture(scope="session")
def local_stack(request: pytest.FixtureRequest) -> Iterator[StackEndpoints]:
    """The session's Kafka + Redis: containers if Docker is reachable, else the embedded stack."""
    if _docker_available():
        yield from _container_stack()
        return
    from stream.stack.broker import TansuBroker

    server: RedisServer = request.getfixturevalue("redis_server")
    # Workers started in this process or from its environment (pipeline_harness.worker_env) run
    # the embedded broker's workarounds, as `stream stack` configures them (EMBEDDED_BROKER), and
    # the test stack's consumer-group timing (EMBEDDED_GROUP_TIMING) unless the environment sets one.
    settings = {"EMBEDDED_BROKER": "true", **{k: os.environ.get(k, v) for k, v in EMBEDDED_GROUP_TIMING.items()}}
    before = {name: os.environ.get(name) for name in settings}
    os.environ.update(settings)
    try:
        with TansuBroker() as broker:
            yield StackEndpoints(broker.bootstrap, server.url, "embedded")
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@pytest.fixture()
def fresh_prefix(request: pytest.FixtureRequest) -> str:
    """A topic prefix (and app / group id stem) no other test uses: ``t<hex>-``."""
    return f"t{uuid.uuid4().hex[:10]}-"


@pytest.fixture()
def stack_redis_url(local_stack: StackEndpoints) -> str:
    """The stack's Redis URL, flushed before the test."""
    import redis

    client = redis.Redis.from_url(local_stack.redis_url)
    client.flushall()
    client.close()
    return local_stack.redis_url


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test that uses the local stack (a real broker), directly or through another fixture,
    or whose module starts a broker itself (``stream.stack``), is an integration test: ``pytest -m "not integration"`` is the fast subset (no broker)."""
    for item in items:
        module = getattr(item, "module", None)
        starts_a_broker = module is not None and any(
            getattr(value, "__module__", "").startswith(("stream.stack.broker", "stream.stack.local"))
            for value in vars(module).values())
        if starts_a_broker or "local_stack" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.integration)
