"""``stream worker`` rates rounds and serves the read API and /metrics from the same process."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "stream"))
import pipeline_harness as harness  # noqa: E402

from stream.stack.ports import free_port, wait_for_port  # noqa: E402

pytestmark = pytest.mark.integration
HTTP_TIMEOUT_S = 10


def test_worker_rates_and_serves_the_read_api(local_stack, stack_redis_url: str, fresh_prefix: str, tmp_path: Path) -> None:
    port = free_port()
    env = harness.worker_env(local_stack.bootstrap, stack_redis_url, fresh_prefix, WEB_PORT=str(port))
    log = tmp_path / "worker.log"
    process = subprocess.Popen([sys.executable, "-m", "stream", "worker"], cwd=harness.REPO, env=env,
                               stdout=log.open("wb"), stderr=subprocess.STDOUT)
    try:
        rounds = harness.synthetic_rounds(seed=5, count=8, ladders=("alpha",), pool=14)
        harness.publish(local_stack.bootstrap, f"{fresh_prefix}rounds", rounds)
        harness.wait_drained(stack_redis_url, harness.expected_rounds(rounds), [])
        wait_for_port(port)
        board = json.loads(urllib.request.urlopen(
            f"http://127.0.0.1:{port}/api/ladders/alpha/leaderboard", timeout=HTTP_TIMEOUT_S).read())
        players = {s["player"] for r in rounds for s in r["standings"]}
        assert {row["player"] for row in board["rows"]} == players
        metrics = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=HTTP_TIMEOUT_S).read().decode()
        assert f'ems_rounds_total{{outcome="rated"}} {float(len(rounds))}' in metrics
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
    assert process.returncode == 0, log.read_text()[-3000:]
    # issue 29 item 8: the first lines say which Kafka and Redis the worker uses and where the dashboard is
    head = log.read_text().splitlines()[:20]
    assert f"worker: Kafka {local_stack.bootstrap} (environment), Redis {stack_redis_url} (environment), " \
           f"topics prefix {fresh_prefix!r}" in head, head
    assert f"worker: dashboard and read API on http://127.0.0.1:{port}/" in head, head
