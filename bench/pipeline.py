"""End-to-end pipeline benchmark on the embedded local stack (Tansu broker + redis-server), next to its floor.

Rounds of ``--size`` players as bench/workloads.py draws them (duels and lobbies: ``stream
generate-synthetic --profile matches`` from a pool of 2,000 players over ``--ladders`` ladders;
rounds above 100 players: one sequential ladder), through ``--workers`` ``stream worker``
processes. Two modes:

* **throughput**: ``--rounds`` rounds published at once; rounds/s and participations/s from the
  first publish to the last ``rating-changes`` event read back (end to end), and to the moment
  Redis counts every round rated ("all rated"); CPU per participation of the workers (together),
  redis-server and the broker during the run.
* **latency**: rounds published at a fixed offered rate (``--rate`` rounds/s, default half the
  throughput measured in this run) for ``--latency-seconds``; publish -> ``rated`` per round (the
  publish wall time against the round record's ``rated_at``, read once everything is rated),
  p50 / p99 / max, and whether the backlog stayed bounded.

Reference, same run and same stack: bench/floor.py's floor for the same rounds (the mandated
Kafka and Redis I/O alone, measured before the workers start), and the ratio pipeline / floor
(issue 15's target: within 2x). The machine's load average is printed with the figures.

Same-run A/B of a setting (``--ab NAME=VALUE``, throughput mode): the workers as configured (A)
against workers restarted with NAME=VALUE (B), e.g. ``--ab HEALTH_WINDOW=0``: the cost of rating
health. The figure is the workers' **CPU seconds per round rated**: the sum over the worker
processes of /proc/PID/stat utime + stime, from just before the burst is published to
``--settle-s`` after it is drained (every round rated, every event read back: the workers' timers,
such as rating health's once-a-second flush, have done the burst's work), minus the workers' idle
baseline (their CPU rate over ``--idle-s`` at rest just before the burst) times that span. Each
generation of workers is fresh (restarted, warmed up on every size), every burst's ladders are new
but on the same partitions (the first burst's), and the generations come in pairs, ``--repeat``
A/B pairs in ABBA order (A B, then B A, ...), each followed by an A/A pair of two generations with
the same settings as A (X Y / Y X): the A/A pairs are the noise floor, measured in the same run.
Printed: each pair's ratio A / B and the median over the pairs with the sign test's 95 % interval
(bench/abstats.py), next to the A/A median and interval; and, as before, the worker CPU per
participation of the bursts alone (no idle correction) and each A/B pair's overhead. On a shared
2-core machine single pairs still spread by +-20 % (batching follows timing), so 10 pairs resolve
about 10 %; bench/health_ab.py resolves 1-2 % of phase one's handler.

Usage: python bench/pipeline.py --size 2,10 [--mode throughput,latency] [--rounds N] [--ladders 2]
       [--rate R] [--latency-seconds 20] [--breakdown] [--workers 2] [--partitions 4] [--repeat 1]
       [--ab NAME=VALUE] [--idle-s 4] [--settle-s 2.5]
Prints Markdown tables (BENCHMARKS.md, pipeline section).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import redis

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from abstats import median_ci, pair_orders  # noqa: E402
from clients import EventReader, RoundProducer  # noqa: E402
from floor import Floor, measure  # noqa: E402
from floor import table as floor_table  # noqa: E402
from redis_stats import command_rows, redis_commands, redis_cpu_s  # noqa: E402
from workloads import LADDERS, default_rounds, ladder_names, make_rounds, pool  # noqa: E402

from stream.contracts import RoundResult  # noqa: E402
from stream.pipeline.health import FLUSH_S as HEALTH_FLUSH_S  # noqa: E402
from stream.pipeline.partitioner import partition_for  # noqa: E402
from stream.pipeline.topics import ensure  # noqa: E402
from stream.settings import Settings  # noqa: E402
from stream.stack.local import LocalStack  # noqa: E402
from stream.stack.ports import free_port, wait_for_port  # noqa: E402
from stream.store import keys  # noqa: E402

MODES = ("throughput", "latency")
BURST_POLL_S = 0.05
"""Poll period of the ladders' rated counters while a burst is rated."""
REDIS_COMMANDS_SHOWN = 6
"""Rows of the per-command Redis table printed per round size."""
TIMEOUT_S = 900.0
STARTUP_S = 8.0
"""Seconds given to the workers to join the consumer group before the warm-up rounds."""
WARM_UP_LADDERS = 8
"""Ladders of one warm-up duel each (over the rounds topic's partitions), rated before timing."""
DEFAULT_RATE = 20.0
"""Offered rounds/s of the latency mode when neither --rate nor a throughput run of the size gives one."""
BOUNDED_BACKLOG_S = 1.0
"""The latency run is bounded when, at the end of publishing, at most this many seconds of input are unrated."""
IDLE_S = 4.0
"""``--ab``: seconds the workers' idle CPU rate is measured over before each burst."""
SETTLE_S = 2 * HEALTH_FLUSH_S + 0.5
"""``--ab``: seconds after a burst is drained before the workers' CPU is read (rating health's timer
scores the rounds kept once the oldest is FLUSH_S old, checked every FLUSH_S, then records them)."""
AB_WARM_UP_ROUNDS = 64
"""``--ab``: rounds of each size each fresh generation of workers rates before the bursts (one batch)."""


