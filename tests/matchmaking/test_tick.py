"""form_matches: the safety and fairness properties every tick keeps (hypothesis), and examples."""

from __future__ import annotations

import json
import random
from dataclasses import replace

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import pytest

from stream.engine.ladders import LadderConfig, parse_ladders
from stream.engine.predict import outcome_model, win_probability
from stream.matchmaking import QueueConfig, Ticket, TicketColumns, TickResult, WideningStep, form_matches
from stream.matchmaking.tolerance import match_tolerance
from tests.engine.oracles import match_quality

LADDER = parse_ladders("").of("x")
TRUESKILL = parse_ladders(json.dumps({"*": {"model": "trueskill"}})).of("x")
SHAPES = [(2, 1), (3, 1), (2, 2), (1, 4), (2, 3)]
NOW = 1000.0


def _tick(queue: QueueConfig, tickets: list[Ticket], ratings: dict[str, tuple[float, float]], now: float,
          ladder: LadderConfig) -> TickResult:
    """form_matches over the columns of ``tickets``."""
    return form_matches(queue, TicketColumns.of(tickets, ratings), now, ladder)


@st.composite
def cases(draw: st.DrawFn) -> tuple[QueueConfig, list[Ticket], dict[str, tuple[float, float]]]:
    teams, team_size = draw(st.sampled_from(SHAPES))
    gaps = sorted(draw(st.lists(st.floats(10, 800), min_size=1, max_size=3)))
    quals = sorted(draw(st.lists(st.floats(0, 0.99), min_size=len(gaps), max_size=len(gaps))), reverse=True)
    widening = tuple(WideningStep(10.0 * i, g, q) for i, (g, q) in enumerate(zip(gaps, quals)))
    top = draw(st.none() | st.floats(1300, 1900))
    queue = QueueConfig(name="q", ladder="x", teams=teams, team_size=team_size, widening=widening,
                        max_wait_s=draw(st.sampled_from([30.0, 300.0])), provisional_sigma=draw(st.floats(60, 400)),
                        provisional_gap_factor=draw(st.floats(1, 3)), top_rating=top,
                        top_max_gap=draw(st.floats(20, 300)), top_min_quality=draw(st.floats(0, 0.95)),
                        max_latency_ms=draw(st.none() | st.just(80.0)))
    n = draw(st.integers(0, 30))
    tickets, ratings = [], {}
    for i in range(n):
        size = draw(st.integers(1, team_size))
        players = tuple(f"p{i}.{j}" for j in range(size))
        latencies = draw(st.none() | st.dictionaries(st.sampled_from(["eu", "us", "asia"]), st.floats(5, 150), max_size=3))
        tickets.append(Ticket(f"t{i}", players, NOW - draw(st.floats(0, 60)).__round__(1), latencies))
        for p in players:
            if draw(st.booleans()) or i % 5:
                ratings[p] = (draw(st.floats(1000, 2000)), draw(st.floats(40, 350)))
    return queue, tickets, ratings


def _check(queue: QueueConfig, tickets: list[Ticket], ratings: dict[str, tuple[float, float]],
           result: TickResult, ladder: LadderConfig) -> None:
    by_id = {t.ticket_id: t for t in tickets}
    noob = (ladder.newcomer.mu_noob, ladder.newcomer.sig_noob)
    # the arrays and the objects read from them agree (the service reads the arrays)
    ids = result.waiting.ticket_id
    assert [tuple(ids[result.tickets[s:e]].tolist()) for s, e in zip(result.start[:-1], result.start[1:])] == \
        [m.tickets for m in result.matches]
    assert result.quality.tolist() == [m.quality for m in result.matches]
    assert result.win_probability.shape == (len(result), queue.teams)
    assert result.team_of.size == result.tickets.size and set(result.team_of.tolist()) <= set(range(queue.teams))
    matched = [tid for m in result.matches for tid in m.tickets]
    assert len(matched) == len(set(matched)), "a ticket in two matches"
    players = [p for m in result.matches for team in m.teams for p in team]
    assert len(players) == len(set(players)), "a player in two matches"
    assert set(result.timed_out) == {t.ticket_id for t in tickets if NOW - t.created_at > queue.max_wait_s}
    assert not set(result.timed_out) & set(matched)
    for m in result.matches:
        assert len(m.teams) == queue.teams
        assert all(len(team) == queue.team_size for team in m.teams)
        assert sorted(players_of := [p for team in m.teams for p in team]) == \
            sorted(p for tid in m.tickets for p in by_id[tid].players)
        for tid in m.tickets:  # parties stay together
            team_of = {next(k for k, team in enumerate(m.teams) if p in team) for p in by_id[tid].players}
            assert len(team_of) == 1
            assert m.waits[tid] == pytest.approx(NOW - by_id[tid].created_at)
        rows = [[ratings.get(p, noob) for p in by_id[tid].players] for tid in m.tickets]
        party = [float(np.mean([r[0] for r in row])) for row in rows]
        tol = match_tolerance(queue, [m.waits[t] for t in m.tickets], [max(r[1] for r in row) for row in rows], party)
        assert max(party) - min(party) <= tol.max_gap + 1e-9
        assert m.quality >= tol.min_quality - 1e-12
        assert len(m.win_probability) == queue.teams
        assert all(0.0 <= p <= 1.0 for p in m.win_probability)
        assert players_of
        if queue.max_latency_ms is None:
            assert m.region is None
        for tid in m.tickets:  # every ticket reaches the match's region (or goes anywhere)
            lat = by_id[tid].latencies
            if queue.max_latency_ms is not None and lat:
                assert m.region is not None and lat.get(m.region, float("inf")) <= queue.max_latency_ms


