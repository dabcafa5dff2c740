"""``stream leaderboard / player / round`` against a real redis-server with seeded ratings."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from readside_data import LADDER, Seeded, seed
from stream.cli.main import app

runner = CliRunner()


@pytest.fixture()
def seeded(redis_url: str) -> Seeded:
    return seed(redis_url)


def invoke(redis_url: str, *args: str):  # type: ignore[no-untyped-def]
    return runner.invoke(app, list(args), env={"REDIS_URL": redis_url})


def test_leaderboard(redis_url: str, seeded: Seeded) -> None:
    result = invoke(redis_url, "leaderboard", LADDER, "--top", "3")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].split()[:3] == ["#", "player", "rating"]
    assert [line.split()[1] for line in lines[1:4]] == seeded.ranking()[:3]
    data = json.loads(invoke(redis_url, "leaderboard", LADDER, "--json", "-n", "5").output)
    assert [r["player"] for r in data["rows"]] == seeded.ranking()[:5] and data["total"] == len(seeded.display)


def test_player(redis_url: str, seeded: Seeded) -> None:
    best = seeded.ranking()[0]
    result = invoke(redis_url, "player", LADDER, best)
    assert result.exit_code == 0, result.output
    assert result.output.startswith(f"{best} ({LADDER}): rating") and "position 1 of" in result.output
    data = json.loads(invoke(redis_url, "player", LADDER, best, "--json").output)
    assert data["mu"] == pytest.approx(seeded.mu[best]) and data["history"][-1]["player"] == best


def test_round(redis_url: str, seeded: Seeded) -> None:
    result = invoke(redis_url, "round", LADDER, "r2")
    assert result.exit_code == 0, result.output
    assert result.output.startswith(f"round r2 ({LADDER}): rated, {seeded.field_sizes['r2']} players")
    data = json.loads(invoke(redis_url, "round", LADDER, "r2", "--json").output)
    assert [c["rank"] for c in data["results"]] == list(range(1, seeded.field_sizes["r2"] + 1))


@pytest.mark.parametrize("args, message", [
    (["leaderboard", "nope"], "unknown ladder 'nope'"),
    (["player", LADDER, "ghost"], "unknown player 'ghost' in ladder 'blitz'"),
    (["player", "nope", "p01"], "unknown ladder 'nope'; known ladders: blitz"),  # the ladder is what is unknown
    (["round", LADDER, "r99"], "unknown round 'r99' in ladder 'blitz'"),
])
def test_unknown_exits_1(redis_url: str, seeded: Seeded, args: list[str], message: str) -> None:
    result = invoke(redis_url, *args)
    assert result.exit_code == 1 and message in result.output
