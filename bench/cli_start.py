"""How long a ``stream`` command takes to start (issue 29 item 13): wall time of a fresh process,
next to ``python -c pass`` (the interpreter's own start, the floor) measured in the same run.

Each case runs ``--runs`` times, interleaved (pass, help, ..., pass, help, ...) so load on the
machine hits every case alike; the table gives the median and the minimum in seconds. Cases:
``python -c pass``; ``stream --help`` (the command list: no command module imported,
stream/cli/main.py's COMMANDS); ``stream leaderboard --help`` (one command built: typer's
parameter adapters import pydantic); ``stream leaderboard x`` against a closed port (the whole
command: settings, the Redis check, one line, exit 4); ``stream replay --help`` (the engine's imports).

Usage: python bench/cli_start.py [--runs 7] [--repo PATH]. Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def cases() -> dict[str, list[str]]:
    stream = [sys.executable, "-m", "stream"]
    return {"python -c pass": [sys.executable, "-c", "pass"], "stream --help": [*stream, "--help"],
            "stream leaderboard --help": [*stream, "leaderboard", "--help"],
            "stream leaderboard x (Redis unreachable)": [*stream, "leaderboard", "x"],
            "stream replay --help": [*stream, "replay", "--help"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--repo", type=Path, default=REPO, help="the checkout whose `stream` runs (A/B: another one)")
    args = parser.parse_args()
    env = {**os.environ, "PYTHONPATH": str(args.repo), "REDIS_URL": f"redis://127.0.0.1:{closed_port()}/0",
           "KAFKA_BOOTSTRAP": f"127.0.0.1:{closed_port()}"}
    times: dict[str, list[float]] = {name: [] for name in cases()}
    for _ in range(args.runs):
        for name, command in cases().items():
            start = time.perf_counter()
            subprocess.run(command, env=env, cwd=args.repo, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            times[name].append(time.perf_counter() - start)
    floor = statistics.median(times["python -c pass"])
    print(f"| command ({args.runs} runs, interleaved) | median s | min s | median - python -c pass |")
    print("|---|---:|---:|---:|")
    for name, values in times.items():
        median = statistics.median(values)
        print(f"| `{name}` | {median:.2f} | {min(values):.2f} | {median - floor:+.2f} |")


if __name__ == "__main__":
    main()
