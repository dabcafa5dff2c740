"""All configuration in one place: environment variables with documented defaults; nothing else calls
``os.environ``. The README's configuration table is generated from the fields' docs (:func:`env_table`).
"""

from __future__ import annotations

import json
import math
import os
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import Field, dataclass, field, fields
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit


#: Kafka security protocols (the ``security.protocol`` values every Kafka client knows).
KAFKA_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
#: SASL mechanisms that kafka-python, aiokafka and Faust all support with a user name and password.
KAFKA_SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
#: LOG_LEVEL's words (stream/cli/worker.py maps each to Faust's and logging's level).
LOG_LEVELS = ("critical", "error", "warning", "warn", "info", "debug")


@dataclass(frozen=True)
class Settings:
    """Service configuration; build it with :meth:`from_env`."""

    kafka_bootstrap: str = field(default="127.0.0.1:9092", metadata={"env": "KAFKA_BOOTSTRAP", "doc": "Kafka bootstrap servers (host:port[,host:port])", "check": "kafka_bootstrap"})
    kafka_security_protocol: str = field(default="PLAINTEXT", metadata={"env": "KAFKA_SECURITY_PROTOCOL", "doc": "how the worker talks to Kafka", "choices": KAFKA_PROTOCOLS})
    kafka_sasl_mechanism: str = field(default="PLAIN", metadata={"env": "KAFKA_SASL_MECHANISM", "doc": "SASL mechanism (with a SASL_* protocol)", "choices": KAFKA_SASL_MECHANISMS})
    kafka_sasl_username: str = field(default="", metadata={"env": "KAFKA_SASL_USERNAME", "doc": "SASL user name"})
    kafka_sasl_password: str = field(default="", metadata={"env": "KAFKA_SASL_PASSWORD", "doc": "SASL password (never logged)", "secret": True})
    kafka_ssl_cafile: str = field(default="", metadata={"env": "KAFKA_SSL_CAFILE", "doc": "CA bundle for Kafka TLS", "check": "file"})
    kafka_ssl_certfile: str = field(default="", metadata={"env": "KAFKA_SSL_CERTFILE", "doc": "client certificate (PEM) for Kafka mutual TLS", "check": "file"})
    kafka_ssl_keyfile: str = field(default="", metadata={"env": "KAFKA_SSL_KEYFILE", "doc": "private key (PEM) of KAFKA_SSL_CERTFILE", "check": "file"})
    redis_url: str = field(default="redis://127.0.0.1:6379/0", metadata={"env": "REDIS_URL", "doc": "Redis URL; rediss:// for TLS, user:password@ for ACL auth (never logged)", "secret": True, "check": "redis_url"})
    redis_username: str = field(default="", metadata={"env": "REDIS_USERNAME", "doc": "Redis ACL user; overrides the URL's user (keeps credentials out of REDIS_URL)"})
    redis_password: str = field(default="", metadata={"env": "REDIS_PASSWORD", "doc": "Redis password; overrides the URL's password (never logged)", "secret": True})
    redis_tls_ca: str = field(default="", metadata={"env": "REDIS_TLS_CA", "doc": "CA bundle that signed the Redis server certificate (rediss:// only; empty: system CAs)", "check": "file"})
    redis_tls_cert: str = field(default="", metadata={"env": "REDIS_TLS_CERT", "doc": "client certificate (PEM) for Redis mutual TLS (rediss:// only)", "check": "file"})
    redis_tls_key: str = field(default="", metadata={"env": "REDIS_TLS_KEY", "doc": "private key (PEM) of REDIS_TLS_CERT", "check": "file"})
    redis_cluster: bool = field(default=False, metadata={"env": "REDIS_CLUSTER", "doc": "Redis is a Cluster: REDIS_URL names any node (database 0), the worker, read API and CLI use a cluster client, and per-player scripts carry one player per call (one slot); otherwise up to 500 players per call"})
    redis_socket_timeout_s: float = field(default=30.0, metadata={"env": "REDIS_SOCKET_TIMEOUT_S", "doc": "longest wait for a Redis reply: a call to a hung Redis then fails with a timeout and the worker retries it (its scripts are idempotent); 0: wait for ever", "min": 0})
    redis_connect_timeout_s: float = field(default=5.0, metadata={"env": "REDIS_CONNECT_TIMEOUT_S", "doc": "longest wait to open a Redis connection; 0: wait for ever", "min": 0})
    redis_keepalive_s: int = field(default=30, metadata={"env": "REDIS_KEEPALIVE_S", "doc": "TCP keepalive of Redis connections: first probe after this many idle seconds, then every third of it, 3 probes (a silently dead peer is found within 2x this); 0: off", "min": 0})
    topic_prefix: str = field(default="", metadata={"env": "TOPIC_PREFIX", "doc": "prefix put in front of every topic name"})
    partitions: int = field(default=4, metadata={"env": "PARTITIONS", "doc": "partitions of the player-updates and rating-changes topics", "min": 1})
    engine_preset: str = field(default="mmr-bounded", metadata={"env": "ENGINE_PRESET", "doc": "rating engine preset (mmr-bounded, mmr, mmr-duel, mmr-fast, mmx, mmx-fast, paper-codeforces): the model of ladders LADDERS gives none (shorthand for its \"*\" entry)"})
    app_id: str = field(default="elo-mmr-stream", metadata={"env": "APP_ID", "doc": "Faust application id (consumer group)"})
    web_port: int = field(default=6066, metadata={"env": "WEB_PORT", "doc": "HTTP port of the worker's read API and dashboard", "min": 1, "max": 65535})
    web_host: str = field(default="127.0.0.1", metadata={"env": "WEB_HOST", "doc": "bind address of the read API"})
    api_max_event_streams: int = field(default=100, metadata={"env": "API_MAX_EVENT_STREAMS", "doc": "most live-update (Server-Sent Events) connections the read API keeps open at once; more are answered 503 with Retry-After", "min": 0})
    api_redis_max_connections: int = field(default=32, metadata={"env": "API_REDIS_MAX_CONNECTIONS", "doc": "the read API's Redis connection pool size (a request waits for a free connection rather than opening more)", "min": 1})
    max_round_size: int = field(default=1_000_000, metadata={"env": "MAX_ROUND_SIZE", "doc": "rounds with more players are rejected to the DLQ", "min": 1})
    max_message_bytes: int = field(default=64 * 1024 * 1024, metadata={"env": "MAX_MESSAGE_BYTES", "doc": "largest accepted round message", "min": 1})
    max_id_length: int = field(default=128, metadata={"env": "MAX_ID_LENGTH", "doc": "longest accepted player id, round id or ladder name", "min": 1})
    strict_schema: bool = field(default=False, metadata={"env": "STRICT_SCHEMA", "doc": "reject unknown fields in RoundResult"})
    min_weight: float = field(default=1e-6, metadata={"env": "MIN_WEIGHT", "doc": "smallest accepted round weight (> 0; a smaller one is rejected as bad_weight: below ~1e-3 a round barely moves ratings, and 5e-324 divided by zero in the engine)", "above": 0})
    max_weight: float = field(default=100.0, metadata={"env": "MAX_WEIGHT", "doc": "largest accepted round weight (a larger one is rejected as bad_weight: at 1000 one round moves a newcomer ~700 points, from ~1e6 mu hits the solver's bounds, from 1e306 every player resets to the prior)", "above": 0})
    history_length: int = field(default=100, metadata={"env": "HISTORY_LENGTH", "doc": "rating-history entries kept per player", "min": 1})
    retain_round_results: int = field(default=0, metadata={"env": "RETAIN_ROUND_RESULTS", "doc": "keep the stored results (RatingChange per player: the round page, event re-emission) of each ladder's last this many rated rounds; older ones are deleted by the sweeper; 0: keep all", "min": 0})
    retain_round_results_days: float = field(default=0.0, metadata={"env": "RETAIN_ROUND_RESULTS_DAYS", "doc": "also delete the stored results of rounds that occurred more than this many days ago; 0: no age limit", "min": 0})
    retain_fanouts: int = field(default=0, metadata={"env": "RETAIN_FANOUTS", "doc": "keep the stored fan-outs (standings and performances: what a re-rate replays) of each ladder's last this many rated rounds; 0: keep all (a correction re-rates its ladder from the first round: once a ladder's fan-out is dropped it takes no more corrections, docs/history.md)", "min": 0})
    retain_fanouts_days: float = field(default=0.0, metadata={"env": "RETAIN_FANOUTS_DAYS", "doc": "also delete the stored fan-outs of rounds that occurred more than this many days ago; 0: no age limit", "min": 0})
    retain_history_days: float = field(default=0.0, metadata={"env": "RETAIN_HISTORY_DAYS", "doc": "drop rating-history entries of rounds that occurred more than this many days ago (applied by the sweeper to the players of rounds passing the age; HISTORY_LENGTH bounds the count); 0: no age limit", "min": 0})
    erasure_secret: str = field(default="", metadata={"env": "ERASURE_SECRET", "doc": "key of the HMAC that makes an erased player's pseudonym (stream erase); required by stream erase; never logged", "secret": True})
    sweep_timeout_s: float = field(default=30.0, metadata={"env": "SWEEP_TIMEOUT_S", "doc": "re-drive a round whose player updates are incomplete after this many seconds", "above": 0})
    sweep_backoff_doublings: int = field(default=5, metadata={"env": "SWEEP_BACKOFF_DOUBLINGS", "doc": "each further re-drive of the same round (sweeper) or by the same waiting round (barrier) waits twice as long as the previous one, up to SWEEP_TIMEOUT_S x 2^this: under overload, late rounds are not re-sent every period", "min": 0})
    sweep_interval_s: float = field(default=5.0, metadata={"env": "SWEEP_INTERVAL_S", "doc": "how often each worker's sweeper looks for rounds still incomplete SWEEP_TIMEOUT_S after registration (or after their last re-drive) and re-drives them", "above": 0})
    retry_max_delay_s: float = field(default=2.0, metadata={"env": "RETRY_MAX_DELAY_S", "doc": "longest wait between two attempts while Redis or Kafka is unreachable (the worker retries forever and never acks input whose effects are not stored)", "above": 0})
    hold_poll_s: float = field(default=0.2, metadata={"env": "HOLD_POLL_S", "doc": "while a correction re-rates a ladder, phase one tries to register the ladder's next round again every this many seconds, and the correction checks as often whether the ladder's rounds in flight are done", "above": 0})
    season_refresh_s: float = field(default=5.0, metadata={"env": "SEASON_REFRESH_S", "doc": "how often each worker reads the seasons started with stream season start (the schedule of record in Redis; README \"Seasons\"): a season started takes effect on running workers within this many seconds", "above": 0})
    season_notice_s: float = field(default=60.0, metadata={"env": "SEASON_NOTICE_S", "doc": "stream season start refuses a start less than this many seconds ahead (without --backdate): a sanity rule, not needed for replay equality: the workers normally read the new schedule (SEASON_REFRESH_S) before a round of the season arrives, and one that has not is refused and reads it again (the notice applied is at least twice SEASON_REFRESH_S)", "min": 0})
    handler_attempts: int = field(default=5, metadata={"env": "HANDLER_ATTEMPTS", "doc": "attempts at handling a message that keeps raising an unexpected exception (not Redis or Kafka unreachable) before it is dead-lettered as internal_error and the stream moves on", "min": 1})
    broker_session_timeout_s: float = field(default=6.0, metadata={"env": "BROKER_SESSION_TIMEOUT_S", "doc": "consumer-group session timeout", "above": 0})
    broker_heartbeat_s: float = field(default=1.0, metadata={"env": "BROKER_HEARTBEAT_S", "doc": "consumer-group heartbeat interval", "above": 0})
    embedded_broker: bool = field(default=False, metadata={"env": "EMBEDDED_BROKER", "doc": "the broker is the dev stack's embedded Tansu broker (`stream stack` sets it): the worker fetches again the offsets a fetch skipped, as that broker can (stream/pipeline/runtime/compat.py, Refetch); other brokers never skip one, and a gap is Faust's to handle"})
    leave_group_on_stop: bool = field(default=True, metadata={"env": "LEAVE_GROUP_ON_STOP", "doc": "a stopping worker's consumer leaves its group at once (LeaveGroup: its partitions move to the other workers without waiting); false: the group drops it after BROKER_SESSION_TIMEOUT_S. The embedded Tansu broker can leave the next members of a group whose members all left this way without a leader for minutes (stream/stack/README.md): the dev stack sets false"})
    display_config: str = field(default="", metadata={"env": "DISPLAY_CONFIG", "doc": "JSON object ladder -> display config (mode mu/conservative/fixed-range, k, center, scale, tiers (leagues) [[name, mu threshold]], demotion_margin, divisions per league); key \"*\" is the fallback; empty: conservative mu - 2 sigma with the default tiers (stream/engine/display.py)"})
    ladders: str = field(default="", metadata={"env": "LADDERS", "doc": "JSON object ladder -> {\"model\": an ENGINE_PRESET preset or glicko/codeforces/topcoder/bar/elo-multiplayer/trueskill, \"params\": {field: value} replacing the model's defaults, \"display\": a DISPLAY_CONFIG entry, \"seasons\": a season schedule with its soft reset, placement, league shares and bonus pool (Elo-MMR presets; README \"Seasons\")}; key \"*\" is the fallback (stream/engine/ladders.py). ENGINE_PRESET and DISPLAY_CONFIG are shorthands: the \"*\" model when LADDERS names none, the display of ladders whose entry gives none. A ladder's model is fixed once it has rated a round (another one is a re-rate: its rounds are dead-lettered model_changed). Validated at startup (the error names the key); empty: every ladder with ENGINE_PRESET"})
    queues: str = field(default="", metadata={"env": "QUEUES", "doc": "JSON object queue -> {\"ladder\": L, \"teams\": T, \"team_size\": S, the widening schedule, max_wait_s, tick_interval_s, ...} (stream/matchmaking/queues.py): the matchmaking queues every `stream worker` runs (tickets on match-tickets, matches on matches; README \"Matchmaking\"). Validated at startup (the error names the key; a queue of teams of several players needs a ladder whose model rates teams); empty: no matchmaking"})
    match_hold_s: float = field(default=3600.0, metadata={"env": "MATCH_HOLD_S", "doc": "a player of an emitted match is in match (his joins in that queue are rejected in_match) until the round with round_id = match_id is rated, or this many seconds after the match formed", "above": 0})
    ladder_order: str = field(default="", metadata={"env": "LADDER_ORDER", "doc": "JSON object ladder -> \"published\" (rate rounds in the order they are published, the default) or \"occurred_at\" (by the round's occurred_at, ties in publish order: a round older than the ladder's newest one is inserted in its place and the rounds after it re-rated, as a correction does); key \"*\" is the fallback; empty: every ladder published (stream/contracts/ordering.py)"})
    barrier_poll_s: float = field(default=0.001, metadata={"env": "BARRIER_POLL_S", "doc": "first wait of phase one's per-player barrier (doubles up to BARRIER_MAX_POLL_S)", "above": 0})
    barrier_max_poll_s: float = field(default=0.005, metadata={"env": "BARRIER_MAX_POLL_S", "doc": "longest single wait between two checks of the per-player barrier", "above": 0})
    barrier_direct_players: int = field(default=256, metadata={"env": "BARRIER_DIRECT_PLAYERS", "doc": "up to this many held players, the barrier re-reads them at every check; above, it polls the status of the rounds they wait on and re-reads the players once those are rated", "min": 0})
    barrier_full_check_s: float = field(default=1.0, metadata={"env": "BARRIER_FULL_CHECK_S", "doc": "with many held players, re-read them at least this often even if the rounds they wait on are not rated yet", "above": 0})
    barrier_warn_s: float = field(default=10.0, metadata={"env": "BARRIER_WARN_S", "doc": "log a warning (and again every such interval) while phase one waits on earlier rounds' updates", "min": 0})
    consumer_fetch_max_wait_ms: int = field(default=10, metadata={"env": "CONSUMER_FETCH_MAX_WAIT_MS", "doc": "longest time the worker's Kafka fetch waits for data (Faust hard-codes 1500 ms). The embedded broker does not answer a waiting fetch when records arrive: it looks again at half the wait, then 3/4, 7/8, ... and answers an empty fetch at its deadline, so a record produced just after a fetch was sent is seen ~half this later, per hop (bench/fetch_wait.py; a round crosses two hops); a shorter wait means more empty fetches for the worker and broker to handle while records trickle in (under load a fetch comes back with records; after a second without any, CONSUMER_IDLE_FETCH_WAIT_MS applies)", "min": 0})
    consumer_idle_fetch_wait_ms: int = field(default=60, metadata={"env": "CONSUMER_IDLE_FETCH_WAIT_MS", "doc": "the worker's Kafka fetch wait once nothing has arrived for a second (CONSUMER_FETCH_MAX_WAIT_MS again from the next record): an idle worker sends fewer empty fetches to a broker that answers them only at their deadline (the embedded one), at the cost of up to this much latency for the first round after a quiet spell", "min": 0})
    phase_one_batch: int = field(default=64, metadata={"env": "PHASE_ONE_BATCH", "doc": "rounds phase one takes per batch (rated as a unit: one engine call per ladder, two Redis round trips, one message per partition)", "min": 1})
    phase_one_within_s: float = field(default=0.0, metadata={"env": "PHASE_ONE_WITHIN_S", "doc": "longest wait to fill a phase-one batch once its first round is there (added latency of every batch that does not fill); 0: a batch is what the stream's buffer holds when phase one comes to take it. Records come in per fetch response, and while phase one handles a batch the next ones gather in the buffer, so batches grow with the load by themselves; a wait mostly delays the rounds already there (the next response of the embedded broker comes at least half a fetch wait later)", "min": 0})
    phase_one_cache_players: int = field(default=20_000, metadata={"env": "PHASE_ONE_CACHE_PLAYERS", "doc": "posteriors phase one keeps across batches (per ladder and player, least recently stored evicted; up to ~0.8 kB each with the default engine): the next batch takes a player's from it instead of waiting for phase two to apply the round it computed it for, when that round is still the player's latest queued one (stream/pipeline/posteriors.py); a ladder's batch of more than half this many players keeps none; 0: off, every held player waits at the barrier", "min": 0})
    phase_one_lease_ms: int = field(default=5000, metadata={"env": "PHASE_ONE_LEASE_MS", "doc": "one phase-one rater per ladder at a time: a batch (and the sweeper completing a round) takes the ladder's lease, with a fencing token the store checks, and holds it for at most this many milliseconds from its last renewal (renewed while a long batch runs); a crashed worker's lease lapses after it, and a worker whose lease lapsed and was taken (a zombie after a rebalance) has its fan-out refused (its rounds are rated by the new holder). Keep it at or below BROKER_SESSION_TIMEOUT_S: a survivor gets a crashed worker's partitions only after that anyway", "min": 100})
    phase_two_batch: int = field(default=256, metadata={"env": "PHASE_TWO_BATCH", "doc": "player-updates messages phase two takes per batch", "min": 1})
    phase_two_within_s: float = field(default=0.0, metadata={"env": "PHASE_TWO_WITHIN_S", "doc": "longest wait to fill a phase-two batch once its first message is there; 0: what the buffer holds (see PHASE_ONE_WITHIN_S)", "min": 0})
    batch_timings_dir: str = field(default="", metadata={"env": "BATCH_TIMINGS_DIR", "doc": "bench aid: each worker appends one JSON line per phase-one and phase-two batch to DIR/<pid>.jsonl (its size, how long its oldest record waited to be taken, and the seconds of each step: stream/pipeline/timings.py; bench/pipeline.py --breakdown reads them); empty: off"})
    stream_buffer_maxsize: int = field(default=4096, metadata={"env": "STREAM_BUFFER_MAXSIZE", "doc": "events Faust buffers per agent stream before it stops fetching that partition (its stream_buffer_maxsize); a full buffer never blocks the delivery of the worker's other partitions (stream/pipeline/runtime/compat.py)", "min": 1})
    watchdog_interval_s: float = field(default=5.0, metadata={"env": "WATCHDOG_INTERVAL_S", "doc": "how often each worker's watchdog compares the end offsets of its assigned rounds and player-updates partitions with its committed offsets (one ListOffsets request)", "above": 0})
    stall_timeout_s: float = field(default=60.0, metadata={"env": "STALL_TIMEOUT_S", "doc": "a partition whose end offset stays ahead of the committed offset, with nothing fetched and no progress, this long is stalled: ERROR, gauge ems_stalled_partitions, self-heal (seek + resume); still stalled this long after the heal: see STALL_EXIT", "above": 0})
    stall_exit: bool = field(default=True, metadata={"env": "STALL_EXIT", "doc": "exit the worker with status 70 when a partition is still stalled STALL_TIMEOUT_S after the self-heal (its supervisor restarts it; uncommitted input is redelivered); false: keep alerting and healing"})
    ready_max_lag_s: float = field(default=60.0, metadata={"env": "READY_MAX_LAG_S", "doc": "the worker's /ready answers 503 while the oldest record not yet committed on any of its assigned rounds or player-updates partitions is older than this (lag in seconds: the age of the oldest unprocessed record, checked every 5 s), besides while Redis or Kafka is unreachable or its partitions are not assigned yet (README \"Probes\")", "above": 0})
    live_timeout_s: float = field(default=300.0, metadata={"env": "LIVE_TIMEOUT_S", "doc": "the worker's /live answers 503 once its pipeline's event loop has not ticked for this long (a wedged process: restart it); never because Redis or Kafka is unreachable (the worker waits for them). Above the longest batch the loop may compute without yielding (a round of 1,000,000 players takes minutes)", "above": 0})
    shutdown_timeout_s: float = field(default=20.0, metadata={"env": "SHUTDOWN_TIMEOUT_S", "doc": "on SIGTERM the worker takes no new batch, finishes the batches in hand (phase one first, then phase two and corrections), commits their offsets and exits; a batch still in hand after this many seconds is left to be redelivered (keep it below Kubernetes' terminationGracePeriodSeconds, 30 s by default)", "above": 0})
    health_window: int = field(default=500, metadata={"env": "HEALTH_WINDOW", "doc": "rating health (stream/pipeline/health.py, README \"Rating health\"): the rolling figures of a ladder cover its last this many scored rounds (plus at most one flush's: rounds are scored in bulk, at least once a second); 0: rating health off (no scoring before each round)", "min": 0})
    stack_state_file: str = field(default="", metadata={"env": "STACK_STATE_FILE", "doc": "where `stream stack` records the running embedded stack's addresses; empty: one file per stack, $XDG_CACHE_HOME/elo-mmr-stream/stacks/NAME.json (~/.cache/...), its logs in NAME-logs beside it. Other commands use them when KAFKA_BOOTSTRAP / REDIS_URL are unset"})
    stack_name: str = field(default="", metadata={"env": "STACK_NAME", "doc": "which running embedded stack other commands use when several run (`stream stack --name`, or k<kafka port>-r<redis port>); empty: the only one running"})
    log_level: str = field(default="info", metadata={"env": "LOG_LEVEL", "doc": "worker log level", "choices": LOG_LEVELS})

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None, *, connect: bool = True,
                 **overrides: object) -> "Settings":
        """Every field from its environment variable, else its default (:class:`SettingsError` lists the values not
        accepted); ``connect=False`` (offline commands) does not look for a running ``stream stack``."""
        env: dict[str, str] = dict(os.environ) if environ is None else environ
        if connect and environ is None and not all(env.get(name) for name in STACK_ENV_VARS):
            # only the real process environment falls back to a running `stream stack`
            env = {**running_stack_env(env), **env}
        values: dict[str, object] = {}
        problems: list[str] = []
        for f in fields(cls):
            raw = env.get(f.metadata["env"])
            if raw is None:
                continue
            try:
                values[f.name] = _parse(f, raw)
            except ValueError:  # the value shown: a secret masked, but not a REDIS_URL without credentials (notaurl)
                plain = (f.metadata.get("check") == "redis_url" and "@" not in raw
                         and not re.search(r"(?i)pass|pwd", raw))
                shown = _redact(raw) if f.metadata.get("secret") and not plain else raw
                problems.append(f"{f.metadata['env']}={shown!r}: expected {accepted(f)}")
        if problems:
            raise SettingsError(*problems)
        values.update(overrides)
        return cls(**values)  # type: ignore[arg-type]

    def topic(self, name: str) -> str:
        """Full topic name: the configured prefix in front of ``name``."""
        return f"{self.topic_prefix}{name}"

    def __repr__(self) -> str:
        """The redacted settings: a logged or printed Settings never shows a secret."""
        return f"Settings({self.redacted()!r})"

    def redacted(self) -> dict[str, object]:
        """Settings as a dict with secrets masked, safe to log."""
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        return {f.name: _redact(str(values[f.name])) if f.metadata.get("secret") and values[f.name] else values[f.name]
                for f in fields(self)}


