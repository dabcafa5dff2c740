"""Prometheus metrics of the pipeline (exposed by the worker's web server at /metrics)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

LATENCY_BUCKETS_S = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)

ROUNDS = Counter("ems_rounds_total", "Rounds handled by phase one, by outcome "
                 "(rated, resent, duplicate, no_outcome, rejected, failed, forwarded)", ["outcome"])
ROUNDS_REJECTED = Counter("ems_rounds_rejected_total", "Messages sent to the dead-letter topic, by reason (rejected "
                          "rounds; bad_player_update: a player-updates message that is not a PlayerUpdate; unverified_player_update: one not in its round's stored fan-out; "
                          "internal_error: a "
                          "message whose handling kept raising)", ["reason"])
PLAYER_UPDATES = Counter("ems_player_updates_total", "Player updates of phase two, by result "
                         "(applied now, re-emitted from stored results, or gap: not applied, the player's earlier round "
                         "not applied yet)", ["result"])
UPDATES_APPLIED, UPDATES_RE_EMITTED, UPDATES_GAP = (PLAYER_UPDATES.labels(result)
                                                   for result in ("applied", "re-emitted", "gap"))
"""PLAYER_UPDATES' series, looked up once (phase two counts into them after every batch)."""
PHASE_ONE_SECONDS = Histogram("ems_phase_one_seconds", "Phase one time per round (barrier wait included)",
                              buckets=LATENCY_BUCKETS_S)
PHASE_TWO_SECONDS = Histogram("ems_phase_two_seconds", "Phase two time per batch", buckets=LATENCY_BUCKETS_S)
ROUND_LAG_SECONDS = Gauge("ems_round_lag_seconds", "Age of the last round phase one picked up (now - its Kafka timestamp)")
HANDLER_FAILURES = Counter("ems_handler_failures_total", "Failed attempts of a handler call or send, retried "
                           "(retry.py), by handler and kind (transient: Redis or Kafka unreachable; unexpected: "
                           "any other exception, logged at ERROR with its traceback)", ["handler", "kind"])
HANDLER_STUCK_SECONDS = Gauge("ems_handler_stuck_seconds", "Seconds the oldest still-failing call of a handler "
                              "has been failing (its input not acknowledged meanwhile); 0 when healthy",
                              ["handler"])
HANDLER_RUNNING_SECONDS = Gauge("ems_handler_running_seconds", "Seconds the oldest call of a handler that has "
                                "not returned yet has been running (retries included): a call hung on Redis or Kafka "
                                "grows here; 0 when the handler has no call", ["handler"])
STALLED_PARTITIONS = Gauge("ems_stalled_partitions", "Input partitions assigned to this worker that it stopped fetching: "
                           "end offset ahead of the committed offset, nothing fetched, no progress for STALL_TIMEOUT_S "
                           "(watchdog.py), by topic", ["topic"])
STALL_HEALS = Counter("ems_stall_heals_total", "Self-heals of a stalled partition by the watchdog (seek to the "
                      "committed offset and resume), by topic", ["topic"])

WAIT_BUCKETS_S = (0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0, 600.0)
QUALITY_BUCKETS = (0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 1.0)
MM_TICKETS = Counter("ems_mm_tickets_total", "Matchmaking tickets by queue and outcome (joined, duplicate, rejected, "
                     "cancelled, too_late, timed_out, matched, dead_lettered)", ["queue", "outcome"])
MM_MATCHES = Counter("ems_mm_matches_total", "Matches formed (committed) per queue", ["queue"])
MM_WAITING = Gauge("ems_mm_waiting_tickets", "Tickets waiting in the queue's pool at its last tick", ["queue"])
MM_WAIT_SECONDS = Histogram("ems_mm_wait_seconds", "Wait of each matched ticket, per queue", ["queue"],
                            buckets=WAIT_BUCKETS_S)
MM_QUALITY = Histogram("ems_mm_match_quality", "Predicted quality of each formed match, per queue", ["queue"],
                       buckets=QUALITY_BUCKETS)
MM_TICK_SECONDS = Histogram("ems_mm_tick_seconds", "Time of one matchmaking tick (read, form, commit, send), per queue",
                            ["queue"], buckets=LATENCY_BUCKETS_S)
