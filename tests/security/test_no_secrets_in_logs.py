"""No secret ever reaches logs, error messages or tracebacks: Settings' repr and redacted form,
the CLI's error for an unreachable Redis, and the output of a real ``stream api`` process whose
Redis is down (its request failures are logged with tracebacks)."""

from __future__ import annotations

import os
import subprocess
import sys
import urllib.error
import urllib.request

from stream.connections import redis_error_message
from stream.settings import Settings
from stream.stack.ports import free_port, wait_for_port

REDIS_SECRET = "R3dis-Secret-0xC0FFEE"
KAFKA_SECRET = "K4fka-Secret-0xBEEF"
#: Seconds a subprocess may take to start or to answer.
PROCESS_TIMEOUT_S = 60.0


def secret_env(redis_port: int) -> dict[str, str]:
    """Environment with secrets in REDIS_URL, REDIS_PASSWORD and KAFKA_SASL_PASSWORD; Redis is down."""
    return {**os.environ, "REDIS_URL": f"redis://ems:{REDIS_SECRET}@127.0.0.1:{redis_port}/0?password={REDIS_SECRET}",
            "KAFKA_SASL_PASSWORD": KAFKA_SECRET, "STACK_STATE_FILE": "/nonexistent", "LOG_LEVEL": "debug"}


def assert_no_secret(text: str) -> None:
    assert REDIS_SECRET not in text and KAFKA_SECRET not in text


def test_settings_repr_and_redacted_hide_every_secret() -> None:
    settings = Settings(redis_url=f"rediss://u:{REDIS_SECRET}@h:6380/0?password={REDIS_SECRET}",
                        redis_password=REDIS_SECRET, kafka_sasl_password=KAFKA_SECRET)
    for text in (repr(settings), str(settings), str(settings.redacted()), f"{settings!r}"):
        assert_no_secret(text)
    assert "h:6380" in repr(settings)  # still useful: where it connects


def test_error_messages_mask_a_password_the_exception_repeats() -> None:
    settings = Settings(redis_url=f"redis://u:{REDIS_SECRET}@h:1/0", redis_password=KAFKA_SECRET)
    message = redis_error_message(settings, ConnectionError(f"AUTH u {REDIS_SECRET} {KAFKA_SECRET} failed"))
    assert_no_secret(message)
    assert "h:1" in message


def test_cli_error_for_an_unreachable_redis_has_no_password() -> None:
    done = subprocess.run([sys.executable, "-m", "stream", "player", "blitz", "p01"], env=secret_env(free_port()),
                          capture_output=True, text=True, timeout=PROCESS_TIMEOUT_S)
    assert done.returncode == 4
    assert "cannot use Redis at redis://***@127.0.0.1" in done.stderr
    assert_no_secret(done.stdout + done.stderr)


def test_api_process_logs_redis_failures_without_the_password() -> None:
    port = free_port()
    process = subprocess.Popen([sys.executable, "-m", "stream", "api", "--host", "127.0.0.1", "--port", str(port)],
                               env=secret_env(free_port()), stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        wait_for_port(port, timeout_s=PROCESS_TIMEOUT_S)
        statuses = []
        for path in ("/health", "/api/ladders", "/api/ladders/blitz/leaderboard"):
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=PROCESS_TIMEOUT_S) as response:
                    statuses.append(response.status)
            except urllib.error.HTTPError as exc:
                statuses.append(exc.code)
                assert_no_secret(exc.read().decode())
        assert statuses == [503, 500, 500]
    finally:
        process.terminate()
        output, _ = process.communicate(timeout=PROCESS_TIMEOUT_S)
    text = output.decode(errors="replace")
    assert "read API request failed" in text  # the failures were logged, tracebacks included
    # and said at start-up, in one line (issue 29 item 8: it serves anyway, /health answering 503)
    assert "warning: cannot use Redis at redis://***@127.0.0.1" in text and "serving anyway" in text
    assert_no_secret(text)