#: Environment variables a running ``stream stack`` provides to other commands.
STACK_ENV_VARS = ("KAFKA_BOOTSTRAP", "REDIS_URL")
#: What a command takes from a running ``stream stack``'s state: where it listens and the settings
#: its embedded broker needs (``LocalStack.env``: its workarounds on).
STACK_FORWARDED = (*STACK_ENV_VARS, "LEAVE_GROUP_ON_STOP", "EMBEDDED_BROKER")


class SettingsError(ValueError):
    """The configuration is invalid: one line per bad setting in ``problems``, naming the variable (its value,
    or the key at fault) and what is expected. Every command prints them and exits 2 (stream/cli/main.py)."""

    def __init__(self, *problems: str) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


#: Values of a boolean setting (any case, surrounding blanks ignored).
TRUE_WORDS = ("1", "true", "yes", "on")
FALSE_WORDS = ("0", "false", "no", "off")


def _parse(f: Field[Any], raw: str) -> object:
    """``raw`` as the value of field ``f``; ValueError when it is not one that ``f`` accepts."""
    kind = str(f.type)  # bool, int, float or str (annotations are strings here)
    if kind == "bool":
        word = raw.strip().lower()
        if word not in TRUE_WORDS + FALSE_WORDS:
            raise ValueError(raw)
        return word in TRUE_WORDS
    if kind not in ("int", "float"):
        choices = f.metadata.get("choices")
        if choices is not None and raw.strip().lower() not in (c.lower() for c in choices):
            raise ValueError(raw)
        if "check" in f.metadata:
            CHECKS[f.metadata["check"]][0](raw)
        return raw.strip() if choices is not None else raw
    number: int | float = int(raw) if kind == "int" else float(raw)
    low, above, high = f.metadata.get("min"), f.metadata.get("above"), f.metadata.get("max")
    if not math.isfinite(number) or (low is not None and number < low) or (above is not None and number <= above) or (
            high is not None and number > high):
        raise ValueError(raw)
    return number