@settings(max_examples=300, deadline=None)
@given(cases(), st.randoms(use_true_random=False))
def test_tick_properties(case: tuple[QueueConfig, list[Ticket], dict[str, tuple[float, float]]],
                         rnd: random.Random) -> None:
    queue, tickets, ratings = case
    result = _tick(queue, tickets, ratings, NOW, LADDER)
    _check(queue, tickets, ratings, result, LADDER)
    shuffled = list(tickets)
    rnd.shuffle(shuffled)
    again = _tick(queue, shuffled, ratings, NOW, LADDER)
    assert (again.matches, again.timed_out) == (result.matches, result.timed_out), "not deterministic"


@settings(max_examples=60, deadline=None)
@given(cases())
def test_tick_properties_trueskill(case: tuple[QueueConfig, list[Ticket], dict[str, tuple[float, float]]]) -> None:
    queue, tickets, ratings = case
    scaled = {p: (25.0 + (mu - 1500.0) / 60.0, sigma / 60.0) for p, (mu, sigma) in ratings.items()}
    queue = replace(queue, widening=tuple(replace(s, max_gap=s.max_gap / 60.0, min_quality=s.min_quality / 3)
                                          for s in queue.widening), top_rating=None)
    result = _tick(queue, tickets, scaled, NOW, TRUESKILL)
    _check(queue, tickets, scaled, result, TRUESKILL)


def _duel(n: int, ratings: list[float], created: list[float] | None = None) -> tuple[list[Ticket], dict[str, tuple[float, float]]]:
    created = created or [NOW - 1.0] * n
    tickets = [Ticket(f"t{i}", (f"p{i}",), created[i]) for i in range(n)]
    return tickets, {f"p{i}": (ratings[i], 80.0) for i in range(n)}


def test_duels_pair_neighbours_and_use_the_ladders_model() -> None:
    queue = QueueConfig("q", "x", widening=(WideningStep(0.0, 1e9, 0.0),))
    tickets, ratings = _duel(4, [2010.0, 1000.0, 2000.0, 1010.0])
    result = _tick(queue, tickets, ratings, NOW, LADDER)
    assert sorted(sorted(m.tickets) for m in result.matches) == [["t0", "t2"], ["t1", "t3"]]
    model = outcome_model(LADDER)
    for m in result.matches:
        (a,), (b,) = m.teams
        exact = float(win_probability(ratings[a][0], 80.0, ratings[b][0], 80.0, model))
        assert m.win_probability[0] == pytest.approx(exact, abs=1e-3)
        assert m.quality == pytest.approx(match_quality([ratings[a][0], ratings[b][0]], [80.0, 80.0], model), abs=1e-3)


def test_odd_run_leaves_the_newest_ticket_waiting() -> None:
    """Of a run of 3 neighbours, an end ticket sits out (the middle one cannot): the newer end."""
    queue = QueueConfig("q", "x", widening=(WideningStep(0.0, 1e9, 0.0),))
    for created, pair in (([NOW - 1, NOW - 5, NOW - 9], ("t1", "t2")), ([NOW - 9, NOW - 5, NOW - 1], ("t0", "t1"))):
        tickets, ratings = _duel(3, [1500.0, 1510.0, 1520.0], created)
        (match,) = _tick(queue, tickets, ratings, NOW, LADDER).matches
        assert tuple(sorted(match.tickets)) == pair


def test_tolerance_widens_with_wait() -> None:
    queue = QueueConfig("q", "x", widening=(WideningStep(0.0, 100.0, 0.0), WideningStep(30.0, 400.0, 0.0)))
    fresh, ratings = _duel(2, [1500.0, 1800.0], [NOW - 1, NOW - 1])
    assert _tick(queue, fresh, ratings, NOW, LADDER).matches == []
    old, _ = _duel(2, [1500.0, 1800.0], [NOW - 1, NOW - 31])
    assert len(_tick(queue, old, ratings, NOW, LADDER).matches) == 1


