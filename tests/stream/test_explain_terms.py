"""Explain's terms reconstruct the stored change (hypothesis): random rounds of individuals and
teams with partial play, round weights, days between rounds with a drift per day, on Elo-MMR, Elo-MMR bounded and
Elo-MMchi ladders, with or without seasons (a soft reset at a player's first round of a season), rated with the pipeline's own functions (``pipeline.whatif.rate``: phase one's
call, phase two's update, the display rules), stored as the stream stores them (the RatingChange
of every player, his history, the round's fan-out weight); then every change's explanation gives
back sigma after (every Elo-MMR variant), mu after (Elo-MMchi), the display rating and the tier
within 1e-9."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from stream.contracts.round import Limits, parse_round
from stream.engine.ladders import parse_ladders
from stream.pipeline import explain, whatif
from stream.store.explain import ChangeInputs
from stream.store.store import StoredStates

TOL = 1e-9
START = 1_700_000_000.0
DAY = 86_400.0
POOL = [f"p{i}" for i in range(8)]


SEASONS = {"schedule": [{"name": "S1", "start": START + 15 * DAY}, {"name": "S2", "start": START + 50 * DAY}],
           "sigma_to": 260.0, "sigma_share": 0.7, "mu_pull": 0.3, "placement_rounds": 2}
"""A soft reset at each player's first round of a season: explain's terms start from the reset belief;
two rounds of placement: explain's tier is the stream's, its reason says the placement."""


@st.composite
def histories(draw: st.DrawFn) -> tuple[str, float, list[dict[str, Any]]]:
    model = draw(st.sampled_from(["mmr", "mmr-bounded", "mmx"]))
    drift = draw(st.sampled_from([0.0, 30.0, 400.0]))
    if draw(st.booleans()):
        model = f"{model}+seasons"
    rounds = []
    when = START
    for k in range(draw(st.integers(1, 6))):
        when += draw(st.floats(0.0, 40.0)) * DAY
        players = draw(st.lists(st.sampled_from(POOL), min_size=2, max_size=8, unique=True))
        ranks = draw(st.lists(st.integers(1, 4), min_size=len(players), max_size=len(players)))
        if len(set(ranks)) == 1:
            ranks[-1] += 1
        weight = draw(st.sampled_from([1.0, 0.5, 2.0, 1.3]))
        if draw(st.booleans()) and len(players) >= 3:  # two teams (and an individual), partial play
            cut = len(players) // 2
            shares = [draw(st.sampled_from([1.0, 0.5, 0.25])) for _ in players]
            member = [p if w == 1.0 else {"player": p, "weight": w} for p, w in zip(players, shares)]
            standings: list[Any] = [{"team": "a", "players": member[:cut], "rank": 1},
                                    {"team": "b", "players": member[cut:], "rank": draw(st.sampled_from([1, 2]))}]
            if standings[1]["rank"] == 1:
                standings[1]["rank"] = 2
        else:
            standings = [{"player": p, "rank": r} for p, r in zip(players, ranks)]
        rounds.append({"round_id": f"r{k}", "ladder": "x", "occurred_at": when, "weight": weight, "standings": standings})
    return model, drift, rounds


@settings(max_examples=60, deadline=None)
@given(histories())
def test_explain_terms_reconstruct_the_stored_change(case: tuple[str, float, list[dict[str, Any]]]) -> None:
    check_explanations(case)


def test_placement_is_explained() -> None:
    """Newcomers' first round and returning players' first round of S1: "Placement 1 of 2"."""
    rounds = [{"round_id": f"r{k}", "ladder": "x", "occurred_at": START + k * 20 * DAY, "weight": 1.0,
               "standings": [{"player": "p0", "rank": 1}, {"player": "p1", "rank": 2}]} for k in range(3)]
    assert check_explanations(("mmr+seasons", 0.0, rounds)) == 4  # r0 (newcomers), r1 (S1 starts); r2 places them


def check_explanations(case: tuple[str, float, list[dict[str, Any]]]) -> int:
    """Every change's explanation reconstructs it; returns how many were in placement."""
    model, drift, rounds = case
    model, _, seasons = model.partition("+")
    entry: dict[str, Any] = {"model": model, "params": {"drift_per_day": drift}, **({"seasons": SEASONS} if seasons else {})}
    cfg = parse_ladders(json.dumps({"*": entry})).of("x")
    states: dict[str, bytes] = {}
    tiers: dict[str, str] = {}
    history: dict[str, list[dict[str, Any]]] = {}
    checked = placed = 0
    for body in rounds:
        round_ = parse_round(json.dumps(body), limits=Limits())
        players = round_.players()
        stored = StoredStates(np.zeros(len(players), dtype=np.int64), [states.get(p) for p in players],
                              [tiers.get(p, "").encode() or None for p in players])
        rows = whatif.rate(cfg, round_, stored, keep_states=True)
        assert rows.states_after is not None
        results = []
        for i, p in enumerate(players):
            change = {"ladder": "x", "round_id": round_.round_id, "player": p, "rank": int(rows.ranks[i]),
                      "field_size": round_.field_size,
                      "performance": None if rows.performance is None else float(rows.performance[i]),
                      "mu_before": float(rows.mu_before[i]), "sigma_before": float(rows.sigma_before[i]),
                      "mu_after": float(rows.mu_after[i]), "sigma_after": float(rows.sigma_after[i]),
                      "display_rating": float(rows.display_after[i]), "tier": rows.tier_after[i] or None,
                      "rounds_played": int(rows.rounds_before[i]) + 1, "occurred_at": round_.occurred_at}
            if rows.shares is not None:
                change |= {"team": rows.teams[i] if rows.teams else None, "weight": rows.shares[i]}
            results.append(change)
            history.setdefault(p, []).append(change)
            states[p], tiers[p] = rows.states_after[i], rows.tier_after[i]
        fanout = [{"ladder": "x", "round_id": round_.round_id, "weight": round_.weight, "entries": []}]
        for change in results:
            p = change["player"]
            inputs = ChangeInputs(True, True, change, results, {"status": "rated"}, fanout, list(history[p]), {})
            e = explain.explain(cfg, "x", p, round_.round_id, inputs)
            got = e["reconstructed"]
            assert abs(got["sigma_after"] - change["sigma_after"]) <= TOL, (e["drift"], change)
            if model == "mmx":
                assert abs(got["mu_after"] - change["mu_after"]) <= TOL
            else:
                assert got["mu_after"] is None  # Elo-MMR's mean is not a function of these terms
            assert abs(got["display_rating"] - change["display_rating"]) <= TOL
            assert got["tier"] == change["tier"]
            if (change["tier"] or "").startswith("Placement "):
                placed += 1
                assert e["display"]["tier_reason"].startswith(f"{change['tier']} of 2: no league shown yet")
            z = cfg.display.interval_z  # the rating after the change, with its interval as every answer
            assert e["update"]["interval"] == [change["mu_after"] - z * change["sigma_after"],
                                               change["mu_after"] + z * change["sigma_after"]]
            assert e["expected"]["actual_rank"] == change["rank"] and 1.0 <= e["expected"]["rank"] <= round_.field_size
            assert e["text"] and all(isinstance(line, str) and line for line in e["text"])
            checked += 1
    assert checked >= 2
    return placed