def accepted(f: Field[Any]) -> str:
    """What field ``f`` accepts, from its type and metadata: ``min``/``max`` (inclusive), ``above`` (exclusive),
    ``choices`` (in any case), ``check`` (:data:`CHECKS`); empty for any text."""
    kind = str(f.type)
    if kind == "bool":
        return f"one of {', '.join(TRUE_WORDS)} (true) or {', '.join(FALSE_WORDS)} (false)"
    if kind not in ("int", "float"):
        if "check" in f.metadata:
            return CHECKS[f.metadata["check"]][1]
        choices = f.metadata.get("choices")
        return "" if choices is None else f"one of {', '.join(choices)} (any case)"  # else any text
    noun = "a whole number" if kind == "int" else "a number"
    low, above, high = f.metadata.get("min"), f.metadata.get("above"), f.metadata.get("max")
    if low is not None and high is not None:
        return f"{noun} from {low} to {high}"
    bounds = [f"{op} {v}" for op, v in ((">=", low), (">", above), ("<=", high)) if v is not None]
    return " ".join([noun, " and ".join(bounds)]).strip()


def _whole(low: int) -> Callable[[str], bool]:
    """The check of a whole number >= ``low``."""
    return lambda text: text.isdigit() and int(text) >= low


def _seconds(text: str) -> bool:
    return math.isfinite(value := float(text)) and value >= 0


