"""Lines of ``stream/`` now against a base commit (issue 28: "today's features in fewer lines"),
per package, and which of today's lines belong to capabilities added since the base.

Counts every ``*.py`` file under ``stream/`` as ``wc -l`` does (newlines). The base is read from git
(``git show BASE:path``), "now" from the working tree (or ``--head REV``). Files added since the
base (``git log --diff-filter=A BASE..HEAD -- stream``, renames not counted as added) are assigned
a capability by :data:`CAPABILITIES` (judgement: the first pattern a path matches); the rest of
the added files are core (moved out of older modules, or support). Modules that existed at the
base are listed by growth: what in them belongs to a capability is judgement, read from the
listing (the report of issue 28 says which).

Usage: python bench/lines.py [--base 83879f4] [--head REV] [--grown 15]
Prints Markdown tables.
"""

from __future__ import annotations

import argparse
import fnmatch
import subprocess
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BASE = "83879f4"

CAPABILITIES: tuple[tuple[str, str], ...] = (
    ("stream/matchmaking/*", "matchmaking"),
    ("stream/pipeline/matchmaking.py", "matchmaking"),
    ("stream/pipeline/mm_copies.py", "matchmaking"),
    ("stream/store/matchmaking.py", "matchmaking"),
    ("stream/contracts/tickets.py", "matchmaking"),
    ("stream/api/queues.py", "matchmaking"),
    ("stream/cli/queue.py", "matchmaking"),
    ("stream/cli/simulate*.py", "matchmaking"),
    ("stream/engine/season*.py", "seasons"),
    ("stream/engine/league_shares.py", "seasons"),
    ("stream/engine/bonus.py", "seasons"),
    ("stream/*/season*.py", "seasons"),
    ("stream/pipeline/health.py", "rating health"),
    ("stream/store/health.py", "rating health"),
    ("stream/api/health_export.py", "rating health"),
    ("stream/engine/odds.py", "rating health"),
    ("stream/*/whatif.py", "what-if / explain"),
    ("stream/*/explain.py", "what-if / explain"),
    ("stream/pipeline/lease.py", "ladder lease"),
    ("stream/pipeline/status.py", "read-time status"),
    ("stream/api/eligibility.py", "read-time status"),
    ("stream/api/probes.py", "ops (probes, drain)"),
    ("stream/pipeline/shutdown.py", "ops (probes, drain)"),
)
"""(glob over the path, capability) for files added since the base; first match wins."""


def git(*args: str) -> str:
    """The standard output of ``git args`` in the repository."""
    return subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True, check=True).stdout


def lines_at(rev: str | None) -> dict[str, int]:
    """Lines of each ``stream/**/*.py`` at ``rev`` (None: the working tree)."""
    if rev is None:
        return {str(p.relative_to(REPO)): p.read_bytes().count(b"\n") for p in sorted((REPO / "stream").rglob("*.py"))}
    paths = [p for p in git("ls-tree", "-r", "--name-only", rev, "stream").splitlines() if p.endswith(".py")]
    return {p: git("show", f"{rev}:{p}").count("\n") for p in paths}


def package(path: str) -> str:
    """``stream/<package>`` of a path (a top-level module counts as ``stream/*.py``)."""
    parts = path.split("/")
    return "/".join(parts[:2]) if len(parts) > 2 else "stream/*.py"


def capability(path: str) -> str:
    """The capability an added file belongs to (:data:`CAPABILITIES`), else ``core``."""
    return next((name for pattern, name in CAPABILITIES if fnmatch.fnmatch(path, pattern)), "core")


def added_since(base: str, head: str) -> set[str]:
    """The ``stream/`` files added between ``base`` and ``head`` (renames are not additions)."""
    out = git("log", "--diff-filter=A", "--format=", "--name-only", f"{base}..{head}", "--", "stream")
    return {p for p in out.splitlines() if p.endswith(".py")}


def table(header: tuple[str, ...], rows: list[tuple[object, ...]]) -> str:
    """A Markdown table."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(f"{c:,}" if isinstance(c, int) else str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", default=BASE)
    ap.add_argument("--head", default=None, help="a revision instead of the working tree")
    ap.add_argument("--grown", type=int, default=15, help="how many grown modules to list")
    args = ap.parse_args()
    then, now = lines_at(args.base), lines_at(args.head)
    added = added_since(args.base, args.head or "HEAD") & set(now)
    by_package: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    by_capability: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for path, n in then.items():
        by_package[package(path)][0] += n
    for path, n in now.items():
        by_package[package(path)][1] += n
        if path in added:
            cap = capability(path)
            by_package[package(path)][2] += n if cap != "core" else 0
            by_capability[cap][0] += 1
            by_capability[cap][1] += n
    total_then, total_now = sum(then.values()), sum(now.values())
    new_caps = sum(n for cap, (_, n) in by_capability.items() if cap != "core")
    print(f"stream/: {total_then:,} lines at {args.base}, {total_now:,} now ({args.head or 'working tree'}); "
          f"{new_caps:,} of them in files of capabilities added since; the rest: {total_now - new_caps:,} "
          f"({total_now - new_caps - total_then:+,} against {args.base})\n")
    rows = [(p, a, b, b - a, c, b - c) for p, (a, b, c) in sorted(by_package.items())]
    rows.append(("**total**", total_then, total_now, total_now - total_then, new_caps, total_now - new_caps))
    print(table(("package", args.base, "now", "change", "new capability files", "now without them"), rows))
    print()
    print(table(("capability (files added since)", "files", "lines"),
                [(cap, f, n) for cap, (f, n) in sorted(by_capability.items(), key=lambda kv: -kv[1][1])]))
    print()
    print(table(("added file", "capability", "lines"), [(p, capability(p), now[p]) for p in sorted(added)]))
    print()
    grown = sorted(((now[p] - then[p], p) for p in set(then) & set(now)), reverse=True)
    print(table(("module at the base (most grown)", args.base, "now", "change"),
                [(p, then[p], now[p], d) for d, p in grown[:args.grown]]))
    gone = sorted(set(then) - set(now))
    print(f"\nmodules of {args.base} gone or moved since: {len(gone)} ({sum(then[p] for p in gone):,} lines)")


if __name__ == "__main__":
    main()
