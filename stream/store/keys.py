"""Redis key builders, exactly as the key table of docs/contracts.md says.

Every key starts with :data:`PREFIX`. The part in ``{…}`` is the Redis Cluster hash tag:
all of one ladder's keys (ladder hash, leaderboard, rounds index, round records, round
results, stored fan-outs) share the slot of ``{L}``; all of one player's keys (state hash,
history) share the slot of ``{L|P}``. Scripts touch keys of one slot only.
"""

from __future__ import annotations

from collections.abc import Iterable

PREFIX = "ems:"
PLAYER_TAG_SEPARATOR = "|"


def ladders() -> str:
    """Set of every ladder name."""
    return f"{PREFIX}ladders"


def ladder(ladder_name: str) -> str:
    """Hash: ``seq``, ``rounds_rated``, ``players``, ``last_round``, ``updated_at``."""
    return f"{PREFIX}ladder:{{{ladder_name}}}"


def leaderboard(ladder_name: str) -> str:
    """Sorted set: member = player, score = display rating."""
    return f"{PREFIX}lb:{{{ladder_name}}}"


def player_names(ladder_name: str) -> str:
    """Sorted set: every player on the leaderboard, all at score 0 (a name index for prefix search)."""
    return f"{PREFIX}names:{{{ladder_name}}}"


def rounds(ladder_name: str) -> str:
    """Sorted set of round ids by sequence number."""
    return f"{PREFIX}rounds:{{{ladder_name}}}"


def registered_rounds(ladder_name: str) -> str:
    """Sorted set: rounds whose phase one has not finished (status ``registered``), score = seq."""
    return f"{PREFIX}registered:{{{ladder_name}}}"


def incomplete_rounds(ladder_name: str) -> str:
    """Sorted set: rounds not yet ``rated`` (the sweeper's ledger), score = when the sweeper may re-drive it."""
    return f"{PREFIX}incomplete:{{{ladder_name}}}"


def round_emitted(ladder_name: str, round_id: str) -> str:
    """Set: players whose RatingChange of the round was emitted (deleted once all were)."""
    return f"{PREFIX}emitted:{{{ladder_name}}}:{round_id}"


def round_record(ladder_name: str, round_id: str) -> str:
    """Hash: the round's status, sequence number, field size, pending count, times, content hash."""
    return f"{PREFIX}round:{{{ladder_name}}}:{round_id}"


def round_results(ladder_name: str, round_id: str) -> str:
    """Hash: player → RatingChange JSON (the round page and the re-emission source)."""
    return f"{PREFIX}round-results:{{{ladder_name}}}:{round_id}"


def round_perf(ladder_name: str, round_id: str) -> str:
    """Hash: phase one's stored fan-out (partition, ``partition.k`` for a split one's parts → PlayerUpdate JSON)."""
    return f"{PREFIX}round-perf:{{{ladder_name}}}:{round_id}"


def lease(ladder_name: str) -> str:
    """String, expiring (PX): the owner id of the attempt holding the ladder's phase-one lease
    (one rater per ladder at a time: acquire_lease.lua)."""
    return f"{PREFIX}lease:{{{ladder_name}}}"


def fence(ladder_name: str) -> str:
    """Hash, never expiring: ``token``, the ladder's fencing counter (up each time the lease changes
    hands), and ``owner``, whom that token was handed to; save_fanout.lua refuses a lower token."""
    return f"{PREFIX}fence:{{{ladder_name}}}"


def erased(ladder_name: str) -> str:
    """Hash: pseudonym of each erased player → when (``stream erase``); never the erased id."""
    return f"{PREFIX}erased:{{{ladder_name}}}"


def round_digests(ladder_name: str, round_id: str) -> str:
    """Set: SHA-1 hex of each stored fan-out message (phase two's check of incoming updates)."""
    return f"{PREFIX}round-digests:{{{ladder_name}}}:{round_id}"


def player(ladder_name: str, player_id: str) -> str:
    """Hash: the fields of :data:`stream.store.player_hash.FIELDS`."""
    return f"{PREFIX}player:{{{ladder_name}{PLAYER_TAG_SEPARATOR}{player_id}}}"


def players(ladder_name: str, player_ids: Iterable[str]) -> list[str]:
    """:func:`player` of each id (the ladder's part written once)."""
    head = f"{PREFIX}player:{{{ladder_name}{PLAYER_TAG_SEPARATOR}"
    return [f"{head}{player_id}}}" for player_id in player_ids]


def history(ladder_name: str, player_id: str) -> str:
    """List, newest last, bounded: one RatingChange JSON per rated round."""
    return f"{PREFIX}history:{{{ladder_name}{PLAYER_TAG_SEPARATOR}{player_id}}}"


def corrections(ladder_name: str) -> str:
    """Hash: correction id → JSON of each correction applied to the ladder (its ledger: idempotency)."""
    return f"{PREFIX}corrections:{{{ladder_name}}}"


def correction_plan(ladder_name: str, correction_id: str) -> str:
    """String (JSON), while a correction is applied: player → [mu, sigma] before it, written whole
    before the re-rate writes anything; a redelivered correction computes its events from it."""
    return f"{PREFIX}correction-plan:{{{ladder_name}}}:{correction_id}"


def rejected_corrections(ladder_name: str) -> str:
    """Hash: correction id → JSON ``{reason, message}`` of a correction the worker dead-lettered
    (what ``stream void/amend --wait`` reports; not consulted for idempotency)."""
    return f"{PREFIX}corrections-rejected:{{{ladder_name}}}"