def _any(text: str) -> bool:
    """Any text (redis-py reads it as it is, or as a boolean: any word is one)."""
    return True


#: Query parameters of REDIS_URL (redis-py's connection options) and whether a value is good: the numbers
#: redis-py parses itself (a bad one made it raise at connect time), the texts it passes on.
REDIS_URL_PARAMETERS: dict[str, Callable[[str], bool]] = {
    "db": _whole(0), "socket_timeout": _seconds, "socket_connect_timeout": _seconds, "timeout": _seconds,
    "health_check_interval": _whole(0), "max_connections": _whole(1), "socket_read_size": _whole(1),
    "protocol": ("2", "3").__contains__, "socket_keepalive": _any, "retry_on_timeout": _any, "username": _any,
    "password": _any, "client_name": _any,
}
#: Further parameters of a rediss:// URL (redis-py's TLS options; a plain connection refuses them).
REDIS_TLS_URL_PARAMETERS: dict[str, Callable[[str], bool]] = {
    "ssl_cert_reqs": ("none", "optional", "required").__contains__, "ssl_check_hostname": _any,
    "ssl_ca_certs": _any, "ssl_certfile": _any, "ssl_keyfile": _any, "ssl_min_version": _whole(0),
}


def check_redis_url(raw: str) -> None:
    """ValueError unless ``raw`` is a Redis URL redis-py can open (what :data:`CHECKS` says it accepts)."""
    parts = urlsplit(raw.strip())
    scheme = parts.scheme.lower()
    if scheme not in ("redis", "rediss", "unix"):  # redis-py's: TCP, TCP with TLS, a unix socket
        raise ValueError(raw)
    allowed = {**REDIS_URL_PARAMETERS, **(REDIS_TLS_URL_PARAMETERS if scheme == "rediss" else {})}
    query = parse_qs(parts.query, keep_blank_values=True)
    good = all(name in allowed and allowed[name](values[-1]) for name, values in query.items())
    if scheme == "unix":
        good = good and bool(parts.path)
    else:  # parts.port: ValueError when not a number from 0 to 65535
        database = parts.path.strip("/") or query.get("db", ["0"])[-1]
        good = (good and bool(parts.hostname) and "," not in parts.netloc and not any(c.isspace() for c in parts.netloc)
                and parts.port != 0 and database.isdigit())
    if not good:
        raise ValueError(raw)


