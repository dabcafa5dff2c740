"""How the commands print: aligned tables, numbers and UTC times (``-`` where there is none); the
arguments the per-ladder commands share."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Annotated

import typer

Ladder = Annotated[str, typer.Argument(help="ladder name")]
AsJson = Annotated[bool, typer.Option("--json", help="print JSON")]


def num(value: float | None, digits: int = 1) -> str:
    """``value`` with ``digits`` decimals, ``-`` for None."""
    return "-" if value is None else f"{value:.{digits}f}"


def when(epoch: float | None, seconds: bool = False) -> str:
    """An epoch time as UTC ``YYYY-MM-DD HH:MM`` (``:SS`` with ``seconds``), ``-`` for None."""
    fmt = "%Y-%m-%d %H:%M:%S" if seconds else "%Y-%m-%d %H:%M"
    return "-" if epoch is None else datetime.fromtimestamp(epoch, tz=timezone.utc).strftime(fmt)


def table(header: list[str], rows: list[list[str]], right_from: int | None = None) -> str:
    """The rows under the header, each column left-aligned to its widest cell (right-aligned from
    column ``right_from`` on)."""
    widths = [max(len(str(c)) for c in col) for col in zip(header, *rows)]
    return "\n".join("  ".join(str(c).rjust(w) if right_from is not None and i >= right_from else str(c).ljust(w)
                               for i, (c, w) in enumerate(zip(row, widths))) for row in [header, *rows])
