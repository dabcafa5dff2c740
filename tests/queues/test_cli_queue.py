"""``stream queue``: join and cancel publish tickets keyed by queue (a bad party refused before
publishing), status reads the pool in Redis, watch follows the queue's matches and ticket events."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

import mm_harness as mm
from stream.cli.main import app
from stream.contracts.tickets import Match, TicketEvent
from stream.pipeline.topics import ensure
from stream.settings import Settings
from test_api_queues import seed

pytestmark = pytest.mark.integration


def test_join_cancel_status_watch(local_stack, stack_redis_url: str, fresh_prefix: str) -> None:
    env = {"KAFKA_BOOTSTRAP": local_stack.bootstrap, "REDIS_URL": stack_redis_url, "TOPIC_PREFIX": fresh_prefix,
           "QUEUES": mm.duel_queues(), "PARTITIONS": "2"}
    ensure(Settings.from_env(env))
    runner = CliRunner()
    joined = runner.invoke(app, ["queue", "join", "duel", "ann", "--ticket", "t-ann"], env=env)
    assert joined.exit_code == 0, joined.output
    assert joined.output.strip() == "t-ann"
    too_big = runner.invoke(app, ["queue", "join", "duel", "ann", "bob"], env=env)
    assert too_big.exit_code == 1 and "bad_party" in too_big.output
    unknown = runner.invoke(app, ["queue", "join", "nope", "ann"], env=env)
    assert unknown.exit_code == 1 and "unknown_queue" in unknown.output
    assert runner.invoke(app, ["queue", "cancel", "duel", "t-ann"], env=env).exit_code == 0
    records = mm.faults_h.read_topic(local_stack.bootstrap, f"{fresh_prefix}match-tickets")
    assert [(k, json.loads(v)) for k, v in records] == [
        (b"duel", {"ticket_id": "t-ann", "queue": "duel", "players": ["ann"]}),
        (b"duel", {"ticket_id": "t-ann", "queue": "duel", "cancel": True})]

    seed(stack_redis_url)
    status = runner.invoke(app, ["queue", "status", "duel", "--json"], env=env)
    assert status.exit_code == 0, status.output
    assert json.loads(status.output)["tickets_waiting"] == 1
    one = runner.invoke(app, ["queue", "status", "duel", "a"], env=env)
    assert one.exit_code == 0 and "matched" in one.output and "m-1" in one.output
    assert runner.invoke(app, ["queue", "status", "duel", "zz"], env=env).exit_code != 0

    match = Match("m-9", "duel", "duel", [["ann"], ["bob"]], ["t1", "t2"], 0.9, [0.5, 0.5], {"t1": 1.0, "t2": 1.0}, 5.0)
    event = TicketEvent("t1", "duel", "matched", 1.0, 5.0, "m-9", None, ["ann"])
    mm.publish(local_stack.bootstrap, f"{fresh_prefix}matches", [match.to_json().encode()])
    mm.publish(local_stack.bootstrap, f"{fresh_prefix}ticket-events", [event.to_json().encode()])
    mm.publish(local_stack.bootstrap, f"{fresh_prefix}matches", [match.to_json().encode()], key="other")
    watched = runner.invoke(app, ["queue", "watch", "duel", "--from-beginning", "--max-events", "2", "--timeout",
                                  "60", "--json"], env=env)
    assert watched.exit_code == 0, watched.output
    got = sorted((line["topic"], line["event"].get("match_id")) for line in map(json.loads, watched.output.split("\n")[:2]))
    assert got == [("matches", "m-9"), ("ticket-events", "m-9")]
