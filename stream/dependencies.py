"""The dependencies whose private internals the service reaches into, pinned exactly.

``stream/pipeline/runtime/compat.py`` patches Faust's consumer, conductor and monitor, aiokafka's fetcher
and mode's queues; ``stream/store/lean.py`` drives redis-py's connections and hiredis parser. A
different release may have moved any of those names, and the patches would then fail at run
time, or worse, silently not apply. So pyproject.toml pins each exactly, and :func:`check` refuses
to start (one line naming the package, the version found and the one required) when the
installed version is another: the worker checks its runtime's packages when it builds its app,
the store checks redis-py when it is created.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from importlib import metadata

PINNED = {
    "faust-streaming": "0.15.3",
    "mode-streaming": "0.7.1",
    "aiokafka": "0.14.0",
    "redis": "8.1.0",
}
"""Distribution name -> the one version whose internals the code was written and tested against."""
RUNTIME = ("faust-streaming", "mode-streaming", "aiokafka")
"""What the worker's Faust runtime patches (``pipeline/runtime/compat.py``)."""
STORE = ("redis",)
"""What the store's lean pipeline reaches into (``store/lean.py``)."""


class DependencyMismatch(SystemExit):
    """An installed dependency is not the pinned version: exits with its message (status 1)."""


def mismatches(names: tuple[str, ...], installed: Callable[[str], str] = metadata.version) -> list[str]:
    """One line per package of ``names`` whose installed version is not the pinned one."""
    out = []
    for name in names:
        try:
            found = installed(name)
        except metadata.PackageNotFoundError:
            found = "none"
        if found != PINNED[name]:
            out.append(f"{name} {found} is installed, the service needs {name}=={PINNED[name]} "
                       "(it patches that release's internals; reinstall with: pip install -e .)")
    return out


@functools.cache
def check(names: tuple[str, ...]) -> None:
    """Raise :class:`DependencyMismatch` naming every package of ``names`` that is not pinned."""
    found = mismatches(names)
    if found:
        raise DependencyMismatch("error: " + "; ".join(found))