@dataclass
class Throughput:
    size: int
    ladders: int
    rounds: int
    participations: int
    stream_s: float
    """First publish -> last rating-change event read back."""
    rated_s: float
    """First publish -> every round counted rated in Redis."""
    worker_cpu_s: float
    redis_cpu_s: float
    broker_cpu_s: float
    redis_commands: dict[str, tuple[int, int]]
    worker_cpu_each_s: list[float]
    """Each worker's share of ``worker_cpu_s``: a ladder's phase one runs on the worker owning its
    partition, so two ladders on one worker's partitions load it more than the other."""
    partitions: list[int]
    """The partition of each ladder (``rounds`` is keyed by ladder)."""
    clients_cpu_s: float
    """The bench's own process (its producer of rounds, its event reader, the polls of Redis)."""
    health_cpu_s: float | None = None
    """The workers' CPU in rating health's own code (``ems_rating_health_cpu_seconds_total``
    scraped before and after; ``--health-cpu``), None when not scraped."""
    net_cpu_s: float | None = None
    """``--ab``: the workers' CPU from the publish to SETTLE_S after the burst is drained, minus
    their idle rate over that span (see the module docstring); None when not measured."""
    idle_cpu_s: float = 0.0
    """The idle baseline subtracted from ``net_cpu_s`` (idle rate x span)."""

    @property
    def rounds_per_s(self) -> float:
        return self.rounds / self.stream_s

    @property
    def part_per_s(self) -> float:
        return self.participations / self.stream_s


@dataclass
class Latency:
    size: int
    rate: float
    """Offered rounds per second."""
    rounds: int
    latencies_s: list[float]
    backlog_at_end: int
    """Rounds published but not rated when publishing ended."""
    received_s: list[float]
    """Per round, publish -> phase one began handling its batch (the round record's ``received_at``):
    the Kafka hop, the fetch and the wait in phase one's buffer; the rest of ``latencies_s`` is phase
    one's batch, the ``player-updates`` hop and phase two."""
    window: tuple[float, float] = (0.0, 0.0)
    """Wall times of the first publish and of the last round rated (the batches of this run)."""

    def percentile(self, q: float) -> float:
        return float(np.percentile(self.latencies_s, q))


def process_cpu_s(pids: list[int]) -> float:
    """User + system CPU seconds used so far by these processes (Linux /proc)."""
    total = 0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of stat)
    return total / os.sysconf("SC_CLK_TCK")


def cpu_shares(each_s: list[float]) -> str:
    """Each worker's share of the workers' CPU time, or "-" when none was counted (a burst shorter
    than a clock tick of CPU: /proc counts whole ticks)."""
    total = sum(each_s)
    return " / ".join(f"{s / total:.0%}" for s in each_s) if total > 0 else "-"


def load_average() -> str:
    return " / ".join(f"{x:.2f}" for x in os.getloadavg())


def rated(client: redis.Redis, ladders: list[str]) -> int:
    """Rounds rated so far over ``ladders`` (each bench ladder is fresh), one round trip."""
    pipe = client.pipeline(transaction=False)
    for ladder in ladders:
        pipe.hget(keys.ladder(ladder), "rounds_rated")
    return sum(int(v or 0) for v in pipe.execute())


def wait_rated(client: redis.Redis, ladders: list[str], count: int, poll_s: float = BURST_POLL_S) -> None:
    """Until ``count`` rounds of ``ladders`` are rated, polling their counters every ``poll_s``."""
    deadline = time.monotonic() + TIMEOUT_S
    while rated(client, ladders) < count:
        if time.monotonic() > deadline:
            raise TimeoutError(f"rounds of {ladders} not rated after {TIMEOUT_S:.0f} s")
        time.sleep(poll_s)


HEALTH_CPU_METRIC = "ems_rating_health_cpu_seconds_total"


def scraped_sum(ports: list[int], name: str) -> float:
    """Sum over the workers serving ``/metrics`` on ``ports`` of the samples named ``name``."""
    total = 0.0
    for port in ports:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30) as reply:
            for line in reply.read().decode().splitlines():
                if line.startswith(name + " ") or line.startswith(name + "{"):
                    total += float(line.rsplit(" ", 1)[1])
    return total


