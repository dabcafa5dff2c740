"""Redis-side figures the benchmarks print: server CPU and time per command."""

from __future__ import annotations

import redis


def redis_cpu_s(client: redis.Redis) -> float:
    """User + system CPU seconds redis-server has used so far."""
    info = client.info("cpu")
    return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])


def redis_commands(client: redis.Redis) -> dict[str, tuple[int, int]]:
    """INFO commandstats as name -> (calls, µs); commands run by Lua scripts are counted too."""
    return {name.removeprefix("cmdstat_"): (int(stat["calls"]), int(stat["usec"]))
            for name, stat in client.info("commandstats").items()}


def command_rows(label: str, commands: dict[str, tuple[int, int]], participations: int, top: int) -> list[str]:
    """Markdown rows ``| label | command | calls/part. | µs/part. |`` of the ``top`` costliest commands."""
    ranked = sorted(commands.items(), key=lambda item: -item[1][1])[:top]
    return [f"| {label} | {name} | {calls / participations:.2f} | {usec / participations:.1f} |"
            for name, (calls, usec) in ranked]
