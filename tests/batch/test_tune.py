"""``stream tune``: the search (:mod:`stream.batch.tune`) and the command, on small generated histories."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from stream.batch import Metrics, read_rounds, replay, synthetic_rounds, write_jsonl
from stream.batch.models import replay_model, replay_named
from stream.batch.tune import SPACES, candidates, defaults, held_out, objective, refinements, split_index, tune
from stream.cli.main import app
from stream.contracts import RoundResult
from stream.engine import PRESETS
from stream.engine.models import MODELS

runner = CliRunner()


@pytest.fixture(scope="module")
def history() -> list[RoundResult]:
    return list(synthetic_rounds(240, 30, 60, seed=7, tie_quantum=20.0))


@pytest.fixture(scope="module")
def history_file(tmp_path_factory: pytest.TempPathFactory, history: list[RoundResult]) -> Path:
    path = tmp_path_factory.mktemp("tune") / "rounds.jsonl"
    write_jsonl(history, path)
    return path


@pytest.mark.parametrize("name", list(SPACES))
def test_every_draw_is_a_valid_parameter_set(name: str) -> None:
    base = PRESETS[name] if name in PRESETS else MODELS[name].params
    for params in candidates(name, 200, seed=1):
        changed = dataclasses.replace(base, **params)  # __post_init__ validates
        assert all(getattr(changed, k) == v for k, v in params.items())
    assert candidates(name, 5, seed=1)[0] == defaults(name)


@pytest.mark.parametrize("name", ["mmr", "topcoder", "elo-multiplayer"])
def test_refinements_are_valid_neighbours(name: str) -> None:
    base = PRESETS[name] if name in PRESETS else MODELS[name].params
    around = candidates(name, 1, seed=4)[1]
    steps = refinements(name, around, 50, seed=4)
    assert len(steps) == 50 and steps == refinements(name, around, 50, seed=4)
    for step in steps:
        dataclasses.replace(base, **step)
        ratios = [step[k] / around[k] for k in around if k != "rho" and around[k] > 0]
        assert all(0.3 < r < 3.5 for r in ratios)  # within ~5 standard deviations of a 25 % step
    assert len({tuple(sorted(s.items())) for s in steps}) > 40


def test_the_second_half_refines_the_best_of_the_first(history: list[RoundResult]) -> None:
    result = tune(history, "glicko", budget=6, seed=1, jobs=1)
    first = result.objectives[:4]
    best_first = result.candidates[max(range(4), key=lambda i: (first[i], -i))]
    assert result.candidates[:4] == candidates("glicko", 3, seed=1)
    assert result.candidates[4:] == refinements("glicko", best_first, 3, seed=1)


def test_candidates_follow_the_seed() -> None:
    assert candidates("mmr", 6, seed=3) == candidates("mmr", 6, seed=3)
    assert candidates("mmr", 6, seed=3) != candidates("mmr", 6, seed=4)
    rhos = {c["rho"] for c in candidates("mmr", 200, seed=0)}
    assert rhos == {0.0, 0.04, 0.2, 1.0, 5.0}
    assert "rho" not in candidates("mmx", 1, seed=0)[1]


def test_overrides_equal_changed_parameters(history: list[RoundResult]) -> None:
    ours = replay_named(history, "mmr", overrides={"weight_limit": 0.3, "rho": 0.2})
    direct = replay(history, PRESETS["mmr"].with_(weight_limit=0.3, rho=0.2))
    assert list(ours.ratings()) == list(direct.ratings())
    glicko = MODELS["glicko"]
    ours = replay_named(history, "glicko", overrides={"beta": 200.0})
    direct_model = replay_model(history, glicko, dataclasses.replace(glicko.params, beta=200.0))
    assert list(ours.ratings()) == list(direct_model.ratings())
    assert list(ours.ratings()) != list(replay_named(history, "glicko").ratings())


def test_held_out_scores_only_rounds_after_the_split(history: list[RoundResult]) -> None:
    split = split_index(len(history), 0.3)
    assert split == 21
    scored = held_out(history, split, "glicko")
    assert scored.scored_rounds == len(history) - split
    # the same numbers as scoring every round of the tail on the ratings of a full replay
    window = Metrics(len(history), start=split)
    replay_named(history, "glicko", metrics=window)
    assert scored.pair_exp == window.summary()["pair_exp"]
    everything = Metrics(len(history), start=0)
    replay_named(history, "glicko", metrics=everything)
    assert everything.scored_rounds == len(history)
    assert everything.summary()["pair_all"] != scored.pair_all


@pytest.mark.parametrize("name", ["glicko", "topcoder", "mmr"])
def test_tune_is_at_least_as_good_as_the_defaults(history: list[RoundResult], name: str) -> None:
    result = tune(history, name, budget=4 if name == "mmr" else 8, seed=0, jobs=1)
    assert result.candidates[0] == defaults(name)
    assert result.objectives[result.best] >= result.objectives[0]
    assert result.objectives[result.best] == max(result.objectives)
    # the reported objective is the tuning part's, recomputed independently
    part = history[: result.split]
    assert objective(part, name, result.best_params) == result.objectives[result.best]


def test_tune_improves_on_glicko_defaults(history: list[RoundResult]) -> None:
    result = tune(history, "glicko", budget=12, seed=0, jobs=1)
    assert result.best != 0 and result.objectives[result.best] > result.objectives[0]


def test_tune_does_not_depend_on_the_process_count(history: list[RoundResult]) -> None:
    alone = tune(history, "codeforces", budget=5, seed=2, jobs=1)
    pooled = tune(history, "codeforces", budget=5, seed=2, jobs=2)
    assert alone == pooled


def test_tune_refuses_impossible_splits(history: list[RoundResult]) -> None:
    with pytest.raises(ValueError, match="holdout"):
        split_index(10, 1.0)
    with pytest.raises(ValueError, match="each part"):
        split_index(1, 0.3)
    with pytest.raises(ValueError, match="earlier rounds"):
        tune(history[:4], "glicko", budget=1, jobs=1)  # nobody has 5 earlier rounds yet
    with pytest.raises(KeyError):
        tune(history, "nope", budget=1, jobs=1)


def test_tune_command_text(history_file: Path) -> None:
    result = runner.invoke(app, ["tune", str(history_file), "--model", "glicko", "--budget", "6",
                                 "--compare", "codeforces", "--jobs", "1"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].startswith(f"{history_file}: 30 rounds; tuned glicko on the first 21")
    assert [line.split()[0] for line in lines[2:5]] == ["defaults", "tuned", "compare"]
    assert "LADDERS" in lines[5] and "keeps its model" in lines[5]
    entry = json.loads(lines[6])
    assert list(entry) == ["default"] and entry["default"]["model"] == "glicko"
    assert set(entry["default"]["params"]) == {"beta", "sig_drift"}
    from stream.engine.ladders import parse_ladders  # the stream takes the entry as printed
    assert parse_ladders(lines[6]).of("default").model_params.beta == entry["default"]["params"]["beta"]  # type: ignore[attr-defined]


def test_tune_command_json(history_file: Path, history: list[RoundResult]) -> None:
    result = runner.invoke(app, ["tune", str(history_file), "--model", "glicko", "--budget", "6",
                                 "--holdout", "0.2", "--seed", "5", "--jobs", "1", "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert (out["rounds"], out["tune_rounds"], out["holdout_rounds"]) == (30, 24, 6)
    assert [r["label"] for r in out["results"]] == ["defaults", "tuned"]
    assert len(out["candidates"]) == 7
    expected = tune(history, "glicko", budget=6, holdout=0.2, seed=5, jobs=1)
    tuned = out["results"][1]
    assert tuned["params"] == expected.best_params == out["ladders"]["default"]["params"]
    assert tuned["tune_pair_exp"] >= out["results"][0]["tune_pair_exp"]
    heldout = held_out(history, 24, "glicko", expected.best_params)
    assert tuned["holdout"]["pair_exp"] == heldout.pair_exp and tuned["holdout_scored_rounds"] == 6
    assert all(math.isfinite(v) for v in tuned["holdout"].values())


def test_tune_ladders_fallback_key_for_several_ladders(tmp_path: Path) -> None:
    path = tmp_path / "two.jsonl"
    rounds = [*synthetic_rounds(60, 12, 50, seed=1, ladder="a"), *synthetic_rounds(60, 12, 50, seed=2, ladder="b")]
    rounds.sort(key=lambda r: r.occurred_at)
    write_jsonl(rounds, path)
    result = runner.invoke(app, ["tune", str(path), "--model", "bar", "--budget", "2", "--jobs", "1", "--json"])
    assert result.exit_code == 0, result.output
    assert list(json.loads(result.stdout)["ladders"]) == ["*"]


@pytest.mark.parametrize(("args", "message"), [
    (["--model", "nope"], "unknown model 'nope'"),
    (["--model", "glicko", "--holdout", "0"], "--holdout must be in (0, 1)"),
    (["--model", "glicko", "--holdout", "1"], "--holdout must be in (0, 1)"),
    (["--model", "glicko", "--budget", "-1"], "--budget must be >= 0"),
    (["--model", "glicko", "--jobs", "0"], "--jobs must be >= 1"),
    (["--model", "glicko", "--compare", "nope"], "unknown --compare model"),
])
def test_tune_command_bad_options(history_file: Path, args: list[str], message: str) -> None:
    result = runner.invoke(app, ["tune", str(history_file), *args])
    assert result.exit_code == 2
    assert message in result.stderr


def test_tune_command_bad_input(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{not json\n")
    result = runner.invoke(app, ["tune", str(bad), "--model", "glicko"])
    assert result.exit_code == 2 and "bad input" in result.stderr
    short = tmp_path / "short.jsonl"
    write_jsonl(synthetic_rounds(20, 3, 10, seed=0), short)
    result = runner.invoke(app, ["tune", str(short), "--model", "glicko", "--jobs", "1"])
    assert result.exit_code == 2 and "earlier rounds" in result.stderr
    result = runner.invoke(app, ["tune", str(short), "--model", "glicko", "--holdout", "0.01"])
    assert result.exit_code == 2 and "each part" in result.stderr


def test_draws_cover_the_space() -> None:
    draws = np.array([c["weight_limit"] for c in candidates("mmr", 400, seed=0)[1:]])
    assert draws.min() < 0.02 and draws.max() > 1.5


def test_held_out_comparison_knows_which_way_each_metric_goes() -> None:
    from stream.batch.tune import Scored, compare_held_out

    defaults = Scored(80.0, 70.0, 0.20, 0.30, 5)
    assert compare_held_out(defaults, Scored(81.0, 69.0, 0.10, 0.30, 5)) == (["pair_all", "rank_all"], ["pair_exp"])
    assert compare_held_out(defaults, Scored(79.0, 60.0, 0.30, 0.40, 5)) == ([], ["pair_all", "pair_exp", "rank_all",
                                                                                  "rank_exp"])
    assert compare_held_out(defaults, Scored(80.0, math.nan, 0.20, 0.30, 5)) == ([], [])


def test_tune_prints_no_entry_to_paste_when_the_defaults_win(history_file: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 29 item 6: the held-out scores favour the defaults on every metric: say so, no LADDERS entry."""
    import stream.cli.tune as tune_cli
    from stream.batch.tune import Scored
    from stream.cli.tune import LADDERS_NOTE

    scores = iter([Scored(80.0, 75.0, 0.10, 0.20, 9), Scored(79.0, 74.0, 0.20, 0.30, 9)])  # defaults, then tuned
    monkeypatch.setattr(tune_cli, "held_out", lambda *args, **kwargs: next(scores))
    result = runner.invoke(app, ["tune", str(history_file), "--model", "glicko", "--budget", "2", "--jobs", "1"])
    assert result.exit_code == 0, result.output
    assert LADDERS_NOTE not in result.stdout and '"params"' not in result.stdout
    assert result.stdout.splitlines()[-1].startswith("keep the defaults: they beat the tuned parameters on every "
                                                     "held-out metric (pair_all, pair_exp, rank_all, rank_exp)")
    scores = iter([Scored(80.0, 75.0, 0.10, 0.20, 9), Scored(79.0, 74.0, 0.20, 0.30, 9)])
    result = runner.invoke(app, ["tune", str(history_file), "--model", "glicko", "--budget", "2", "--jobs", "1",
                                 "--json"])
    out = json.loads(result.stdout)
    assert out["recommended"] == "defaults" and out["tuned_better_on"] == []
