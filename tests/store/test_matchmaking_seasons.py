"""The matchmaker pairs a returning player by his season-reset belief (the belief his first round
of the new season will rate from), not by his stored pre-reset rating: one tick of a duel queue
in a real Redis."""

from __future__ import annotations

import asyncio
import json

from stream.contracts import Limits
from stream.engine.ladders import parse_ladders
from stream.matchmaking.queues import QueueConfig, WideningStep
from stream.pipeline.context import PipelineContext
from stream.pipeline.matchmaking import Matchmaker, MatchTopicNames, tick_queue
from stream.pipeline.outbox import ListOutbox
from stream.settings import Settings
from stream.store import keys
from stream.store.matchmaking import MatchStore
from stream.store.store import Store

SEASONED = {"lad": {"model": "mmr", "seasons": {"schedule": [{"name": "S1", "start": 1000.0}], "mu_pull": 1.0,
                                                "centre": 1500.0}}}
QUEUE = QueueConfig("duel", "lad", widening=(WideningStep(0.0, 50.0, 0.0),))


def tick(redis_url: str, ladders: dict) -> list[list[list[str]]]:
    async def body() -> list[list[list[str]]]:
        store = Store.from_url(redis_url, history_length=3)
        try:
            await store.client.flushdb()
            await store.client.sadd(keys.ladders(), "lad")
            for player, mu, last in (("ann", 2500.0, 500.0), ("bob", 1500.0, 1100.0)):  # ann last played before S1
                await store.client.hset(keys.player("lad", player),
                                        mapping={"mu": repr(mu), "sigma": "50.0", "last_time": repr(last)})
            ctx = PipelineContext(Settings(redis_url=redis_url), store, parse_ladders(json.dumps(ladders)), Limits(),
                                  ListOutbox(1))
            mm = Matchmaker(ctx, MatchTopicNames("m", "e", "d"), MatchStore(store), clock=lambda: 2000.0)
            await mm.store.join("duel", [("t1", ["ann"], 1990.0, None), ("t2", ["bob"], 1991.0, None)], now=1995.0,
                                hold_s=600.0)

            async def send(records: list, what: str) -> None:
                return None

            report = await tick_queue(mm, QUEUE, send)
            return [m.teams for m in report.matches]
        finally:
            await store.close()

    return asyncio.run(body())


def test_a_returning_player_is_matched_by_his_reset_belief(redis_url: str) -> None:
    assert [sorted(p for team in match for p in team) for match in tick(redis_url, SEASONED)] == [["ann", "bob"]]
    assert tick(redis_url, {"lad": {"model": "mmr"}}) == []  # without the season: 1,000 apart, no match
