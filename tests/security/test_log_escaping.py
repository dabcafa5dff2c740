"""Ids cannot forge log lines: every id the pipeline logs goes through ``stream.logsafe.log_safe``,
which escapes newlines, carriage returns, ANSI escapes and every other non-printable character.
Checked on the helper (property test) and on real log records of phase one, phase two's dead
letters, the barrier and the retry loop, with a round id and player ids that hold newlines."""

from __future__ import annotations

import asyncio
import logging

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stream.contracts import RoundResult, Standing
from stream.logsafe import LOG_TEXT_LIMIT, log_ids, log_safe
from stream.pipeline import retry
from stream.pipeline.context import PipelineContext
from stream.pipeline.lease import sweeper_lease
from stream.pipeline.phase_one import complete_registered, handle_one
from stream.pipeline.messages import Incoming
from stream.settings import Settings
from tests.store_calls import register_round

HOSTILE = "r1\n2026-11-23 12:00:00 INFO stream.pipeline: round r9 rated\r\x1b[2K\u2028\u202e\x00"


@given(st.text())
def test_log_safe_output_is_one_printable_token(text: str) -> None:
    out = log_safe(text)
    assert out.isprintable() and "\n" not in out and "\r" not in out
    assert out.startswith('"') and out.endswith('"') and '"' not in out[1:-1].replace('\\"', "")
    if len(text) <= LOG_TEXT_LIMIT and text.isprintable() and "\\" not in text and '"' not in text:
        assert out == f'"{text}"'  # ordinary ids are shown as they are


@given(st.text(max_size=50), st.text(max_size=50))
def test_distinct_ids_stay_distinct(a: str, b: str) -> None:
    if a != b:
        assert log_safe(a) != log_safe(b)


def test_hostile_id_examples() -> None:
    assert log_safe(HOSTILE) == ('"r1\\x0a2026-11-23 12:00:00 INFO stream.pipeline: round r9 rated\\x0d\\x1b[2K'
                                 '\\u2028\\u202e\\x00"')
    assert log_safe("\ud800") == '"\\ud800"'  # a lone surrogate too
    assert log_safe("x" * 1000).endswith('...(+800 chars)"')
    assert log_safe('a"b\\c', quote=False) == 'a\\"b\\\\c'
    assert log_ids(["a\n", "b", "c", "d", "e", "f"]) == '["a\\x0a", "b", "c", "d", "e", ...]'


def assert_no_forged_lines(caplog: pytest.LogCaptureFixture) -> None:
    """No record holds a carriage return or escape; a record's lines after its first are only
    traceback lines (indented, or a 'Traceback' / 'Type: message' header), never a forged record."""
    assert caplog.records
    for record in caplog.records:
        message = record.getMessage()
        assert "\r" not in message and "\x1b" not in message and "\u2028" not in message, message
        assert record.exc_info is None  # tracebacks are formatted with escaped messages (log_traceback)
        for line in message.split("\n")[1:]:
            assert not line.startswith("2026-"), message


def test_pipeline_log_lines_escape_ids(redis_url: str, caplog: pytest.LogCaptureFixture) -> None:
    hostile_round = RoundResult(round_id=HOSTILE, ladder="L", occurred_at=1.7e9,
                                standings=[Standing("a\nb", 1), Standing("c\r\n", 2)])

    async def body() -> None:
        ctx = PipelineContext.from_settings(Settings(redis_url=redis_url, partitions=2, barrier_warn_s=0.0))
        registered = await register_round(ctx.store, 
            "L", HOSTILE, content_hash=hostile_round.content_hash(), occurred_at=1.7e9, received_at=1.7e9,
            field_size=2, body=hostile_round.to_json())
        assert registered.outcome == "new"
        async with sweeper_lease(ctx.store, "L", "sweeper", ctx.settings.phase_one_lease_ms) as leases:
            await complete_registered(ctx, "L", HOSTILE, leases)  # logs "completing phase one of round ..."
        later = RoundResult(round_id="r2\nFAKE", ladder="L", occurred_at=1.7e9 + 1,
                            standings=[Standing("a\nb", 1), Standing("z", 2)])
        # "a\nb" waits on the unapplied first round: the barrier warns (BARRIER_WARN_S=0) and re-drives
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(handle_one(ctx, Incoming(later.to_json().encode())), timeout=0.5)

        async def fails() -> None:
            raise ValueError(f"bad id {HOSTILE}")

        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(retry.retrying(fails, "test call", max_delay_s=0.01), timeout=0.2)
        await ctx.store.close()

    with caplog.at_level(logging.WARNING):
        asyncio.run(body())
    text = "\n".join(record.getMessage() for record in caplog.records)
    assert "completing phase one of round" in text and "still waits" in text and "bad id" in text
    assert log_safe(HOSTILE) in text and '"a\\x0ab"' in text
    assert_no_forged_lines(caplog)


def test_read_api_failure_log_escapes_the_path(caplog: pytest.LogCaptureFixture) -> None:
    """A request that fails (Redis down) is logged with its path: a percent-encoded newline in an
    id must not start a forged line."""
    from aiohttp.test_utils import TestClient, TestServer

    from stream.api.app import create_app
    from stream.connections import redis_client
    from stream.stack.ports import free_port

    async def body() -> int:
        settings = Settings(redis_url=f"redis://127.0.0.1:{free_port()}/0", redis_connect_timeout_s=1.0)
        redis = redis_client(settings)
        client = TestClient(TestServer(create_app(redis, settings)))
        await client.start_server()
        try:
            resp = await client.get("/api/ladders/L/players/p%0A2026-11-23%2012:00:00%20INFO%20forged")
            return resp.status
        finally:
            await client.close()
            await redis.aclose()

    with caplog.at_level(logging.ERROR, logger="stream.api"):
        assert asyncio.run(body()) == 500
    (record,) = [r for r in caplog.records if "read API request failed" in r.getMessage()]
    assert '"/api/ladders/L/players/p\\x0a2026-11-23 12:00:00 INFO forged"' in record.getMessage()
    assert "\n" not in record.getMessage()
