"""Every Prometheus metric the service exports (the worker's and the API's ``/metrics``).

Named by the Prometheus conventions (https://prometheus.io/docs/practices/naming/): the
application prefix :data:`PREFIX` (``ems_``) on every name, base units in the name
(``_seconds``, ``_bytes``), ``_total`` on counters (and on nothing else). The standard process
metrics come under the prefix too (``ems_process_cpu_seconds_total``, ...: prometheus_client's
default ``process_*``, ``python_gc_*`` and ``python_info`` collectors are replaced); Faust's own
sensors are not exported (``compat.QuietMonitor``). tests/faults/test_ops_metrics.py checks a
running worker's scrape against these conventions and deploy/grafana and deploy/prometheus.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from prometheus_client import (GC_COLLECTOR, PLATFORM_COLLECTOR, PROCESS_COLLECTOR, REGISTRY, Counter, Gauge,
                               Histogram, ProcessCollector, disable_created_metrics)
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

PREFIX = "ems"
"""The application prefix of every exported metric name (``ems_...``: elo-mmr-stream)."""

disable_created_metrics()  # type: ignore[no-untyped-call]  # no ``*_created`` series beside each counter and histogram


# prometheus_client's default collectors (no prefix) replaced by the process collector under PREFIX
for _default in (PROCESS_COLLECTOR, PLATFORM_COLLECTOR, GC_COLLECTOR):
    try:
        REGISTRY.unregister(_default)
    except KeyError:  # already done (a re-import)
        pass
if "ems_process_cpu_seconds_total" not in getattr(REGISTRY, "_names_to_collectors", {}):
    ProcessCollector(namespace=PREFIX)

LATENCY_BUCKETS_S = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)

ROUNDS = Counter("ems_rounds_total", "Rounds handled by phase one, by outcome "
                 "(rated, resent, duplicate, no_outcome, rejected, failed, forwarded, fenced)", ["outcome"])
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
REDIS_ERRORS = Counter("ems_redis_errors_total", "Failed Redis calls of a handler (any Redis error: unreachable, "
                       "timed out, loading, a script error), each retried (retry.py); a subset of "
                       "ems_handler_failures_total", ["handler"])
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

HEALTH_CPU_SECONDS = Counter("ems_rating_health_cpu_seconds_total", "CPU time of the worker's thread spent scoring "
                             "rating health (keeping each call's references, then the bulk scoring of a flush; the "
                             "recording's Redis call not included): its share of ems_process_cpu_seconds_total is rating "
                             "health's cost")
API_REQUESTS = Counter("ems_api_requests_total", "Read API requests by route and status", ["route", "status"])


class Snapshot(Collector):
    """Figures replaced whole by :meth:`update` (a scrape sees one update or the next), rendered by ``families``."""

    def __init__(self, families: Callable[[dict[Any, Any]], Iterator[Metric]]) -> None:
        self._families = families
        self._rows: dict[Any, Any] = {}

    def update(self, rows: Mapping[Any, Any]) -> None:
        self._rows = dict(rows)

    def collect(self) -> Iterator[Metric]:
        return self._families(self._rows)

    def describe(self) -> Iterator[Metric]:
        return iter(())


def _consumer_lag(rows: dict[tuple[str, int], tuple[int, float | None]]) -> Iterator[Metric]:
    """The worker group's lag per topic and partition, in messages and in seconds (the oldest
    uncommitted record's age), set whole by the Kafka probe (``stream.api.health``) after each check."""
    messages = GaugeMetricFamily("ems_consumer_lag_messages", "Records of the partition not committed yet by "
                                 "the worker group (end offset - committed offset)", labels=["topic", "partition"])
    seconds = GaugeMetricFamily("ems_consumer_lag_seconds", "Age of the oldest record of the partition not "
                                "committed yet by the worker group (now - its Kafka timestamp); 0 when caught up",
                                labels=["topic", "partition"])
    for (topic, partition), (count, age) in sorted(rows.items()):
        messages.add_metric([topic, str(partition)], float(count))
        if age is not None:
            seconds.add_metric([topic, str(partition)], age)
    yield messages
    yield seconds


