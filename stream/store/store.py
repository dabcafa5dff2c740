"""The pipeline's Redis store: round registration, priors, fan-outs, atomic idempotent updates.

Atomic writes are Lua scripts (``scripts/*.lua``), each on ONE hash slot (per-player on ``{L|P}``,
round bookkeeping on ``{L}``) so Redis Cluster works unchanged; a batch is one pipeline. Floats
are stored as ``repr(float)``, exact, so the stream equals the in-process replay.
"""

from __future__ import annotations

import bisect
import functools
import hashlib
import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any, cast

import numpy as np
import redis.asyncio as aioredis
from redis.asyncio.cluster import RedisCluster
from redis.exceptions import NoScriptError, ResponseError

from stream import dependencies
from stream.store import keys, player_hash
from stream.store.client import AsyncPipeline as Pipeline
from stream.store.client import AsyncRedis, as_bytes, as_text, read_each
from stream.store.lean import LeanPipeline, lean_capable, response_callbacks
from stream.store.cancel import make_cancel_safe
from stream.store.packing import use_hiredis_packing
from stream.store.scripts import SCRIPT_NAMES, source

STATUS_REGISTERED = "registered"
STATUS_PENDING = "pending"
STATUS_RATED = "rated"
STATUS_NO_OUTCOME = "no_outcome"
STATUS_FAILED = "failed"
"""A round whose phase one kept raising: dead-lettered as ``internal_error``, rates nobody."""

OUTCOME_NEW = "new"
OUTCOME_CONFLICT = "conflict"
OUTCOME_HELD = "held"
"""A correction holds the ladder: nothing was registered (``status`` = its id); register again later."""
OUTCOME_MODEL_CHANGED = "model_changed"
"""The ladder recorded another model than the round names: nothing registered (``status`` = the stored model)."""
OUTCOME_LATE = "late"
"""A by-occurred_at ladder's round older than its newest: registered ``late``, the ladder held for its
insert correction (``status`` = the correction's id)."""
STATUS_LATE = "late"
OUTCOME_STALE_SCHEDULE = "stale_schedule"
"""A season of record starts at or before the round, newer than the worker's ``schedule_version``: nothing
registered (nor the call's later rounds); refresh the schedule and register again (``status`` = its version)."""
_NOT_REGISTERED = frozenset(outcome.encode() for outcome in (OUTCOME_CONFLICT, OUTCOME_HELD, OUTCOME_MODEL_CHANGED,
                                                             OUTCOME_LATE, OUTCOME_STALE_SCHEDULE))
"""register_round.lua's outcomes (as its reply's bytes) of a round it did not register to rate now."""
STATUS_VOIDED = "voided"
"""A round a correction removed from the ladder's history (record and seq stay: re-publishing is a no-op)."""

LOAD_PLAYERS_SHA = hashlib.sha1(source("load_players").encode()).hexdigest()
"""The SHA1 Redis knows load_players.lua by (once SCRIPT LOAD ran: :meth:`Store.load_scripts`)."""

PLAYERS_PER_CALL = 500
"""Players per script call on a single Redis (bounds how long one call blocks it); one on a Cluster."""

ROUND_PLAYERS_PER_CALL = 5_000
"""Players per call of record_round_results.lua and confirm_emitted.lua (a 250,000-player round in one
call would block Redis for every client)."""

ROUNDS_PER_CALL = 1_000
"""Rounds per register_round.lua and verify_updates.lua call (one call per ladder of a batch otherwise)."""


@dataclass(frozen=True)
class _Results:
    """Rounds' results as columns: round ``i``'s rows are ``starts[i]:starts[i + 1]`` (newcomer
    flags as one ``"0"``/``"1"`` text)."""

    ladders: Sequence[str]
    round_ids: Sequence[str]
    starts: Sequence[int]
    players: Sequence[str]
    changes: Sequence[bytes]
    shown: Sequence[str]
    newcomer: str


def _segments(ladders: Sequence[str], starts: Sequence[int]) -> list[list[tuple[int, int, int]]]:
    """Round-side script calls (record_round_results.lua, confirm_emitted.lua), each a list of
    (round, first row, end row) segments: consecutive rounds of one ladder together up to
    ROUND_PLAYERS_PER_CALL players a call, a bigger round cut in parts over several calls (a round
    without rows keeps its segment)."""
    calls: list[list[tuple[int, int, int]]] = []
    size = 0
    for r, ladder in enumerate(ladders):
        lo, hi = starts[r], starts[r + 1]
        step = ROUND_PLAYERS_PER_CALL
        parts = (((lo, hi),) if hi - lo <= step  # one segment: a small round, or one without rows
                 else [(start, min(start + step, hi)) for start in range(lo, hi, step)])
        for start, stop in parts:
            if not calls or ladders[calls[-1][0][0]] != ladder or size + stop - start > ROUND_PLAYERS_PER_CALL:
                calls.append([])
                size = 0
            calls[-1].append((r, start, stop))
            size += stop - start
    return calls


def _by_ladder(items: Sequence[FanOutCheck | NewRound]) -> list[list[int]]:
    """Indices of the items of each per-ladder script call (verify_updates.lua, register_round.lua):
    one ladder's, in their order, up to ROUNDS_PER_CALL a call, whatever the ladders' interleaving
    (ladders share no key; a round's registration sees its ladder's rounds before it)."""
    by_ladder: dict[str, list[int]] = {}
    for i, item in enumerate(items):
        by_ladder.setdefault(item.ladder, []).append(i)
    return [index[k:k + ROUNDS_PER_CALL] for index in by_ladder.values()
            for k in range(0, len(index), ROUNDS_PER_CALL)]


def encode_float(value: float) -> str:
    """Exact text form of a float (``repr`` round-trips bit for bit)."""
    return repr(float(value))


def _int(raw: bytes | None) -> int:
    return 0 if raw is None else int(raw)


NEVER_DUE = math.inf
"""Due time of a round the sweeper must never re-drive (stored as Redis' ``+inf`` score)."""


def encode_due(due_at: float) -> str:
    """A sweep due time as a zset score (``+inf`` for :data:`NEVER_DUE`), rounded up to whole seconds:
    integer scores stay integers in a small zset's listpack (no strtod per entry an insert walks past)."""
    return "+inf" if math.isinf(due_at) else str(math.ceil(due_at))


