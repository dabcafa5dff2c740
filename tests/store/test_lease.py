"""The ladder leases of phase one (acquire_lease.lua, release_lease.lua) and the fence save_fanout.lua
checks, against the session's private redis-server and a real Redis Cluster (the ``target`` fixture
of test_store.py): one owner at a time, a token that moves exactly when the lease changes hands,
and a zombie's fenced write that leaves nothing behind."""

from __future__ import annotations

import asyncio

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stream.store import keys, player_hash
from stream.store.store import SAVE_FENCED, SAVED_NOW, Lease, NewRound, QueuedRound, Store

from test_store import Target, run, target  # noqa: F401 - the fixture
from tests.store_calls import stored_player

TTL_MS = 60_000


def queued(round_id: str, seq: int, fence: int, players: tuple[str, ...] = ("a", "b")) -> QueuedRound:
    return QueuedRound("L", round_id, list(players), seq, len(players), [(0, f"{round_id}/{fence}".encode())],
                       fence=fence)


async def register(store: Store, *round_ids: str) -> None:
    await store.register_batch([NewRound("L", r, "h" + r, 0.0, 0.0, 2, body=b"{}") for r in round_ids], [])


def test_one_owner_at_a_time_and_a_renewal_keeps_the_token(target: Target) -> None:
    async def body(store: Store) -> None:
        first = await store.acquire_lease("L", "w1", TTL_MS)
        assert first == 1
        assert await store.acquire_lease("L", "w2", TTL_MS) == 0, "another owner is refused while it is held"
        await store.client.pexpire(keys.lease("L"), 1_000)  # the lease nearly lapsed: the holder renews it
        assert await store.acquire_lease("L", "w1", TTL_MS) == first, "a renewal keeps the token"
        assert await store.client.pttl(keys.lease("L")) > 1_000, "a renewal extends the lease"
        assert await store.acquire_lease("M", "w2", TTL_MS) == 1, "ladders are leased apart"
        await store.release_leases(["L"], "w2")  # not w2's: left alone
        assert await store.acquire_lease("L", "w2", TTL_MS) == 0
        await store.release_leases(["L"], "w1")
        assert await store.acquire_lease("L", "w2", TTL_MS) == first + 1, "a new owner gets a higher token"

    run(target, body)


def test_expiry_lets_the_next_owner_in_and_fences_the_zombie_s_write(target: Target) -> None:
    """w1's lease lapses (a crashed or paused worker); w2 takes it. w1, still running (a zombie),
    stores its rounds: fenced, nothing written (no fan-out, the rounds still registered, on a single
    Redis no queued mark either); w2's stores go through."""
    async def body(store: Store) -> None:
        await register(store, "r1", "r2")
        zombie = await store.acquire_lease("L", "w1", 100)
        await asyncio.sleep(0.15)
        owner = await store.acquire_lease("L", "w2", TTL_MS)
        assert owner == zombie + 1
        refused = await store.queue_batch([queued("r1", 1, zombie), queued("r2", 2, zombie)])
        assert refused == [SAVE_FENCED, SAVE_FENCED]
        assert [(await store.round_record("L", r))["status"] for r in ("r1", "r2")] == ["registered"] * 2
        assert [await store.load_fanout("L", r) for r in ("r1", "r2")] == [[], []]
        marks = [(await stored_player(store, "L", p)).get(player_hash.QUEUED_SEQ) for p in ("a", "b")]
        if not store.cluster:  # queue_rounds.lua: a fenced round marks nobody (on a Cluster marks go first)
            assert marks == [None, None]
        assert await store.queue_batch([queued("r1", 1, zombie)]) == [SAVE_FENCED], "a round alone too"
        assert await store.queue_batch([queued("r1", 1, owner), queued("r2", 2, owner)]) == [SAVED_NOW, SAVED_NOW]
        assert [await store.load_fanout("L", r) for r in ("r1", "r2")] == [[(0, b"r1/2")], [(0, b"r2/2")]]

    run(target, body)


def test_a_lease_taken_in_the_registration_round_trip_and_released_with_the_store(target: Target) -> None:
    """``register_batch(lease=...)`` takes the lease of each ladder with a round to rate (its token
    in each registration), not of a ladder with outcome-free rounds only; ``queue_batch(release=...)``
    gives it up in the store's round trip."""
    async def body(store: Store) -> None:
        registrations, _ = await store.register_batch(
            [NewRound("L", "r1", "h1", 0.0, 0.0, 2, body=b"{}"), NewRound("M", "m1", "hm", 0.0, 0.0, 2,
                                                                           status="no_outcome")],
            [], lease=Lease("w1", TTL_MS))
        assert [r.fence for r in registrations] == [1, 0]
        assert await store.client.get(keys.lease("M")) is None
        again, _ = await store.register_batch([NewRound("L", "r2", "h2", 0.0, 0.0, 2, body=b"{}")], [],
                                              lease=Lease("w2", TTL_MS))
        assert again[0].fence == 0 and again[0].outcome == "new", "registered, not leased: w1 holds L"
        saved = await store.queue_batch([queued("r1", 1, 1)], release=("w1", ["L"]))
        assert saved == [SAVED_NOW]
        assert await store.client.get(keys.lease("L")) is None
        assert await store.acquire_lease("L", "w2", TTL_MS) == 2

    run(target, body)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(["acquire", "release", "lapse"]), st.sampled_from(["w1", "w2", "w3"])),
                max_size=12))
def test_the_token_moves_exactly_when_the_lease_changes_hands(redis_url: str, steps: list[tuple[str, str]]) -> None:
    """Any sequence of acquires, releases and lapses equals the model played one step at a time:
    the holder (if any) is the only one let in; the token goes up by one whenever an owner other
    than the last one it was handed to takes the lease."""
    async def body() -> None:
        store = Store.from_url(redis_url, history_length=3)
        await store.client.delete(keys.lease("P"), keys.fence("P"))
        holder: str | None = None
        last: str | None = None
        token = 0
        try:
            for op, owner in steps:
                if op == "acquire":
                    got = await store.acquire_lease("P", owner, TTL_MS)
                    if holder not in (None, owner):
                        assert got == 0
                        continue
                    if last != owner:
                        token, last = token + 1, owner
                    holder = owner
                    assert got == token
                elif op == "release":
                    await store.release_leases(["P"], owner)
                    holder = None if holder == owner else holder
                else:
                    await store.client.delete(keys.lease("P"))  # what a lapse leaves
                    holder = None
        finally:
            await store.close()

    asyncio.run(body())
