"""``stream simulate --through-stream``: the simulation's engine strategies rated by the real
pipeline instead of in process. Each tick's duels are published as RoundResults on ``rounds``
of an embedded stack (Tansu broker + redis-server) that a ``stream worker`` rates; the tick waits
until the worker has rated them (their round records ``rated`` in Redis), and the next tick
matches on the ratings read back from Redis (``MatchStore.ratings``, what the service's own
ticks read). The ratings then equal ``stream replay`` of the published rounds (the service's
contract; tests/matchmaking/test_simulate_stream.py checks it within 1e-9).

Each engine strategy rates on a ladder of its own, ``<queue ladder>-<strategy>``, which must
resolve to the simulation's ladder model under ``--ladders`` (its ``"*"`` entry, or none).
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from stream.contracts import RoundResult
from stream.cli.stack import start_child, stop_child
from stream.engine.ladders import LadderConfig, parse_ladders
from stream.matchmaking.raters import EngineRater
from stream.pipeline.topics import ROUNDS, ensure
from stream.settings import Settings
from stream.stack.local import LocalStack
from stream.store.matchmaking import MatchStore
from stream.store.store import Store

Array = NDArray[np.float64]
PREFIX = "sim-"
RATED_TIMEOUT_S = 180.0
"""Longest wait for a tick's rounds to be rated (the first includes the worker's start-up)."""
POLL_S = 0.01


def stream_ladder(ladder: str, strategy: str) -> str:
    """The ladder a strategy's rounds are rated on through the stream."""
    return f"{ladder}-{strategy}"


def check_ladders(ladders_text: str, ladder: LadderConfig, ladder_name: str, strategies: Sequence[str]) -> None:
    """ValueError unless every strategy's stream ladder gets the simulation's model from ``LADDERS``."""
    parsed = parse_ladders(ladders_text)
    for strategy in strategies:
        name = stream_ladder(ladder_name, strategy)
        got = parsed.of(name)
        if (got.model, got.params) != (ladder.model, ladder.params):
            raise ValueError(f"--through-stream rates on ladder {name!r}, which --ladders gives another model: "
                             "put the simulation's model under \"*\"")


@dataclass
class StreamLink:
    """The simulation's side of a running pipeline: publishes rounds, waits until they are rated,
    reads ratings back (its own event loop: the simulation is synchronous)."""

    bootstrap: str
    redis_url: str
    rounds_topic: str
    loop: asyncio.AbstractEventLoop = field(default_factory=asyncio.new_event_loop)

    def __post_init__(self) -> None:
        from confluent_kafka import Producer

        self.producer = Producer({"bootstrap.servers": self.bootstrap, "linger.ms": 1})
        self.store = MatchStore(Store.from_url(self.redis_url, history_length=1))

    def rate(self, rounds: Sequence[RoundResult]) -> None:
        """Publish ``rounds`` (keyed by ladder, in order) and wait until the worker rated them all."""
        for r in rounds:
            self.producer.produce(self.rounds_topic, r.to_json().encode(), r.ladder.encode())
        self.producer.flush(60)
        by_ladder: dict[str, list[str]] = {}
        for r in rounds:
            by_ladder.setdefault(r.ladder, []).append(r.round_id)
        deadline = time.monotonic() + RATED_TIMEOUT_S
        for ladder, ids in by_ladder.items():
            while True:
                statuses = self.loop.run_until_complete(self.store.round_statuses(ladder, ids))
                if all(s == "rated" for s in statuses):
                    break
                bad = sorted({s for s in statuses if s not in (None, "registered", "pending", "rated")})
                if bad or time.monotonic() > deadline:
                    raise RuntimeError(f"ladder {ladder!r}: rounds not rated ({', '.join(bad) or 'timed out'})")
                time.sleep(POLL_S)

    def ratings(self, ladder: str, players: Sequence[str]) -> tuple[Array, Array]:
        """(mu, sigma) of ``players`` on ``ladder`` from Redis, NaN for a player without a rating."""
        mu, sigma, _ = self.loop.run_until_complete(self.store.ratings(ladder, list(players)))
        return mu, sigma

    def close(self) -> None:
        self.producer.flush(10)
        self.loop.run_until_complete(self.store.store.close())
        self.loop.close()


class StreamRater(EngineRater):
    """:class:`EngineRater`'s rounds, rated by the pipeline behind ``link`` (module docstring);
    ``published``: every round it sent, in order."""

    def __init__(self, ladder: LadderConfig, names: list[str], tag: str, *, link: StreamLink, ladder_name: str) -> None:
        super().__init__(ladder, names, tag, name=stream_ladder(ladder_name, tag))
        self.link = link
        self.published: list[RoundResult] = []

    def ratings(self, players: Sequence[int]) -> tuple[Array, Array]:
        mu, sigma = self.link.ratings(self.name, [self.names[i] for i in players])
        new = np.isnan(mu) | np.isnan(sigma)
        return np.where(new, self.noob[0], mu), np.where(new, self.noob[1], sigma)

    def rate(self, winners: Sequence[int], losers: Sequence[int], now: float) -> None:
        rounds = self.rounds(winners, losers, now)
        if rounds:
            self.link.rate(rounds)
            self.published += rounds


def worker_env(bootstrap: str, redis_url: str, ladders_text: str) -> dict[str, str]:
    """A worker's settings on the embedded stack: the simulation's LADDERS, no queue."""
    return {"KAFKA_BOOTSTRAP": bootstrap, "REDIS_URL": redis_url, "TOPIC_PREFIX": PREFIX, "APP_ID": f"{PREFIX}app",
            "LADDERS": ladders_text, "QUEUES": "", "LOG_LEVEL": "warning"}


@contextmanager
def embedded_pipeline(ladders_text: str, log: Path) -> Iterator[StreamLink]:
    """An embedded stack and one ``stream worker`` on it (stopped on exit), and a link to them."""
    with LocalStack.on_ports() as stack:
        env = worker_env(stack.bootstrap, stack.redis_url, ladders_text)
        settings = Settings.from_env({**os.environ, **env})
        ensure(settings)
        worker = start_child(["worker", "--no-web"], env, str(log))
        link = StreamLink(stack.bootstrap, stack.redis_url, settings.topic(ROUNDS))
        try:
            yield link
        finally:
            link.close()
            stop_child(worker)