@dataclass(slots=True)
class Registration:
    """Outcome of registering a round id (``new``, ``existing``, ``conflict``, ...), its seq and status.
    ``earlier``: the ladder's rounds with a smaller seq still ``registered`` (phase one completes them
    first). Not frozen: a batch builds one per round (as :class:`NewRound`)."""

    outcome: str
    seq: int
    status: str
    earlier: tuple[str, ...] = ()
    corrections: int = 0
    """The ladder's ``corrections`` counter: phase one's cached posteriors are stale once it moves."""
    fence: int = 0
    """The fencing token of the ladder's lease taken in the same round trip (0: not asked, or held by another)."""


@dataclass(slots=True)
class NewRound:
    """A round to register (register_round.lua's arguments). Not frozen: phase one builds one per
    round, and a frozen ``__init__`` costs ~2 µs more."""

    ladder: str
    round_id: str
    content_hash: str
    occurred_at: float
    received_at: float
    field_size: int
    status: str = STATUS_REGISTERED
    body: str | bytes = ""
    due_at: float = NEVER_DUE
    perf_ceiling: float = math.inf
    model: str = ""
    """The ladder's model: recorded with its first round to rate, checked by later ones ("" = not checked)."""
    model_params: str = ""
    """A digest of the model's parameters, recorded with it."""
    by_time: bool = False
    """The ladder is rated in occurred_at order: an older round than its newest is ``late``."""
    schedule_version: int = 0
    """The ladder's schedule version the worker holds (``SeasonRecord.versions``; one per call)."""


@dataclass(slots=True)
class QueuedRound:
    """A rated round's last phase-one write (:meth:`Store.queue_batch`): players marked queued for
    ``seq``, fan-out ((partition, section) pairs) stored, round pending. Not frozen, as :class:`NewRound`."""

    ladder: str
    round_id: str
    players: Sequence[str]
    seq: int
    pending: int
    messages: Sequence[tuple[int, bytes]]
    due_at: float = NEVER_DUE
    token: str = ""
    """The attempt's token, recorded as the round's ``stored_by``."""
    after: str | None = None
    """The round the attempt stored just before this one (rated from its posteriors): this one is
    stored only if that one was stored by this attempt, else :data:`SAVE_REFUSED`."""
    fence: int = 0
    """The writer's lease token: below the ladder's fence nothing is written (:data:`SAVE_FENCED`); 0: not fenced."""


SAVED_NOW = 1
"""Store.queue_batch: the round's fan-out was stored by this call."""
SAVED_BEFORE = 0
"""Store.queue_batch: the round was already past ``registered`` (stored by another attempt, or failed)."""
SAVE_REFUSED = -1
"""Store.queue_batch: nothing written, the round stays ``registered``: an earlier round of its ladder
still is, or ``QueuedRound.after`` was stored by another attempt (the chain lost)."""
SAVE_FENCED = -2
"""Store.queue_batch: nothing written (on a single Redis no mark either), the round stays ``registered``:
the writer's lease lapsed and another attempt took it (``QueuedRound.fence`` below the ladder's fence)."""


@dataclass(frozen=True)
class Lease:
    """A request for the phase-one leases of a batch's ladders: ``owner`` (an attempt's id), ``ttl_ms``."""

    owner: str
    ttl_ms: int


@dataclass(frozen=True)
class DueRound:
    """A round the sweeper claimed: incomplete past SWEEP_TIMEOUT_S (status ``registered`` or ``pending``)."""

    ladder: str
    round_id: str
    status: str
    seq: int
    progressing: bool = False
    """``pending`` with fewer players pending than at its previous claim: not re-sent this time."""


@dataclass
class Priors:
    """Participants' stored posteriors (phase one's input), aligned with the requested players.
    ``known`` is False for newcomers (nan: the caller fills the ladder's prior); ``blocked``: the
    players the per-player barrier holds (priors are final when it is empty)."""

    mu: np.ndarray | None
    sigma: np.ndarray | None
    last_time: np.ndarray | None
    known: np.ndarray | None
    """(``mu``, ``sigma``, ``last_time``, ``known``): None when read as packed ``states``, which hold them."""
    blocked: list[str] = field(default_factory=list)
    waiting_on: list[int] = field(default_factory=list)
    """Distinct ``seq`` of the rounds the blocked players wait for (their ``waits_for``)."""
    last_seq: np.ndarray | None = None
    """Each player's last applied seq (0: none)."""
    waits_for: np.ndarray | None = None
    """Per player, the seq the barrier waits for (:meth:`Store.priors`); held while above ``last_seq``."""
    states: list[bytes | None] | None = None
    """Each player's packed engine state (None: newcomer), when read (``load_priors(states=True)``)."""
    overtaken: list[str] = field(default_factory=list)
    """Players whose stored state already holds this round or a later one (``last_seq >= seq``):
    no prior of it, the attempt stops (``barrier.RoundOvertaken``)."""


@dataclass(frozen=True)
class StoredStates:
    """What phase two needs of some players, as columns: last applied seq, packed engine state
    and tier name (None where the player has none yet)."""

    last_seq: np.ndarray
    states: list[bytes | None]
    tiers: list[bytes | None]
    verified: list[list[bool]] = field(default_factory=list)
    """Per :class:`FanOutCheck`, whether each of its messages is one of the round's stored fan-out."""
    queued_seq: np.ndarray | None = None
    """Each player's ``queued_seq`` (0: none), where read (:meth:`Store.read_states`)."""


VERIFY_RAW_MAX = 10
"""Rounds of at most this many players are checked by their sections themselves, not SHA-1 digests
(verify_updates.lua's SMALL)."""


@dataclass(slots=True)
class FanOutCheck:
    """Messages claiming to belong to a round (verify_updates.lua tells which are of its stored fan-out):
    SHA-1 hex digests, or with ``raw`` the messages (:data:`VERIFY_RAW_MAX`). Not frozen, as :class:`NewRound`."""

    ladder: str
    round_id: str
    digests: Sequence[str | bytes]
    raw: bool = False


