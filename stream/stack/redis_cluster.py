"""A private Redis Cluster on loopback (a test fixture: no replicas, no persistence): a few ``redis-server``
primaries sharing the 16,384 slots (``CLUSTER ADDSLOTSRANGE``), joined with ``CLUSTER MEET``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import redis

from stream.stack.ports import Managed, free_port
from stream.stack.redis_server import RedisServer

SLOTS = 16_384
READY_TIMEOUT_S = 30.0
"""Seconds the nodes get to agree on the slot map (``cluster_state:ok`` on every node)."""
POLL_S = 0.05
CLUSTER_CONFIG = ("cluster-enabled yes", "cluster-config-file nodes.conf", "cluster-node-timeout 5000")


@dataclass
class RedisCluster(Managed):
    """``primaries`` redis-server processes forming one cluster; ``url`` reaches it through any node."""

    primaries: int = 3
    nodes: list[RedisServer] = field(default_factory=list)

    @property
    def url(self) -> str:
        """A seed node's URL: a cluster client discovers the others from it."""
        return self.nodes[0].url

    def start(self) -> "RedisCluster":
        """Start the nodes, split the slots between them, join them, and wait until the cluster is ok."""
        try:
            bus_ports = [free_port() for _ in range(self.primaries)]
            for bus_port in bus_ports:
                # the bus port is explicit: the default (port + 10,000) does not exist for ports > 55,535
                self.nodes.append(RedisServer(config=(*CLUSTER_CONFIG, f"cluster-port {bus_port}")).start())
            clients = [redis.Redis(port=node.port) for node in self.nodes]
            bounds = [SLOTS * i // self.primaries for i in range(self.primaries + 1)]
            for client, first, end in zip(clients, bounds, bounds[1:]):
                client.cluster("ADDSLOTSRANGE", first, end - 1)
            for node, bus_port in zip(self.nodes[1:], bus_ports[1:]):
                clients[0].cluster("MEET", "127.0.0.1", node.port, bus_port)
            self._wait_ok(clients)
            for client in clients:
                client.close()
        except BaseException:
            self.close()
            raise
        return self

    def _wait_ok(self, clients: list[redis.Redis]) -> None:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            infos = [client.cluster("INFO") for client in clients]
            if all(info.get("cluster_state") == "ok" and int(info.get("cluster_known_nodes", 0)) == self.primaries
                   for info in infos):
                return
            time.sleep(POLL_S)
        raise RuntimeError(f"the Redis Cluster on ports {[n.port for n in self.nodes]} did not become ok "
                           f"within {READY_TIMEOUT_S:.0f}s")

    def close(self) -> None:
        for node in self.nodes:
            node.close()
        self.nodes = []
