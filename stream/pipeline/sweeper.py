"""The sweeper: re-drive rounds that stay incomplete, whatever was lost on the way.

Every round to rate enters a ledger at registration (``ems:incomplete:{L}``, scored by when the
sweeper may touch it) and leaves it only once every participant's RatingChange was acknowledged
(``confirm_emitted``: ``rated`` is not enough, a batch can lose its events, e.g. a rebalance of
faust-streaming, tests/faults/test_takeover.py). :func:`sweep` runs every SWEEP_INTERVAL_S and
claims rounds past due atomically; the period is SWEEP_TIMEOUT_S, then doubles per re-drive (up
to 2^SWEEP_BACKOFF_DOUBLINGS) so a saturated service is not given more work:

* ``pending`` or ``rated`` with unconfirmed events: the stored fan-out is re-sent (not while its
  pending count still falls: a slow big round is not doubled);
* ``registered``: phase one is completed from the stored body (``phase_one.complete_registered``,
  the ladder's earlier registered rounds first) under the ladder's lease as an owner of its own;
  a ladder another attempt holds is left to it.

Ladders are swept concurrently, each within SWEEP_TIMEOUT_S and on its own (a failure is logged
and counted). Without the sweeper a lost update of a ladder's last round stayed lost
(faust-streaming 0.15.3, issue #596).
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass

from stream.pipeline import metrics, retry
from stream.logsafe import log_ids
from stream.pipeline.context import PipelineContext
from stream.pipeline.lease import sweeper_lease
from stream.pipeline.messages import FanOutMessage
from stream.pipeline.phase_one import complete_registered, stored_fanout
from stream.store.store import STATUS_PENDING, STATUS_RATED, STATUS_REGISTERED, DueRound
from stream.store import retention

log = logging.getLogger(__name__)

ROUNDS_PER_LADDER = 100
"""Most rounds of one ladder claimed per sweep (the rest wait for the next sweep)."""


@dataclass(frozen=True)
class SweepReport:
    """What one sweep re-drove: rounds whose fan-out was re-sent, rounds whose phase one was completed."""

    resent: list[tuple[str, str]]
    completed: list[tuple[str, str]]


async def sweep(ctx: PipelineContext) -> SweepReport:
    """Claim and re-drive every round past its due time (see the module docstring)."""
    await ctx.refresh_seasons()  # the seasons started since (SEASON_REFRESH_S)
    now = time.time()
    due = await ctx.store.claim_due_rounds(now=now, period=ctx.settings.sweep_timeout_s,
                                           max_doublings=max(0, ctx.settings.sweep_backoff_doublings), limit=ROUNDS_PER_LADDER)
    ladders: dict[str, list[DueRound]] = {}
    for round_ in due:  # ordered by (ladder, seq): a ladder's earlier registered rounds complete first
        ladders.setdefault(round_.ladder, []).append(round_)
    reports = await asyncio.gather(*(_sweep_ladder_within(ctx, ladder, rounds) for ladder, rounds in ladders.items()))
    resent = [r for report in reports for r in report.resent]
    completed = [r for report in reports for r in report.completed]
    await retention.trim(ctx.store, retention.policies(ctx.settings), now=now)  # RETAIN_*: old results, fan-outs
    return SweepReport(resent, completed)


async def _sweep_ladder_within(ctx: PipelineContext, ladder: str, rounds: list[DueRound]) -> SweepReport:
    """:func:`sweep_ladder` within SWEEP_TIMEOUT_S, then cancelled but not waited for (``asyncio.wait_for``
    would wait for a cancelled Redis call); a failure or timeout is logged and counted, never raised (the
    other ladders go on; its rounds wait for their next due time)."""
    timeout_s = ctx.settings.sweep_timeout_s
    task = asyncio.ensure_future(sweep_ladder(ctx, ladder, rounds))
    task.add_done_callback(lambda t: t.cancelled() or t.exception())  # retrieved: no "never retrieved" log
    try:
        done, _ = await asyncio.wait({task}, timeout=timeout_s)
        if not done:
            task.cancel()
            raise TimeoutError(f"not done within {timeout_s:g}s")
        return task.result()
    except asyncio.CancelledError:
        task.cancel()
        raise
    except Exception as exc:  # noqa: BLE001 - one ladder's failure must not drop the rest of the sweep
        kind = retry.failure_kind(exc)
        metrics.HANDLER_FAILURES.labels(retry.SWEEP, kind).inc()
        log.log(logging.WARNING if kind == retry.TRANSIENT else logging.ERROR,
                "sweeping ladder %r failed (%s: %s); its rounds are re-driven at their next due time", ladder,
                type(exc).__name__, exc)
        return SweepReport([], [])


async def sweep_ladder(ctx: PipelineContext, ladder: str, rounds: list[DueRound]) -> SweepReport:
    """Re-drive one ladder's claimed rounds: complete the registered ones (:func:`_complete_leased`),
    then re-send the others' fan-outs."""
    resent: list[tuple[str, str]] = []
    completed = await _complete_leased(ctx, ladder, [r.round_id for r in rounds if r.status == STATUS_REGISTERED])
    messages: list[FanOutMessage] = []
    for round_ in rounds:
        if round_.status == STATUS_PENDING and round_.progressing:
            continue  # being applied: its messages are not lost, only behind others
        elif round_.status in (STATUS_PENDING, STATUS_RATED):  # rated: some events never confirmed
            messages += await stored_fanout(ctx, round_.ladder, round_.round_id)
            resent.append((round_.ladder, round_.round_id))
    await ctx.outbox.resend(messages)
    if resent or completed:
        log.warning("sweeper re-drove %d round(s): fan-out re-sent for %s, phase one completed for %s",
                    len(resent) + len(completed), log_ids(f"{ladder}/{r}" for ladder, r in resent),
                    log_ids(f"{ladder}/{r}" for ladder, r in completed))
    return SweepReport(resent, completed)


async def _complete_leased(ctx: PipelineContext, ladder: str, round_ids: list[str]) -> list[tuple[str, str]]:
    """Complete the ladder's claimed registered rounds in seq order under the sweeper's own lease
    of the ladder (``phase_one.complete_registered``); none while another attempt holds it."""
    if not round_ids:
        return []
    done: list[tuple[str, str]] = []
    async with sweeper_lease(ctx.store, ladder, f"{ctx.lease_owner}:sweeper", ctx.settings.phase_one_lease_ms) as lease:
        for round_id in round_ids:
            await lease.renew_if_due(ctx.store)  # a long sweep keeps the lease; one taken meanwhile ends it
            if not lease.token(ladder):
                log.info("sweeper: ladder %r is rated by another attempt (its lease): %d round(s) left to it",
                         ladder, len(round_ids) - len(done))
                break
            await complete_registered(ctx, ladder, round_id, lease)  # stored with the lease's token
            done.append((ladder, round_id))
    return done
