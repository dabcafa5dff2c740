"""``stream simulate``: the matchmaker in a closed loop (issue 27, deliverable 4; seed 001's Halo 2
experiment: how close matched players' win probability stays to 50 % as they play).

A population with hidden true skills (normal, sd ``skill_sd``; optional random-walk drift per hour)
plays duels: each player joins the queue at Poisson times (an exponential break of mean ``break_s``
after each game, or after a time-out), every ``tick_s`` a strategy pairs the waiting players, the
winner is drawn from the true skills with Elo's logistic curve ``P = 1 / (1 + 10^(-d/400))``,
results are rated (the engine by ``stream replay``'s calls, or the real pipeline with
``--through-stream``; or openskill.py) and the players go back to their break. Strategies, each on the same
population and seed: ``matchmaker`` (:func:`form_matches` over the engine's ratings, the queue's
widening schedule), ``window`` (the same tick with a fixed rating window and no quality floor:
osu!'s and lichess's idea), ``openskill`` (the matchmaker over openskill.py ratings), ``random``
(the waiting players paired at random) and ``ideal`` (no queue: the whole population sorted by its
current ratings and neighbours paired, round after round: what the ratings allow, the reference).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np
from numpy.typing import NDArray

from stream.engine.ladders import LadderConfig

from .queues import QueueConfig, WideningStep
from .raters import EngineRater, OpenSkillRater, Rater
from .tick import form_matches
from .tickets import TicketColumns

Array = NDArray[np.float64]
STRATEGIES = ("matchmaker", "window", "openskill", "random", "ideal")
ACCURACY_AT = (1, 2, 3, 5, 10, 15, 20, 25, 30, 40, 50)
"""Mean games per player at which pair accuracy is measured."""


@dataclass(frozen=True)
class SimConfig:
    """The simulated population and loop."""

    players: int = 2000
    games: int = 30
    """Stop once the players have played this many games on average."""
    skill_sd: float = 350.0
    drift_per_hour: float = 0.0
    """Standard deviation of each true skill's random walk per simulated hour."""
    break_s: float = 60.0
    tick_s: float = 1.0
    seed: int = 0
    window: float = 100.0
    """The fixed-window baseline's rating window."""
    accuracy_pairs: int = 20_000


@dataclass
class Record:
    """Every simulated match of one strategy (aligned arrays) and the pair accuracy over time."""

    strategy: str
    true_p: list[float] = field(default_factory=list)
    predicted: list[float] = field(default_factory=list)
    won: list[bool] = field(default_factory=list)
    games: list[int] = field(default_factory=list)
    """Games played before the match by the less experienced player."""
    waits: list[float] = field(default_factory=list)
    timeouts: int = 0
    accuracy: list[tuple[float, float]] = field(default_factory=list)
    """(mean games per player, pair accuracy of the ratings against the true skills)."""


def default_queue(ladder: str = "sim") -> QueueConfig:
    """The duel queue the simulation's matchmaker runs (the QUEUES defaults)."""
    return QueueConfig(name="duel", ladder=ladder)


def window_queue(queue: QueueConfig, window: float) -> QueueConfig:
    """The fixed-window baseline: one step, rating window ``window``, no floor, no widening."""
    return replace(queue, widening=(WideningStep(0.0, window, 0.0),), provisional_gap_factor=1.0, top_rating=None)


class _World:
    """True skills, the queue state and the records of one strategy's run."""

    def __init__(self, sim: SimConfig, strategy: str) -> None:
        self.sim = sim
        seed = np.random.SeedSequence(sim.seed)
        skills_seed, run_seed = seed.spawn(2)
        self.skill = np.random.default_rng(skills_seed).normal(1500.0, sim.skill_sd, sim.players)
        self.rng = np.random.default_rng(run_seed)
        self.games = np.zeros(sim.players, dtype=np.int64)
        self.record = Record(strategy)
        self.pairs = np.random.default_rng(sim.seed + 1).integers(0, sim.players, (sim.accuracy_pairs, 2))
        self.checkpoints = list(ACCURACY_AT)

    def drift(self, seconds: float) -> None:
        if self.sim.drift_per_hour > 0:
            self.skill += self.rng.normal(0.0, self.sim.drift_per_hour * math.sqrt(seconds / 3600.0), self.skill.size)

    def play(self, a: NDArray[np.int64], b: NDArray[np.int64], predicted: Array, waits: Array,
             rater: Rater, now: float) -> None:
        """Draw the duels' outcomes from the true skills, record them, rate them."""
        if not a.size:
            return
        true_p = 1.0 / (1.0 + 10.0 ** (-(self.skill[a] - self.skill[b]) / 400.0))
        won = self.rng.random(a.size) < true_p
        r = self.record
        r.true_p += true_p.tolist()
        r.predicted += predicted.tolist()
        r.won += won.tolist()
        r.games += np.minimum(self.games[a], self.games[b]).tolist()
        r.waits += waits.tolist()
        self.games[a] += 1
        self.games[b] += 1
        rater.rate(np.where(won, a, b).tolist(), np.where(won, b, a).tolist(), now)
        self.measure(rater)

    def measure(self, rater: Rater) -> None:
        """Pair accuracy each time the mean games per player passes a checkpoint."""
        mean = self.games.mean()
        while self.checkpoints and mean >= self.checkpoints[0]:
            self.checkpoints.pop(0)
            i, j = self.pairs[:, 0], self.pairs[:, 1]
            keep = self.skill[i] != self.skill[j]
            mu, _ = rater.ratings(np.arange(self.sim.players).tolist())
            agree = np.sign(mu[i] - mu[j]) * np.sign(self.skill[i] - self.skill[j])
            score = np.where(agree > 0, 1.0, np.where(agree == 0, 0.5, 0.0))  # a tied rating: half right
            self.record.accuracy.append((float(mean), float(score[keep].mean())))


