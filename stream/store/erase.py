"""Erasure of one player from a ladder (``stream erase LADDER PLAYER``; docs/history.md, Erasure).

His own keys (state hash, history) and leaderboard entry go; in the ladder's stored rounds his id is
replaced by a pseudonym, ``erased:`` + the first 32 hex digits of HMAC-SHA256(``ERASURE_SECRET``,
ladder NUL player): deterministic, so a re-run completes an interrupted erasure; not reversible
without the secret. Pseudonyms are recorded in ``ems:erased:{L}``, never the id they replace.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from dataclasses import dataclass
from typing import Any

from stream.contracts import PlayerUpdate, RatingChange
from stream.store import keys, player_hash, seasons
from stream.store.bulk import BulkWriter, members, ladder_info
from stream.store.client import as_bytes, read_each
from stream.store.store import Store, encode_float

PSEUDONYM_PREFIX = "erased:"


class ErasureRefused(ValueError):
    """The player cannot be erased now (unknown, a round of his in flight, no secret configured)."""


@dataclass(frozen=True)
class Erasure:
    """What an erasure did."""

    ladder: str
    pseudonym: str
    rounds: int
    """Rounds whose stored results or fan-out named the player."""


def pseudonym(secret: str, ladder: str, player: str) -> str:
    """The player's pseudonym in the ladder (module docstring)."""
    digest = hmac.new(secret.encode(), f"{ladder}\0{player}".encode(), hashlib.sha256).hexdigest()
    return PSEUDONYM_PREFIX + digest[:32]


def _renamed_fanout(raw: bytes, player: str, alias: str) -> bytes | None:
    """The fan-out message with the player renamed (None if he is not in it)."""
    if _json_form(player) not in raw:
        return None
    update = PlayerUpdate.from_json(raw)
    if player not in update.players:
        return None
    update.players = [alias if p == player else p for p in update.players]
    return update.to_json().encode()


def _json_form(text: str) -> bytes:
    """How ``text`` appears inside a JSON string written with ensure_ascii=False (quotes excluded)."""
    return json.dumps(text, ensure_ascii=False)[1:-1].encode()


async def erase_player(store: Store, ladder: str, player: str, *, secret: str, now: float) -> Erasure:
    """Erase ``player`` from ``ladder`` (module docstring); raises :class:`ErasureRefused`."""
    if not secret:
        raise ErasureRefused("ERASURE_SECRET is not set: the pseudonyms are keyed with it (docs: Erasure)")
    if (why := (await ladder_info(store, ladder)).refusal(ladder, "erase once it is done")) is not None:
        raise ErasureRefused(why)
    alias = pseudonym(secret, ladder, player)
    state = await store.client.hmget(keys.player(ladder, player), player_hash.PROGRESS)
    if state[0] is None:
        raise ErasureRefused(f"no player {player!r} in ladder {ladder!r} (never rated, or already erased)")
    if int(state[1] or 0) > int(state[0]):
        raise ErasureRefused(f"a round of {player!r} is being rated: erase once it is")
    registered = await members(store, keys.registered_rounds(ladder))
    for round_id in registered:
        body = await store.client.hget(keys.round_record(ladder, round_id), "body")
        if body is not None and _json_form(player) in as_bytes(body):  # conservative: any mention
            raise ErasureRefused(f"round {round_id!r} of {player!r} is being rated: erase once it is")
    if await store.client.exists(keys.player(ladder, alias)):
        raise ErasureRefused(f"the pseudonym {alias!r} is a player of the ladder")

    def reads(pipe: Any, round_id: str) -> None:  # his result, the fan-out, whether his event was emitted
        pipe.hget(keys.round_results(ladder, round_id), player)
        pipe.hgetall(keys.round_perf(ladder, round_id))
        pipe.sismember(keys.round_emitted(ladder, round_id), player)

    rounds = await members(store, keys.rounds(ladder))
    touched = 0
    writes = BulkWriter(store)
    async for round_id, (result, fanout, emitted) in read_each(store.client, rounds, reads):
        renamed = {field: new for field, value in fanout.items()
                   if (new := _renamed_fanout(as_bytes(value), player, alias)) is not None}
        if result is None and not renamed and not emitted:
            continue
        touched += 1
        if result is not None:
            change = RatingChange.from_json(as_bytes(result))
            change.player = alias
            await writes.command("HSET", keys.round_results(ladder, round_id), alias, change.to_json().encode())
            await writes.command("HDEL", keys.round_results(ladder, round_id), player)
        if renamed:
            await writes.hset(keys.round_perf(ladder, round_id), renamed)
            await writes.command("DEL", keys.round_digests(ladder, round_id))  # rebuilt from the renamed fan-out on use
        if emitted:
            await writes.command("SADD", keys.round_emitted(ladder, round_id), alias)
            await writes.command("SREM", keys.round_emitted(ladder, round_id), player)
    await writes.close()
    # the player's own keys last: until they are gone a re-run finds him and completes the erasure
    await store.client.hset(keys.erased(ladder), alias, encode_float(now))
    if await store.client.zrem(keys.leaderboard(ladder), player):  # counted out once, also on a re-run
        await store.client.hincrby(keys.ladder(ladder), "players", -1)
    await store.client.zrem(keys.player_names(ladder), player)
    await seasons.forget_player(store.client, ladder, player)  # his archived season standings
    await store.client.delete(keys.history(ladder, player), keys.player(ladder, player))  # one slot: {L|P}
    return Erasure(ladder, alias, touched)

