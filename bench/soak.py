"""Soak: a mixed stream at a fixed rate (or a staircase of rates) on the embedded local stack, then the check.

Many small rounds (10 players drawn from a pool of 5,000, over 4 ladders) at ``--rate`` rounds
per second, plus one ``--large-size``-player round every ``--large-every`` seconds (its own
ladder, each sharing half its players with the previous one), through ``--workers``
`stream worker` processes. Every second it samples the backlog (rounds published but not yet
rated, from Redis' per-ladder ``rounds_rated``). At the end it waits for the stream to drain and
checks that Redis equals ``stream.batch.replay`` of the same rounds within 1e-9 (mu, sigma,
round counts exact).

Fixed-rate mode (the default): ``--rate`` for ``--duration`` seconds; reports the sustained rate
(participations rated per second of publishing and draining), backlog (max and at the end of
publishing), drain time after the last publish, peak RSS of each worker and of redis-server
(VmHWM from /proc) and the equality check.

Ceiling mode (``--rates 10,20,40,80``): one stack, one stage of ``--stage`` seconds per rate, in
the given order, without pausing or draining between stages. Large rounds keep their fixed
``--large-every`` period across stages (``--scale-large`` shortens it in proportion to the small
rate instead, so the mix stays the same). Per stage: offered part./s (participations published
per second), rated part./s (participations whose round became ``rated`` during the stage, per
second), backlog at the start and end of the stage, its trend, p50/p99 publish -> rated latency
of the stage's small rounds (publish wall time against the round record's ``rated_at``, read
after the drain), the largest large-round latency, CPU of workers, redis-server, broker and of
this load generator, and the workers' largest RSS at the end of the stage.

* **trend**: the least-squares slope of the 1 Hz backlog samples over the stage, in rounds/s.
* **bounded**: trend < 5 % of the stage's offered rate in rounds/s (small + large), i.e. the
  service rates at least ~95 % of what arrives and the backlog does not grow with time (a
  backlog left by an earlier stage and draining has a negative trend: bounded).
* **ceiling**: the highest offered rate whose stage, and every stage before it, was bounded.
  Escalation stops after ``--stop-after`` unbounded stages (default 1); the rated part./s of an
  unbounded stage is what the service delivers saturated.

Usage: python bench/soak.py [--duration 180] [--rate 10] [--large-every 15] [--large-size 2000]
       python bench/soak.py --rates 10,20,40,80 [--stage 60] [--scale-large] [--stop-after 1]
Prints a Markdown summary (BENCHMARKS.md, soak section); the ceiling mode logs each stage to stderr
as it ends.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import redis

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from clients import RoundProducer  # noqa: E402
from stream.batch.replay import replay  # noqa: E402
from stream.contracts import Limits, parse_round  # noqa: E402
from stream.engine import preset  # noqa: E402
from stream.pipeline.topics import ensure  # noqa: E402
from stream.settings import Settings  # noqa: E402
from stream.stack.local import LocalStack  # noqa: E402
from stream.store import keys  # noqa: E402

SMALL_SIZE = 10
SMALL_POOL = 5_000
SMALL_LADDERS = ("soak-a", "soak-b", "soak-c", "soak-d")
LARGE_LADDER = "soak-large"
STARTUP_S = 8.0
DRAIN_TIMEOUT_S = 900.0
TOLERANCE = 1e-9
BASE_TIME = 1_700_000_000.0
BOUNDED_FRACTION = 0.05
"""A stage is bounded when its backlog trend (rounds/s) is below this fraction of its offered rounds/s."""
TICK_S = 0.01
"""Sleep of the publishing loop between two checks of what is due."""
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")

Round = dict[str, Any]


def small_round(rng: random.Random, i: int) -> Round:
    players = rng.sample(range(SMALL_POOL), SMALL_SIZE)
    return {"round_id": f"s{i:06d}", "ladder": SMALL_LADDERS[i % len(SMALL_LADDERS)], "occurred_at": BASE_TIME + i,
            "standings": [{"player": f"u{p}", "rank": rank} for rank, p in enumerate(players, start=1)]}


def large_round(rng: random.Random, i: int, size: int) -> Round:
    start = i * size // 2  # half the players of the previous large round
    players = [f"L{p}" for p in range(start, start + size)]
    rng.shuffle(players)
    return {"round_id": f"L{i:04d}", "ladder": LARGE_LADDER, "occurred_at": BASE_TIME + i,
            "standings": [{"player": p, "rank": rank} for rank, p in enumerate(players, start=1)]}


def proc_status_mb(pid: int, field_name: str) -> float:
    """A memory field of /proc/PID/status (VmHWM: peak RSS, VmRSS: current RSS), in MiB; nan if absent."""
    try:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError:
        return float("nan")
    for line in lines:
        if line.startswith(f"{field_name}:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def peak_rss_mb(pid: int) -> float:
    """Peak resident set size of a process (VmHWM), in MiB."""
    return proc_status_mb(pid, "VmHWM")


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds a process has used so far (/proc/PID/stat); 0 if it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0.0
    fields = text[text.rindex(")") + 2:].split()  # after "pid (comm) ": fields 3.. of proc(5)
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def rated_by_kind(client: redis.Redis) -> tuple[int, int]:
    """Rounds rated so far: (small rounds, large rounds), from the ladders' ``rounds_rated``."""
    pipe = client.pipeline(transaction=False)
    for ladder in (*SMALL_LADDERS, LARGE_LADDER):
        pipe.hget(keys.ladder(ladder), "rounds_rated")
    counts = [int(v or 0) for v in pipe.execute()]
    return sum(counts[:-1]), counts[-1]