def test_a_corrections_change_says_its_kind() -> None:
    """A player whose rating a correction of round r moved (he need not have played r): the
    explanation names the correction's kind from the ladder's ledger and makes no claim about
    an update's terms (a re-rate's net effect is not one update)."""
    cfg = parse_ladders("").of("x")
    base = {"ladder": "x", "player": "a", "field_size": 2, "performance": 1600.0, "sigma_before": 200.0,
            "sigma_after": 180.0, "display_rating": 1200.0, "tier": "Bronze", "occurred_at": START}
    played = base | {"round_id": "r1", "rank": 1, "mu_before": 1500.0, "mu_after": 1560.0, "rounds_played": 1}
    moved = base | {"round_id": "r0", "rank": 1, "mu_before": 1560.0, "mu_after": 1540.0, "rounds_played": 1,
                    "kind": "correction", "correction_id": "c1"}
    inputs = ChangeInputs(True, True, None, [], {}, [], [played, moved], {"c1": {"kind": "void", "round_id": "r0"}})
    e = explain.explain(cfg, "x", "a", "r0", inputs)
    assert e["kind"] == "correction" and e["corrections"] == [
        {"correction_id": "c1", "kind": "void", "mu_before": 1560.0, "mu_after": 1540.0}]
    assert e["expected"] is None and e["drift"] is None and e["reconstructed"]["sigma_after"] is None
    assert any("correction of this round (void" in line for line in e["text"])
