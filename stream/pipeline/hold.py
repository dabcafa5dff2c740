"""Phase one's side of a correction's hold: a round of a ladder being re-rated waits.

A correction (``corrections.py``) sets the ladder hash's ``hold`` field; register_round.lua then
registers nothing and answers ``held``. The round is registered once the hold is released, so it
is rated on the corrected state, never on the state the re-rate is replacing.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from stream.logsafe import log_safe
from stream.settings import Settings
from stream.store.store import OUTCOME_HELD, Registration

log = logging.getLogger(__name__)


async def register_unless_held(settings: Settings, ladder: str,
                               register: Callable[[], Awaitable[Registration]]) -> Registration:
    """``register()`` again every HOLD_POLL_S for as long as a correction holds ``ladder``."""
    registration = await register()
    if registration.outcome == OUTCOME_HELD:
        log.info("ladder %s is held by correction %s: its next round waits", log_safe(ladder),
                 log_safe(registration.status))
    while registration.outcome == OUTCOME_HELD:
        await asyncio.sleep(settings.hold_poll_s)
        registration = await register()
    return registration