CONSUMER_LAG = Snapshot(_consumer_lag)
REGISTRY.register(CONSUMER_LAG)


_LADDER_HEALTH = (  # name (``_total``: a counter), help, labels
    ("ems_ladder_scored_rounds_total", "Rounds scored before their update", "ladder"),
    ("ems_ladder_rapid_climbers_total", "Rapid-climber events", "ladder"),
    ("ems_ladder_pair_accuracy_ratio", "Share of pairs the ratings before the round ordered right (the paper's pair "
     "metric / 100)", "ladder subset window"),
    ("ems_ladder_rank_deviation_ratio", "The paper's rank deviation / 100", "ladder subset window"),
    ("ems_ladder_pair_log_loss", "Mean log-loss (nats) of the pairwise win probabilities", "ladder window"),
    ("ems_ladder_calibration_error", "Expected calibration error of the pairwise win probabilities (sum over bins "
     "|wins - predicted| / pairs)", "ladder window"),
    ("ems_ladder_calibration_observed_ratio", "Share of pairs the favourite won, per bin of its predicted probability",
     "ladder bin window"),
    ("ems_ladder_calibration_predicted_ratio", "Mean predicted probability of the favourite, per bin",
     "ladder bin window"),
    ("ems_ladder_calibration_pairs_total", "Pairs scored, per bin of the favourite's predicted probability",
     "ladder bin"),
    ("ems_ladder_mean_mu", "Mean mu: pool (every player ever rated) or participants (rolling window)",
     "ladder population"),
    ("ems_ladder_median_mu", "Median over the rolling window of each round's median mu before it", "ladder"),
    ("ems_ladder_provisional_ratio", "Share of participations by provisional players (fewer than 5 earlier rounds)",
     "ladder window"),
)


def _ladder_health(ladders: dict[str, dict[str, Any]]) -> Iterator[Metric]:
    """Each ladder's rating health (``store.health.ladder_health``, refreshed from Redis by the API's
    loop every ``HEALTH_EXPORT_S``: every worker exports the same figures, take ``max by (ladder)``);
    the paper's pair and rank figures as 0-1 ratios, calibration per bin (``bin``: its lower edge)."""
    from prometheus_client.core import CounterMetricFamily

    families = [(CounterMetricFamily if name.endswith("_total") else GaugeMetricFamily)(
        name.removesuffix("_total"), doc, labels=labels.split()) for name, doc, labels in _LADDER_HEALTH]
    scored, climbers, pair, rank, loss, ece, observed, predicted, pairs, mean_mu, median_mu, provisional = families

    def number(value: object) -> float:
        return math.nan if value is None else float(value)  # type: ignore[arg-type]

    for ladder, health in sorted(ladders.items()):
        cumulative = health["cumulative"]
        scored.add_metric([ladder], float(cumulative["rounds"]))
        climbers.add_metric([ladder], float(cumulative["climbers"]))
        for window in ("cumulative", "rolling"):
            figures = health[window]
            for subset, key in (("all", "all"), ("experienced", "exp")):
                pair.add_metric([ladder, subset, window], number(figures[f"pair_{key}"]) / 100.0)
                rank.add_metric([ladder, subset, window], number(figures[f"rank_{key}"]) / 100.0)
            loss.add_metric([ladder, window], number(figures["log_loss"]))
            ece.add_metric([ladder, window], number(figures["calibration_error"]))
            provisional.add_metric([ladder, window], number(figures["provisional_share"]))
            for b in figures["calibration"]:
                edge = f"{b['from']:.2f}"
                n = b["pairs"]
                observed.add_metric([ladder, edge, window], b["wins"] / n if n else math.nan)
                predicted.add_metric([ladder, edge, window], b["predicted"] / n if n else math.nan)
                if window == "cumulative":
                    pairs.add_metric([ladder, edge], float(n))
        mean_mu.add_metric([ladder, "pool"], number(health["pool"]["mean_mu"]))
        mean_mu.add_metric([ladder, "participants"], number(health["rolling"]["mean_mu"]))
        median_mu.add_metric([ladder], number(health["median_mu"]))
    yield from families


LADDER_HEALTH = Snapshot(_ladder_health)
REGISTRY.register(LADDER_HEALTH)