@dataclass(frozen=True)
class BatchWrites:
    """A phase-two batch's player writes as columns over all rows (round ``i``'s rows are
    ``starts[i]:starts[i + 1]``, maybe none): built and cut into script calls once per batch.
    ``tiers`` are names ("" = unplaced), ``changes`` RatingChange JSON; ``mu``, ``sigma`` and
    ``display_rating`` are the exact text stored (:func:`encode_float`)."""

    ladders: Sequence[str]
    round_ids: Sequence[str]
    seqs: Sequence[int]
    last_times: Sequence[float]
    starts: Sequence[int]
    players: Sequence[str]
    mu: Sequence[str]
    sigma: Sequence[str]
    rounds: Sequence[int]
    display_rating: Sequence[str]
    tiers: Sequence[str]
    states: Sequence[bytes]
    changes: Sequence[bytes]
    newcomer: np.ndarray

    def round_of(self) -> np.ndarray:
        """The round (index) of each row."""
        starts = np.asarray(self.starts, dtype=np.int64)
        return np.repeat(np.arange(len(self.ladders)), starts[1:] - starts[:-1])

    def results(self, applied: np.ndarray) -> _Results:
        """The results to record of the rows ``applied`` (a flag per row)."""
        if applied.all():
            return _Results(self.ladders, self.round_ids, self.starts, self.players, self.changes,
                            self.display_rating, _flags(self.newcomer))
        rows = np.flatnonzero(applied)
        index = rows.tolist()
        return _Results(self.ladders, self.round_ids, np.searchsorted(rows, self.starts).tolist(),
                        [self.players[i] for i in index], [self.changes[i] for i in index],
                        [self.display_rating[i] for i in index], _flags(self.newcomer[rows]))


def _flags(values: np.ndarray) -> str:
    """Boolean flags as one text, ``"1"`` or ``"0"`` each (record_round_results.lua's newcomer flags)."""
    return (np.asarray(values, dtype=np.uint8) + 48).tobytes().decode()


def _columns(replies: list[Any], fields: Sequence[str]) -> dict[str, np.ndarray | list[bytes | None]]:
    """load_players.lua replies (a reply per field per call) as a column per field over all calls:
    numbers (``#name``) as a float array, NaN where absent; bytes as a list, None where absent."""
    out: dict[str, np.ndarray | list[bytes | None]] = {}
    for j, field_ in enumerate(fields):
        if field_.startswith("#"):
            texts = b" ".join(reply[j] for reply in replies)
            out[field_[1:]] = np.array(texts.split(), dtype=np.float64)
        elif len(replies) == 1:  # one call (up to PLAYERS_PER_CALL players): its list as it is
            out[field_] = replies[0][j]
        else:
            out[field_] = [value for reply in replies for value in reply[j]]
    return out


def _ids_and_seqs(reply: list[Any]) -> tuple[list[str], list[int]]:
    """A ``ZRANGE key 0 -1 WITHSCORES`` reply of round ids scored by seq, as (ids, seqs): flat
    ``[id, score, ...]`` (RESP2) or ``[[id, score], ...]`` (RESP3)."""
    if reply and isinstance(reply[0], list):
        return [as_text(rid) for rid, _ in reply], [int(float(seq)) for _, seq in reply]
    return [as_text(rid) for rid in reply[0::2]], [int(float(seq)) for seq in reply[1::2]]


def _seq_column(column: np.ndarray | list[bytes | None]) -> np.ndarray:
    """A numeric column of sequence numbers (NaN where absent) as int64, 0 where absent."""
    values = np.asarray(column, dtype=np.float64)
    return np.where(np.isnan(values), 0.0, values).astype(np.int64)


def _interleave(*columns: Sequence[Any]) -> list[Any]:
    """Per-row arguments from aligned columns, row by row (the scripts' per-player argument layout)."""
    return [value for row in zip(*columns) for value in row]


def fanout_fields(messages: Sequence[tuple[int, bytes]]) -> list[tuple[int | str, bytes]]:
    """The stored fan-out's hash fields: ``partition`` for a partition's message, ``partition.k``
    for the k-th further part of a split one (in partition order)."""
    out: list[tuple[int | str, bytes]] = []
    previous, n = -1, 0
    for partition, message in sorted(messages, key=itemgetter(0)):  # stable: a split message's parts in order
        n = n + 1 if partition == previous else 0
        out.append((partition if n == 0 else f"{partition}.{n}", message))
        previous = partition
    return out


def _fanout_keys(r: QueuedRound) -> list[str]:
    """save_fanout.lua's KEYS (the sixth: the chain's previous round, ``QueuedRound.after``)."""
    out = [keys.round_record(r.ladder, r.round_id), keys.round_perf(r.ladder, r.round_id),
           keys.registered_rounds(r.ladder), keys.incomplete_rounds(r.ladder), keys.fence(r.ladder)]
    if r.after is not None:
        out.append(keys.round_record(r.ladder, r.after))
    return out


def _fanout_args(r: QueuedRound, due: Callable[[float], str] = encode_due) -> list[Any]:
    """save_fanout.lua's ARGV: pending, due time, token, fence ("": none), then each field and message."""
    return [r.pending, due(r.due_at), r.token, r.fence or "",
            *(value for pair in fanout_fields(r.messages) for value in pair)]


