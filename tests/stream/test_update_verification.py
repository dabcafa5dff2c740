"""Phase two applies only PlayerUpdates that are exactly messages of their round's stored fan-out:
a forged message on the internal topic (huge seq, another performance, an extra player, a round
without a fan-out) changes nothing in Redis and comes back as unverified; the real ones, in the
same batch or later, rate as replay does."""

from __future__ import annotations

import asyncio
import json

import redis

from stream.batch.replay import replay
from stream.contracts import PlayerUpdate, RoundResult, Standing
from stream.engine import preset
from stream.pipeline.context import PipelineContext
from stream.pipeline.phase_one import handle_one
from stream.pipeline.messages import Incoming
from stream.pipeline.outbox import ListOutbox
from stream.pipeline.phase_two import handle_updates
from stream.settings import Settings
from tests.store_calls import register_round, stored_player
from tests.engine.oracles import final_state

TOLERANCE = 1e-9


def make_round(round_id: str, players: str, day: int) -> RoundResult:
    return RoundResult(round_id=round_id, ladder="V", occurred_at=1.7e9 + 86_400.0 * day,
                       standings=[Standing(p, i + 1) for i, p in enumerate(players)])


def snapshot(url: str) -> dict[bytes, object]:
    """Every key's content, apart from the fan-out digests (a cache derived from the stored fan-out)."""
    client = redis.Redis.from_url(url)
    read = {b"hash": client.hgetall, b"list": lambda k: client.lrange(k, 0, -1), b"set": client.smembers,
            b"zset": lambda k: client.zrange(k, 0, -1, withscores=True), b"string": client.get}
    try:
        return {key: read[client.type(key)](key) for key in client.keys("*")  # type: ignore[index, operator]
                if not key.startswith(b"ems:round-digests:")}
    finally:
        client.close()


def forged(raw: bytes, **changes: object) -> bytes:
    data = json.loads(raw)
    for name, value in changes.items():
        if name == "performance":
            data["entries"][0]["performance"] = value
        elif name == "extra_player":
            data["entries"].append({"player": value, "rank": 1, "performance": 3000.0})
        else:
            data[name] = value
    return json.dumps(data).encode()


def test_forged_updates_change_nothing_and_real_ones_rate_as_replay(redis_url: str) -> None:
    rounds = [make_round("v1", "abcd", 0), make_round("v2", "bcde", 1), make_round("v3", "aeb", 2)]

    async def body() -> dict[str, float]:
        ctx = PipelineContext.from_settings(Settings(redis_url=redis_url, partitions=1))
        one = await handle_one(ctx, Incoming(rounds[0].to_json().encode()))
        await handle_updates(ctx, [m.value for m in one.updates])
        two = await handle_one(ctx, Incoming(rounds[1].to_json().encode()))
        (real,) = [m.value for m in two.updates]  # one partition: one message
        seq = json.loads(real)["seq"]
        fakes = [
            forged(real, seq=2 ** 53),  # would set any mu and block the players' later rounds
            forged(real, performance=9999.0),
            forged(real, extra_player="mallory"),
            forged(real, round_id="never-published"),
            forged(real, ladder="other"),
            forged(real, seq=seq - 1),  # older seq, as an attacker replaying
            real.replace(b'"seq"', b' "seq"', 1),  # same content, other bytes
        ]
        for fake in fakes:
            assert PlayerUpdate.from_json(fake)  # well-formed: only the check stops them
        before = snapshot(redis_url)
        alone = await handle_updates(ctx, fakes)
        assert [i for i, _ in alone.unverified] == list(range(len(fakes)))
        assert alone.applied == 0 and alone.events == [] and snapshot(redis_url) == before
        assert "never-published" in alone.unverified[3][1] and "not applied" in alone.unverified[3][1]

        # a round still "registered" (phase one not done: no fan-out) verifies nothing either
        registered = await register_round(ctx.store, "W", "w1", content_hash="x", occurred_at=1.7e9, received_at=1.7e9,
                                                    field_size=2)
        assert registered.status == "registered"
        early = await handle_updates(ctx, [forged(real, ladder="W", round_id="w1", seq=registered.seq)])
        assert len(early.unverified) == 1 and early.applied == 0

        # forged messages first in a batch with the real one: the real one is applied, they are not
        mixed = await handle_updates(ctx, fakes[:3] + [real] + fakes[3:])
        assert sorted(i for i, _ in mixed.unverified) == [0, 1, 2, 4, 5, 6, 7]
        assert mixed.applied == 4 and {e.key for e in mixed.events} == {b"b", b"c", b"d", b"e"}
        assert (await stored_player(ctx.store, "V", "mallory")) == {}

        # a redelivered real message (round rated) still verifies: its events are re-emitted
        again = await handle_updates(ctx, [real])
        assert again.unverified == [] and again.replayed == 4

        three = await handle_one(ctx, Incoming(rounds[2].to_json().encode()))
        assert (await handle_updates(ctx, [m.value for m in three.updates])).applied == 3
        mu = {p: float((await stored_player(ctx.store, "V", p))["mu"]) for p in "abcde"}
        await ctx.store.close()
        return mu

    got = asyncio.run(body())
    reference = replay(rounds, preset("mmr"))
    for player, mu in got.items():
        assert abs(mu - final_state(reference, "V", player).mu) <= TOLERANCE


