"""``LocalStack``: the embedded broker and a private redis-server, started and stopped together."""

from __future__ import annotations

from dataclasses import dataclass, field

from stream.stack.broker import TansuBroker
from stream.stack.ports import Managed
from stream.stack.redis_server import RedisServer


@dataclass
class LocalStack(Managed):
    """Tansu broker + redis-server on free (or given) loopback ports; a context manager."""

    broker: TansuBroker = field(default_factory=TansuBroker)
    redis: RedisServer = field(default_factory=RedisServer)

    @classmethod
    def on_ports(cls, kafka_port: int = 0, redis_port: int = 0, *, detached: bool = False) -> "LocalStack":
        """A stack on the given ports (0 = pick a free one); ``detached``: each service in its own
        process session (``stream stack``: Ctrl-C stops the worker before the services it uses)."""
        return cls(TansuBroker(port=kafka_port, detached=detached),
                   RedisServer(port=redis_port, detached=detached))

    @property
    def bootstrap(self) -> str:
        """Kafka bootstrap servers of the embedded broker."""
        return self.broker.bootstrap

    @property
    def redis_url(self) -> str:
        """URL of the private redis-server."""
        return self.redis.url

    def env(self) -> dict[str, str]:
        """The environment that points the service at this stack, with the broker's workarounds on
        (LEAVE_GROUP_ON_STOP, EMBEDDED_BROKER: README.md)."""
        return {"KAFKA_BOOTSTRAP": self.bootstrap, "REDIS_URL": self.redis_url, "LEAVE_GROUP_ON_STOP": "false",
                "EMBEDDED_BROKER": "true"}

    def start(self) -> "LocalStack":
        """Start Redis, then the broker; if the broker fails, Redis is stopped again."""
        self.redis.start()
        try:
            self.broker.start()
        except BaseException:
            self.redis.close()
            raise
        return self

    def close(self) -> None:
        """Stop both services (safe to call twice); Redis's temporary folder is removed with it."""
        try:
            self.broker.close()
        finally:
            self.redis.close()