def check_kafka_bootstrap(raw: str) -> None:
    """ValueError unless ``raw`` is a comma-separated list of host:port ([v6 address]:port), ports 1 to 65535."""
    servers = [s.strip() for s in raw.split(",") if s.strip()]
    if not servers:
        raise ValueError(raw)
    for server in servers:
        host, _, port = server.rpartition(":")
        if host.startswith("[") and host.endswith("]"):
            host = host[1:-1]
        if (not host or not port.isdigit() or not 1 <= int(port) <= 65535 or ":" in host and not server.startswith("[")
                or any(c in host for c in "/@ ")):
            raise ValueError(raw)


def check_file(raw: str) -> None:
    """ValueError unless ``raw`` is empty (none) or names a file this process can read."""
    if raw and not (os.path.isfile(raw) and os.access(raw, os.R_OK)):
        raise ValueError(raw)


#: The text settings with a format: the check (ValueError when bad) and what it accepts.
CHECKS = {
    "file": (check_file, "the path of a readable file, or empty (none)"),
    "redis_url": (check_redis_url, "redis://[user:password@]host[:port][/db] (db a whole number >= 0), "
                                   "rediss://... (TLS) or unix:///path/to/socket, with query parameters among "
                                   f"{', '.join(REDIS_URL_PARAMETERS)} (rediss:// also "
                                   f"{', '.join(REDIS_TLS_URL_PARAMETERS)})"),
    "kafka_bootstrap": (check_kafka_bootstrap, "host:port[,host:port...] with ports from 1 to 65535 "
                                               "([address]:port for IPv6)"),
}


