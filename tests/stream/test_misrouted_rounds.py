"""A round published under another key than its ladder (or none) is not rated where it is read:
the rounds agent forwards it, unchanged, to its topic keyed by its ladder, so a ladder's rounds
are rated by the one actor of one partition (``rounds_batches``, ``messages.misrouted``). Against
the session's private redis-server, without Kafka."""

from __future__ import annotations

import asyncio

from stream.contracts import RoundResult, Standing
from stream.pipeline.context import PipelineContext
from stream.pipeline.messages import Incoming, Origin
from stream.pipeline.outbox import Outgoing, TopicNames
from stream.pipeline.rounds_batches import one_round, phase_one_batch
from stream.settings import Settings

NAMES = TopicNames(player_updates="player-updates", rating_changes="rating-changes", rounds_dlq="rounds-dlq")


def raw(round_id: str, players: list[str], ladder: str = "L") -> bytes:
    return RoundResult(round_id=round_id, ladder=ladder, occurred_at=1.7e9,
                       standings=[Standing(p, i + 1) for i, p in enumerate(players)]).to_json().encode()


def test_a_round_under_another_key_is_forwarded_keyed_by_its_ladder_and_rated_there(redis_url: str) -> None:
    keyed, other_key, no_key = raw("r1", ["a", "b"]), raw("r2", ["x", "c"]), raw("r3", ["d"])  # r3: no outcome
    events = [Incoming(keyed, b"L", Origin("rounds", 0, 0)), Incoming(other_key, b"r2", Origin("rounds", 0, 1)),
              Incoming(no_key, None, Origin("rounds", 0, 2)), Incoming(b"{bad", b"x", Origin("rounds", 0, 3)),
              Incoming(raw("r4", ["e", "f"]))]  # not read from a partition (a direct call): rated here

    async def body() -> None:
        ctx = PipelineContext.from_settings(Settings(redis_url=redis_url, partitions=4))
        sent: list[Outgoing] = []

        async def enqueue(records: list[Outgoing]) -> None:
            sent.extend(records)

        results = await phase_one_batch(ctx, NAMES, events, enqueue)
        assert [r.outcome for r in results] == ["rated", "forwarded", "forwarded", "rejected", "rated"]
        forwarded = [o for o in sent if o.topic == "rounds"]
        assert forwarded == [Outgoing("rounds", b"L", other_key), Outgoing("rounds", b"L", no_key)]
        assert await ctx.store.round_record("L", "r2") == {} and await ctx.store.round_record("L", "r3") == {}
        assert [o.topic for o in sent if o.topic != "rounds"].count("rounds-dlq") == 1

        alone = await one_round(ctx, NAMES, Incoming(raw("r5", ["g", "h"]), b"M", Origin("rounds", 1, 0)), enqueue)
        assert alone.outcome == "forwarded" and sent[-1] == Outgoing("rounds", b"L", raw("r5", ["g", "h"]))
        assert await ctx.store.round_record("L", "r5") == {}

        arrived = [Incoming(o.value, o.key, Origin("rounds", 2, i)) for i, o in enumerate(forwarded)]
        again = await phase_one_batch(ctx, NAMES, arrived, enqueue)
        assert [r.outcome for r in again] == ["rated", "no_outcome"]
        assert (await ctx.store.round_record("L", "r2"))["seq"] == "3"  # after r1 and r4
        await ctx.store.close()

    asyncio.run(body())
