"""Draw the figures the benchmarks recorded as SVG charts for docs/performance.md.

.venv/bin/python bench/plots.py RESULTS.jsonl OUT_DIR [--peers]

Without --peers: `ratios.svg` (the ratios of the large-data benches, goals marked),
`small_changes.svg` (milliseconds per small change, goals marked) and `scaling.svg`
(write seconds per million rows and MERGE seconds by table size). With --peers:
`peers.svg` (our time and bytes against Delta and Iceberg).
Plain SVG written here, so the benchmarks need no plotting package.
"""

from __future__ import annotations

import json
import re
import sys
from html import escape
from pathlib import Path

BAR_HEIGHT, GAP, LABEL_WIDTH, PLOT_WIDTH, MARGIN = 16, 6, 430, 360, 12


def load(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _goal(goal: object) -> float | None:
    m = re.match(r"\s*(<=|<|>=)\s*([0-9.]+)", str(goal or ""))
    return float(m.group(2)) if m else None


def bar_chart(title: str, rows: list[tuple[str, float, float | None]], unit: str) -> str:
    """Horizontal bars: (label, value, goal or None); a dashed line at 1.0 for ratios,
    a red tick at each goal, bars red where the goal is missed."""
    top = 40
    height = top + len(rows) * (BAR_HEIGHT + GAP) + 30
    width = LABEL_WIDTH + PLOT_WIDTH + 90
    scale_max = max([v for _, v, _ in rows] + [g for *_, g in rows if g is not None] + [1.0])
    x0 = LABEL_WIDTH + MARGIN

    def x(value: float) -> float:
        return x0 + PLOT_WIDTH * value / scale_max

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'font-family="sans-serif" font-size="11">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="{MARGIN}" y="20" font-size="14" font-weight="bold">{escape(title)}</text>',
    ]
    if unit == "x":
        out.append(
            f'<line x1="{x(1.0):.1f}" y1="{top - 6}" x2="{x(1.0):.1f}" '
            f'y2="{height - 24}" stroke="#888" stroke-dasharray="4 3"/>'
            f'<text x="{x(1.0) + 3:.1f}" y="{height - 12}" fill="#555">1.0 = the baseline</text>'
        )
    for i, (label, value, goal) in enumerate(rows):
        y = top + i * (BAR_HEIGHT + GAP)
        missed = goal is not None and value > goal
        colour = "#c0392b" if missed else "#2e86c1"
        shown = f"{value:.2f}x" if unit == "x" else f"{value:.3g} {unit}"
        out += [
            f'<text x="{x0 - 6}" y="{y + 12}" text-anchor="end">{escape(label)}</text>',
            f'<rect x="{x0}" y="{y}" width="{max(x(value) - x0, 1):.1f}" '
            f'height="{BAR_HEIGHT}" fill="{colour}"/>',
            f'<text x="{x(value) + 4:.1f}" y="{y + 12}">{escape(shown)}</text>',
        ]
        if goal is not None:
            out.append(
                f'<line x1="{x(goal):.1f}" y1="{y - 2}" x2="{x(goal):.1f}" '
                f'y2="{y + BAR_HEIGHT + 2}" stroke="black" stroke-width="2"/>'
            )
    out.append("</svg>")
    return "\n".join(out) + "\n"


def ratio_rows(lines: list[dict[str, object]], benches: set[str] | None = None) -> list:
    return [
        (f"{line['bench']}: {line['figure']}", float(str(line["value"])), _goal(line["goal"]))
        for line in lines
        if line["unit"] == "x" and (benches is None or line["bench"] in benches)
    ]


# the benches whose ratios share one chart (small changes are milliseconds, apart)
LARGE_DATA = {"scan planning", "MERGE", "DML", "compaction", "write", "scan", "dbt", "scaling"}


def ms_rows(lines: list[dict[str, object]]) -> list:
    return [
        (str(line["figure"]).removesuffix(" (ms)"), float(str(line["value"])), _goal(line["goal"]))
        for line in lines
        if line["bench"] == "small_changes" and line["unit"] == "ms"
    ]


def scaling_rows(lines: list[dict[str, object]]) -> list:
    wanted = ("write per million rows", "MERGE ")
    return [
        (str(line["figure"]), float(str(line["value"])), None)
        for line in lines
        if line["bench"] == "scaling"
        and line["unit"] == "s"
        and str(line["figure"]).startswith(wanted)
    ]


def main(argv: list[str]) -> int:
    results, out_dir, peers = Path(argv[0]), Path(argv[1]), "--peers" in argv[2:]
    lines = load(results)
    out_dir.mkdir(parents=True, exist_ok=True)
    charts = (
        {"peers.svg": ("Against Delta Lake and Iceberg (lower is better)", ratio_rows(lines))}
        if peers
        else {
            "ratios.svg": (
                "Ratios to baselines of the same run (lower is better; | = goal)",
                ratio_rows(lines, LARGE_DATA),
            ),
            "small_changes.svg": ("Small changes: median milliseconds (| = goal)", ms_rows(lines)),
            "scaling.svg": ("Scaling: seconds by table size", scaling_rows(lines)),
        }
    )
    units = {"small_changes.svg": "ms", "scaling.svg": "s"}
    for name, (title, rows) in charts.items():
        if not rows:
            continue
        (out_dir / name).write_text(bar_chart(title, rows, units.get(name, "x")))
        print(f"plots: {out_dir / name} ({len(rows)} figures)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
