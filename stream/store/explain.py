"""What explaining a stored rating change reads (``stream.pipeline.explain``): one round trip of
read-only commands (the read API may run as the ``ems-reader`` ACL user of docs/security.md:
``+@read``, no scripts; what-if's read is ``Store.read_states``, plain HMGETs too).

The player's stored change in the round (``round-results``), every result of the round (the
others' ratings before it: the expected rank), the round's record, its stored fan-out (the round's
weight and the player's share; absent once retention trimmed it), the player's rating history
(his previous round: the drift) and, for a correction's change, the correction's ledger entry.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from stream.store import keys
from stream.store.client import AsyncRedis, as_text


@dataclass(frozen=True)
class ChangeInputs:
    """The stored documents a change's explanation is built from (JSON already decoded)."""

    ladder_exists: bool
    player_exists: bool
    result: dict[str, Any] | None
    """The player's RatingChange stored for the round (None: he has none in it)."""
    results: list[dict[str, Any]]
    record: dict[str, str]
    fanout: list[dict[str, Any]]
    history: list[dict[str, Any]]
    """The player's stored history, oldest first (bounded: HISTORY_LENGTH)."""
    corrections: dict[str, dict[str, Any]]
    """Ledger entries of the corrections named in the history's changes of this round."""


async def change_inputs(r: AsyncRedis, ladder: str, player: str, round_id: str) -> ChangeInputs:
    """Read everything :class:`ChangeInputs` holds (the corrections' ledger entries in a second
    round trip, only when the history has correction changes of the round)."""
    pipe = r.pipeline(transaction=False)
    pipe.sismember(keys.ladders(), ladder)
    pipe.exists(keys.player(ladder, player))
    pipe.hgetall(keys.round_results(ladder, round_id))
    pipe.hgetall(keys.round_record(ladder, round_id))
    pipe.hvals(keys.round_perf(ladder, round_id))
    pipe.lrange(keys.history(ladder, player), 0, -1)
    member, exists, results, record, fanout, history = await pipe.execute()
    by_player = {as_text(k): json.loads(v) for k, v in results.items()}
    entries = [json.loads(h) for h in history]
    ids = sorted({h["correction_id"] for h in entries if h.get("round_id") == round_id and h.get("correction_id")})
    ledger: dict[str, dict[str, Any]] = {}
    if ids:
        for cid, raw in zip(ids, await r.hmget(keys.corrections(ladder), ids)):
            if raw is not None:
                ledger[cid] = json.loads(raw)
    return ChangeInputs(
        ladder_exists=bool(member), player_exists=bool(exists), result=by_player.get(player),
        results=list(by_player.values()), record={as_text(k): as_text(v) for k, v in record.items()},
        fanout=[json.loads(v) for v in fanout], history=entries, corrections=ledger)

