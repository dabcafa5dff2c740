"""Leagues with divisions through phase two (no Kafka, the session's private redis-server): the
stored tier and the v1 RatingChange carry the division label the display rule gives."""

from __future__ import annotations

import asyncio
import json

import numpy as np

from stream.contracts import RatingChange, validate
from stream.engine.display import (
    UNPLACED,
    league_division,
    next_tier,
    parse_display_configs,
    tier_indices,
    tier_names,
)
from stream.pipeline.phase_one import handle_one
from stream.pipeline.messages import Incoming
from stream.pipeline.phase_two import handle_updates
from tests.stream.test_handlers import context, make_round
from tests.store_calls import stored_player

DISPLAY = json.dumps({"*": {"mode": "mu", "k": 0, "divisions": 2, "demotion_margin": 100,
                            "tiers": [["Low", None], ["Mid", 1400], ["High", 1650]]}})


def test_phase_two_stores_and_emits_division_labels(redis_url: str) -> None:
    cfg = parse_display_configs(DISPLAY)["*"]
    assert cfg.tier_names == ("Low", "Mid 2", "Mid 1", "High")

    async def body() -> tuple[list[list[RatingChange]], dict[str, str]]:
        ctx = context(redis_url, display_config=DISPLAY)
        rounds = []
        for day, order in enumerate((["a", "b", "c", "d", "e"], ["e", "b", "c", "d", "a"])):
            rnd = make_round(f"r{day}", order, day=day)
            result = await handle_updates(ctx, [m.value for m in (await handle_one(ctx, Incoming(rnd.to_json().encode()))).updates])
            for event in result.events:
                validate("rating-change", event.value)  # still the v1 schema
            rounds.append(sorted((RatingChange.from_json(e.value) for e in result.events), key=lambda c: c.player))
        stored = {p: (await stored_player(ctx.store, "L", p))["tier"].decode() for p in "abcde"}
        await ctx.store.close()
        return rounds, stored

    (changes, second), stored = asyncio.run(body())
    expected = tier_names(next_tier(np.full(5, UNPLACED), [c.mu_after for c in changes],
                                    [c.sigma_after for c in changes], cfg), cfg)
    assert [c.tier for c in changes] == expected
    assert "Mid 2" in expected and expected[0] == "High" and expected[-1] == "Low"  # the middle player: 1500
    assert league_division("Mid 2", cfg) == ("Mid", 2)
    # round two starts from the stored labels (hysteresis through the store)
    after = tier_names(next_tier(tier_indices(expected, cfg), [c.mu_after for c in second],
                                 [c.sigma_after for c in second], cfg), cfg)
    assert [c.tier for c in second] == after == [stored[c.player] for c in second]
    fresh = tier_names(next_tier(np.full(5, UNPLACED), [c.mu_after for c in second],
                                 [c.sigma_after for c in second], cfg), cfg)
    assert after != fresh  # the margin kept someone: the stored label was read back