class Bench:
    """The stack, the workers, a producer of rounds and the event reader of one bench run."""

    def __init__(self, stack: LocalStack, prefix: str, worker_pids: list[int], partitions: int) -> None:
        self.stack, self.prefix, self.worker_pids, self.partitions = stack, prefix, worker_pids, partitions
        assert stack.broker.process is not None
        self.broker_pid = stack.broker.process.pid
        self.client = redis.Redis.from_url(stack.redis_url)
        self.kafka = RoundProducer(stack.bootstrap, f"{prefix}rounds")
        self.events = EventReader(stack.bootstrap, f"{prefix}rating-changes")
        self.published = 0
        """Participations published so far (= rating-change events expected so far)."""
        self.web_ports: list[int] = []
        """The workers' web ports (``--health-cpu``): rating health's own CPU is scraped from them."""

    def publish(self, r: RoundResult, value: bytes | None = None) -> None:
        """Publish ``r`` (``value``: its JSON, if already encoded)."""
        self.kafka.send(r.ladder, r.to_json().encode() if value is None else value)
        self.published += r.field_size

    def warm_up(self, tag: str = "warm") -> None:
        """One duel per warm-up ladder, rated: the group has formed and every worker has rated something
        (``tag``: the ladders' names; a new one for each warm-up of the same run)."""
        rounds = make_rounds(2, WARM_UP_LADDERS, tag, seed=0, ladders=WARM_UP_LADDERS)
        for r in rounds:
            self.publish(r)
        self.kafka.flush()
        wait_rated(self.client, ladder_names(rounds), len(rounds))
        self.events.read_until(self.published, TIMEOUT_S)

    def idle_rate(self, seconds: float) -> float:
        """The workers' CPU seconds per second over ``seconds`` with nothing to rate."""
        before, began = process_cpu_s(self.worker_pids), time.monotonic()
        time.sleep(seconds)
        return (process_cpu_s(self.worker_pids) - before) / (time.monotonic() - began)

    def warm_up_sizes(self, sizes: list[int], ladders: int, tag: str) -> None:
        """One batch of rounds of each size, rated (``--ab``: a fresh generation of workers has rated
        every size once before its bursts are measured)."""
        for size in sizes:
            rounds = make_rounds(size, AB_WARM_UP_ROUNDS, f"{tag}-{size}", seed=size, ladders=ladders)
            for r in rounds:
                self.publish(r)
            self.kafka.flush()
            wait_rated(self.client, ladder_names(rounds), len(rounds))
        self.events.read_until(self.published, TIMEOUT_S)

    def throughput(self, rounds: list[RoundResult], idle_s: float = 0.0, settle_s: float = 0.0) -> Throughput:
        """Publish every round at once; time to the last event read back and to all rated. With
        ``idle_s``: also the workers' CPU to ``settle_s`` after the drain, net of their idle rate
        measured over ``idle_s`` just before (``Throughput.net_cpu_s``)."""
        idle = self.idle_rate(idle_s) if idle_s > 0 else None
        health_before = scraped_sum(self.web_ports, HEALTH_CPU_METRIC) if self.web_ports else None
        ladders = ladder_names(rounds)
        participations = sum(r.field_size for r in rounds)
        self.client.config_resetstat()
        cpu = process_cpu_s(self.worker_pids), redis_cpu_s(self.client), process_cpu_s([self.broker_pid])
        each = [process_cpu_s([pid]) for pid in self.worker_pids]
        cpu_at = time.time()
        target = self.published + participations
        values = [r.to_json().encode() for r in rounds]  # encoded before the clock starts, as a producer's own work
        reader = threading.Thread(target=self.events.read_until, args=(target, TIMEOUT_S), daemon=True)
        first = time.time()
        clients_cpu = time.process_time()
        reader.start()
        for r, value in zip(rounds, values):
            self.publish(r, value)
        self.kafka.flush()
        wait_rated(self.client, ladders, len(rounds))
        rated_s = time.time() - first
        reader.join(timeout=TIMEOUT_S)
        clients_cpu = time.process_time() - clients_cpu
        if self.events.seen < target:
            raise TimeoutError(f"read {self.events.seen} of {target} rating-change events")
        worker_cpu = process_cpu_s(self.worker_pids) - cpu[0]
        each_cpu = [process_cpu_s([pid]) - before for pid, before in zip(self.worker_pids, each)]
        net = idle_cpu = None
        if idle is not None:  # drained: the timers' share of the burst done, then the idle baseline off
            time.sleep(settle_s)
            idle_cpu = idle * (time.time() - cpu_at)
            net = process_cpu_s(self.worker_pids) - cpu[0] - idle_cpu
        health = None
        if self.web_ports:  # after the CPU read, once the rounds' last scoring is flushed (at most ~2 s later)
            time.sleep(max(0.0, 2 * HEALTH_FLUSH_S + 0.5 - settle_s))  # scored once the oldest is FLUSH_S old, by a 1 s timer
            health = scraped_sum(self.web_ports, HEALTH_CPU_METRIC)
        return Throughput(rounds[0].field_size, len(ladders), len(rounds), participations,
                          self.events.last_arrival - first, rated_s, worker_cpu,
                          redis_cpu_s(self.client) - cpu[1],
                          process_cpu_s([self.broker_pid]) - cpu[2], redis_commands(self.client),
                          each_cpu,
                          [partition_for(ladder, self.partitions) for ladder in ladders], clients_cpu,
                          None if health is None or health_before is None else health - health_before,
                          net, idle_cpu or 0.0)

    def latency(self, rounds: list[RoundResult], rate: float) -> Latency:
        """Publish ``rounds`` at ``rate`` rounds/s; publish -> rated_at per round once all are rated."""
        ladders = ladder_names(rounds)
        sent: list[float] = []
        began = time.time()
        start = time.perf_counter()
        for i, r in enumerate(rounds):
            delay = start + i / rate - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            self.publish(r)
            sent.append(time.time())
        self.kafka.flush()
        backlog = len(rounds) - rated(self.client, ladders)
        wait_rated(self.client, ladders, len(rounds))
        ended = time.time()
        self.events.read_until(self.published, TIMEOUT_S)
        pipe = self.client.pipeline(transaction=False)
        for r in rounds:
            pipe.hmget(keys.round_record(r.ladder, r.round_id), ("received_at", "rated_at"))
        stamps = [(float(received), float(rated_at)) for received, rated_at in pipe.execute()]
        return Latency(rounds[0].field_size, rate, len(rounds), [t - s for (_, t), s in zip(stamps, sent)], backlog,
                       [received - s for (received, _), s in zip(stamps, sent)], (began, ended))

    def close(self) -> None:
        self.kafka.close()
        self.events.close()
        self.client.close()