# ---- matchmaking: every key of one queue shares the slot of ``{q:QUEUE}`` ----------------------
def _queue_tag(queue: str) -> str:
    return f"{{q:{queue}}}"


def mm_pool(queue: str) -> str:
    """Hash: ticket id → JSON ``{players, created_at, joined_at, latencies}`` of every waiting ticket."""
    return f"{PREFIX}mm:pool:{_queue_tag(queue)}"


def mm_waiting(queue: str) -> str:
    """Hash: player → the id of the live ticket he waits with (at most one per queue)."""
    return f"{PREFIX}mm:waiting:{_queue_tag(queue)}"


def mm_in_match(queue: str) -> str:
    """Hash: player → the id of his match not rated yet (joins rejected ``in_match`` meanwhile)."""
    return f"{PREFIX}mm:inmatch:{_queue_tag(queue)}"


def mm_status(queue: str) -> str:
    """Hash: ticket id → JSON of its last status (the idempotency ledger of joins and cancels)."""
    return f"{PREFIX}mm:status:{_queue_tag(queue)}"


def mm_finished(queue: str) -> str:
    """Sorted set: tickets (and ``m:``match ids) done with, score = when; trimmed after a day."""
    return f"{PREFIX}mm:finished:{_queue_tag(queue)}"


def mm_matches(queue: str) -> str:
    """Hash: match id → the Match JSON as emitted (with its predicted win probabilities)."""
    return f"{PREFIX}mm:matches:{_queue_tag(queue)}"


def mm_live(queue: str) -> str:
    """Sorted set: matches whose players are in match (round not rated yet), score = formed_at."""
    return f"{PREFIX}mm:live:{_queue_tag(queue)}"


def mm_outcomes(queue: str) -> str:
    """Hash: match id → ``rated|when`` or ``expired|when`` (its players released)."""
    return f"{PREFIX}mm:outcomes:{_queue_tag(queue)}"


def mm_outbox(queue: str) -> str:
    """Hash: entry id (match id, ``t:``ticket id) → records to send, until the broker acknowledged them."""
    return f"{PREFIX}mm:outbox:{_queue_tag(queue)}"


def mm_recent(queue: str) -> str:
    """List, newest first, bounded: ``formed_at quality max_wait`` of the queue's recent matches."""
    return f"{PREFIX}mm:recent:{_queue_tag(queue)}"


def mm_waits(queue: str) -> str:
    """List, newest first, bounded: ``formed_at wait`` of the recently matched tickets."""
    return f"{PREFIX}mm:waits:{_queue_tag(queue)}"


def mm_version(queue: str) -> str:
    """String, a counter: bumped by every script call that changes the pool (mm_apply.lua, mm_commit.lua),
    so a worker holding a copy of the pool knows it is current while the counter is what it last saw."""
    return f"{PREFIX}mm:version:{_queue_tag(queue)}"


def mm_keys(queue: str) -> list[str]:
    """Every matchmaking key of ``queue``, in the order the mm_*.lua scripts take them."""
    return [mm_pool(queue), mm_waiting(queue), mm_in_match(queue), mm_status(queue), mm_finished(queue),
            mm_matches(queue), mm_live(queue), mm_outcomes(queue), mm_outbox(queue), mm_recent(queue),
            mm_waits(queue), mm_version(queue)]


def health(ladder_name: str) -> str:
    """Hash: the ladder's rating health: ``last_seq`` (last scored round), ``c:<field>`` cumulative and
    ``r:<field>`` rolling sums (stream/store/health.py ``FIELDS``)."""
    return f"{PREFIX}health:{{{ladder_name}}}"


def health_window(ladder_name: str) -> str:
    """List: the last HEALTH_WINDOW scored rounds, newest first, each ``seq,<fields>,median_mu``."""
    return f"{PREFIX}health_window:{{{ladder_name}}}"


def climbers(ladder_name: str) -> str:
    """List: rapid-climber events (JSON), newest first, capped (stream/store/health.py)."""
    return f"{PREFIX}climbers:{{{ladder_name}}}"


def league_shares(ladder_name: str) -> str:
    """Sorted set: the ladder's league thresholds from target shares (JSON: thresholds, counts,
    players), score = the time they took effect (stream/store/seasons.py)."""
    return f"{PREFIX}shares:{{{ladder_name}}}"


def season_archive(ladder_name: str, season: str) -> str:
    """Sorted set: a season's final standings, member = player, score = his final display rating."""
    return f"{PREFIX}season_lb:{{{ladder_name}}}:{season}"


def season_standings(ladder_name: str, season: str) -> str:
    """Hash: a season's final standings, player -> JSON (mu, sigma, rating, tier, league, division, rank)."""
    return f"{PREFIX}season:{{{ladder_name}}}:{season}"


def season_archives(ladder_name: str) -> str:
    """Set: the names of the ladder's archived seasons (``stream erase`` removes a player from each)."""
    return f"{PREFIX}season_archives:{{{ladder_name}}}"


def season_schedule(ladder_name: str) -> str:
    """List: the ladder's seasons started with ``stream season start``, one JSON
    ``{"name", "start" (epoch seconds), "centre" (optional)}`` each, in start order: the schedule of
    record the workers read (merged with the ``LADDERS`` entry's, stream/store/seasons.py)."""
    return f"{PREFIX}season_schedule:{{{ladder_name}}}"


def season_schedules() -> str:
    """Set: the ladders that have a :func:`season_schedule` key (what a worker's refresh reads)."""
    return f"{PREFIX}season_schedules"
