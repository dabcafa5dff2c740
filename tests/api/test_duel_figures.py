"""Issue 29 item 9: a duel's prediction is one figure everywhere in the API's answer."""

from __future__ import annotations

from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from apiclient import with_client
from readside_data import LADDER, Seeded, seed


@pytest.fixture()
def seeded(redis_url: str) -> Seeded:
    return seed(redis_url)


def test_a_duel_answers_one_probability(redis_url: str, seeded: Seeded) -> None:
    ranking = seeded.ranking()

    async def body(client: TestClient) -> list[Any]:
        return [await (await client.get(f"/api/ladders/{LADDER}/predict?players={a},{b}")).json()
                for a, b in ((ranking[0], ranking[-1]), (ranking[2], ranking[3]), (ranking[1], "newbie"))]
    for duel in with_client(redis_url, body):
        first, second = duel["players"]
        assert first["win_probability"] == duel["first_ahead_of_second"] == duel["pairwise"][0][1]
        assert first["win_probability"] + second["win_probability"] == pytest.approx(1.0, abs=1e-15)
        for p in (first, second):
            assert p["rank_distribution"][0] == p["win_probability"]
            assert p["rank_distribution"][0] + 2 * p["rank_distribution"][1] == pytest.approx(p["expected_rank"], abs=1e-12)
