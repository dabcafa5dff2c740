"""Explain a stored rating change from what is stored, in terms and in plain words.

For a player's change in a round (``stream.store.explain`` reads the documents): the rank expected
from the players' ratings before the round (and its spread) against the actual rank, the
performance phase one solved, the round's weight (times the player's share of the match), the
drift applied since his previous round, sigma before, after the drift and after the round, the
display rule and its value, the tier before and after with the bound that crossed (or not) a
threshold, and a correction's kind.

The terms are the engine's own functions (``engine.diffusion.gammas`` / ``drifted_sigma``,
``engine.params.performance_noise``, the Eq. 8 sigma update as ``engine.round.update_rows`` writes
it, the Elo-MMchi mean update of ``engine.update``, ``engine.display``), so they reconstruct the
stored change: sigma after for every Elo-MMR variant, mu after for the memoryless Gaussian one
(Elo-MMchi; Elo-MMR's mean is the robust average of the whole factor history, not a function of
these terms), the display rating and the tier for every model. ``reconstructed`` holds what they
give, beside the stored values.

Expected rank: ``1 + sum_j P(j finishes ahead)`` with the ladder's outcome model (the /predict
maths, ``engine.predict.win_probability``) on the stored ratings before the round, and its spread
``sqrt(sum_j p_j (1 - p_j))`` (outcomes taken as independent). The others' drift since their own
last rounds is not stored with the round, so their sigma before is used as it is.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from stream.engine.diffusion import drifted_sigma, elapsed_days, gammas
from stream.engine.display import UNPLACED, DisplayConfig, display_rating, tier_indices, tier_names
from stream.engine.ladders import LadderConfig
from stream.engine.params import performance_noise
from stream.engine.predict import outcome_model, win_probability
from stream.engine.season_schedule import Seasons, entering
from stream.engine.seasons import season_next_tier, seasoned_view
from stream.pipeline.status import add_intervals
from stream.store.client import AsyncRedis
from stream.store.explain import ChangeInputs, change_inputs

DAY_S = 86_400.0


class ExplainRefused(LookupError):
    """Nothing to explain: ``code`` unknown_ladder, unknown_player or unknown_change."""

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


@dataclass(frozen=True)
class Terms:
    """The numbers of one change's update (None where not stored or not the model's)."""

    round_weight: float | None
    share: float
    previous_time: float | None
    """occurred_at of the player's previous round (None: a newcomer, or not in the kept history)."""
    newcomer: bool
    days: float | None
    gamma: float | None
    sigma_drifted: float | None
    beta: float | None
    sigma_after: float | None
    mu_after: float | None


def terms(cfg: LadderConfig, change: dict[str, Any], previous_time: float | None, newcomer: bool,
          round_weight: float | None) -> Terms:
    """The update's terms from the stored change (Elo-MMR ladders; rating-only models: none)."""
    share = 1.0 if change.get("weight") is None else float(change["weight"])
    none = Terms(round_weight, share, previous_time, newcomer, None, None, None, None, None, None)
    if cfg.rating_model is not None or round_weight is None or (previous_time is None and not newcomer):
        return none
    params = cfg.elo_mmr
    weight = np.array([round_weight * share]) if change.get("weight") is not None else np.array([round_weight])
    last = np.array([math.nan if newcomer else float(previous_time)])  # type: ignore[arg-type]
    days = elapsed_days(last, float(change["occurred_at"]))
    gamma = gammas(params, weight, days)
    # a player's first round of a new season starts from his soft-reset belief (engine.seasons)
    mu_before, sigma_before = seasoned_view(np.array([float(change["mu_before"])]),
                                            np.array([float(change["sigma_before"])]), last,
                                            float(change["occurred_at"]), params)
    drifted = drifted_sigma(sigma_before, gamma)
    beta = performance_noise(params, weight)
    sigma_after = 1.0 / np.sqrt(1.0 / (drifted * drifted) + 1.0 / (beta * beta))  # Eq. 8 (update_rows)
    mu_after = None
    if params.variant == "gaussian" and change.get("performance") is not None:  # Elo-MMchi (engine.update)
        w0, wp = drifted**-2, beta**-2
        mu_after = float(((w0 * mu_before + wp * float(change["performance"])) / (w0 + wp))[0])
    return Terms(round_weight, share, previous_time, newcomer, float(days[0]), float(gamma[0]), float(drifted[0]),
                 float(beta[0]), float(sigma_after[0]), mu_after)


def _round_weight(inputs: ChangeInputs) -> float | None:
    """The round's weight as its stored fan-out carries it (None once retention trimmed it)."""
    for update in inputs.fanout:
        if "weight" in update:
            return float(update["weight"])
    return None


def _previous(history: list[dict[str, Any]], round_id: str, change: dict[str, Any]) -> tuple[dict[str, Any] | None, bool]:
    """The player's change before this round's (its round's time is his last round's), and
    whether he was a newcomer (this was his first round)."""
    at = next((i for i, h in enumerate(history) if h.get("round_id") == round_id and h.get("kind", "round") == "round"),
              None)
    if change.get("rounds_played") == 1:
        return None, True
    if at is None or at == 0:
        return None, False
    before = [h for h in history[:at] if h.get("kind", "round") == "round"]
    return (before[-1] if before else None), False


