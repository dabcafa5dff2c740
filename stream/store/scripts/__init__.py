"""Lua scripts of the store, one per atomic update (KEYS and ARGV documented at each file's top)."""

from __future__ import annotations

from importlib import resources

SCRIPT_NAMES = ("register_round", "save_fanout", "apply_player_update", "record_round_results", "load_players",
                "mark_queued", "claim_due_rounds", "confirm_emitted", "fail_round", "release_queued",
                "push_history", "hset_many", "trim_history", "verify_updates", "hold_ladder", "finish_correction", "read_rounds", "rewrite_rounds",
                "queue_rounds", "mm_apply", "mm_commit", "mm_release", "acquire_lease", "release_lease")


INCLUDE = "--@include "
"""A line ``--@include NAME`` of a script stands for script NAME's source (queue_rounds.lua runs
mark_queued.lua and save_fanout.lua as functions; mm_apply.lua runs mm_join.lua and mm_cancel.lua,
snippets that are no scripts of their own, as functions; mm_cancel.lua and mm_commit.lua define
their shared ``unpool`` from mm_unpool.lua, another snippet)."""


def source(name: str) -> str:
    """The Lua source of script ``name`` (one of :data:`SCRIPT_NAMES`), its includes expanded."""
    text = resources.files(__package__).joinpath(f"{name}.lua").read_text(encoding="utf-8")
    return "\n".join(source(line[len(INCLUDE):].strip()) if line.startswith(INCLUDE) else line
                     for line in text.split("\n"))