def tag_on_partitions(base: str, size: int, ladders: int, layout: list[int] | None, partitions: int) -> str:
    """A name for a burst's ladders (``make_rounds``' tag) starting with ``base`` whose ladders fall
    on the partitions ``layout`` (None: ``base`` itself): every burst of an A/B then loads the
    workers' partitions alike (a ladder's phase one runs on its partition's owner)."""
    for k in range(10_000):
        tag = base if k == 0 else f"{base}.{k}"
        names = ladder_names(make_rounds(size, ladders, tag, seed=size, ladders=ladders))
        if layout is None or [partition_for(name, partitions) for name in names] == layout:
            return tag
    raise ValueError(f"no ladder names on partitions {layout}")


def ab_rows(ab: dict[tuple[str, int], list[Throughput]], sizes: list[int]) -> list[str]:
    """Per size: the workers' CPU per round rated net of idle (median of each variant's bursts), the
    A/B pairs' median ratio with its interval, the A/A control's, and each pair's ratio."""
    rows = ["| players/round | A: worker CPU µs/round | B: worker CPU µs/round | A/B: A / B - 1 [95 % CI] "
            "| A/A control: X / Y - 1 [95 % CI] | A/B pairs | A/A pairs | idle baseline, share of the span's CPU "
            "| A rounds/s |",
            "|---:|---:|---:|---|---|---|---|---:|---:|"]
    for size in sizes:
        per = {v: [t.net_cpu_s / t.rounds * 1e6 for t in ab[(v, size)] if t.net_cpu_s is not None] for v in "ABXY"}
        ab_pairs = [a / b for a, b in zip(per["A"], per["B"])]
        aa_pairs = [x / y for x, y in zip(per["X"], per["Y"])]
        idle = [t.idle_cpu_s / (t.idle_cpu_s + t.net_cpu_s) for v in "ABXY" for t in ab[(v, size)]
                if t.net_cpu_s is not None]
        rows.append(f"| {size:,} | {np.median(per['A']):,.1f} | {np.median(per['B']):,.1f} "
                    f"| **{median_ci(ab_pairs).ratio_text()}** | {median_ci(aa_pairs).ratio_text()} "
                    f"| {', '.join(f'{r - 1:+.1%}' for r in ab_pairs)} | {', '.join(f'{r - 1:+.1%}' for r in aa_pairs)} "
                    f"| {np.median(idle):.0%} | {median_run(ab[('A', size)]).rounds_per_s:,.0f} |")
    return rows


