"""A Redis database as plain Python data, for comparing what two write paths stored."""

from __future__ import annotations

from typing import Any

import redis

TIME_FIELDS = frozenset({b"received_at", b"rated_at", b"updated_at", b"stored_by"})
"""Wall-clock fields: when something was written, not what (never compared); and ``stored_by``,
the random token of the phase-one attempt that stored a round's fan-out: who wrote it, not what."""

DERIVED_KEYS = b"ems:round-digests:"
"""Key prefix of phase two's digest sets: a cache derived from the stored fan-out on first use
(verify_updates.lua), so whether one exists says when phase two last ran, not what is stored."""


COORDINATION_KEYS = (b"ems:lease:", b"ems:fence:")
"""Key prefixes of phase one's ladder leases and fences: which attempt rated a ladder (one path
takes them, another, e.g. a backfill, does not), not what is stored."""


def dump(client: redis.Redis, *, skip_fields: frozenset[bytes] = TIME_FIELDS) -> dict[bytes, Any]:
    """Every key of the client's database with its value (hash fields in ``skip_fields`` left out)."""
    out: dict[bytes, Any] = {}
    for key in client.scan_iter(count=1000):
        if key.startswith(DERIVED_KEYS) or key.startswith(COORDINATION_KEYS):
            continue
        kind = client.type(key)
        if kind == b"hash":
            out[key] = {k: v for k, v in client.hgetall(key).items() if k not in skip_fields}
        elif kind == b"list":
            out[key] = client.lrange(key, 0, -1)
        elif kind == b"zset":
            out[key] = client.zrange(key, 0, -1, withscores=True)
        elif kind == b"set":
            out[key] = sorted(client.smembers(key))
        else:
            out[key] = client.get(key)
    return out


def differences(a: dict[bytes, Any], b: dict[bytes, Any], limit: int = 10) -> list[str]:
    """The first ``limit`` differences between two dumps, readable."""
    out = [f"only in first: {k!r}" for k in sorted(set(a) - set(b))]
    out += [f"only in second: {k!r}" for k in sorted(set(b) - set(a))]
    for key in sorted(set(a) & set(b)):
        if a[key] != b[key]:
            if isinstance(a[key], dict) and isinstance(b[key], dict):
                fields = sorted(set(a[key]) | set(b[key]))
                out += [f"{key!r} field {f!r}: {a[key].get(f)!r} != {b[key].get(f)!r}" for f in fields
                        if a[key].get(f) != b[key].get(f)]
            else:
                out.append(f"{key!r}: {str(a[key])[:300]} != {str(b[key])[:300]}")
    return out[:limit]