class StackChoiceError(SettingsError):
    """Several embedded stacks run and nothing says which one to use."""


def stacks_dir(env: Mapping[str, str] = os.environ) -> Path:
    """Where ``stream stack`` writes one state file per running stack (and its logs)."""
    cache = Path(env["XDG_CACHE_HOME"]) if env.get("XDG_CACHE_HOME") else Path.home() / ".cache"
    return cache / "elo-mmr-stream" / "stacks"


def stack_state_path(name: str, env: Mapping[str, str] = os.environ) -> Path:
    """The state file of the stack called ``name``: ``$STACK_STATE_FILE`` or ``stacks_dir()/NAME.json``."""
    if env.get("STACK_STATE_FILE"):
        return Path(env["STACK_STATE_FILE"])
    return stacks_dir(env) / f"{name}.json"


def running_stacks(env: Mapping[str, str] = os.environ) -> dict[str, dict[str, object]]:
    """Name → state of every embedded stack whose process is alive (stale files are ignored)."""
    files = [Path(env["STACK_STATE_FILE"])] if env.get("STACK_STATE_FILE") else sorted(stacks_dir(env).glob("*.json"))
    found: dict[str, dict[str, object]] = {}
    for path in files:
        try:
            state = json.loads(path.read_text())
            os.kill(int(state["pid"]), 0)
        except (OSError, ValueError, KeyError, TypeError):
            continue
        found[str(state.get("name") or path.stem)] = state
    return found