def test_quality_floor_applies_and_provisional_players_match_wider() -> None:
    queue = QueueConfig("q", "x", widening=(WideningStep(0.0, 250.0, 0.0),), provisional_sigma=200.0,
                        provisional_gap_factor=2.0)
    tickets, ratings = _duel(2, [1500.0, 1900.0])
    assert _tick(queue, tickets, ratings, NOW, LADDER).matches == []
    ratings["p0"] = (1500.0, 300.0)
    assert len(_tick(queue, tickets, ratings, NOW, LADDER).matches) == 1
    strict = replace(queue, widening=(WideningStep(0.0, 1e9, 0.999),))
    assert _tick(strict, tickets, ratings, NOW, LADDER).matches == []


def test_top_of_ladder_floor_holds_whatever_the_wait() -> None:
    queue = QueueConfig("q", "x", widening=(WideningStep(0.0, 1e9, 0.0),), top_rating=2400.0, top_max_gap=50.0)
    tickets, ratings = _duel(2, [2500.0, 2600.0], [NOW - 200, NOW - 200])
    assert _tick(queue, tickets, ratings, NOW, LADDER).matches == []
    tickets, ratings = _duel(2, [1500.0, 1600.0], [NOW - 200, NOW - 200])
    assert len(_tick(queue, tickets, ratings, NOW, LADDER).matches) == 1


def test_region_rule() -> None:
    queue = QueueConfig("q", "x", widening=(WideningStep(0.0, 1e9, 0.0),), max_latency_ms=80.0)
    tickets = [Ticket("a", ("pa",), NOW, {"eu": 20.0, "us": 120.0}), Ticket("b", ("pb",), NOW, {"us": 30.0}),
               Ticket("c", ("pc",), NOW, {"us": 40.0, "eu": 70.0}), Ticket("d", ("pd",), NOW, {"asia": 10.0})]
    result = _tick(queue, tickets, {}, NOW, LADDER)
    assert [(sorted(m.tickets), m.region) for m in result.matches] == [(["b", "c"], "us")]
    tickets[1] = Ticket("b", ("pb",), NOW, {"eu": 60.0})
    result = _tick(queue, tickets, {}, NOW, LADDER)
    assert len(result.matches) == 1 and result.matches[0].region == "eu"


def test_teams_are_balanced_and_parties_kept() -> None:
    queue = QueueConfig("q", "x", teams=2, team_size=2, widening=(WideningStep(0.0, 1e9, 0.0),))
    tickets = [Ticket("duo", ("a", "b"), NOW), Ticket("c", ("c",), NOW), Ticket("d", ("d",), NOW)]
    ratings = {"a": (1900.0, 80.0), "b": (1100.0, 80.0), "c": (1520.0, 80.0), "d": (1480.0, 80.0)}
    (match,) = _tick(queue, tickets, ratings, NOW, LADDER).matches
    assert sorted(map(sorted, match.teams)) == [["a", "b"], ["c", "d"]]
    assert abs(match.win_probability[0] - 0.5) < 0.01
    singles = [Ticket(p, (p,), NOW) for p in "wxyz"]
    strengths = {"w": (2000.0, 80.0), "x": (1900.0, 80.0), "y": (1200.0, 80.0), "z": (1100.0, 80.0)}
    (match,) = _tick(queue, singles, strengths, NOW, LADDER).matches
    assert sorted(map(sorted, match.teams)) == [["w", "z"], ["x", "y"]]


def test_bad_tickets_are_refused() -> None:
    queue = QueueConfig("q", "x")
    with pytest.raises(ValueError, match="ticket 'a': a party of 2 does not fit a team of 1"):
        _tick(queue, [Ticket("a", ("x", "y"), NOW)], {}, NOW, LADDER)
    with pytest.raises(ValueError, match="given twice"):
        _tick(queue, [Ticket("a", ("x",), NOW), Ticket("a", ("y",), NOW)], {}, NOW, LADDER)
    with pytest.raises(ValueError, match="another ticket"):
        _tick(queue, [Ticket("a", ("x",), NOW), Ticket("b", ("x",), NOW)], {}, NOW, LADDER)


def test_large_lobbies_checked_after_choosing_keep_the_floor(monkeypatch: pytest.MonkeyPatch) -> None:
    """Beyond PAIR_BUDGET, windows are chosen by spread first and their quality checked after."""
    import stream.matchmaking.pairing as pairing

    monkeypatch.setattr(pairing, "PAIR_BUDGET", 0)
    rng = np.random.default_rng(11)
    queue = QueueConfig("q", "x", teams=4, team_size=1, widening=(WideningStep(0.0, 300.0, 0.97),))
    formed = 0
    for _ in range(20):
        tickets = [Ticket(f"t{i}", (f"p{i}",), NOW - float(rng.uniform(0, 50))) for i in range(40)]
        ratings = {f"p{i}": (float(rng.normal(1500, 300)), float(rng.uniform(40, 300))) for i in range(40)}
        result = _tick(queue, tickets, ratings, NOW, LADDER)
        _check(queue, tickets, ratings, result, LADDER)
        formed += len(result.matches)
    assert formed > 0