def _expected(cfg: LadderConfig, change: dict[str, Any], results: list[dict[str, Any]],
              weight: float) -> dict[str, Any] | None:
    """Expected rank from the ratings before the round, its spread, and the actual rank."""
    me = change["player"]
    others = [r for r in results if r.get("player") != me and r.get("kind", "round") == "round"]
    if not others or change.get("rank") is None:
        return None
    mu = np.array([float(r["mu_before"]) for r in others])
    sigma = np.array([float(r["sigma_before"]) for r in others])
    p = win_probability(mu, sigma, float(change["mu_before"]), float(change["sigma_before"]),
                        outcome_model(cfg, weight))
    expected = 1.0 + float(p.sum())
    return {"rank": expected, "spread": float(np.sqrt((p * (1.0 - p)).sum())), "actual_rank": int(change["rank"]),
            "field_size": change.get("field_size") or len(others) + 1, "surprise": expected - int(change["rank"])}


def _display(cfg: DisplayConfig, change: dict[str, Any], before_tier: str | None, seasons: Seasons | None = None,
             entering_: bool = False) -> dict[str, Any]:
    """The display rule and value, and the tier change with its reason: the stream's rule
    (``engine.seasons.season_next_tier``: a season's placement, then the confident rule of
    promotion); ``entering_``: this round was the player's first of a new season."""
    mu, sigma = float(change["mu_after"]), float(change["sigma_after"])
    value = float(display_rating(mu, sigma, cfg))
    rule = {"mu": "mu", "conservative": f"mu - {cfg.k:g}*sigma",
            "fixed-range": f"10000 / (1 + exp(-(mu - {cfg.center:g}) / {cfg.scale:g}))"}[cfg.mode]
    current = int(tier_indices([before_tier or ""], cfg)[0])
    after = int(season_next_tier(np.array([current]), np.array([entering_]), np.array([mu]), np.array([sigma]), cfg,
                                 seasons)[0])
    if (entering_ and seasons is not None and seasons.placement_rounds) or current < UNPLACED:
        # a season's placement (re)starting or going on: its end places him as an unplaced player is
        current = UNPLACED
    names = list(cfg.tier_names)
    low, high = mu - cfg.k * sigma, mu + cfg.k * sigma
    thresholds = cfg.thresholds
    if after < UNPLACED:
        reason = (f"Placement {UNPLACED - after} of {seasons.placement_rounds if seasons else '?'}: no league shown "
                  f"yet" + (" (a new season's placement)" if entering_ else ""))
    elif current == UNPLACED and after == 0:
        reason = (f"placed in {names[0]}, the first tier: the lower bound mu - {cfg.k:g}*sigma = {low:.1f} reaches no "
                  f"higher tier's threshold yet")
    elif current == UNPLACED:
        reason = (f"placed in {names[after]}: the lower bound mu - {cfg.k:g}*sigma = {low:.1f} reached its threshold "
                  f"{thresholds[after]:g}")
    elif after > current:
        reason = (f"promoted to {names[after]}: the lower bound mu - {cfg.k:g}*sigma = {low:.1f} reached its "
                  f"threshold {thresholds[after]:g}")
    elif after < current:
        reason = (f"demoted from {names[current]}: the upper bound mu + {cfg.k:g}*sigma = {high:.1f} fell below "
                  f"its threshold {thresholds[current]:g}" + (f" less the margin {cfg.demotion_margin:g}"
                                                              if cfg.demotion_margin else ""))
    else:
        reason = f"stayed in {names[after]}: neither bound crossed a threshold (lower {low:.1f}, upper {high:.1f})"
    return {"mode": cfg.mode, "rule": rule, "k": cfg.k, "value": value, "stored": change.get("display_rating"),
            "tier_before": before_tier or None, "tier_after": tier_names([after], cfg)[0],
            "tier_stored": change.get("tier"),
            "lower_bound": low, "upper_bound": high, "tier_reason": reason}