class Store:
    """Async access to the service's Redis state (key schema: docs/contracts.md)."""

    def __init__(self, client: AsyncRedis, *, history_length: int, cluster: bool = False) -> None:
        """``cluster``: the Redis Cluster layout (one player per per-player script call) on any server
        (a ``RedisCluster`` client always gets it). Refuses another redis-py than the pinned one."""
        dependencies.check(dependencies.STORE)
        self.client = client
        self.cluster = cluster or isinstance(client, RedisCluster)  # commands routed by key slot
        make_cancel_safe(client)
        if isinstance(client, aioredis.Redis):  # a cluster client's node connections keep redis-py's packer
            use_hiredis_packing(client)
        self.history_length = history_length
        self.players_per_call = 1 if self.cluster else PLAYERS_PER_CALL
        self._sha: dict[str, str] = {}
        self._lean = response_callbacks(client) if isinstance(client, aioredis.Redis) and lean_capable(client) else None
        """:class:`LeanPipeline`'s response callbacks when ``client`` can run it, else None (redis-py's pipelines)."""

    @classmethod
    def from_url(cls, url: str, *, history_length: int, cluster: bool = False) -> "Store":
        return cls(aioredis.Redis.from_url(url), history_length=history_length, cluster=cluster)

    async def close(self) -> None:
        await self.client.aclose()

    async def load_scripts(self) -> None:
        """SCRIPT LOAD every script once (batches are then plain EVALSHA pipelines); the table is
        swapped in whole, so a concurrent coroutine never EVALSHAs a script not in it yet."""
        self._sha = {name: await self.client.script_load(source(name)) for name in SCRIPT_NAMES}

    async def _run(self, build: Callable[[Pipeline], object]) -> list[Any]:
        """Build and execute one pipeline (:meth:`_pipeline`): one round trip. If Redis lost its
        script cache (restart), reload the scripts and run it again (every script is idempotent)."""
        if not self._sha:
            await self.load_scripts()
        for attempt in range(2):
            pipe = self._pipeline()
            build(pipe)
            try:
                return await pipe.execute()
            except NoScriptError:
                if attempt:
                    raise
                await self.load_scripts()
        raise AssertionError("unreachable")

    def _pipeline(self) -> Pipeline:
        """A non-transactional pipeline: :class:`~stream.store.lean.LeanPipeline` on a single Redis,
        redis-py's (cluster) pipeline otherwise."""
        if self._lean is None:
            return self.client.pipeline(transaction=False)
        return LeanPipeline(cast(aioredis.Redis, self.client), self._lean)

    def _eval(self, pipe: Pipeline, name: str, keys_: Sequence[str], args: list[Any]) -> None:
        # execute_command, not pipe.evalsha: redis-py's cluster pipeline refuses the evalsha method,
        # while the raw command is routed to the slot of its keys (one slot per call by design)
        pipe.execute_command("EVALSHA", self._sha[name], len(keys_), *keys_, *args)

    def _chunks(self, n: int) -> list[range]:
        """Index ranges of the per-player script calls for n players."""
        step = self.players_per_call
        return [range(i, min(i + step, n)) for i in range(0, n, step)]

    def _per_player(self, pipe: Pipeline, script: str, player_keys: Sequence[str], args: list[Any]) -> int:
        """Queue ``script`` over the keys, ``players_per_call`` a call, each call with ``args``; how many calls."""
        chunks = self._chunks(len(player_keys))
        for chunk in chunks:
            self._eval(pipe, script, player_keys[chunk.start:chunk.stop], args)
        return len(chunks)

    async def _read_players(self, player_keys: Sequence[str],
                            fields: Sequence[str]) -> dict[str, np.ndarray | list[bytes | None]]:
        """HMGET ``fields`` of many player hashes (load_players.lua, one round trip): one column
        per field, aligned with ``player_keys`` (see :func:`_columns`)."""
        replies = await self._run(lambda pipe: self._per_player(pipe, "load_players", player_keys, list(fields)))
        return _columns(replies, fields)

    # ---- rounds -------------------------------------------------------------------------
    async def register_batch(self, rounds: Sequence[NewRound], players: Sequence[tuple[str, str]],
                             fields: Sequence[str] = player_hash.PRIOR_STATES, lease: Lease | None = None,
                             ) -> tuple[list[Registration], dict[str, np.ndarray | list[bytes | None]]]:
        """Assign each round its ladder seq once, in order (register_round.lua: :func:`_by_ladder`;
        ``new``, ``existing``, ``conflict`` or an ``OUTCOME_*`` that registered nothing), read each
        ladder's rounds still ``registered`` (``earlier``) and ``corrections`` counter, then ``fields``
        of the (ladder, player) hashes (load_players.lua): ONE round trip. A new round to rate enters
        the sweeper's ledger and keeps its ``body`` until its fan-out is stored. With ``lease``, first
        the lease of each ladder with a round to rate (``Registration.fence``). Returns the
        registrations and the players' columns (:func:`_columns`)."""
        player_keys = [keys.player(ladder, p) for ladder, p in players]
        ladders = list(dict.fromkeys(r.ladder for r in rounds))
        leased = [] if lease is None else list(dict.fromkeys(r.ladder for r in rounds if r.status == STATUS_REGISTERED))

        def build(pipe: Pipeline) -> None:
            for ladder in leased:
                assert lease is not None
                self._eval(pipe, "acquire_lease", [keys.lease(ladder), keys.fence(ladder)], [lease.owner, lease.ttl_ms])
            for ladder in ladders:
                pipe.sadd(keys.ladders(), ladder)
            self._register_into(pipe, calls)
            for ladder in ladders:  # the raw reply: redis-py's pairing costs ~1 µs a round still registered
                pipe.execute_command("ZRANGE", keys.registered_rounds(ladder), 0, -1, "WITHSCORES")
            for ladder in ladders:
                pipe.hget(keys.ladder(ladder), "corrections")
            self._per_player(pipe, "load_players", player_keys, list(fields))

        index = _by_ladder(rounds)
        calls = [[rounds[i] for i in call] for call in index]
        replies = await self._run(build)
        fences = {ladder: int(token) for ladder, token in zip(leased, replies)}
        replies = replies[len(leased):]
        first, end = len(ladders), len(ladders) + len(calls)
        registered = {ladder: _ids_and_seqs(reply) for ladder, reply in zip(ladders, replies[end:end + len(ladders)])}
        counters = {ladder: _int(raw) for ladder, raw in zip(ladders, replies[end + len(ladders):end + 2 * len(ladders)])}
        answers: list[Any] = [None] * len(rounds)
        for call, reply in zip(index, replies[first:end]):
            for i, answer in zip(call, reply):
                answers[i] = answer
        registrations = []
        for r, (outcome, seq, status) in zip(rounds, answers):
            ids, seqs = registered[r.ladder]
            earlier = () if outcome in _NOT_REGISTERED else tuple(ids[:bisect.bisect_left(seqs, int(seq))])
            registrations.append(Registration(outcome.decode(), int(seq), status.decode(), earlier,
                                              corrections=counters[r.ladder], fence=fences.get(r.ladder, 0)))
        return registrations, _columns(replies[end + 2 * len(ladders):], fields)

    def _register_into(self, pipe: Pipeline, calls: Sequence[Sequence[NewRound]]) -> None:
        """Queue register_round.lua calls, each of rounds of one ladder (:func:`_by_ladder`)."""
        received = functools.cache(encode_float)  # the times a batch's rounds share, as text once
        due = functools.cache(encode_due)
        for call in calls:
            ladder = call[0].ladder
            args: list[Any] = []
            for r in call:
                args += [r.round_id, r.content_hash, encode_float(r.occurred_at), received(r.received_at),
                         r.field_size, r.status, r.body, due(r.due_at),
                         encode_float(r.perf_ceiling) if math.isfinite(r.perf_ceiling) else "",
                         r.model, r.model_params, "1" if r.by_time else "0"]
            args.append(call[0].schedule_version)
            self._eval(pipe, "register_round",
                       [keys.ladder(ladder), keys.rounds(ladder), keys.registered_rounds(ladder),
                        keys.incomplete_rounds(ladder), *(keys.round_record(ladder, r.round_id) for r in call)], args)

    async def acquire_lease(self, ladder: str, owner: str, ttl_ms: int) -> int:
        """Take or renew the ladder's phase-one lease for ``ttl_ms`` (acquire_lease.lua): its fencing
        token (up each time it changes hands), or 0 if another owner holds it."""
        (token,) = await self._run(lambda pipe: self._eval(
            pipe, "acquire_lease", [keys.lease(ladder), keys.fence(ladder)], [owner, ttl_ms]))
        return int(token)

    async def release_leases(self, ladders: Sequence[str], owner: str) -> None:
        """Give up ``owner``'s phase-one lease of each ladder (release_lease.lua): one round trip
        (:meth:`queue_batch`'s ``release`` alone)."""
        if ladders:
            await self.queue_batch([], (owner, ladders))

    async def ladder_model(self, ladder: str) -> str | None:
        """The model the ladder rates with (recorded by its first round to rate; None: none yet)."""
        raw = await self.client.hget(keys.ladder(ladder), "model")
        return None if raw is None else as_text(raw)

    async def round_body(self, ladder: str, round_id: str) -> bytes | None:
        """The canonical JSON of a round still ``registered`` (None once its fan-out is stored)."""
        body = await self.client.hget(keys.round_record(ladder, round_id), "body")
        return None if body is None else as_bytes(body)

    async def claim_due_rounds(self, *, now: float, period: float, max_doublings: int, limit: int) -> list[DueRound]:
        """Claim every ladder's incomplete rounds past their due time (at most ``limit`` per ladder),
        by (ladder, seq). Claiming moves the due time ahead atomically, by a period doubling with each
        re-drive up to ``period * 2**max_doublings`` (claim_due_rounds.lua)."""
        ladders = sorted(as_text(m) for m in await self.client.smembers(keys.ladders()))
        if not ladders:
            return []
        pipe = self._pipeline()
        for ladder in ladders:
            pipe.zrangebyscore(keys.incomplete_rounds(ladder), "-inf", encode_float(now), start=0, num=limit)
        candidates = [(ladder, [r.decode() for r in ids]) for ladder, ids in zip(ladders, await pipe.execute()) if ids]
        if not candidates:
            return []

        def build(pipe: Pipeline) -> None:
            for ladder, ids in candidates:
                self._eval(pipe, "claim_due_rounds",
                           [keys.incomplete_rounds(ladder), *(keys.round_record(ladder, r) for r in ids)],
                           [encode_float(now), encode_float(period), max_doublings, *ids])

        due = [DueRound(ladder, flat[i].decode(), flat[i + 1].decode(), int(flat[i + 2]), bool(int(flat[i + 3])))
               for (ladder, _), flat in zip(candidates, await self._run(build)) for i in range(0, len(flat), 4)]
        return sorted(due, key=lambda d: (d.ladder, d.seq))

    async def fail_round(self, ladder: str, round_id: str, *, content_hash: str, reason: str,
                         players: Sequence[str]) -> bool:
        """Set aside a round still ``registered`` with this content (status ``failed``) and release
        the ``players`` it marked queued. Returns whether it was failed now."""
        seq = await self._fail(ladder, round_id, [content_hash, reason])
        if not seq:
            return False
        await self.release_queued(ladder, players, seq)
        return True

    async def fail_pending_round(self, ladder: str, round_id: str, *, seq: int, reason: str) -> bool:
        """Set aside a round still ``pending`` as round ``seq`` (status ``failed``, out of the
        sweeper's ledger): phase two gave up on part of its fan-out."""
        return bool(await self._fail(ladder, round_id, [seq, reason, STATUS_PENDING]))

    async def _fail(self, ladder: str, round_id: str, args: list[Any]) -> int:
        (reply,) = await self._run(lambda pipe: self._eval(pipe, "fail_round", [
            keys.round_record(ladder, round_id), keys.registered_rounds(ladder), keys.incomplete_rounds(ladder)], args))
        return int(reply)

    async def release_queued(self, ladder: str, players: Sequence[str], seq: int) -> int:
        """Let the ladder go on past round ``seq``, which it will not rate, for ``players`` it marked
        queued: their ``last_seq`` moves up to it, state unchanged (release_queued.lua). Returns how many."""
        player_keys = keys.players(ladder, players)
        if not player_keys:
            return 0
        released = await self._run(lambda pipe: self._per_player(pipe, "release_queued", player_keys, [seq]))
        return sum(int(n) for n in released)

    async def round_record(self, ladder: str, round_id: str) -> dict[str, str]:
        raw = await self.client.hgetall(keys.round_record(ladder, round_id))
        return {as_text(k): as_text(v) for k, v in raw.items()}

    async def queue_batch(self, rounds: Sequence[QueuedRound], release: tuple[str, Sequence[str]] | None = None,
                          ) -> list[int]:
        """Phase one's last write of its rounds, in order, in ONE round trip: per round its players'
        queued marks then its fan-out (:meth:`_queue_into`). Not a transaction: a killed worker leaves
        a prefix written, the round still ``registered``, and its next attempt redoes both (each script
        idempotent; queue_rounds.lua makes a small round's pair atomic). Returns per round
        :data:`SAVED_NOW`, :data:`SAVED_BEFORE`, :data:`SAVE_REFUSED` or :data:`SAVE_FENCED`.
        ``release`` (owner, ladders): the owner's leases of those ladders given up in the same trip.

        On Redis Cluster in TWO round trips, every mark first: per-node pipelines fail independently,
        and a fan-out stored without a player's mark would let a later round read his prior without
        this one (a fenced writer's marks are written there, as a crashed attempt leaves them)."""
        owner, releasing = release if release is not None else ("", ())

        def release_into(pipe: Pipeline) -> None:
            for ladder in releasing:  # a lease another owner took after ours lapsed is left alone
                self._eval(pipe, "release_lease", [keys.lease(ladder)], [owner])

        if self.cluster and rounds:
            def marks(pipe: Pipeline) -> None:
                for r in rounds:
                    self._per_player(pipe, "mark_queued", keys.players(r.ladder, r.players), [r.seq])

            def fanouts(pipe: Pipeline) -> None:
                for r in rounds:
                    self._eval(pipe, "save_fanout", _fanout_keys(r), _fanout_args(r))
                release_into(pipe)

            await self._run(marks)
            return [int(done) for done in (await self._run(fanouts))[:len(rounds)]]
        saves: list[tuple[int, int | None]] = []  # where each round's save_fanout answer is in the replies

        def build(pipe: Pipeline) -> None:
            saves[:] = self._queue_into(pipe, rounds)
            release_into(pipe)

        replies = await self._run(build) if rounds or release else []
        return [int(replies[call] if at is None else replies[call][at]) for call, at in saves]

    def _queue_into(self, pipe: Pipeline, rounds: Sequence[QueuedRound]) -> list[tuple[int, int | None]]:
        """Queue the rounds' marks and fan-outs on a single Redis: consecutive rounds of up to
        ``players_per_call`` players in one queue_rounds.lua call, a bigger round as mark_queued.lua
        calls then save_fanout.lua. Returns per round (call, index in its reply or None: its own call)."""
        where: list[tuple[int, int | None]] = []
        calls = 0
        keys_: list[str] = []
        args: list[Any] = []
        players = queued = 0  # in the queue_rounds call being built
        due = functools.cache(encode_due)  # one text per due time the batch's rounds share

        def flush() -> None:
            nonlocal calls, keys_, args, players, queued
            if keys_:
                self._eval(pipe, "queue_rounds", keys_, args)
                calls += 1
                keys_, args, players, queued = [], [], 0, 0

        for r in rounds:
            if len(r.players) > self.players_per_call:
                flush()
                calls += self._per_player(pipe, "mark_queued", keys.players(r.ladder, r.players), [r.seq])
                self._eval(pipe, "save_fanout", _fanout_keys(r), _fanout_args(r))
                where.append((calls, None))
                calls += 1
                continue
            if players + len(r.players) > self.players_per_call:
                flush()
            fanout = _fanout_args(r, due)
            fanout_keys = _fanout_keys(r)
            where.append((calls, queued))
            keys_ += [*keys.players(r.ladder, r.players), *fanout_keys]
            args += [len(r.players), len(fanout_keys), len(fanout), r.seq, *fanout]
            players += len(r.players)
            queued += 1
        flush()
        return where

    async def confirm_emitted(self, emitted: Sequence[tuple[str, str, Sequence[str]]]) -> list[int]:
        """Record (ladder, round_id, players) whose events the broker acknowledged, one round trip
        (confirm_emitted.lua calls laid out by :func:`_segments`: a batch of duels is one call); a
        round whose every event is confirmed leaves the sweeper's ledger. Returns, per round with
        players, how many players are still unconfirmed."""
        rounds = [r for r in emitted if r[2]]
        starts = np.cumsum([0, *(len(r[2]) for r in rounds)]).tolist()
        calls = _segments([r[0] for r in rounds], starts)

        def build(pipe: Pipeline) -> None:
            for call in calls:
                ladder = rounds[call[0][0]][0]
                keys_ = [keys.incomplete_rounds(ladder)]
                args: list[Any] = []
                for r, lo, hi in call:
                    _, round_id, players = rounds[r]
                    keys_ += [keys.round_record(ladder, round_id), keys.round_emitted(ladder, round_id)]
                    args += [hi - lo, *players[lo - starts[r]:hi - starts[r]]]
                self._eval(pipe, "confirm_emitted", keys_, args)

        if not rounds:
            return []
        replies = [int(n) for reply in await self._run(build) for n in reply]
        return [n for n, (r, _, hi) in zip(replies, (s for call in calls for s in call))
                if hi == starts[r + 1]]  # a round's last segment tells

    async def load_fanout(self, ladder: str, round_id: str) -> list[tuple[int, bytes]]:
        """The stored fan-out: (partition, PlayerUpdate JSON), by partition and part."""
        raw = await self.client.hgetall(keys.round_perf(ladder, round_id))
        order = sorted((tuple(int(x) for x in as_text(k).split(".")), as_bytes(v)) for k, v in raw.items())
        return [(where[0], value) for where, value in order]

    async def load_results_of(self, rounds: Sequence[tuple[str, str, Sequence[str]]]) -> list[list[bytes | None] | None]:
        """The stored RatingChange JSON of each (ladder, round_id, players) (None where absent), one round
        trip; None for a round re-rated since (``rerated_by``, set by rewrite_rounds.lua with the new
        results, read after them): re-emitting would give an ``event_id`` a second content."""
        pipe = self._pipeline()
        for ladder, round_id, players in rounds:
            if players:
                pipe.hmget(keys.round_results(ladder, round_id), list(players))
                pipe.hexists(keys.round_record(ladder, round_id), "rerated_by")
        replies = await pipe.execute()
        found = iter([None if rerated else [None if value is None else as_bytes(value) for value in stored]
                      for stored, rerated in zip(replies[::2], replies[1::2])])
        return [next(found) if players else [] for _, _, players in rounds]

    # ---- phase one ----------------------------------------------------------------------
    async def load_priors(self, ladder: str, players: Sequence[str], seq: int | np.ndarray, *,
                          states: bool = False) -> Priors:
        """Stored (mu, sigma, last_time) of each player (or packed state, with ``states``), and whom the
        barrier holds for round ``seq`` (or one seq per player): :meth:`priors`."""
        fields = player_hash.PRIOR_STATES if states else player_hash.PRIORS
        return self.priors(players, await self._read_players([keys.player(ladder, p) for p in players], fields), seq)

    @staticmethod
    def priors(players: Sequence[str], columns: dict[str, np.ndarray | list[bytes | None]],
               seq: int | np.ndarray) -> Priors:
        """Priors from the player_hash.PRIORS (or PRIOR_STATES) columns of ``players``. A player is held
        while the newest of his marks below ``seq`` (mark_queued.lua) is above his ``last_seq``; marks at
        or above ``seq`` are a crashed or fenced attempt's leftovers. ``last_seq >= seq``: ``overtaken``."""
        mu, sigma, last_time, known = None, None, None, None
        if player_hash.MU in columns:
            mu, sigma, last_time = (np.asarray(columns[name], dtype=np.float64)
                                    for name in (player_hash.MU, player_hash.SIGMA, player_hash.LAST_TIME))
            known = ~np.isnan(mu)
        queued, last = _seq_column(columns[player_hash.QUEUED_SEQ]), _seq_column(columns[player_hash.LAST_SEQ])
        prev = _seq_column(columns[player_hash.QUEUED_PREV])
        seqs = np.broadcast_to(np.asarray(seq, dtype=np.int64), queued.shape)
        waits_for = np.where(queued < seqs, queued, np.where(prev < seqs, prev, 0))
        for row in np.flatnonzero(prev >= seqs).tolist():  # leftovers of a failed batch: rare
            older = columns[player_hash.QUEUED_OLDER][row]
            waits_for[row] = max((mark for mark in map(int, (older or b"").split()) if mark < seqs[row]), default=0)
        held = np.flatnonzero(waits_for > last)
        blocked = [players[i] for i in held.tolist()]
        overtaken = [players[i] for i in np.flatnonzero(last >= seqs).tolist()]
        states = list(columns[player_hash.STATE]) if player_hash.STATE in columns else None
        return Priors(mu=mu, sigma=sigma, last_time=last_time, known=known, blocked=blocked,
                      waiting_on=np.unique(waits_for[held]).tolist() if blocked else [], last_seq=last,
                      waits_for=waits_for, states=states, overtaken=overtaken)

    async def queued_rounds(self, ladder: str, players: Sequence[str]) -> list[str]:
        """Round ids of the rounds queued for ``players`` (their ``queued_seq``), distinct."""
        pipe = self._pipeline()
        for player in players:
            pipe.hget(keys.player(ladder, player), player_hash.QUEUED_SEQ)
        return await self.round_ids(ladder, sorted({_int(raw) for raw in await pipe.execute()} - {0}))

    async def registered_before(self, ladder: str, seq: int) -> list[str]:
        """Ids of the ladder's rounds still ``registered`` (phase one unfinished) with a seq below
        ``seq``, in seq order."""
        ids = cast("list[bytes]", await self.client.zrangebyscore(keys.registered_rounds(ladder), "-inf", f"({seq}"))
        return [as_text(rid) for rid in ids]

    async def round_ids(self, ladder: str, seqs: Sequence[int]) -> list[str]:
        """Ids of the ladder's rounds with these sequence numbers (in order; unknown ones skipped)."""
        pipe = self._pipeline()
        for seq in seqs:
            pipe.zrangebyscore(keys.rounds(ladder), seq, seq)
        return [rid.decode() for ids in await pipe.execute() for rid in ids]

    async def round_statuses(self, ladder: str, round_ids: Sequence[str]) -> list[str | None]:
        """The ``status`` of each round (None if unknown), in one round trip."""
        pipe = self._pipeline()
        for round_id in round_ids:
            pipe.hget(keys.round_record(ladder, round_id), "status")
        return [None if raw is None else raw.decode() for raw in await pipe.execute()]

    # ---- phase two ----------------------------------------------------------------------
    async def read_states(self, ladder: str, players: Sequence[str]) -> StoredStates:
        """:meth:`load_states`' columns (and ``queued_seq``) by read-only commands, one round trip (what-if:
        the read API's ACL user runs no scripts that write). load_players.lua by EVALSHA_RO on a single
        Redis that has it cached and lets the user run it (~5x less CPU); else plain HMGETs."""
        player_keys = keys.players(ladder, players)
        if not player_keys:
            return StoredStates(np.zeros(0, dtype=np.int64), [], [], queued_seq=np.zeros(0, dtype=np.int64))
        if self._lean is not None:
            pipe = self._pipeline()
            for chunk in self._chunks(len(player_keys)):
                pipe.execute_command("EVALSHA_RO", LOAD_PLAYERS_SHA, len(chunk), *[player_keys[i] for i in chunk],
                                     *player_hash.STATES_QUEUED)
            try:
                columns = _columns(await pipe.execute(), player_hash.STATES_QUEUED)
            except ResponseError:  # NOSCRIPT, NOPERM (a reader user), an older Redis: the plain reads
                pass
            else:
                return StoredStates(_seq_column(columns[player_hash.LAST_SEQ]), list(columns[player_hash.STATE]),
                                    list(columns[player_hash.TIER]),
                                    queued_seq=_seq_column(columns[player_hash.QUEUED_SEQ]))
        pipe = self._pipeline()
        queue = pipe.execute_command  # redis-py's hmget() wrapper costs more than queuing the command
        for key in player_keys:
            queue("HMGET", key, *player_hash.READ_STATES)
        replies = await pipe.execute()
        last_seq = np.fromiter((int(r[0]) if r[0] else 0 for r in replies), dtype=np.int64, count=len(replies))
        queued = np.fromiter((int(r[3]) if r[3] else 0 for r in replies), dtype=np.int64, count=len(replies))
        return StoredStates(last_seq, [r[1] for r in replies], [r[2] for r in replies], queued_seq=queued)

    async def load_states(self, players: Sequence[tuple[str, str]],
                          verify: Sequence[FanOutCheck] = ()) -> StoredStates:
        """Last applied seq, packed state and tier of (ladder, player) pairs and, per ``verify``, which
        sections are exactly ones of the round's stored fan-out (verify_updates.lua): one round trip.
        A stored fan-out never changes, so the check may run before the writes it guards."""
        player_keys = [keys.player(ladder, p) for ladder, p in players]
        calls = _by_ladder(verify)

        def build(pipe: Pipeline) -> None:
            self._per_player(pipe, "load_players", player_keys, list(player_hash.STATES))
            for call in calls:
                keys_: list[str] = []
                args: list[Any] = []
                for check in (verify[i] for i in call):
                    keys_ += [keys.round_record(check.ladder, check.round_id),
                              keys.round_perf(check.ladder, check.round_id),
                              keys.round_digests(check.ladder, check.round_id)]
                    args += [len(check.digests), "raw" if check.raw else "sha1", *check.digests]
                self._eval(pipe, "verify_updates", keys_, args)

        replies = await self._run(build)
        split = len(replies) - len(calls)
        columns = _columns(replies[:split], player_hash.STATES)
        verified: list[list[bool]] = [[] for _ in verify]
        for call, reply in zip(calls, replies[split:]):
            flags = iter(reply)
            for i in call:
                verified[i] = [bool(next(flags)) for _ in verify[i].digests]
        return StoredStates(_seq_column(columns[player_hash.LAST_SEQ]), list(columns[player_hash.STATE]),
                            list(columns[player_hash.TIER]), verified)

    async def apply_batch(self, batch: BatchWrites, *, now: float) -> np.ndarray:
        """Apply a batch's player updates in TWO round trips, idempotently: apply_player_update.lua
        per chunk of players in round order, then record_round_results.lua (:func:`_segments`) for
        the players applied now only (a skipped write must not put an older rating back on the
        leaderboard; a round is never ``rated`` while a write failed). Returns, per row, whether applied now."""
        replies = await self._run(lambda pipe: self._apply_into(pipe, batch)) if len(batch.players) else []
        applied = np.array([flag for reply in replies for flag in reply], dtype=bool)
        results = batch.results(applied)
        await self._run(lambda pipe: self._record_into(pipe, results, now))
        return applied

    def _apply_into(self, pipe: Pipeline, batch: BatchWrites) -> None:
        """Queue apply_player_update.lua calls of the batch's rows, in order, up to
        ``players_per_call`` players a call, each call carrying the rounds its rows belong to."""
        n = len(batch.players)
        round_of = batch.round_of()
        starts = batch.starts
        ladder_of = [batch.ladders[r] for r in round_of.tolist()] if len(batch.ladders) > 1 else [batch.ladders[0]] * n
        times = functools.cache(encode_float)
        step = self.players_per_call
        for lo in range(0, n, step):
            hi = min(lo + step, n)
            first, last = int(round_of[lo]), int(round_of[hi - 1])
            keys_ = [key for ladder, player in zip(ladder_of[lo:hi], batch.players[lo:hi])
                     for key in (keys.player(ladder, player), keys.history(ladder, player))]
            heads = [value for r in range(first, last + 1)
                     for value in (batch.seqs[r], batch.round_ids[r], times(batch.last_times[r]),
                                   min(hi, starts[r + 1]) - max(lo, starts[r]))]  # the round's rows in the call
            args = [self.history_length, last - first + 1, *heads,
                    *_interleave(batch.mu[lo:hi], batch.sigma[lo:hi], batch.rounds[lo:hi], batch.display_rating[lo:hi],
                                 batch.tiers[lo:hi], batch.states[lo:hi], batch.changes[lo:hi])]
            self._eval(pipe, "apply_player_update", keys_, args)

    async def recover_results(self, ladder: str, round_id: str, players: Sequence[str], *,
                              now: float) -> list[bytes | None]:
        """Record the round results of players applied without them (a worker killed between
        :meth:`apply_batch`'s two round trips), taken from their history, at their current display
        rating; returns those changes (None where not found)."""
        found: list[bytes | None] = []
        rows: list[tuple[str, bytes, str, str]] = []  # player, change, display rating, newcomer flag
        async for player, (history, shown) in read_each(self.client, players, lambda pipe, player: (
                pipe.lrange(keys.history(ladder, player), 0, -1),
                pipe.hget(keys.player(ladder, player), player_hash.DISPLAY_RATING))):
            change = next((entry for entry in reversed(history)
                           if (data := json.loads(entry)).get("round_id") == round_id and data.get("ladder") == ladder),
                          None)
            found.append(change)
            if change is not None and shown is not None:
                rows.append((player, change, encode_float(float(shown)),
                             "1" if json.loads(change).get("rounds_played") == 1 else "0"))
        if rows:
            names, changes, shown_texts, flags = zip(*rows)
            results = _Results([ladder], [round_id], [0, len(rows)], names, changes, shown_texts, "".join(flags))
            await self._run(lambda pipe: self._record_into(pipe, results, now))
        return found

    def _record_into(self, pipe: Pipeline, results: _Results, now: float) -> None:
        """Queue record_round_results.lua calls (:func:`_segments`): results, leaderboard scores, each
        round's status (a round without players still gets its segment: its status is re-checked)."""
        now_text = encode_float(now)
        for call in _segments(results.ladders, results.starts):
            ladder = results.ladders[call[0][0]]
            keys_ = [keys.leaderboard(ladder), keys.ladder(ladder), keys.incomplete_rounds(ladder),
                     keys.player_names(ladder)]
            args: list[Any] = [now_text]
            for r, lo, hi in call:
                round_id = results.round_ids[r]
                keys_ += [keys.round_record(ladder, round_id), keys.round_results(ladder, round_id)]
                args += [hi - lo, results.newcomer[lo:hi]]
            lo, hi = call[0][1], call[-1][2]  # a call's segments are consecutive rows
            args += _interleave(results.players[lo:hi], results.changes[lo:hi], results.shown[lo:hi])
            self._eval(pipe, "record_round_results", keys_, args)
