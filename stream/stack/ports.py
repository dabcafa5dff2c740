"""Free loopback ports for the embedded services, waiting for one to listen, stopping a process."""

from __future__ import annotations

import socket
import subprocess
import time


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for_port(port: int, timeout_s: float = 20.0, host: str = "127.0.0.1") -> None:
    """Block until something accepts connections on ``host:port``; raise TimeoutError otherwise."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise TimeoutError(f"nothing listens on {host}:{port} after {timeout_s:.0f} s")


def stop_process(process: subprocess.Popen[bytes], timeout_s: float, *, kill: bool = False) -> None:
    """SIGTERM ``process`` (SIGKILL with ``kill``), SIGKILL it if it has not exited after ``timeout_s``."""
    if kill:
        process.kill()
    else:
        process.terminate()
    try:
        process.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
