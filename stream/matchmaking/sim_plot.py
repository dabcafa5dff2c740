"""``stream simulate --plot DIR``: the report's figures as SVG line charts, drawn by hand (no
plotting library is a dependency): fairness by games played, pair accuracy by games per player,
calibration (predicted against realised win rate)."""

from __future__ import annotations

import math
from html import escape
from pathlib import Path

from .sim_report import Summary

WIDTH, HEIGHT, MARGIN = 640, 400, 60
COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2")


def line_chart(title: str, x_label: str, y_label: str, series: dict[str, list[tuple[float, float]]],
               y_range: tuple[float, float] = (0.0, 1.0)) -> str:
    """An SVG chart of named (x, y) series (points with a NaN y are left out)."""
    points = [(x, y) for s in series.values() for x, y in s if not math.isnan(y)]
    x_lo = min((x for x, _ in points), default=0.0)
    x_hi = max((x for x, _ in points), default=1.0)
    x_hi = x_hi if x_hi > x_lo else x_lo + 1.0
    y_lo, y_hi = y_range

    def sx(x: float) -> float:
        return MARGIN + (x - x_lo) / (x_hi - x_lo) * (WIDTH - 2 * MARGIN)

    def sy(y: float) -> float:
        return HEIGHT - MARGIN - (y - y_lo) / (y_hi - y_lo) * (HEIGHT - 2 * MARGIN)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" font-family="sans-serif" font-size="12">',
           '<rect width="100%" height="100%" fill="white"/>',
           f'<text x="{WIDTH / 2}" y="20" text-anchor="middle" font-size="14">{escape(title)}</text>',
           f'<line x1="{MARGIN}" y1="{sy(y_lo)}" x2="{WIDTH - MARGIN}" y2="{sy(y_lo)}" stroke="black"/>',
           f'<line x1="{MARGIN}" y1="{sy(y_lo)}" x2="{MARGIN}" y2="{sy(y_hi)}" stroke="black"/>',
           f'<text x="{WIDTH / 2}" y="{HEIGHT - 15}" text-anchor="middle">{escape(x_label)}</text>',
           f'<text x="15" y="{HEIGHT / 2}" transform="rotate(-90 15 {HEIGHT / 2})" text-anchor="middle">{escape(y_label)}</text>']
    for k in range(5):
        y = y_lo + (y_hi - y_lo) * k / 4
        x = x_lo + (x_hi - x_lo) * k / 4
        out.append(f'<text x="{MARGIN - 5}" y="{sy(y) + 4}" text-anchor="end">{y:.2f}</text>')
        out.append(f'<text x="{sx(x)}" y="{sy(y_lo) + 16}" text-anchor="middle">{x:g}</text>')
    for n, (name, s) in enumerate(series.items()):
        colour = COLOURS[n % len(COLOURS)]
        path = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in s if not math.isnan(y))
        out.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"/>')
        out.append(f'<text x="{WIDTH - MARGIN + 5}" y="{MARGIN + 16 * n}" fill="{colour}">{escape(name)}</text>')
    out.append("</svg>")
    return "\n".join(out)


def write_plots(summaries: dict[str, Summary], directory: Path) -> list[Path]:
    """Write fairness.svg, accuracy.svg and calibration.svg into ``directory``; their paths."""
    directory.mkdir(parents=True, exist_ok=True)
    charts = {
        "fairness.svg": line_chart(
            "Share of matches with true win probability in 35-65 %", "games played (bucket start)", "fair share",
            {n: [(float(b.split("-")[0].rstrip("+")), v) for b, v, _ in s.fair_by_games] for n, s in summaries.items()}),
        "accuracy.svg": line_chart(
            "Pair accuracy of the ratings against the true skills", "games per player", "pair accuracy",
            {n: s.accuracy for n, s in summaries.items()}, (0.4, 1.0)),
        "calibration.svg": line_chart(
            "Calibration: predicted against realised win rate", "predicted", "realised",
            {**{n: [(p, w) for p, w, c in s.calibration if c >= 20] for n, s in summaries.items()},
             "perfect": [(0.0, 0.0), (1.0, 1.0)]}),
    }
    paths = []
    for name, svg in charts.items():
        path = directory / name
        path.write_text(svg)
        paths.append(path)
    return paths
