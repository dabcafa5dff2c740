"""``stream publish --wait``: what became of each published round: ``rated`` / ``no_outcome`` / ``duplicate``
(Redis's round records), ``rejected`` (a dead letter naming the very record sent), or still ``pending``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from stream.contracts import RoundResult
from stream.pipeline.deadletters import TopicReader
from stream.pipeline.topics import ROUNDS
from stream.settings import Settings
from stream.store.queries import round_states

RATED, NO_OUTCOME, DUPLICATE, REJECTED, PENDING = "rated", "no_outcome", "duplicate", "rejected", "pending"
OUTCOMES = (RATED, NO_OUTCOME, DUPLICATE, REJECTED, PENDING)
#: Round-record statuses that end a round (stream.store): rated, or recorded without an outcome.
FINAL_STATUSES = {b"rated": RATED, b"no_outcome": NO_OUTCOME}
#: Seconds between two looks at Redis while rounds are pending.
CHECK_INTERVAL_S = 0.2


@dataclass
class Outcome:
    """What became of one published round."""

    ladder: str
    round_id: str
    outcome: str
    reason: str | None = None
    field: str | None = None
    message: str | None = None


class OutcomeWatcher:
    """Opened BEFORE publishing (notes where the dead-letter topic ends and which rounds Redis
    already holds), then :meth:`wait` for the outcomes of what was sent; :meth:`close` after."""

    def __init__(self, settings: Settings, rounds: list[RoundResult]) -> None:
        from stream.connections import redis_client

        self.settings = settings
        self.rounds = rounds
        self.redis = redis_client(settings, asyncio=False)
        self.reader = TopicReader(settings)
        self._positioned = False
        self._position(at_end=True)
        self.before = self._records()

    def _position(self, at_end: bool = False) -> None:
        """Read the dead letters from the end as of now, or from the start of a topic created since."""
        if not self._positioned and self.reader.assign():
            self.reader.seek(self.reader.end_offsets() if at_end else {})
            self._positioned = True

    def _records(self) -> list[tuple[bytes | None, bytes | None]]:
        """(content_hash, status) of each round's record in Redis (None, None: none yet)."""
        return round_states(self.redis, [(round_.ladder, round_.round_id) for round_ in self.rounds])

    def wait(self, sent: list[tuple[int, int] | None], timeout_s: float) -> list[Outcome]:
        """The outcome of each round (``sent``: the partition and offset it was written at, None if
        the send failed), waiting up to ``timeout_s`` for those not decided yet."""
        rounds_topic = self.settings.topic(ROUNDS)
        where = {at: i for i, at in enumerate(sent) if at is not None}
        first_of: dict[tuple[str, str], int] = {}
        for i, round_ in enumerate(self.rounds):
            first_of.setdefault((round_.ladder, round_.round_id), i)
        outcomes: list[Outcome | None] = [None] * len(self.rounds)
        for i, at in enumerate(sent):
            if at is None:
                outcomes[i] = Outcome(self.rounds[i].ladder, self.rounds[i].round_id, PENDING,
                                      message="the send failed")
        deadline = time.monotonic() + timeout_s
        while True:
            self._position()
            for x in self.reader.poll() if self._positioned else []:
                if x.topic == rounds_topic and x.partition is not None and x.offset is not None:
                    mine = where.get((x.partition, x.offset))
                    if mine is not None:
                        round_ = self.rounds[mine]
                        outcomes[mine] = Outcome(round_.ladder, round_.round_id, REJECTED, x.reason, x.field, x.message)
            open_ = [i for i, o in enumerate(outcomes) if o is None]
            if open_:
                now = self._records()
                for i in open_:
                    outcomes[i] = self._recorded(i, now[i], first_of)
            if all(o is not None for o in outcomes) or time.monotonic() > deadline:
                break
            time.sleep(CHECK_INTERVAL_S)
        return [o if o is not None else Outcome(r.ladder, r.round_id, PENDING)
                for o, r in zip(outcomes, self.rounds)]

    def _recorded(self, i: int, record: tuple[bytes | None, bytes | None],
                  first_of: dict[tuple[str, str], int]) -> Outcome | None:
        """The outcome Redis shows for round ``i``, None while it is not final (or a conflict, whose
        dead letter is still to come)."""
        round_ = self.rounds[i]
        content_hash, status = record
        final = FINAL_STATUSES.get(status or b"")
        if final is None or content_hash != round_.content_hash().encode():
            return None
        key = (round_.ladder, round_.round_id)
        earlier = self.before[i][0] == content_hash or first_of[key] != i
        return Outcome(round_.ladder, round_.round_id, DUPLICATE if earlier else final)

    def close(self) -> None:
        self.reader.close()
        self.redis.close()


def counts(outcomes: list[Outcome]) -> dict[str, int]:
    """How many rounds ended each way (every outcome named, zeros included)."""
    return {name: sum(o.outcome == name for o in outcomes) for name in OUTCOMES}
