"""A ladder of players with real packed states (rated in process by ``stream.batch.replay``),
written as the pipeline stores them: the what-if tests' data (API and CLI)."""

from __future__ import annotations

import json
import time
from typing import Any

import numpy as np

import redis

from stream import engine
from stream.batch.replay import replay
from stream.contracts.round import Limits, parse_round
from stream.store import keys
from tests.engine.oracles import state_to_bytes

LADDER = "wi"
START = 1_700_000_000.0
DAY = 86_400.0
PLAYERS = [f"q{i:02d}" for i in range(20)]


def seed_states(url: str) -> dict[str, engine.PlayerState]:
    """Rate a few rounds in process (``stream.batch.replay``) and store the players' packed states
    as the pipeline does (``state``, ``tier``, ``last_seq`` of the player hash)."""
    rng = np.random.default_rng(5)
    rounds = []
    for t in range(6):
        order = rng.permutation(PLAYERS).tolist()
        rounds.append(parse_round(json.dumps({"round_id": f"s{t}", "ladder": LADDER, "occurred_at": START + t * DAY,
                                              "standings": [{"player": p, "rank": i + 1} for i, p in enumerate(order)]}),
                                  limits=Limits()))
    states = {p: s for (_, p), s in replay(rounds, engine.preset("mmr"), keep_rounds=False).states().items()}
    client = redis.Redis.from_url(url)
    pipe = client.pipeline(transaction=False)
    pipe.sadd(keys.ladders(), LADDER)
    pipe.hset(keys.ladder(LADDER), mapping={"seq": 6, "rounds_rated": 6, "updated_at": repr(START)})
    for p, s in states.items():
        pipe.hset(keys.player(LADDER, p), mapping={"state": state_to_bytes(s), "tier": "Gold", "last_seq": 6,
                                                   "mu": repr(s.mu), "sigma": repr(s.sigma), "rounds": s.rounds})
    pipe.execute()
    client.close()
    return states


def standings(players: list[str]) -> list[dict[str, Any]]:
    return [{"player": p, "rank": i + 1} for i, p in enumerate(players)]




def settled_snapshot(url: str, quiet_s: float = 2.5, timeout_s: float = 60.0) -> dict[bytes, Any]:
    """:func:`snapshot` once the worker has stopped writing (two snapshots ``quiet_s`` apart are
    equal): after the stream drains, a worker still finishes its last steps (events confirmed,
    the round's incomplete entry removed, rating health flushed) for a moment. Rating health is
    flushed by a once-a-second timer when its oldest round is ``health.FLUSH_S`` (1 s) old, up to
    ~2 s after the round: a shorter quiet time can see two equal snapshots before that flush."""
    deadline = time.monotonic() + timeout_s
    previous = snapshot(url)
    while True:
        time.sleep(quiet_s)
        current = snapshot(url)
        if current == previous:
            return current
        assert time.monotonic() < deadline, "Redis kept changing after the stream drained"
        previous = current


def snapshot(url: str) -> dict[bytes, Any]:
    """Every key's type and content (a hash's fields as a dict: DUMP's bytes follow the hash table's
    internal order, which rehashing changes on reads)."""
    client = redis.Redis.from_url(url)
    try:
        out: dict[bytes, Any] = {}
        for key in sorted(client.keys("*")):
            kind = client.type(key)
            value = {b"hash": client.hgetall, b"string": client.get, b"set": client.smembers,
                     b"list": lambda k: client.lrange(k, 0, -1),
                     b"zset": lambda k: client.zrange(k, 0, -1, withscores=True)}.get(kind, client.dump)(key)
            out[key] = (kind, value)
        return out
    finally:
        client.close()
