"""A running worker's /metrics (the embedded broker, a test Redis, a ``stream worker`` subprocess):

* every metric the Grafana dashboards (deploy/grafana) and the alert rules (deploy/prometheus)
  name is exported;
* every exported name follows the Prometheus conventions (``ems_`` prefix, base units, ``_total``
  on counters and only there: :func:`convention_problems`);
* consumer lag comes per topic and partition in messages and in seconds, and each ladder's rating
  health is exported (and served by ``/api/ladders/{ladder}/health``).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
import urllib.request
from pathlib import Path

import pytest
import yaml
from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families

import fault_harness as faults_h
import pipeline_harness as harness
from stream.api.health_export import HEALTH_EXPORT_S
from stream.pipeline.metrics import PREFIX
from stream.pipeline.topics import ensure
from stream.settings import Settings
from stream.stack.ports import free_port
from stream.stack.redis_server import RedisServer

pytestmark = pytest.mark.integration

DEPLOY = harness.REPO / "deploy"
METRIC_NAME = re.compile(r"\bems_[a-z0-9_]+")
NON_BASE_UNITS = re.compile(r"_(ms|millis|milliseconds|us|microseconds|ns|minutes|hours|days|kb|mb|gb|kib|mib|"
                            r"kilobytes|megabytes|percent|pct)(_|$)")
"""Unit words that are not base units (Prometheus: seconds, bytes, ratios 0-1, ...)."""


def convention_problems(families: Iterable[Metric]) -> list[str]:
    """What breaks the naming conventions in parsed metric families: a name without the ``ems_``
    prefix, a counter whose samples do not end in ``_total``, ``_total`` on anything but a
    counter, a unit that is not a base unit. Empty: all good."""
    problems: list[str] = []
    for family in families:
        name = family.name
        if not name.startswith(PREFIX + "_"):
            problems.append(f"{name}: no {PREFIX}_ prefix")
        if NON_BASE_UNITS.search(name):
            problems.append(f"{name}: not a base unit (use _seconds, _bytes, or a 0-1 ratio)")
        for sample in family.samples:
            if family.type == "counter" and not sample.name.endswith("_total"):
                problems.append(f"{sample.name}: a counter without _total")
            if family.type != "counter" and sample.name.endswith("_total") and family.type not in ("unknown",):
                problems.append(f"{sample.name}: _total on a {family.type}")
            if isinstance(sample.value, float) and math.isnan(sample.value) and family.type == "counter":
                problems.append(f"{sample.name}: NaN counter")
    return problems


def named_in_deploy() -> set[str]:
    """Every ``ems_*`` name in the dashboards' queries and the alert rules' expressions."""
    names: set[str] = set()
    for path in sorted((DEPLOY / "grafana").glob("*.json")):
        dashboard = json.loads(path.read_text())
        for panel in dashboard["panels"]:
            for target in panel["targets"]:
                names.update(METRIC_NAME.findall(target["expr"]))
        for variable in dashboard["templating"]["list"]:
            names.update(METRIC_NAME.findall(str(variable.get("query", ""))))
    rules = yaml.safe_load((DEPLOY / "prometheus" / "alerts.yml").read_text())
    for group in rules["groups"]:
        for rule in group["rules"]:
            assert rule["alert"] and rule["expr"], rule
            names.update(METRIC_NAME.findall(rule["expr"]))
    return names


def exported(text: str) -> tuple[set[str], list]:
    """The names a scrape exports (families, their samples, ``_total`` / ``_bucket`` ... forms) and the families."""
    families = list(text_string_to_metric_families(text))
    names: set[str] = set()
    for family in families:
        names.add(family.name)
        if family.type == "counter":
            names.add(family.name + "_total")
        if family.type == "histogram":
            names.update(family.name + suffix for suffix in ("_bucket", "_sum", "_count"))
        names.update(sample.name for sample in family.samples)
    return names, families


def scrape(port: int, path: str = "/metrics") -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as response:
        return response.read().decode()


def test_dashboards_and_alerts_name_only_exported_metrics_named_by_the_conventions(
        local_stack, fresh_prefix: str, tmp_path: Path) -> None:
    wanted = named_in_deploy()
    assert {"ems_consumer_lag_seconds", "ems_stalled_partitions", "ems_redis_errors_total",
            "ems_ladder_calibration_error", "ems_rounds_rejected_total"} <= wanted
    server = RedisServer(workdir=tmp_path / "redis").start()
    port = free_port()
    env = faults_h.fault_env(local_stack.bootstrap, server.url, fresh_prefix, tmp_path, WEB_PORT=str(port))
    ensure(Settings.from_env(env))
    worker = harness.Worker(env, tmp_path / "worker.log", web=True).start()
    try:
        rounds = harness.synthetic_rounds(seed=8, count=60, ladders=("alpha", "beta"), pool=20)
        harness.publish(local_stack.bootstrap, f"{fresh_prefix}rounds", rounds + [b"not json"])
        harness.wait_drained(server.url, harness.expected_rounds(rounds), [worker])

        def complete() -> bool:
            names, families = exported(scrape(port))
            samples = {(s.name, s.labels.get("ladder")) for f in families for s in f.samples}
            return (("ems_ladder_pair_accuracy_ratio", "alpha") in samples
                    and any(s.name == "ems_consumer_lag_seconds" for f in families for s in f.samples))

        faults_h.wait_until(complete, "rating health and lag on /metrics", 3 * HEALTH_EXPORT_S + 30, logs=worker.log)
        names, families = exported(scrape(port))
        assert sorted(wanted - names) == [], "named by deploy/ but not exported"
        assert convention_problems(families) == []
        lag = [s for f in families for s in f.samples if s.name == "ems_consumer_lag_seconds"]
        assert {s.labels["topic"] for s in lag} >= {f"{fresh_prefix}rounds", f"{fresh_prefix}player-updates"}
        assert all(s.value >= 0 and s.labels["partition"].isdigit() for s in lag)
        messages = [s for f in families for s in f.samples if s.name == "ems_consumer_lag_messages"]
        assert {(s.labels["topic"], s.labels["partition"]) for s in messages} >= {(s.labels["topic"], s.labels["partition"])
                                                                                  for s in lag}
        rejected = [s for f in families for s in f.samples if s.name == "ems_rounds_rejected_total"]
        assert sum(s.value for s in rejected) >= 1.0, "the bad message is a dead letter"
        health = json.loads(scrape(port, "/api/ladders/alpha/health"))
        assert health["cumulative"]["rounds"] > 0 and health["cumulative"]["pair_all"] is not None
    finally:
        worker.stop()
        server.stop()