def rated(client: redis.Redis) -> int:
    return sum(rated_by_kind(client))


def check_equal(client: redis.Redis, rounds: list[Round], engine_preset: str) -> tuple[int, float]:
    """Compare every player with replay; returns (players compared, largest |difference|)."""
    limits = Limits()
    result = replay([parse_round(r, limits=limits) for r in rounds], preset(engine_preset), keep_rounds=False)
    states = result.states()
    order = sorted(states)
    worst = 0.0
    for i in range(0, len(order), 5_000):
        chunk = order[i:i + 5_000]
        pipe = client.pipeline(transaction=False)
        for ladder, player in chunk:
            pipe.hmget(keys.player(ladder, player), ("mu", "sigma", "rounds"))
        for key, (mu, sigma, n) in zip(chunk, pipe.execute()):
            want = states[key]
            if mu is None or int(n) != want.rounds:
                raise AssertionError(f"{key}: missing or wrong round count in Redis")
            worst = max(worst, abs(float(mu) - want.mu), abs(float(sigma) - want.sigma))
    return len(order), worst


def rated_at(client: redis.Redis, rounds: list[Round]) -> list[float]:
    """Each round's ``rated_at`` (epoch seconds, the worker's clock = this machine's), nan if unset."""
    out: list[float] = []
    for i in range(0, len(rounds), 5_000):
        pipe = client.pipeline(transaction=False)
        for r in rounds[i:i + 5_000]:
            pipe.hget(keys.round_record(r["ladder"], r["round_id"]), "rated_at")
        out.extend(float(v) if v is not None else float("nan") for v in pipe.execute())
    return out


@dataclass
class Load:
    """The stream published so far: the rounds, their publish wall times and the generators' state."""

    kafka: RoundProducer
    large_size: int
    rng: random.Random = field(default_factory=lambda: random.Random(2026))
    rounds: list[Round] = field(default_factory=list)
    sent_at: list[float] = field(default_factory=list)
    n_small: int = 0
    n_large: int = 0

    def send(self, r: Round) -> None:
        """Publish one round (keyed by ladder) and remember it with its publish time."""
        self.rounds.append(r)
        self.sent_at.append(time.time())
        self.kafka.send(r["ladder"], json.dumps(r).encode())

    def send_small(self) -> None:
        self.send(small_round(self.rng, self.n_small))
        self.n_small += 1

    def send_large(self) -> None:
        self.send(large_round(self.rng, self.n_large, self.large_size))
        self.n_large += 1

    @property
    def participations(self) -> int:
        return self.n_small * SMALL_SIZE + self.n_large * self.large_size


@dataclass(frozen=True)
class Sample:
    """One look at the stream: published and rated counts at monotonic time ``t``."""

    t: float
    published: int
    published_parts: int
    rated_small: int
    rated_large: int

    @property
    def backlog(self) -> int:
        """Rounds published but not yet rated."""
        return self.published - self.rated_small - self.rated_large

    def rated_parts(self, large_size: int) -> int:
        return self.rated_small * SMALL_SIZE + self.rated_large * large_size


