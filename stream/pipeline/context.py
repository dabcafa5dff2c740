"""What the pipeline's handlers share: settings, the store, the outbox, each ladder's model and
display config (fixed at construction), and their state across batches (caches, failures, seasons)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from stream.connections import redis_client
from stream.contracts import Limits
from stream.engine.display import DisplayConfig
from stream.engine.ladders import LadderConfig, Ladders, LaddersError, parse_ladders
from stream.contracts.ordering import LadderOrder
from stream.matchmaking.queues import QueueConfig, parse_queues
from stream.pipeline.health import RatingHealth
from stream.pipeline.outbox import ListOutbox, Outbox
from stream.pipeline.posteriors import PosteriorCache
from stream.pipeline.season_schedules import SeasonRecord
from stream.settings import Settings, SettingsError
from stream.store.store import Store


FIXED = frozenset({"settings", "store", "limits", "outbox", "ladder_order", "queues", "lease_owner"})
"""The context's attributes set once, at construction (the others change as the worker runs)."""


@dataclass
class PipelineContext:
    """Dependencies of phase one and phase two (built once per worker): those :data:`FIXED` set at
    construction only (assigning one again raises AttributeError), the others their state."""

    settings: Settings
    store: Store
    ladders: Ladders
    """Each ladder's model, parameters and display (``LADDERS``, with its shorthands)."""
    limits: Limits
    outbox: Outbox
    """What the handlers send outside an input's own handling (``outbox.py``)."""
    ladder_order: LadderOrder = field(default_factory=LadderOrder)
    """Which ladders are rated in occurred_at order (``LADDER_ORDER``)."""
    failures: dict[tuple[str, str], int] = field(default_factory=dict)
    """Unexpected failures so far of completing each stored round, in this worker."""
    model_conflicts: set[tuple[str, str]] = field(default_factory=set)
    """(ladder, stored model) pairs whose model-change rejection was logged (logged once each)."""
    posteriors: PosteriorCache = field(default_factory=lambda: PosteriorCache(0))
    """Phase one's posteriors kept across batches (``posteriors.py``; off when built directly)."""
    queues: dict[str, QueueConfig] = field(default_factory=dict)
    """The matchmaking queues (``QUEUES``, checked by :func:`load_queues`)."""
    health: RatingHealth = field(default_factory=lambda: RatingHealth(0))
    """Rating health per ladder (``health.py``; HEALTH_WINDOW in :meth:`from_settings`, off when built directly)."""
    lease_owner: str = field(default_factory=lambda: uuid.uuid4().hex)
    """This worker's owner id for its ladder leases (``lease.py``), unique per worker (a zombie included)."""
    seasons: SeasonRecord | None = None
    """The seasons started since (``season_schedules``; None: built from :attr:`ladders`)."""

    def __post_init__(self) -> None:
        if self.seasons is None:
            self.seasons = SeasonRecord(self.ladders, self.settings.season_refresh_s)

    def __setattr__(self, name: str, value: object) -> None:
        if name in FIXED and name in self.__dict__:
            raise AttributeError(f"PipelineContext.{name} is fixed at construction")
        super().__setattr__(name, value)

    async def refresh_seasons(self, *, force: bool = False) -> None:
        """Take up the seasons started since, read at most every SEASON_REFRESH_S (``force``: now)."""
        assert self.seasons is not None
        ladders = await self.seasons.read(self.store.client, force=force)
        if ladders is not None:
            self.ladders = ladders

    def schedule_version(self, ladder: str) -> int:
        """The ladder's schedule version this worker rates by (register_round.lua checks it)."""
        assert self.seasons is not None
        return self.seasons.version(ladder)

    @classmethod
    def from_settings(cls, settings: Settings, store: Store | None = None,
                      outbox: Outbox | None = None) -> "PipelineContext":
        """The context of ``settings``; ``outbox``: the worker's, else a :class:`ListOutbox`."""
        return cls(
            settings=settings,
            store=store or Store(redis_client(settings), history_length=settings.history_length),
            ladders=load_ladders(settings),
            limits=Limits.from_settings(settings),
            outbox=outbox or ListOutbox(settings.partitions),
            ladder_order=LadderOrder.parse(settings.ladder_order),
            posteriors=PosteriorCache(settings.phase_one_cache_players),
            queues=load_queues(settings, load_ladders(settings)),
            health=RatingHealth(settings.health_window),
        )

    def failed_attempt(self, key: tuple[str, str]) -> bool:
        """Count one more unexpected failure of ``key``; True once HANDLER_ATTEMPTS are reached."""
        self.failures[key] = self.failures.get(key, 0) + 1
        if self.failures[key] >= max(1, self.settings.handler_attempts):
            del self.failures[key]
            return True
        return False

    def succeeded(self, key: tuple[str, str]) -> None:
        self.failures.pop(key, None)

    def ladder(self, ladder: str) -> LadderConfig:
        """The ladder's resolved configuration (model, parameters, display)."""
        return self.ladders.of(ladder)

    def display(self, ladder: str) -> DisplayConfig:
        return self.ladders.of(ladder).display


def load_ladders(settings: Settings) -> Ladders:
    """``LADDERS`` (with ``ENGINE_PRESET``, ``DISPLAY_CONFIG``) resolved and ``LADDER_ORDER`` checked
    (``LaddersError`` naming the bad setting and key)."""
    try:
        LadderOrder.parse(settings.ladder_order)
    except ValueError as exc:
        raise LaddersError(str(exc)) from None
    return parse_ladders(settings.ladders, engine_preset=settings.engine_preset, display_config=settings.display_config)


def load_queues(settings: Settings, ladders: Ladders) -> dict[str, QueueConfig]:
    """``QUEUES`` parsed and checked against the ladders (teams of several need a model that rates
    teams); :class:`SettingsError` names the bad key."""
    from stream.batch.models import support

    try:
        queues = parse_queues(settings.queues)
    except ValueError as exc:
        raise SettingsError(str(exc)) from None
    for name, queue in queues.items():
        cfg = ladders.of(queue.ladder)
        if queue.teams > 1 and queue.team_size > 1 and not support(cfg.model).teams:
            raise SettingsError(f"QUEUES[{name!r}].team_size: teams of {queue.team_size} need a ladder whose model "
                                f"rates teams; ladder {queue.ladder!r} is rated by {cfg.model!r}")
    return queues
