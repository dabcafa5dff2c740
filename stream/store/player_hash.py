"""The player hash (:func:`stream.store.keys.player`): its fields, named once, the views the
store reads and writes it by, and the plain reader of many players' fields (:func:`read`).

Python names the fields from here; the Lua scripts name theirs literally (tests/store/test_player_hash.py
checks them against :data:`FIELDS`). Numbers are stored as text (floats as ``repr``, exact).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from stream.store import keys
from stream.store.client import AsyncRedis, pipelined

MU = "mu"
SIGMA = "sigma"
ROUNDS = "rounds"
LAST_ROUND = "last_round"
LAST_TIME = "last_time"
LAST_SEQ = "last_seq"
QUEUED_SEQ = "queued_seq"
QUEUED_PREV = "queued_prev"
QUEUED_OLDER = "queued_older"
DISPLAY_RATING = "display_rating"
TIER = "tier"
STATE = "state"

FIELDS: dict[str, str] = {
    MU: "posterior mean (float)",
    SIGMA: "posterior deviation (float)",
    ROUNDS: "rounds the player was rated in (int)",
    LAST_ROUND: "id of the player's last applied round",
    LAST_TIME: "time of the player's last applied round (float, the rating clock)",
    LAST_SEQ: "seq of the player's last applied round (the chain rule's and the barrier's watermark)",
    QUEUED_SEQ: "seq of the newest round phase one rated for the player (mark_queued.lua); above "
                "last_seq while phase two has not applied it",
    QUEUED_PREV: "the next newest round rated for the player that a barrier may wait for (mark_queued.lua)",
    QUEUED_OLDER: "the older ones, oldest first, space-separated (mark_queued.lua)",
    DISPLAY_RATING: "the shown rating (float; also the leaderboard score)",
    TIER: 'tier name ("" = unplaced)',
    STATE: "the packed engine state (stream/engine/state.py): the factor history phase one carries on",
}
"""Every field of a player hash, with what it holds."""


def numeric(*names: str) -> tuple[str, ...]:
    """``names`` as load_players.lua reads a number (``#name``: a float column, NaN where absent)."""
    return tuple(f"#{name}" for name in names)


WRITE_FIELDS = (LAST_SEQ, QUEUED_SEQ, MU, SIGMA, ROUNDS, LAST_ROUND, LAST_TIME, DISPLAY_RATING, TIER, STATE)
"""What a bulk write sets (:class:`PlayerRows`): apply_player_update.lua's fields and mark_queued.lua's
queued_seq."""
BARRIER = (*numeric(QUEUED_SEQ, LAST_SEQ, QUEUED_PREV), QUEUED_OLDER)
"""What the per-player barrier reads (:meth:`stream.store.store.Store.priors`)."""
PRIORS = (*numeric(MU, SIGMA, LAST_TIME), *BARRIER)
"""The priors as numbers, with the barrier's fields."""
PRIOR_STATES = (*BARRIER, STATE)
"""The priors as the packed engine states (phase one of a batch carries the factor history forward;
the states hold mu, sigma and last_time, so those fields are not read again)."""
STATES = (*numeric(LAST_SEQ), STATE, TIER)
"""What phase two reads of the players it applies (load_players.lua)."""
STATES_QUEUED = (*STATES, *numeric(QUEUED_SEQ))
""":data:`STATES` with queued_seq (what-if's read)."""
READ_STATES = tuple(name.lstrip("#") for name in STATES_QUEUED)
""":data:`STATES_QUEUED` as an HMGET reads them (the seqs as text)."""
RATING = (MU, SIGMA)
"""The posterior alone (predictions, lobbies, a correction's plan)."""
VIEW = (MU, SIGMA, ROUNDS, LAST_ROUND, LAST_TIME, DISPLAY_RATING, TIER)
"""What the read API shows of a player (:func:`stream.store.queries.player`)."""
ELIGIBILITY = (MU, SIGMA, ROUNDS, TIER, LAST_TIME)
"""What the leaderboard's interval and eligibility columns read."""
SEASON = (MU, SIGMA, LAST_TIME, DISPLAY_RATING, TIER, ROUNDS)
"""A player's season standing: what an archive reads (``stream.pipeline.seasons``)."""
PROGRESS = (LAST_SEQ, QUEUED_SEQ)
"""Where a player's rating stands against the ladder's rounds (applied, queued)."""


@dataclass(frozen=True)
class PlayerRows:
    """Final player hashes of a bulk write (backfill, a correction's re-rate), column by column:
    one entry per player, each already the text (or number) stored. ``seq`` is both ``last_seq`` and
    ``queued_seq`` (a bulk write leaves nothing queued)."""

    seq: Sequence[int]
    mu: Sequence[str]
    sigma: Sequence[str]
    rounds: Sequence[int]
    last_round: Sequence[str]
    last_time: Sequence[str]
    display_rating: Sequence[str]
    tier: Sequence[str]
    state: Sequence[bytes]

    def rows(self) -> list[tuple[Any, ...]]:
        """Per player, the values of :data:`WRITE_FIELDS` in that order."""
        columns = {LAST_SEQ: self.seq, QUEUED_SEQ: self.seq, MU: self.mu, SIGMA: self.sigma, ROUNDS: self.rounds,
                   LAST_ROUND: self.last_round, LAST_TIME: self.last_time, DISPLAY_RATING: self.display_rating,
                   TIER: self.tier, STATE: self.state}
        return list(zip(*(columns[name] for name in WRITE_FIELDS)))


async def read(r: AsyncRedis, ladder: str, players: Sequence[str], fields: Sequence[str]) -> list[list[Any]]:
    """HMGET ``fields`` of each player's hash, the replies as they are (None where missing): chunked
    pipelines (:func:`~stream.store.client.pipelined`)."""
    return await pipelined(r, players, lambda pipe, player: pipe.hmget(keys.player(ladder, player), fields))


def known(fields: Sequence[str]) -> list[str]:
    """``fields`` as a list, each checked to be a field of the schema (KeyError names an unknown one)."""
    for name in fields:
        if name not in FIELDS:
            raise KeyError(f"not a player-hash field: {name!r}")
    return list(fields)