def explain(cfg: LadderConfig, ladder: str, player: str, round_id: str, inputs: ChangeInputs) -> dict[str, Any]:
    """The explanation of the player's change in the round (:class:`ExplainRefused` if none is stored)."""
    if not inputs.ladder_exists:
        raise ExplainRefused(f"unknown ladder {ladder!r}", "unknown_ladder")
    if not inputs.player_exists:
        raise ExplainRefused(f"unknown player {player!r} in ladder {ladder!r}", "unknown_player")
    changes = [h for h in inputs.history if h.get("round_id") == round_id]
    change = inputs.result or (changes[0] if changes else None)
    if change is None:
        raise ExplainRefused(f"player {player!r} has no stored change in round {round_id!r}", "unknown_change")
    round_change = next((h for h in changes if h.get("kind", "round") == "round"), change)
    corrections = [h for h in changes if h.get("kind") == "correction"]
    previous, newcomer = _previous(inputs.history, round_id, round_change)
    weight = _round_weight(inputs)
    corrected = change.get("kind", "round") == "correction"  # a re-rate's net effect, not one update
    t = terms(cfg, change, None if previous is None or corrected else float(previous["occurred_at"]),
              newcomer and not corrected, None if corrected else weight)
    expected = None if corrected else _expected(cfg, change, inputs.results, (weight or 1.0) * t.share)
    seasons = cfg.seasons
    entering_ = bool(seasons is not None and t.previous_time is not None and not corrected and
                     entering(np.array([t.previous_time]), np.array([float(change["occurred_at"])]), seasons)[0])
    shown = _display(cfg.display, change, None if previous is None else previous.get("tier"), seasons, entering_)
    out = {
        "ladder": ladder, "player": player, "round_id": round_id, "model": cfg.model, "change": change,
        "kind": change.get("kind", "round"),
        "corrections": [{"correction_id": h.get("correction_id"),
                         "kind": inputs.corrections.get(h.get("correction_id") or "", {}).get("kind"),
                         "mu_before": h["mu_before"], "mu_after": h["mu_after"]} for h in corrections],
        "round": {"occurred_at": change.get("occurred_at"), "field_size": change.get("field_size"),
                  "status": inputs.record.get("status"), "weight": weight, "share": t.share,
                  "update_weight": None if weight is None else weight * t.share},
        "expected": expected, "performance": change.get("performance"),
        "drift": None if t.gamma is None else {"previous_round_at": t.previous_time, "newcomer": t.newcomer,
                                               "days": t.days, "gamma": t.gamma, "sigma_before": change["sigma_before"],
                                               "sigma_drifted": t.sigma_drifted},
        "update": {"beta": t.beta, "sigma_before": change["sigma_before"], "sigma_after": change["sigma_after"],
                   "mu_before": change["mu_before"], "mu_after": change["mu_after"],
                   "delta": float(change["mu_after"]) - float(change["mu_before"])},
        "reconstructed": {"sigma_after": t.sigma_after, "mu_after": t.mu_after, "display_rating": shown["value"],
                          "tier": shown["tier_after"]},
        "display": shown,
    }
    add_intervals([out["update"]], cfg.display.interval_z)  # the rating after the change, as every answer shows it
    out["text"] = sentences(out)
    return out


def sentences(e: dict[str, Any]) -> list[str]:
    """The explanation in plain words, one sentence a line (what the dashboard's panel shows)."""
    c = e["change"]
    out: list[str] = []
    x = e["expected"]
    if x is not None:
        how = "better than" if x["actual_rank"] < x["rank"] - 0.5 else "worse than" if x["actual_rank"] > x["rank"] + 0.5 \
            else "about as"
        out.append(f"Going in, your rating predicted a finish around #{x['rank']:.0f} of {x['field_size']} "
                   f"(give or take {x['spread']:.0f} places); you finished #{x['actual_rank']}, {how} expected.")
    if e["performance"] is not None:
        out.append(f"That result counts as a performance of {e['performance']:.0f} "
                   f"(your rating before was {c['mu_before']:.0f}).")
    delta = e["update"]["delta"]
    out.append(f"Your rating moved {'up' if delta >= 0 else 'down'} by {abs(delta):.1f} to {c['mu_after']:.0f}.")
    r = e["round"]
    if r["weight"] is not None and (r["weight"] != 1.0 or r["share"] != 1.0):
        out.append(f"The round counted with weight {r['weight']:g}" + (f", and you played {r['share']:.0%} of it"
                                                                       if r["share"] != 1.0 else "") + ".")
    d = e["drift"]
    if d is not None:
        if d["newcomer"]:
            out.append(f"It was your first round: your rating started from the newcomer's {c['mu_before']:.0f} "
                       f"with uncertainty {c['sigma_before']:.0f}.")
        else:
            out.append(f"{d['days']:.1f} days passed since your previous round, so your uncertainty grew from "
                       f"{d['sigma_before']:.1f} to {d['sigma_drifted']:.1f} before this round;")
        out.append(f"the round's result brought it to {c['sigma_after']:.1f}.")
    s = e["display"]
    out.append(f"Your shown rating is {s['rule']} = {s['value']:.0f}.")
    out.append(s["tier_reason"][0].upper() + s["tier_reason"][1:] + ".")
    for k in e["corrections"]:
        out.append(f"A correction of this round ({k['kind'] or 'kind not recorded'}: the ladder's history was rated "
                   f"again from it) moved your rating from {k['mu_before']:.0f} to {k['mu_after']:.0f}.")
    return out


async def explain_change(r: AsyncRedis, cfg: LadderConfig, ladder: str, player: str, round_id: str) -> dict[str, Any]:
    """Read (one round trip, ``store.explain``) and explain the player's change in the round."""
    return explain(cfg, ladder, player, round_id, await change_inputs(r, ladder, player, round_id))