def test_verification_off_applies_a_forged_seq(redis_url: str) -> None:
    """What the check prevents (and what bench/handlers.py's unverified run does): without it, a
    forged seq 2^53 is applied and blocks the player's later rounds."""
    async def body() -> int:
        ctx = PipelineContext.from_settings(Settings(redis_url=redis_url, partitions=1))
        one = await handle_one(ctx, Incoming(make_round("u1", "xy", 0).to_json().encode()))
        result = await handle_updates(ctx, [forged(one.updates[0].value, seq=2 ** 53)], verify=False)
        stored = int((await stored_player(ctx.store, "V", "x"))["last_seq"])
        await ctx.store.close()
        assert result.applied == 2
        return stored

    assert asyncio.run(body()) == 2 ** 53


def test_the_digest_set_is_built_once_and_checked_the_same(redis_url: str) -> None:
    """A round's first check builds its digest set from the stored fan-out; later checks (more
    batches of the same round) read the set and still reject a forged message."""
    from stream.store import keys

    big = RoundResult(round_id="big", ladder="V", occurred_at=1.7e9,
                      standings=[Standing(f"player-{i:04d}", i + 1) for i in range(300)])

    async def body() -> None:
        ctx = PipelineContext.from_settings(Settings(redis_url=redis_url, partitions=4))
        result = await handle_one(ctx, Incoming(big.to_json().encode()))
        raws = [m.value for m in result.updates]
        fake = forged(raws[0], seq=2 ** 53)
        for _ in range(2):  # the first check builds the set, the second uses it
            checked = await handle_updates(ctx, [fake, raws[0]])
            assert [i for i, _ in checked.unverified] == [0]
        assert await ctx.store.client.scard(keys.round_digests("V", "big")) == len(raws)
        assert (await handle_updates(ctx, raws[1:])).unverified == []
        assert (await ctx.store.round_record("V", "big"))["status"] == "rated"
        await ctx.store.close()

    asyncio.run(body())


def test_sections_or_their_digests_verify_alike_whatever_the_round_s_size(redis_url: str) -> None:
    """A check carries a small round's sections as they are (compared with the stored ones, nothing
    hashed) and a bigger round's SHA-1 digests; either kind checks any round the same (a forged
    section may claim any field size): real sections verify, forged ones do not, and a duel's
    forged sections are dead-lettered while its real ones rate."""
    import hashlib

    from stream.store.store import FanOutCheck

    duel = make_round("d1", "xy", 0)
    lobby = RoundResult(round_id="lobby", ladder="V", occurred_at=1.7e9 + 3600.0,
                        standings=[Standing(f"lobby-{i}", i + 1) for i in range(10)])
    big = RoundResult(round_id="big", ladder="V", occurred_at=1.7e9 + 86_400.0,
                      standings=[Standing(f"player-{i:04d}", i + 1) for i in range(40)])

    async def body() -> None:
        outbox = ListOutbox(4)
        ctx = PipelineContext.from_settings(Settings(redis_url=redis_url, partitions=4), outbox=outbox)
        for r in (duel, lobby, big):
            raws = [m.value for m in (await handle_one(ctx, Incoming(r.to_json().encode()))).updates]
            assert len(raws) >= 2
            fakes = [forged(raws[0], seq=2 ** 53), forged(raws[0], field_size=2), forged(raws[0], field_size=40),
                     forged(raws[0], field_size=10)]
            items = raws + fakes
            expected = [True] * len(raws) + [False] * len(fakes)
            for raw in (True, False):
                check = FanOutCheck("V", r.round_id, items if raw else [hashlib.sha1(i).hexdigest() for i in items],
                                    raw=raw)
                assert (await ctx.store.load_states([], [check])).verified == [expected], (r.round_id, raw)
        await handle_one(ctx, Incoming(duel.to_json().encode()))  # pending: its stored fan-out re-sent
        duel_raws = [m.value for m in outbox.resent]
        result = await handle_updates(ctx, [forged(duel_raws[0], performance=9999.0), *duel_raws])
        assert [i for i, _ in result.unverified] == [0] and result.applied == 2
        await ctx.store.close()

    asyncio.run(body())
