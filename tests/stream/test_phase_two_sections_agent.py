"""The phase-two agent's fallback on multi-section messages, in process (no broker): a batch that
gives up is handled section by section; the section that keeps raising is dead-lettered alone
(``internal_error``, the letter holds that section) and its players released, so the later
sections of the same message, whose ``previous_seq`` names its round, are applied."""

from __future__ import annotations

import asyncio
import base64
import json
from pathlib import Path

import pytest

from stream.contracts import RoundResult, Standing, validate
from stream.contracts.round import BAD_PLAYER_UPDATE, INTERNAL_ERROR
from stream.pipeline import faults
from tests.faults.injection import Injector
from stream.pipeline.context import PipelineContext
from stream.pipeline.messages import Incoming, Origin
from stream.pipeline.phase_one import handle_rounds
from stream.pipeline.outbox import Outgoing, TopicNames
from stream.pipeline.updates_batches import handle_one_by_one
from stream.settings import Settings
from tests.store_calls import stored_player


def game(round_id: str, players: str, day: int) -> RoundResult:
    return RoundResult(round_id=round_id, ladder="S", occurred_at=1.7e9 + 86_400.0 * day,
                       standings=[Standing(p, i + 1) for i, p in enumerate(players)])


def test_a_section_that_keeps_raising_is_dead_lettered_alone_and_the_rest_applied(
        redis_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(faults, "_hook", Injector(faults.RAISE_ALWAYS_IN_PHASE_TWO, str(tmp_path / "marker")))
    settings = Settings(redis_url=redis_url, partitions=1, handler_attempts=2, retry_max_delay_s=0.1)
    names = TopicNames(settings.topic("player-updates"), settings.topic("rating-changes"), settings.topic("rounds-dlq"))
    rounds = [game("s1", "ab", 0), game("s2", "ac", 1), game("s3", "ab", 2)]

    async def body() -> None:
        ctx = PipelineContext.from_settings(settings)
        batch = await handle_rounds(ctx, [Incoming(r.to_json().encode()) for r in rounds])  # phase one, one batch
        one, two, three = [result.updates for result in batch.results if result is not None]
        joined = b"\n".join([one[0].value, two[0].value, three[0].value])  # s1 comes first: it is poisoned
        where = Origin(settings.topic("player-updates"), 0, 7)
        events = [Incoming(joined, None, where), Incoming(b"[]\n" + two[0].value, None, Origin(where.topic, 0, 8))]
        rejected: list[Outgoing] = []
        result = await handle_one_by_one(ctx, names, events, rejected, RuntimeError("the batch gave up"))
        letters = [json.loads(m.value) for m in rejected]
        for letter in letters:
            validate("dead-letter", letter)
        got = sorted((letter["reason"], base64.b64decode(letter["original"]), letter["offset"]) for letter in letters)
        assert got == sorted([(INTERNAL_ERROR, one[0].value, 7), (BAD_PLAYER_UPDATE, events[1].value, 8)])
        assert "InjectedFault" in next(x for x in letters if x["reason"] == INTERNAL_ERROR)["message"]
        assert result.applied == 4 and result.gaps == 0  # s2: a, c; s3: a, b (a and b released past s1)
        assert (await ctx.store.round_record("S", "s1"))["status"] == "failed"
        for r in ("s2", "s3"):
            assert (await ctx.store.round_record("S", r))["status"] == "rated"
        a = await stored_player(ctx.store, "S", "a")
        assert a["last_seq"] == b"3" and a["rounds"] == b"2"
        await ctx.store.close()

    asyncio.run(body())
