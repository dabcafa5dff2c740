"""``retrying`` (stream/pipeline/retry.py): every failure is retried, with a bounded backoff,
logged, counted and visible as a stuck gauge; cancellation propagates at once. Plus the
test-only raise points and the phase-two malformed-message check."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path

import pytest
import redis.exceptions
from prometheus_client import REGISTRY, Gauge, generate_latest

from stream.contracts import PlayerUpdate
from stream.pipeline import faults, retry
from tests.faults import injection
from stream.pipeline.updates_batches import malformed_update
from stream.pipeline.retry import FAILING, retrying
from stream.settings import Settings


def failures(handler: str, kind: str) -> float:
    return REGISTRY.get_sample_value("ems_handler_failures_total", {"handler": handler, "kind": kind}) or 0.0


def stuck(handler: str) -> float | None:
    return REGISTRY.get_sample_value("ems_handler_stuck_seconds", {"handler": handler})


class Flaky:
    """Raises the given exceptions in turn, then returns "done"; records the stuck gauge seen."""

    def __init__(self, handler: str, *errors: BaseException) -> None:
        self.handler = handler
        self.errors = list(errors)
        self.calls = 0
        self.stuck_seen: list[float | None] = []

    async def __call__(self) -> str:
        self.calls += 1
        self.stuck_seen.append(stuck(self.handler))
        if self.errors:
            raise self.errors.pop(0)
        return "done"


def test_unexpected_error_is_retried_counted_and_logged_with_traceback(caplog: pytest.LogCaptureFixture) -> None:
    handler = "test_unexpected"
    attempt = Flaky(handler, KeyError("load_players"), RuntimeError("race"))
    with caplog.at_level(logging.WARNING, logger="stream.pipeline.retry"):
        assert asyncio.run(retrying(attempt, "phase one of offset 7", max_delay_s=0.01, handler=handler)) == "done"
    assert attempt.calls == 3
    assert failures(handler, "unexpected") == 2
    assert failures(handler, "transient") == 0
    # healthy before the first failure, stuck while failing, healthy again after success
    assert attempt.stuck_seen[0] == 0.0
    assert attempt.stuck_seen[2] is not None and attempt.stuck_seen[2] > 0.0
    assert stuck(handler) == 0.0
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1, "failures within WARN_EVERY_S are logged once"
    assert "phase one of offset 7" in errors[0].getMessage() and "KeyError" in errors[0].getMessage()
    text = errors[0].getMessage()
    assert "Traceback (most recent call last)" in text and "KeyError: 'load_players'" in text, "the traceback is logged"
    assert any("succeeded after 2 failed attempt(s)" in r.getMessage() for r in caplog.records)


def test_transient_error_is_a_warning_without_traceback(caplog: pytest.LogCaptureFixture) -> None:
    handler = "test_transient"
    attempt = Flaky(handler, redis.exceptions.ConnectionError("down"), ConnectionRefusedError("refused"))
    with caplog.at_level(logging.WARNING, logger="stream.pipeline.retry"):
        asyncio.run(retrying(attempt, "sending fan-out", max_delay_s=0.01, handler=handler))
    assert failures(handler, "transient") == 2 and failures(handler, "unexpected") == 0
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert any("retrying" in r.getMessage() for r in caplog.records)  # test_redis_restart looks for it


def test_backoff_doubles_up_to_the_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    delays: list[float] = []
    real_sleep = asyncio.sleep

    async def sleep(delay: float) -> None:
        delays.append(delay)
        await real_sleep(0)

    monkeypatch.setattr(retry.asyncio, "sleep", sleep)
    attempt = Flaky("test_backoff", *[RuntimeError(str(i)) for i in range(6)])
    asyncio.run(retrying(attempt, "x", max_delay_s=0.3, handler="test_backoff"))
    assert delays == [0.05, 0.1, 0.2, 0.3, 0.3, 0.3]


def test_cancelled_error_propagates_at_once() -> None:
    handler = "test_cancel_raised"
    attempt = Flaky(handler, asyncio.CancelledError())
    with pytest.raises(asyncio.CancelledError):
        asyncio.run(retrying(attempt, "x", max_delay_s=0.01, handler=handler))
    assert attempt.calls == 1
    assert failures(handler, "unexpected") == 0 and failures(handler, "transient") == 0


def test_cancelling_a_stuck_call_stops_it_and_clears_the_gauge() -> None:
    handler = "test_cancel_stuck"

    async def always() -> None:
        raise RuntimeError("bug")

    async def main() -> float:
        task = asyncio.create_task(retrying(always, "x", max_delay_s=0.02, handler=handler))
        await asyncio.sleep(0.3)
        seen = FAILING.oldest_seconds(handler)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return seen

    seen = asyncio.run(main())
    assert 0.2 < seen < 1.0, seen
    assert failures(handler, "unexpected") >= 5
    assert stuck(handler) == 0.0


def test_gauge_shows_the_oldest_failing_call() -> None:
    calls = retry.CallAges(Gauge("test_call_ages_seconds", "test", ["handler"], registry=None))
    calls.start("h", 1, at=100.0)
    calls.start("h", 2, at=105.0)
    calls.start("h", 1, at=107.0)  # a call's first failure stands
    assert calls.oldest_seconds("h", now=110.0) == 10.0
    calls.stop("h", 1)
    assert calls.oldest_seconds("h", now=110.0) == 5.0
    calls.stop("h", 2)
    assert calls.oldest_seconds("h", now=110.0) == 0.0


def test_agents_handlers_are_exported_from_the_start() -> None:
    text = generate_latest(REGISTRY).decode()
    for handler in retry.HANDLERS:
        assert f'ems_handler_stuck_seconds{{handler="{handler}"}} 0.0' in text
        for kind in retry.KINDS:
            assert f'ems_handler_failures_total{{handler="{handler}",kind="{kind}"}}' in text


def test_raise_point_raises_a_bounded_number_of_times_once_across_processes(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    marker = tmp_path / "marker"

    def at(point: str) -> bool:
        return asyncio.run(faults.at(point))

    monkeypatch.setattr(faults, "_hook", None)
    assert not at(faults.AFTER_PRIORS_BEFORE_FANOUT_STORED) and not marker.exists()  # no hook: nothing
    monkeypatch.setattr(faults, "_hook", injection.Injector(faults.RAISE_IN_PHASE_ONE, str(marker)))
    at(faults.AFTER_REGISTER_BEFORE_FANOUT)  # not where it is placed: nothing
    for i in range(injection.RAISE_TIMES):
        with pytest.raises(faults.InjectedFault, match=f"{i + 1}/{injection.RAISE_TIMES}"):
            at(faults.AFTER_PRIORS_BEFORE_FANOUT_STORED)
    at(faults.AFTER_PRIORS_BEFORE_FANOUT_STORED)  # done: no more raises
    assert marker.read_text().count("raise ") == injection.RAISE_TIMES
    assert not isinstance(faults.InjectedFault("x"), retry.TRANSIENT_ERRORS)
    # another process (fresh counters) sharing the marker never raises
    monkeypatch.setattr(faults, "_hook", injection.Injector(faults.RAISE_IN_PHASE_ONE, str(marker)))
    at(faults.AFTER_PRIORS_BEFORE_FANOUT_STORED)
    monkeypatch.setattr(faults, "_hook", injection.Injector(faults.RAISE_IN_PHASE_TWO, str(marker)))
    at(faults.RAISE_IN_PHASE_TWO)
    assert marker.read_text().count("raise ") == injection.RAISE_TIMES


def test_malformed_update_names_what_is_wrong() -> None:
    good = PlayerUpdate(ladder="L", round_id="r1", seq=3, occurred_at=1.7e9, weight=1.0, field_size=2,
                        players=["a", "b"], ranks=[1, 2], performances=[1500.0, 1400.0]).to_json().encode()
    assert malformed_update(good) is None
    assert "not a PlayerUpdate" in (malformed_update(b"\xff\xfe") or "")
    assert malformed_update(b"{not json") is not None
    assert malformed_update(b"[]") is not None
    broken = json.loads(good)
    broken["entries"][1].pop("performance")
    assert malformed_update(json.dumps(broken).encode()) is not None
    broken = json.loads(good)
    broken["seq"] = "3"
    assert malformed_update(json.dumps(broken).encode()) is not None


def test_settle_resends_after_any_acknowledgement_error() -> None:
    """A fan-out whose acknowledgement fails, transiently or not, is sent again (never acked past)."""
    from aiokafka.errors import KafkaConnectionError, MessageSizeTooLargeError

    from stream.pipeline.outbox import settle
    from stream.pipeline.outbox import Outgoing

    async def body(error: BaseException | None) -> list[tuple[list[Outgoing], str]]:
        resent: list[tuple[list[Outgoing], str]] = []

        async def send(messages: list[Outgoing], what: str) -> None:
            resent.append((messages, what))

        loop = asyncio.get_running_loop()
        ack: asyncio.Future[object] = loop.create_future()
        if error is None:
            ack.set_result(None)
        else:
            ack.set_exception(error)
        sent = [Outgoing("t", b"k", b"v", 0)]
        await settle([ack], sent, "fan-out", send)
        return resent

    assert asyncio.run(body(None)) == []
    for error in (KafkaConnectionError("down"), MessageSizeTooLargeError("too large"), RuntimeError("bug")):
        assert asyncio.run(body(error)) == [([Outgoing("t", b"k", b"v", 0)], "fan-out")]


def test_unexpected_errors_give_up_after_the_attempts_transient_ones_never() -> None:
    handler = "test_give_up"
    errors: list[BaseException] = [redis.exceptions.ConnectionError("down")] * 4 + [
        redis.exceptions.BusyLoadingError("Redis is loading the dataset in memory")] * 3 + [OverflowError("int too large")] * 3
    attempt = Flaky(handler, *errors)
    with pytest.raises(retry.GaveUp) as info:
        asyncio.run(retrying(attempt, "phase one of offset 9", max_delay_s=0.001, handler=handler, attempts=3))
    assert attempt.calls == 10, "transient failures (Redis down, or reloading its AOF) do not count towards the attempts"
    assert isinstance(info.value.error, OverflowError) and info.value.attempts == 3
    assert failures(handler, "unexpected") == 3 and failures(handler, "transient") == 7
    assert stuck(handler) == 0.0, "a call that gave up is no longer failing"
    # fewer unexpected failures than attempts: it still succeeds
    assert asyncio.run(retrying(Flaky(handler, RuntimeError("a"), RuntimeError("b")), "x", max_delay_s=0.001,
                                handler=handler, attempts=3)) == "done"