def median_run(runs: list[Throughput]) -> Throughput:
    """The run of median throughput (the lower middle one for an even count)."""
    ordered = sorted(runs, key=lambda f: f.part_per_s)
    return ordered[(len(ordered) - 1) // 2]


def throughput_rows(results: list[tuple[Throughput, Floor, list[Throughput]]]) -> list[str]:
    rows = ["| players/round | ladders | pool | rounds | participations | rounds/s | part./s | all rated: part./s "
            "| floor part./s (same run) | pipeline / floor | worker CPU µs/part. | Redis CPU µs/part. "
            "| broker CPU µs/part. | bench clients CPU µs/part. | workers' CPU shares | ladders' partitions "
            "| runs: part./s |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|---|"]
    for t, floor, runs in results:
        floor_rate = floor.participations / floor.floor_s
        p = t.participations
        rows.append(f"| {t.size:,} | {t.ladders} | {pool(t.size):,} | {t.rounds:,} | {p:,} "
                    f"| {t.rounds_per_s:,.0f} | {t.part_per_s:,.0f} | {p / t.rated_s:,.0f} | {floor_rate:,.0f} "
                    f"| **{floor_rate / t.part_per_s:.1f}x** | {t.worker_cpu_s / p * 1e6:,.0f} "
                    f"| {t.redis_cpu_s / p * 1e6:,.0f} | {t.broker_cpu_s / p * 1e6:,.0f} "
                    f"| {t.clients_cpu_s / p * 1e6:,.0f} | {cpu_shares(t.worker_cpu_each_s)} "
                    f"| {', '.join(map(str, t.partitions))} "
                    f"| {' / '.join(f'{r.part_per_s:,.0f}' for r in runs)} |")
    return rows


def latency_rows(results: list[tuple[Latency, Floor]]) -> list[str]:
    rows = ["| players/round | offered rounds/s | offered part./s | offered / floor part./s | rounds "
            "| latency p50 | p99 | max | unrated at end of publishing |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for lat, floor in results:
        offered = lat.rate * lat.size
        bounded = lat.backlog_at_end <= max(1.0, lat.rate * BOUNDED_BACKLOG_S)
        rows.append(f"| {lat.size:,} | {lat.rate:,.1f} | {offered:,.0f} "
                    f"| {offered / (floor.participations / floor.floor_s):.1%} | {lat.rounds:,} "
                    f"| {lat.percentile(50) * 1000:,.0f} ms | {lat.percentile(99) * 1000:,.0f} ms "
                    f"| {max(lat.latencies_s) * 1000:,.0f} ms "
                    f"| {lat.backlog_at_end} round{'' if lat.backlog_at_end == 1 else 's'}"
                    f"{'' if bounded else ' (NOT bounded)'} |")
    return rows


def breakdown_rows(results: list[Latency]) -> list[str]:
    """Where the latency went: publish -> phase one's batch began, and from there -> rated (p50 / p99 / max)."""
    rows = ["| players/round | offered rounds/s | publish -> phase one p50 | p99 | max "
            "| phase one -> rated p50 | p99 | max |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for lat in results:
        first = np.asarray(lat.received_s) * 1000
        rest = (np.asarray(lat.latencies_s) - np.asarray(lat.received_s)) * 1000
        rows.append(f"| {lat.size:,} | {lat.rate:,.1f} "
                    + " ".join(f"| {np.percentile(part, 50):,.0f} ms | {np.percentile(part, 99):,.0f} ms "
                               f"| {part.max():,.0f} ms" for part in (first, rest)) + " |")
    return rows


BATCH_STEPS = {1: ("handle", "acks"), 2: ("apply", "emit")}
"""The steps each phase's batch lines time (stream/pipeline/timings.py)."""


def batch_rows(results: list[Latency], lines: list[dict[str, object]]) -> list[str]:
    """Per latency run and phase, the workers' batches during it (BATCH_TIMINGS_DIR): how many, how
    big, how long their records waited to be taken (``queued``: Kafka hop + buffer), each step
    (p50 / p99, ms), and the busiest actor's share of the run's wall time spent in batches."""
    rows = ["| players/round | phase | batches/s | messages/batch p50 / max | queued p50 / p99 "
            "| step 1 p50 / p99 | step 2 p50 / p99 | busiest worker in batches (its actors added) |",
            "|---:|---:|---:|---|---|---|---|---:|"]
    for lat in results:
        began, ended = lat.window
        seconds = max(ended - began, 1e-9)
        for phase, steps in BATCH_STEPS.items():
            mine = [line for line in lines if line["phase"] == phase and began <= float(line["at"]) <= ended]  # type: ignore[arg-type]
            if not mine:
                continue
            sizes = np.array([line["size"] for line in mine], dtype=float)
            queued = np.array([line["queued"] for line in mine if line["queued"] is not None], dtype=float) * 1000
            busy: dict[object, float] = {}
            for line in mine:
                busy[line["worker"]] = busy.get(line["worker"], 0.0) + sum(float(line[s]) for s in steps)  # type: ignore[arg-type]
            cells = []
            for step in steps:
                values = np.array([line[step] for line in mine], dtype=float) * 1000
                cells.append(f"{step} {np.percentile(values, 50):,.1f} / {np.percentile(values, 99):,.1f} ms")
            queue_cell = (f"{np.percentile(queued, 50):,.1f} / {np.percentile(queued, 99):,.1f} ms" if len(queued)
                          else "-")
            rows.append(f"| {lat.size:,} | {phase} | {len(mine) / seconds:,.0f} | {np.median(sizes):,.0f} / "
                        f"{sizes.max():,.0f} | {queue_cell} | {cells[0]} | {cells[1]} "
                        f"| {max(busy.values()) / seconds:.0%} |")
    return rows


def read_batch_lines(directory: Path) -> list[dict[str, object]]:
    """The workers' batch lines (stream/pipeline/timings.py), each with its worker's file name."""
    return [{**json.loads(line), "worker": path.stem} for path in sorted(directory.glob("*.jsonl"))
            for line in path.read_text().splitlines() if line.strip()]


def parse_list(text: str) -> list[str]:
    return [item.strip() for item in text.split(",") if item.strip()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", default="2,10", help="players per round, comma-separated (2: duels, 10: lobbies)")
    parser.add_argument("--mode", default="throughput,latency", help=f"comma-separated among {', '.join(MODES)}")
    parser.add_argument("--rounds", type=int, default=0,
                        help="rounds of a throughput run [bench/workloads.py's per size]")
    parser.add_argument("--ladders", type=int, default=LADDERS, help="ladders the small rounds are spread over")
    parser.add_argument("--rate", type=float, default=0.0,
                        help="latency mode: offered rounds/s [half this run's throughput, else %g]" % DEFAULT_RATE)
    parser.add_argument("--latency-seconds", type=float, default=20.0, help="latency mode: seconds of publishing")
    parser.add_argument("--breakdown", action="store_true",
                        help="latency mode: also print where the latency went (publish -> phase one -> rated)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--startup-s", type=float, default=STARTUP_S, help="seconds for the workers to join")
    parser.add_argument("--log-level", default="warning", help="the workers' LOG_LEVEL")
    parser.add_argument("--keep-logs", type=Path, default=None, help="copy the workers' logs into this directory")
    parser.add_argument("--repeat", type=int, default=1,
                        help="throughput runs per size, interleaved; the median one is shown (this machine's "
                             "speed drifts by tens of percent within minutes)")
    parser.add_argument("--health-cpu", action="store_true",
                        help="workers with their web server, whose ems_rating_health_cpu_seconds_total is scraped "
                             "around each throughput run: rating health's own share of the worker CPU")
    parser.add_argument("--ab", default="", metavar="NAME=VALUE",
                        help="throughput mode: same-run A/B, the workers as configured (A) against NAME=VALUE (B); "
                             "--repeat A/B pairs, each followed by an A/A pair (the noise floor)")
    parser.add_argument("--idle-s", type=float, default=IDLE_S,
                        help="--ab: seconds the workers' idle CPU rate is measured over before each burst")
    parser.add_argument("--settle-s", type=float, default=SETTLE_S,
                        help="--ab: seconds after a burst is drained before the workers' CPU is read")
    args = parser.parse_args()
    sizes, modes = [int(s) for s in parse_list(args.size)], parse_list(args.mode)
    if args.ab and ("=" not in args.ab or modes != ["throughput"]):
        parser.error("--ab takes NAME=VALUE, with --mode throughput only")
    if bad := [m for m in modes if m not in MODES]:
        parser.error(f"--mode: {bad} not among {MODES}")
    if any(s < 2 for s in sizes):
        parser.error("--size: rounds need at least 2 players")
    prefix = "bench-"
    loads = [load_average()]
    floors: dict[int, Floor] = {}
    throughputs: dict[int, list[Throughput]] = {s: [] for s in sizes}
    latencies: dict[int, Latency] = {}
    ab: dict[tuple[str, int], list[Throughput]] = {(v, s): [] for v in "ABXY" for s in sizes}
    with LocalStack.on_ports() as stack, tempfile.TemporaryDirectory() as tmp:
        for size in sizes:  # the floor first, on the fresh stack, with no worker running
            floors[size] = measure(stack, make_rounds(size, args.rounds or default_rounds(size), f"floor{size}",
                                                      seed=size, ladders=args.ladders), "pipeline")
            print(f"floor of {size}-player rounds: {floors[size].participations / floors[size].floor_s:,.0f} part./s",
                  file=sys.stderr)
        env = dict(os.environ, **stack.env(), TOPIC_PREFIX=prefix,
                   APP_ID=f"{prefix}app", PARTITIONS=str(args.partitions), LOG_LEVEL=args.log_level)
        batches_dir = Path(tmp) / "batches"
        if args.breakdown:
            env["BATCH_TIMINGS_DIR"] = str(batches_dir)
        ensure(Settings.from_env(env))

        web_ports = [free_port() for _ in range(args.workers)] if args.health_cpu else []

        def start_workers(extra: dict[str, str], tag: str) -> list[subprocess.Popen[bytes]]:
            return [subprocess.Popen([sys.executable, "-m", "stream", "worker"] + ([] if web_ports else ["--no-web"]),
                                     cwd=REPO, env={**env, **extra, **({"WEB_PORT": str(web_ports[i])} if web_ports
                                                                       else {})},
                                     stdout=open(Path(tmp) / f"w{i}{tag}.log", "wb"), stderr=subprocess.STDOUT)
                    for i in range(args.workers)]

        workers = start_workers({}, "")
        bench = None
        try:
            time.sleep(args.startup_s)
            bench = Bench(stack, prefix, [w.pid for w in workers], args.partitions)
            bench.web_ports = web_ports
            bench.warm_up()
            if args.ab:
                name, value = args.ab.split("=", 1)
                extras = {"A": {}, "B": {name: value}, "X": {}, "Y": {}}
                layouts: dict[int, list[int]] = {}
                generation = 0
                for pair, (first_v, second_v, control) in enumerate(pair_orders(args.repeat)):
                    for variant in (first_v, second_v):
                        if generation or variant == "B":  # each generation fresh; the group's offsets carry over
                            for w in workers:
                                w.terminate()
                            for w in workers:
                                w.wait(timeout=60)
                            workers = start_workers(extras[variant], f"-{variant}{pair}")
                            time.sleep(args.startup_s)
                            bench.worker_pids = [w.pid for w in workers]
                            bench.warm_up(f"warm-{variant}{pair}")
                        if web_ports:
                            for port in web_ports:
                                wait_for_port(port, 60.0)
                        bench.warm_up_sizes(sizes, args.ladders, f"warm-{variant}{pair}")
                        generation += 1
                        for size in sizes:
                            tag = tag_on_partitions(f"ab{size}-{variant}{pair}", size, args.ladders, layouts.get(size),
                                                    args.partitions)
                            rounds = make_rounds(size, args.rounds or default_rounds(size), tag, seed=size,
                                                 ladders=args.ladders)
                            layouts.setdefault(size, [partition_for(name, args.partitions)
                                                      for name in ladder_names(rounds)])
                            t = bench.throughput(rounds, args.idle_s, args.settle_s)
                            ab[(variant, size)].append(t)
                            assert t.net_cpu_s is not None
                            share = "" if not t.health_cpu_s else \
                                f", rating health's own {t.health_cpu_s / t.worker_cpu_s:.1%} of it"
                            print(f"pair {pair + 1}{' (A/A)' if control else ''} {variant}, {size}-player rounds: "
                                  f"{t.part_per_s:,.0f} part./s, worker CPU {t.worker_cpu_s / t.participations * 1e6:,.1f}"
                                  f" µs/part.{share}; {t.net_cpu_s / t.rounds * 1e6:,.1f} µs/round net of idle "
                                  f"({t.idle_cpu_s:.2f} s idle baseline) (load {load_average()})", file=sys.stderr)
            elif "throughput" in modes:
                for run in range(args.repeat):
                    for size in sizes:
                        rounds = make_rounds(size, args.rounds or default_rounds(size), f"burst{size}-r{run}",
                                             seed=size, ladders=args.ladders)
                        t = bench.throughput(rounds)
                        throughputs[size].append(t)
                        share = "" if t.health_cpu_s is None else \
                            f", worker CPU {t.worker_cpu_s / t.participations * 1e6:,.1f} µs/part. of which rating " \
                            f"health's own {t.health_cpu_s / t.worker_cpu_s:.1%}"
                        print(f"run {run + 1}, {size}-player rounds: {t.rounds_per_s:,.0f} rounds/s, "
                              f"{t.part_per_s:,.0f} part./s{share} (load {load_average()})", file=sys.stderr)
            if "latency" in modes:
                for size in sizes:
                    rate = args.rate or (median_run(throughputs[size]).rounds_per_s / 2 if throughputs[size]
                                         else DEFAULT_RATE)
                    count = max(2, round(rate * args.latency_seconds))
                    rounds = make_rounds(size, count, f"paced{size}", seed=size + 1, ladders=args.ladders)
                    lat = latencies[size] = bench.latency(rounds, rate)
                    print(f"latency of {size}-player rounds at {rate:,.1f} rounds/s: "
                          f"p50 {lat.percentile(50) * 1000:,.0f} ms, "
                          f"p99 {lat.percentile(99) * 1000:,.0f} ms (load {load_average()})", file=sys.stderr)
        finally:
            if bench is not None:
                bench.close()
            for w in workers:
                w.terminate()
            for w in workers:
                w.wait(timeout=30)
            batch_lines = read_batch_lines(batches_dir) if args.breakdown else []
            if args.keep_logs is not None:
                args.keep_logs.mkdir(parents=True, exist_ok=True)
                for log in Path(tmp).glob("w*.log"):
                    shutil.copy(log, args.keep_logs / log.name)
    loads.append(load_average())
    print(f"\n{args.workers} worker(s), {args.partitions} partitions, preset {Settings.from_env().engine_preset}; "
          f"load average (1/5/15 min) at start {loads[0]}, at end {loads[1]}; "
          f"{time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime())} UTC\n")
    if args.ab:
        print(f"Same-run A/B: A = the workers as configured, B = {args.ab}; {args.repeat} pair(s) of generations "
              "A B, B A, ... (ABBA), each followed by an A/A pair X Y / Y X (X, Y: as configured). The workers' CPU per "
              f"round rated, from the publish to {args.settle_s:g} s after the drain, minus their idle rate (measured "
              f"over {args.idle_s:g} s before each burst) times that span; median of the pairs' ratios, interval: sign "
              "test\n")
        print("\n".join(ab_rows(ab, sizes)))
        print("\nThe bursts alone (no settle, no idle correction): worker CPU µs per participation (median run), "
              "overhead = A / B - 1 (each A/B pair's in brackets)\n")
        print("| players/round | A: worker CPU µs/part. | B: worker CPU µs/part. | overhead of A | A part./s | B part./s |"
              + (" rating health's own share of the worker CPU (runs with it on) |" if web_ports else ""))
        print("|---:|---:|---:|---:|---:|---:|" + ("---:|" if web_ports else ""))
        for size in sizes:
            a = [t.worker_cpu_s / t.participations * 1e6 for t in ab[("A", size)]]
            b = [t.worker_cpu_s / t.participations * 1e6 for t in ab[("B", size)]]
            pairs = ", ".join(f"{x / y - 1:+.1%}" for x, y in zip(a, b))
            own = [t.health_cpu_s / t.worker_cpu_s for v in "AB" for t in ab[(v, size)] if t.health_cpu_s]
            print(f"| {size:,} | {np.median(a):,.1f} | {np.median(b):,.1f} | **{np.median(a) / np.median(b) - 1:+.1%}** "
                  f"({pairs}) | {median_run(ab[('A', size)]).part_per_s:,.0f} | {median_run(ab[('B', size)]).part_per_s:,.0f} |"
                  + (f" {np.median(own):.1%} ({', '.join(f'{x:.1%}' for x in own)}) |" if web_ports else ""))
        return
    print("Floor (bench/floor.py) of the same rounds, measured first in this run, µs per participation:\n")
    print("\n".join(floor_table([floors[s] for s in sizes])))
    if throughputs[sizes[0]]:
        print(f"\nThroughput: every round published at once; {args.repeat} run(s) per size, the median shown; "
              "pipeline / floor = the floor's part./s over the pipeline's\n")
        print("\n".join(throughput_rows([(median_run(throughputs[s]), floors[s], throughputs[s]) for s in sizes])))
        print("\nRedis commands per participation during the throughput runs (INFO commandstats; a script's "
              "own time includes its inner commands'):\n")
        print("| players/round | command | calls/part. | µs/part. |")
        print("|---:|---|---:|---:|")
        for s in sizes:
            t = median_run(throughputs[s])
            print("\n".join(command_rows(f"{s:,}", t.redis_commands, t.participations, REDIS_COMMANDS_SHOWN)))
    if latencies:
        print(f"\nLatency: publish -> rated at a fixed offered rate for {args.latency_seconds:g} s "
              f"(default: half the throughput above); offered / floor = offered part./s as a share of the floor's\n")
        print("\n".join(latency_rows([(latencies[s], floors[s]) for s in sizes])))
        if args.breakdown:
            print("\nWhere it went: publish -> phase one began the round's batch (the round record's received_at), "
                  "then -> rated\n")
            print("\n".join(breakdown_rows([latencies[s] for s in sizes])))
            print("\nThe workers' batches during each latency run (BATCH_TIMINGS_DIR, stream/pipeline/timings.py): "
                  "phase one's steps handle (register, barrier, engine, store, records handed over) and acks "
                  "(the broker's acknowledgements); phase two's apply (read, rate, write Redis) and emit (events "
                  "until acknowledged, then confirmed); queued: oldest record produced -> batch taken\n")
            print("\n".join(batch_rows([latencies[s] for s in sizes], batch_lines)))


if __name__ == "__main__":
    main()
