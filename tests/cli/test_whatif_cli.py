"""``stream what-if`` and ``stream explain`` against a real redis-server."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from readside_data import LADDER, seed
from stream.cli.main import app
from whatif_data import LADDER as WI, PLAYERS, START, seed_states, standings

runner = CliRunner()


def invoke(redis_url: str, *args: str, stdin: str | None = None):  # type: ignore[no-untyped-def]
    return runner.invoke(app, list(args), env={"REDIS_URL": redis_url, "ENGINE_PRESET": "mmr"}, input=stdin)


def test_what_if_prints_the_changes_and_targets(redis_url: str, tmp_path: Path) -> None:
    seed_states(redis_url)
    path = tmp_path / "round.json"
    path.write_text(json.dumps({"occurred_at": START + 9 * 86_400, "standings": standings(PLAYERS[:6])}))
    result = invoke(redis_url, "what-if", WI, str(path), "--explain", PLAYERS[2])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert "nothing written" in lines[0] and lines[1].split()[:3] == ["rank", "player", "perf"]
    assert [line.split()[1] for line in lines[2:8]] == PLAYERS[:6]
    assert lines[-1].startswith(f"{PLAYERS[2]}: ") and "Gold" in lines[-1]
    as_json = json.loads(invoke(redis_url, "what-if", WI, "-", "--json",
                                stdin=path.read_text()).output)
    assert [c["player"] for c in as_json["changes"]] == PLAYERS[:6] and as_json["writes"] is False


def test_what_if_bad_input_and_unknown_ladder(redis_url: str, tmp_path: Path) -> None:
    seed_states(redis_url)
    path = tmp_path / "alone.json"  # one player: nobody can be rated
    path.write_text(json.dumps({"standings": [{"player": "a", "rank": 1}]}))
    result = invoke(redis_url, "what-if", WI, str(path))
    assert result.exit_code == 2 and "no_outcome" in result.output
    result = invoke(redis_url, "what-if", "nope", str(path))
    assert result.exit_code == 1 and "unknown ladder" in result.output
    result = invoke(redis_url, "what-if", WI, str(tmp_path / "missing.json"))
    assert result.exit_code == 2 and "cannot read" in result.output


def test_explain_prints_plain_words(redis_url: str) -> None:
    seeded = seed(redis_url)
    player = seeded.ranking()[0]
    result = invoke(redis_url, "explain", LADDER, player, "r3")
    assert result.exit_code == 0, result.output
    assert result.output.startswith(f"{player} in round r3 ({LADDER}") and "Your shown rating is mu - 2*sigma" in result.output
    data = json.loads(invoke(redis_url, "explain", LADDER, player, "r3", "--json").output)
    assert data["change"]["round_id"] == "r3" and data["text"]
    result = invoke(redis_url, "explain", LADDER, "ghost", "r3")
    assert result.exit_code == 1 and "unknown player" in result.output
    result = invoke(redis_url, "explain", LADDER, player, "r99")
    assert result.exit_code == 1 and "no stored change" in result.output


def test_player_and_leaderboard_show_provisional_and_eligibility(redis_url: str) -> None:
    seeded = seed(redis_url)
    ladders = json.dumps({LADDER: {"model": "mmr", "display": {"provisional_rounds": 5, "min_rounds": 4}}})
    env = {"REDIS_URL": redis_url, "LADDERS": ladders}
    board = runner.invoke(app, ["leaderboard", LADDER, "--top", "50"], env=env)
    assert board.exit_code == 0, board.output
    lines = board.output.splitlines()[1:-1]
    rounds = {line.split()[1]: int(line.split()[6]) for line in lines}
    assert len(rounds) == len(seeded.display)
    for line in lines:
        cells = line.split()
        assert cells[2].endswith("?") is (rounds[cells[1]] < 5)
        assert line.rstrip().endswith("ineligible") is (rounds[cells[1]] < 4)
        low, high = (float(x) for x in cells[7].split(".."))  # the interval, mu +/- 2 sigma now
        assert low < float(cells[3]) < high
    few = min(rounds, key=rounds.get)
    shown = runner.invoke(app, ["player", LADDER, few], env=env)
    assert shown.exit_code == 0 and "? (provisional)" in shown.output and "not eligible: fewer than 4 rounds" in shown.output
    assert "interval [" in shown.output
