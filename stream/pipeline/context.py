"""What the pipeline's handlers share: settings, the store, engine parameters, display configs."""

from __future__ import annotations

from dataclasses import dataclass

from stream.connections import redis_client
from stream.contracts import Limits
from stream.engine import Params, preset
from stream.engine.display import DisplayConfig, config_for, parse_display_configs
from stream.pipeline.messages import Resend
from stream.settings import Settings
from stream.store.store import Store


@dataclass
class PipelineContext:
    """Dependencies of phase one and phase two (built once per worker)."""

    settings: Settings
    store: Store
    params: Params
    limits: Limits
    display_configs: dict[str, DisplayConfig]
    resend: Resend | None = None
    """Sends re-driven fan-out messages (the worker sets it; None: the caller sends them)."""

    @classmethod
    def from_settings(cls, settings: Settings, store: Store | None = None) -> "PipelineContext":
        return cls(
            settings=settings,
            store=store or Store(redis_client(settings), history_length=settings.history_length),
            params=preset(settings.engine_preset),
            limits=Limits.from_settings(settings),
            display_configs=parse_display_configs(settings.display_config),
        )

    @property
    def partitions(self) -> int:
        return self.settings.partitions

    def display(self, ladder: str) -> DisplayConfig:
        return config_for(ladder, self.display_configs)
