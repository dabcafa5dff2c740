"""Elo-MMR rating engine (Ebtekar & Liu, WWW 2021), no I/O; API: docs/contracts.md "Engine"."""

from .diffusion import elapsed_days
from .kernels import warm_up
from .params import DEFAULT_PRESET, PRESETS, Params, preset
from .performance import phase_one
from .ranking import OutcomeFree
from .round import RoundUpdate, phase_two, rate_round
from .rounds import RoundSpec, RoundsUpdate, rate_flat, rate_rounds
from .state import PlayerBatch, PlayerState

__all__ = [
    "DEFAULT_PRESET",
    "PRESETS",
    "OutcomeFree",
    "Params",
    "PlayerBatch",
    "PlayerState",
    "RoundSpec",
    "RoundUpdate",
    "RoundsUpdate",
    "elapsed_days",
    "phase_one",
    "phase_two",
    "preset",
    "rate_round",
    "rate_flat",
    "rate_rounds",
    "warm_up",
]