def write_state(path: Path, env: dict[str, str], **extra: Any) -> None:
    """Record this process as a running stack (what :func:`running_stacks` reads): ``{"pid", "started_at", "env",
    **extra}``, renamed into place (a reader never sees half a file), mode 0600 (the Redis URL may hold a password)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    payload = {"pid": os.getpid(), "started_at": time.time(), "env": env, **extra}
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        json.dump(payload, out, indent=2)
    os.replace(tmp, path)


def remove_state(path: Path) -> None:
    """Remove the state file if it is still this process's (another stack may have replaced it)."""
    try:
        if json.loads(path.read_text()).get("pid") == os.getpid():
            path.unlink()
    except (OSError, ValueError):
        pass


def running_stack_env(env: Mapping[str, str] = os.environ) -> dict[str, str]:
    """What the :func:`chosen_stack` forwards of its environment (:data:`STACK_FORWARDED`); {} when none runs."""
    chosen = chosen_stack(env)
    stack_env = chosen[1].get("env") if chosen else None
    return {k: str(v) for k, v in stack_env.items() if k in STACK_FORWARDED} if isinstance(stack_env, dict) else {}


def chosen_stack(env: Mapping[str, str] = os.environ) -> tuple[str, dict[str, object]] | None:
    """(name, state) of the running embedded stack other commands use: the one ``STACK_NAME`` names, or the only
    one running; None when none runs. :class:`StackChoiceError` when that is not one stack (it lists those running)."""
    stacks = running_stacks(env)
    name = env.get("STACK_NAME", "")
    running = f"running: {', '.join(sorted(stacks))}" if stacks else "none is running (start one with `stream stack`)"
    if name:
        if name not in stacks:
            raise StackChoiceError(f"STACK_NAME={name!r} names no running embedded stack; {running}")
        return name, stacks[name]
    if len(stacks) > 1:
        raise StackChoiceError(f"{len(stacks)} embedded stacks are running ({', '.join(sorted(stacks))}): "
                               "set STACK_NAME to one of them (or KAFKA_BOOTSTRAP and REDIS_URL)")
    return next(iter(stacks.items()), None)