def sample(load: Load, client: redis.Redis) -> Sample:
    """Flush the producer (so "published" means acknowledged by the broker), then count."""
    load.kafka.flush()
    small, large = rated_by_kind(client)
    return Sample(time.monotonic(), len(load.rounds), load.participations, small, large)


def publish(load: Load, client: redis.Redis, *, duration: float, rate: float, large_every: float,
            next_large: float) -> tuple[list[Sample], float]:
    """Publish ``rate`` small rounds/s and a large round every ``large_every`` s (the first at
    monotonic ``next_large``) for ``duration`` s; sample every second (a sample at the start too).

    Returns the samples and when the next large round is due, so a following stage keeps the period.
    """
    started = time.monotonic()
    first_small = load.n_small
    samples = [sample(load, client)]
    next_sample = started + 1.0
    while (now := time.monotonic()) < started + duration:
        due_small = first_small + int((now - started) * rate) + 1
        while load.n_small < due_small:
            load.send_small()
        if now >= next_large:
            load.send_large()
            next_large += large_every
        if now >= next_sample:
            samples.append(sample(load, client))
            next_sample += 1.0
        time.sleep(TICK_S)
    samples.append(sample(load, client))
    return samples, next_large


def trend(samples: list[Sample]) -> float:
    """Least-squares slope of the backlog over the samples, in rounds per second."""
    ts = [s.t for s in samples]
    ys = [float(s.backlog) for s in samples]
    t_mean, y_mean = statistics.fmean(ts), statistics.fmean(ys)
    var = sum((t - t_mean) ** 2 for t in ts)
    return sum((t - t_mean) * (y - y_mean) for t, y in zip(ts, ys)) / var if var else 0.0


@dataclass
class Processes:
    """The pids whose CPU and memory are reported."""

    workers: list[int]
    redis: int
    broker: int

    def cpu(self) -> tuple[float, float, float, float]:
        """CPU seconds so far: (workers summed, redis-server, broker, this process)."""
        own = os.times()
        return (sum(cpu_seconds(p) for p in self.workers), cpu_seconds(self.redis), cpu_seconds(self.broker),
                own.user + own.system)

    def worker_rss_mb(self) -> float:
        """The largest current RSS among the workers, MiB."""
        return max(proc_status_mb(p, "VmRSS") for p in self.workers)


@dataclass
class Stage:
    """What one ceiling-mode stage offered, delivered and cost."""

    rate: float
    samples: list[Sample]
    first_round: int
    last_round: int
    cpu: tuple[float, ...]
    worker_rss_mb: float
    latency_small: tuple[float, float] = (float("nan"), float("nan"))
    latency_large_max: float = float("nan")

    @property
    def seconds(self) -> float:
        return self.samples[-1].t - self.samples[0].t

    @property
    def offered_rounds_s(self) -> float:
        return (self.samples[-1].published - self.samples[0].published) / self.seconds

    @property
    def offered_parts_s(self) -> float:
        return (self.samples[-1].published_parts - self.samples[0].published_parts) / self.seconds

    def rated_parts_s(self, large_size: int) -> float:
        return (self.samples[-1].rated_parts(large_size) - self.samples[0].rated_parts(large_size)) / self.seconds

    @property
    def trend(self) -> float:
        return trend(self.samples)

    @property
    def bounded(self) -> bool:
        return self.trend < BOUNDED_FRACTION * self.offered_rounds_s

    def cpu_percent(self) -> list[float]:
        """CPU of (workers, redis, broker, load generator) in % of one core over the stage."""
        return [100 * c / self.seconds for c in self.cpu]


