"""`./dev bench` draws its charts from the figures the run recorded: bars per figure,
red where a goal is missed, the goal marked."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

PLOTS = Path(__file__).resolve().parents[2] / "bench" / "plots.py"


def test_charts_are_drawn_from_the_recorded_figures(tmp_path: Path) -> None:
    figures = [
        ("scan", "group-by vs raw", 1.08, "x", "<= 1.10"),
        ("MERGE", "spread keys vs raw rewrite", 0.60, "x", "<= 0.25"),
        ("small_changes", "INSERT 1 row (inlined) (ms)", 179.0, "ms", "<= 20"),
        ("scaling", "write per million rows, 1M rows", 2.46, "s", ""),
        ("scaling", "MERGE time, largest vs smallest table", 0.45, "x", ""),
    ]
    results = tmp_path / "results.jsonl"
    results.write_text(
        "".join(
            json.dumps({"bench": b, "figure": f, "value": v, "unit": u, "goal": g}) + "\n"
            for b, f, v, u, g in figures
        )
    )
    out = tmp_path / "images"
    subprocess.run([sys.executable, str(PLOTS), str(results), str(out)], check=True)
    assert sorted(p.name for p in out.iterdir()) == [
        "ratios.svg",
        "scaling.svg",
        "small_changes.svg",
    ]
    ratios = (out / "ratios.svg").read_text()
    assert ratios.count('fill="#2e86c1"') == 2  # scan met its goal; the scaling ratio has none
    assert ratios.count('fill="#c0392b"') == 1  # MERGE missed it
    assert ratios.count('stroke-width="2"') == 2  # two goals marked
    assert "1.08x" in ratios and "0.60x" in ratios
    small = (out / "small_changes.svg").read_text()
    assert "INSERT 1 row (inlined)<" in small and "179 ms" in small
    scaling = (out / "scaling.svg").read_text()
    assert "2.46 s" in scaling and "largest vs smallest" not in scaling
