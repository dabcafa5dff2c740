"""Regenerate the README's configuration table from stream/settings.py (run after adding a setting)."""

from __future__ import annotations

import re
from pathlib import Path

from stream.settings import env_table

README = Path(__file__).resolve().parent.parent / "README.md"
START, END = "<!-- env-table:start -->", "<!-- env-table:end -->"


def render(text: str) -> str:
    """``text`` with the table between the markers replaced by the current one."""
    pattern = re.compile(re.escape(START) + ".*?" + re.escape(END), re.DOTALL)
    return pattern.sub(lambda _: f"{START}\n{env_table()}\n{END}", text)


if __name__ == "__main__":
    README.write_text(render(README.read_text()))