def percentile(values: list[float], q: float) -> float:
    """The q-quantile (0..1) by nearest rank; nan for no values."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))]


def add_latencies(stages: list[Stage], load: Load, done_at: list[float]) -> None:
    """Fill each stage's publish -> rated latencies from the rounds' ``rated_at``."""
    for stage in stages:
        small: list[float] = []
        large: list[float] = []
        for i in range(stage.first_round, stage.last_round):
            lat = done_at[i] - load.sent_at[i]
            (large if load.rounds[i]["ladder"] == LARGE_LADDER else small).append(lat)
        stage.latency_small = (percentile(small, 0.5), percentile(small, 0.99))
        stage.latency_large_max = max(large, default=float("nan"))


def wait_drained(client: redis.Redis, total: int, workers: list[subprocess.Popen[bytes]], logs: Path) -> None:
    """Block until every published round is rated; exit if a worker dies or DRAIN_TIMEOUT_S passes."""
    deadline = time.monotonic() + DRAIN_TIMEOUT_S
    while rated(client) < total:
        if time.monotonic() > deadline or any(w.poll() is not None for w in workers):
            raise SystemExit(f"stream did not drain ({rated(client)}/{total}); logs in {logs}")
        time.sleep(0.1)


def run_fixed(args: argparse.Namespace, load: Load, client: redis.Redis, workers: list[subprocess.Popen[bytes]],
              procs: Processes, logs: Path, engine_preset: str) -> None:
    """The fixed-rate soak: one rate for ``--duration`` s, drain, check; one Markdown table row."""
    started = time.monotonic()
    samples, _ = publish(load, client, duration=args.duration, rate=args.rate, large_every=args.large_every,
                         next_large=started)
    published_s = time.monotonic() - started
    backlog_max = max(s.backlog for s in samples)
    backlog_end = samples[-1].backlog
    wait_drained(client, len(load.rounds), workers, logs)
    drain_s = time.monotonic() - started - published_s
    worker_rss = [peak_rss_mb(p) for p in procs.workers]
    redis_rss = peak_rss_mb(procs.redis)
    compared, worst = check_equal(client, load.rounds, engine_preset)

    print(f"| publishing | rounds (small + large) | participations | sustained part./s | backlog max | "
          f"backlog at end | drain after | worker peak RSS | redis peak RSS | equality |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    print(f"| {published_s:.0f} s | {len(load.rounds):,} ({load.n_small:,} + {load.n_large}) | {load.participations:,} | "
          f"{load.participations / (published_s + drain_s):,.0f} | {backlog_max} rounds | {backlog_end} rounds | "
          f"{drain_s:.1f} s | {' / '.join(f'{r:.0f} MiB' for r in worker_rss)} | {redis_rss:.0f} MiB | "
          f"{compared:,} players, max diff {worst:.1e} {'OK' if worst <= TOLERANCE else 'FAILED'} |")


def run_stages(args: argparse.Namespace, load: Load, client: redis.Redis, workers: list[subprocess.Popen[bytes]],
               procs: Processes, logs: Path, engine_preset: str) -> None:
    """The ceiling search: one stage per rate until ``--stop-after`` unbounded stages, drain, check, table."""
    rates = [float(r) for r in args.rates.split(",")]
    stages: list[Stage] = []
    next_large = time.monotonic()
    unbounded = 0
    for rate in rates:
        large_every = args.large_every * rates[0] / rate if args.scale_large else args.large_every
        next_large = min(next_large, time.monotonic() + large_every)
        first, cpu0 = len(load.rounds), procs.cpu()
        samples, next_large = publish(load, client, duration=args.stage, rate=rate, large_every=large_every,
                                      next_large=next_large)
        cpu = tuple(b - a for a, b in zip(cpu0, procs.cpu()))
        stage = Stage(rate, samples, first, len(load.rounds), cpu, procs.worker_rss_mb())
        stages.append(stage)
        print(f"stage {rate:g}/s: offered {stage.offered_parts_s:,.0f} part./s, rated "
              f"{stage.rated_parts_s(args.large_size):,.0f}, backlog {samples[0].backlog} -> {samples[-1].backlog}, "
              f"trend {stage.trend:+.2f} rounds/s, {'bounded' if stage.bounded else 'UNBOUNDED'}, "
              f"cpu {' / '.join(f'{c:.0f}%' for c in stage.cpu_percent())}", file=sys.stderr, flush=True)
        unbounded = 0 if stage.bounded else unbounded + 1
        if unbounded >= args.stop_after:
            break
    published_end = time.monotonic()
    wait_drained(client, len(load.rounds), workers, logs)
    drain_s = time.monotonic() - published_end
    add_latencies(stages, load, rated_at(client, load.rounds))
    worker_rss = [peak_rss_mb(p) for p in procs.workers]
    redis_rss = peak_rss_mb(procs.redis)
    compared, worst = check_equal(client, load.rounds, engine_preset)

    print("| small rounds/s | large every | offered part./s | rated part./s | backlog start -> end | "
          "trend (rounds/s) | bounded | latency p50 / p99 (small) | large max | "
          "CPU % workers / redis / broker / load | worker RSS |")
    print("|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|")
    for s in stages:
        large_every = args.large_every * rates[0] / s.rate if args.scale_large else args.large_every
        cpu_text = " / ".join(f"{c:.0f}" for c in s.cpu_percent())
        print(f"| {s.rate:g} | {large_every:.1f} s | {s.offered_parts_s:,.0f} | {s.rated_parts_s(args.large_size):,.0f} | "
              f"{s.samples[0].backlog} -> {s.samples[-1].backlog} | {s.trend:+.2f} | {'yes' if s.bounded else 'NO'} | "
              f"{_ms(s.latency_small[0])} / {_ms(s.latency_small[1])} | {_ms(s.latency_large_max)} | {cpu_text} | "
              f"{s.worker_rss_mb:.0f} MiB |")
    ceiling = None
    for s in stages:
        if not s.bounded:
            break
        ceiling = s
    print()
    print(f"Ceiling (bounded = backlog trend < {BOUNDED_FRACTION:.0%} of the offered rounds/s): "
          + (f"{ceiling.offered_parts_s:,.0f} part./s offered ({ceiling.rate:g} small rounds/s)" if ceiling
             else "none of the stages was bounded")
          + (f"; first unbounded stage: {stages[-1].offered_parts_s:,.0f} part./s offered, "
             f"{stages[-1].rated_parts_s(args.large_size):,.0f} rated" if not stages[-1].bounded
             else "; every stage was bounded (the ceiling is higher)") + ".")
    print(f"Drain after the last stage: {drain_s:.1f} s. Peak RSS: workers "
          f"{' / '.join(f'{r:.0f} MiB' for r in worker_rss)}, redis-server {redis_rss:.0f} MiB. "
          f"Equality: {compared:,} players, max diff {worst:.1e} {'OK' if worst <= TOLERANCE else 'FAILED'}.")
    if worst > TOLERANCE:
        raise SystemExit("Redis differs from replay")


def _ms(seconds: float) -> str:
    return "-" if seconds != seconds else f"{seconds * 1000:,.0f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=180.0, help="seconds of publishing (fixed-rate mode)")
    parser.add_argument("--rate", type=float, default=10.0, help="small rounds per second (fixed-rate mode)")
    parser.add_argument("--rates", default="", help="ceiling mode: comma-separated small rounds/s, one stage each")
    parser.add_argument("--stage", type=float, default=60.0, help="seconds per stage (ceiling mode)")
    parser.add_argument("--scale-large", action="store_true",
                        help="ceiling mode: shorten the large rounds' period in proportion to the small rate")
    parser.add_argument("--stop-after", type=int, default=1, help="ceiling mode: stop after this many unbounded stages")
    parser.add_argument("--large-every", type=float, default=15.0, help="seconds between large rounds")
    parser.add_argument("--large-size", type=int, default=2_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--partitions", type=int, default=4)
    args = parser.parse_args()

    with LocalStack() as stack:
        prefix = "soak-"
        env = {**os.environ, **stack.env(), "TOPIC_PREFIX": prefix, "APP_ID": "soak", "PARTITIONS": str(args.partitions),
               "LOG_LEVEL": "warning", "STACK_STATE_FILE": "/nonexistent"}
        settings = Settings.from_env(env)
        ensure(settings)
        logs = Path(tempfile.mkdtemp(prefix="soak-"))
        workers = [subprocess.Popen([sys.executable, "-m", "stream", "worker", "--no-web"], cwd=REPO, env=env,
                                    stdout=open(logs / f"worker{i}.log", "wb"), stderr=subprocess.STDOUT)
                   for i in range(args.workers)]
        client = redis.Redis.from_url(stack.redis_url)
        procs = Processes([w.pid for w in workers], stack.redis.process.pid if stack.redis.process else 0,
                          stack.broker.process.pid if stack.broker.process else 0)
        kafka = RoundProducer(stack.bootstrap, f"{prefix}rounds")
        load = Load(kafka, args.large_size)
        time.sleep(STARTUP_S)
        try:
            run = run_stages if args.rates else run_fixed
            run(args, load, client, workers, procs, logs, settings.engine_preset)
        finally:
            kafka.close()
            client.close()
            for w in workers:
                w.terminate()
                w.wait(timeout=30)


if __name__ == "__main__":
    main()