EngineRaterFactory = Callable[[LadderConfig, list[str], str], Rater]
"""Who rates an engine strategy's matches: (ladder, player names, strategy) -> a Rater;
:class:`EngineRater` in process, or ``stream simulate --through-stream``'s rater (the rounds
published to the real pipeline, the ratings read back from Redis)."""


def _rater(strategy: str, sim: SimConfig, ladder: LadderConfig, names: list[str],
           engine: EngineRaterFactory) -> Rater:
    if strategy == "openskill":
        return OpenSkillRater(sim.players, ladder.newcomer.mu_noob, ladder.newcomer.sig_noob)
    return engine(ladder, names, strategy)


def _queued(sim: SimConfig, strategy: str, queue: QueueConfig, ladder: LadderConfig,
            engine: EngineRaterFactory) -> Record:
    """A strategy with a queue: players arrive, wait, get paired each tick, break, come back."""
    world = _World(sim, strategy)
    names = [f"p{i:05d}" for i in range(sim.players)]
    rater = _rater(strategy, sim, ladder, names, engine)
    ticking = queue if strategy != "window" else window_queue(queue, sim.window)
    back = world.rng.exponential(sim.break_s, sim.players)  # when each player next joins
    waiting = np.zeros(sim.players, dtype=bool)
    created = np.zeros(sim.players)
    now = 0.0
    limit = sim.games * (sim.break_s + 5 * queue.max_wait_s) * 4 + 1000
    while world.games.mean() < sim.games and now < limit:
        now += sim.tick_s
        world.drift(sim.tick_s)
        joining = ~waiting & (back <= now)
        waiting |= joining
        created[joining] = back[joining]
        pool = np.flatnonzero(waiting)
        if pool.size < 2:
            continue
        if strategy == "random":
            order = world.rng.permutation(pool)
            a, b = order[0:-1:2], order[1::2]
            timed_out = np.zeros(0, dtype=np.int64)
        else:
            a, b, timed_out = _tick(ticking, pool, created, rater, now, ladder)
        if timed_out.size:
            world.record.timeouts += int(timed_out.size)
            waiting[timed_out] = False
            back[timed_out] = now + world.rng.exponential(sim.break_s, timed_out.size)
        if not a.size:
            continue
        predicted = rater.predict(a.tolist(), b.tolist())
        waits = np.concatenate([now - created[a], now - created[b]])
        world.play(a, b, predicted, waits[: a.size], rater, now)
        world.record.waits += waits[a.size:].tolist()
        done = np.concatenate([a, b])
        waiting[done] = False
        back[done] = now + world.rng.exponential(sim.break_s, done.size)
    return world.record


def _tick(queue: QueueConfig, pool: NDArray[np.int64], created: Array, rater: Rater, now: float,
          ladder: LadderConfig) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64]]:
    """One form_matches tick over the waiting players: (first players, second players, timed out)."""
    mu, sigma = rater.ratings(pool.tolist())
    ids = pool.astype(object)  # each player is a ticket of one, named by its index
    result = form_matches(queue, TicketColumns(ids, np.ones(pool.size, dtype=np.int64), ids, created[pool], mu, sigma),
                          now, ladder)
    player = result.waiting.ticket_id.astype(np.int64)
    return player[result.tickets[0::2]], player[result.tickets[1::2]], player[result.late]


def _ideal(sim: SimConfig, ladder: LadderConfig, engine: EngineRaterFactory) -> Record:
    """Round after round, the whole population sorted by its current ratings, neighbours paired."""
    world = _World(sim, "ideal")
    names = [f"p{i:05d}" for i in range(sim.players)]
    rater = engine(ladder, names, "ideal")
    everyone = np.arange(sim.players)
    for r in range(sim.games):
        now = (r + 1) * sim.break_s
        world.drift(sim.break_s)
        mu, _ = rater.ratings(everyone.tolist())
        order = np.lexsort((world.rng.permutation(sim.players), mu))
        a, b = order[0:-1:2], order[1::2]
        world.play(a, b, rater.predict(a.tolist(), b.tolist()), np.zeros(a.size), rater, now)
        world.record.waits += [0.0] * b.size
    return world.record


def simulate(sim: SimConfig, ladder: LadderConfig, queue: QueueConfig | None = None,
             strategies: tuple[str, ...] = STRATEGIES, engine: EngineRaterFactory = EngineRater) -> dict[str, Record]:
    """Run each strategy on the same population and seed (module docstring); ``engine`` rates the
    engine strategies' matches (in process by default)."""
    queue = queue or default_queue()
    if queue.players != 2:
        raise ValueError("stream simulate plays duels: the queue must have teams 2, team_size 1")
    unknown = [s for s in strategies if s not in STRATEGIES]
    if unknown:
        raise ValueError(f"unknown strategy {unknown[0]!r}; known: {', '.join(STRATEGIES)}")
    return {s: (_ideal(sim, ladder, engine) if s == "ideal" else _queued(sim, s, queue, ladder, engine))
            for s in strategies}