def connection_origin(env: Mapping[str, str] = os.environ) -> dict[str, str]:
    """Where KAFKA_BOOTSTRAP and REDIS_URL come from, as :meth:`Settings.from_env` reads them: ``"environment"``,
    ``"stack NAME"`` or ``"default"`` (the built-in 127.0.0.1 address, which may be a server nobody chose)."""
    origin = {name: "environment" for name in STACK_ENV_VARS if env.get(name)}
    if len(origin) < len(STACK_ENV_VARS):
        chosen, forwarded = chosen_stack(env), running_stack_env(env)
        for name in STACK_ENV_VARS:
            origin.setdefault(name, f"stack {chosen[0]}" if chosen and forwarded.get(name) else "default")
    return origin


def _redact(value: str) -> str:
    """Mask a password or the credentials of a URL (user:password@ and a ``password=`` query parameter)."""
    if "://" not in value:
        return "***"
    if "@" in value:
        scheme, rest = value.split("://", 1)
        value = f"{scheme}://***@{rest.rsplit('@', 1)[1]}"
    return re.sub(r"(?i)([?&](?:password|pass|pwd)=)[^&#]*", r"\1***", value)


def env_table() -> str:
    """Markdown table of every environment variable, its default, meaning and accepted values."""
    rows = [f"| `{f.metadata['env']}` | `{f.default}` | {f.metadata['doc']} | {accepted(f)} |" for f in fields(Settings)]
    return "\n".join(["| variable | default | meaning | accepted |", "|---|---|---|---|", *rows])
