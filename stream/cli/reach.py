"""Before a command talks to Kafka or Redis: a ``note:`` naming each server not chosen in the environment
(:func:`stream.settings.connection_origin`), exit 2 for a write to a built-in default address (it may be
a system Redis nobody meant to fill), and exit 4 with one ``error:`` line and a hint when one does not
answer within :data:`REACH_TIMEOUT_S` (instead of a client retrying for a minute).
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from typing import NoReturn

import typer

from stream.settings import Settings, connection_origin

#: Exit codes: a configuration the command cannot use (as every bad setting), a server unreachable.
EXIT_CONFIG = 2
EXIT_UNREACHABLE = 4
#: Seconds a reachability check waits for one server (connect, and for Redis the PING's reply).
REACH_TIMEOUT_S = 3.0
#: What to do about an unreachable server, by where its address came from.
HINTS = {"environment": "is it running, and is {name} right?",
         "default": "{name} is unset and no `stream stack` runs: start one (`stream stack`) or set {name}"}


def _fail(message: str, code: int) -> NoReturn:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code)


def _hint(origin: str, name: str) -> str:
    if origin.startswith("stack "):
        return f"the embedded {origin} may be stopping: restart it (`stream stack`) or set {name}"
    return HINTS.get(origin, HINTS["environment"]).format(name=name)


def announce(settings: Settings, *, kafka: bool, redis: bool, write: bool = False) -> dict[str, str]:
    """One ``note:`` line for each server (Kafka if ``kafka``, Redis if ``redis``) whose address did
    not come from the environment; with ``write``, exit 2 when one is only the built-in default.
    Returns the origins (:func:`stream.settings.connection_origin`)."""
    from stream.connections import describe_redis

    origin = connection_origin()
    used = [("KAFKA_BOOTSTRAP", "Kafka", settings.kafka_bootstrap)] if kafka else []
    used += [("REDIS_URL", "Redis", describe_redis(settings))] if redis else []
    for name, what, address in used:
        if origin[name] == "environment":
            continue
        if write and origin[name] == "default":
            _fail(f"refusing to write to {what} at {address}: {name} is unset and no `stream stack` runs, so it is "
                  f"only the built-in default; set {name} (or start `stream stack`) to choose it", EXIT_CONFIG)
        source = "the built-in default: " + name + " is unset and no `stream stack` runs" \
            if origin[name] == "default" else f"from the running embedded {origin[name]}"
        typer.echo(f"note: using {what} at {address} ({source})", err=True)
    return origin


def kafka_problem(settings: Settings, timeout_s: float = REACH_TIMEOUT_S) -> str | None:
    """None when a TCP connection to some bootstrap server opens within ``timeout_s``; else why not."""
    from stream.connections import kafka_bootstrap

    reasons = []
    for server in kafka_bootstrap(settings):
        host, _, port = server.rpartition(":")
        try:
            socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s).close()
            return None
        except OSError as exc:
            reasons.append(exc.strerror or str(exc) or type(exc).__name__)
    return "; ".join(dict.fromkeys(reasons))


def redis_problem(settings: Settings, timeout_s: float = REACH_TIMEOUT_S) -> tuple[int, str] | None:
    """None when Redis answers a PING within ``timeout_s``; else (exit code, one-line message): a
    database index the server does not have is a configuration error (2), anything else 4."""
    from redis.exceptions import BusyLoadingError, RedisError, ResponseError

    from stream.connections import ConnectionConfigError, describe_redis, redis_client, redis_error_message

    try:
        client = redis_client(settings, asyncio=False, socket_connect_timeout=timeout_s, socket_timeout=timeout_s)
    except ConnectionConfigError as exc:
        return EXIT_CONFIG, str(exc)
    try:
        client.ping()
        return None
    except BusyLoadingError:  # it answers, still loading its data: the clients' retries wait for it
        return None
    except ResponseError as exc:
        if "DB index" in str(exc):
            return EXIT_CONFIG, (f"configuration: REDIS_URL={describe_redis(settings)!r}: the server has no such "
                                 f"database ({exc}; a Redis has 16 by default, 0 to 15)")
        return EXIT_UNREACHABLE, redis_error_message(settings, exc)
    except (RedisError, OSError) as exc:
        return EXIT_UNREACHABLE, redis_error_message(settings, exc)
    finally:
        client.close()


def require(settings: Settings, *, kafka: bool = False, redis: bool = False, write: bool = False) -> None:
    """:func:`announce`, then check that each server the command uses is reachable: exit 4 (2 for a
    database the server lacks) with one line naming the address and a hint."""
    origin = announce(settings, kafka=kafka, redis=redis, write=write)
    if kafka:
        problem = kafka_problem(settings)
        if problem is not None:
            _fail(f"cannot reach Kafka at {settings.kafka_bootstrap} (KAFKA_BOOTSTRAP): {problem}; "
                  f"{_hint(origin['KAFKA_BOOTSTRAP'], 'KAFKA_BOOTSTRAP')}", EXIT_UNREACHABLE)
    if redis:
        found = redis_problem(settings)
        if found is not None:
            code, message = found
            _fail(message if code == EXIT_CONFIG else f"{message.rstrip('.')}; {_hint(origin['REDIS_URL'], 'REDIS_URL')}", code)


def warn_unreachable_redis(settings: Settings) -> None:
    """For ``stream api`` (its /health reports Redis): :func:`announce`, and a ``warning:`` when Redis does not
    answer now (a database the server lacks is still exit 2)."""
    origin = announce(settings, kafka=False, redis=True)
    found = redis_problem(settings)
    if found is not None:
        code, message = found
        if code == EXIT_CONFIG:
            _fail(message, code)
        typer.echo(f"warning: {message.rstrip('.')}; {_hint(origin['REDIS_URL'], 'REDIS_URL')} "
                   "(serving anyway: /health answers 503 until it answers)", err=True)


def port_problem(host: str, port: int) -> str | None:
    """None when ``host:port`` can be listened on (bound and released at once, with SO_REUSEADDR
    as aiohttp binds); else the reason (e.g. "Address already in use")."""
    try:
        infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except OSError as exc:
        return f"cannot resolve {host!r}: {exc.strerror or exc}"
    for family, kind, proto, _, address in infos:
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind(address)
                probe.listen(1)
            except OSError as exc:
                return exc.strerror or str(exc)
    return None


def _port_message(host: str, port: int, where: str, reason: str) -> str:
    return (f"cannot listen on {host}:{port} ({where}): {reason}; another program (another worker or "
            f"`stream api`?) holds it: choose another port, or stop that program")


def require_port(host: str, port: int, where: str) -> None:
    """Exit 2 with one line when ``host:port`` is taken (``where``: the setting or option naming it)."""
    reason = port_problem(host, port)
    if reason is not None:
        _fail(_port_message(host, port, where, reason), EXIT_CONFIG)


def serve_or_exit(start: Callable[[], object], host: str, port: int, where: str) -> None:
    """Run ``start`` (a server's start); the port taken meanwhile (OSError on bind): one line, exit 2."""
    try:
        start()
    except OSError as exc:
        if isinstance(exc, TimeoutError):
            raise
        _fail(_port_message(host, port, where, exc.strerror or str(exc)), EXIT_CONFIG)


def announce_worker(settings: Settings, *, web: bool) -> None:
    """The worker's first lines: which Kafka and Redis it uses (and where from) and the dashboard's URL."""
    from stream.connections import describe_redis

    origin = connection_origin()
    typer.echo(f"worker: Kafka {settings.kafka_bootstrap} ({origin['KAFKA_BOOTSTRAP']}), "
               f"Redis {describe_redis(settings)} ({origin['REDIS_URL']}), topics prefix {settings.topic_prefix!r}",
               err=True)
    if web:
        host = "127.0.0.1" if settings.web_host in ("0.0.0.0", "::", "") else settings.web_host
        typer.echo(f"worker: dashboard and read API on http://{host}:{settings.web_port}/", err=True)
