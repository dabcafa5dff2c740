"""Test data for the read side (queries, API, CLI, dashboard): a few rated rounds written straight
into Redis in the documented key format (docs/contracts.md), independent of the pipeline.

Importable from any test directory as ``readside_data`` (pytest puts tests/ on sys.path because
of tests/conftest.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import redis

from stream.contracts.events import RatingChange
from stream.engine.display import UNPLACED, DisplayConfig, display_rating, next_tier, tier_names
from stream.store import keys

LADDER = "blitz"
OTHER_LADDER = "duo"
PLAYERS = [f"p{i:02d}" for i in range(12)] + ["star*player", "x[1]"]
ROUNDS = 5
START = 1_700_000_000.0
DAY = 86_400.0
MU0, SIGMA0 = 1500.0, 350.0


@dataclass
class Seeded:
    """What was written, for assertions: final (mu, sigma, display) per player and round ids."""

    ladder: str
    mu: dict[str, float] = field(default_factory=dict)
    sigma: dict[str, float] = field(default_factory=dict)
    display: dict[str, float] = field(default_factory=dict)
    rounds: list[str] = field(default_factory=list)
    field_sizes: dict[str, int] = field(default_factory=dict)

    def ranking(self) -> list[str]:
        """Players by display rating, best first (ties by id descending, ZREVRANGE's order)."""
        return sorted(self.display, key=lambda p: (self.display[p], p), reverse=True)


def seed(url: str, *, ladder: str = LADDER, players: list[str] = PLAYERS, rounds: int = ROUNDS,
         seed_: int = 3, cfg: DisplayConfig = DisplayConfig(), round_ids: list[str] | None = None) -> Seeded:
    """Write ``rounds`` synthetic rated rounds of ``ladder`` (deterministic), with ids ``r1``, ``r2``,
    ... or ``round_ids`` (then one round each)."""
    round_ids = round_ids or [f"r{t + 1}" for t in range(rounds)]
    rounds = len(round_ids)
    rng = np.random.default_rng(seed_)
    skill = {p: float(rng.normal(1500, 300)) for p in players}
    mu = {p: MU0 for p in players}
    sigma = {p: SIGMA0 for p in players}
    tier = {p: UNPLACED for p in players}
    played = {p: 0 for p in players}
    out = Seeded(ladder=ladder)
    r = redis.Redis.from_url(url)
    pipe = r.pipeline(transaction=False)
    pipe.sadd(keys.ladders(), ladder)
    for t in range(rounds):
        round_id = round_ids[t]
        when = START + t * DAY
        field_ = sorted(rng.choice(players, size=max(2, len(players) - t), replace=False).tolist())
        perf = {p: skill[p] + float(rng.logistic(0, 70)) for p in field_}
        order = sorted(field_, key=lambda p: -perf[p])
        n = len(order)
        changes = []
        for rank, p in enumerate(order, start=1):
            before_mu, before_sigma = mu[p], sigma[p]
            mu[p] = before_mu + 30.0 * (n + 1 - 2 * rank) / n * before_sigma / 100.0
            sigma[p] = max(80.0, before_sigma * 0.8)
            shown = float(display_rating(mu[p], sigma[p], cfg))
            tier[p] = int(next_tier([tier[p]], [mu[p]], [sigma[p]], cfg)[0])
            played[p] += 1
            change = RatingChange(ladder=ladder, round_id=round_id, player=p, rank=rank, field_size=n,
                                  performance=perf[p], mu_before=before_mu, sigma_before=before_sigma,
                                  mu_after=mu[p], sigma_after=sigma[p], display_rating=shown,
                                  tier=tier_names([tier[p]], cfg)[0], rounds_played=played[p],
                                  occurred_at=when)
            changes.append(change)
            pipe.hset(keys.player(ladder, p), mapping={
                "mu": repr(mu[p]), "sigma": repr(sigma[p]), "rounds": played[p], "last_round": round_id,
                "last_seq": t + 1, "last_time": repr(when), "display_rating": repr(shown),
                "tier": change.tier or "", "state": b"\x00\x01binary"})
            pipe.rpush(keys.history(ladder, p), change.to_json())
            pipe.zadd(keys.leaderboard(ladder), {p: shown})
            pipe.zadd(keys.player_names(ladder), {p: 0})
            out.display[p] = shown
        pipe.hset(keys.round_results(ladder, round_id), mapping={c.player: c.to_json() for c in changes})
        pipe.hset(keys.round_record(ladder, round_id), mapping={
            "round_id": round_id, "seq": t + 1, "status": "rated", "field_size": n, "occurred_at": repr(when),
            "received_at": repr(when + 1), "rated_at": repr(when + 2), "content_hash": f"h{t}", "pending": 0})
        pipe.zadd(keys.rounds(ladder), {round_id: t + 1})
        out.rounds.append(round_id)
        out.field_sizes[round_id] = n
    pipe.hset(keys.ladder(ladder), mapping={
        "seq": rounds, "rounds_rated": rounds, "players": sum(1 for p in players if played[p]),
        "last_round": out.rounds[-1], "updated_at": repr(START + rounds * DAY)})
    pipe.execute()
    r.close()
    out.mu = {p: mu[p] for p in players if played[p]}
    out.sigma = {p: sigma[p] for p in players if played[p]}
    return out
