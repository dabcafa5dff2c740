"""The dependencies whose internals the service reaches into (pipeline/runtime/compat.py, store/lean.py), pinned
exactly: :func:`check` refuses to start with another installed (a patch might fail, or silently not apply).
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
