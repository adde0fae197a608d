"""Print the figures the benchmarks recorded as one table (Markdown, for the README).

.venv/bin/python bench/report.py RESULTS.jsonl
"""

from __future__ import annotations

import json
import os
import platform
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.common import meets


def machine() -> str:
    cores = os.cpu_count() or 0
    try:
        with open("/proc/meminfo", encoding="utf-8") as info:
            kb = int(info.readline().split()[1])
        memory = f"{kb / 1024 / 1024:.0f} GiB"
    except (OSError, ValueError, IndexError):
        memory = "? GiB"
    return f"{platform.machine()}, {cores} cores, {memory}, Python {platform.python_version()}"


def table(lines: list[dict[str, object]]) -> str:
    out = [
        "| bench | figure | value | goal | met |",
        "|---|---|---|---|---|",
    ]
    for line in lines:
        value = float(line["value"])  # type: ignore[arg-type]
        unit = str(line["unit"])
        shown = f"{value:.2f}x" if unit == "x" else f"{value:.3g} {unit}"
        goal = str(line.get("goal") or "")
        verdict = meets(value, goal)
        met = "" if verdict is None else ("yes" if verdict else "**no**")
        out.append(f"| {line['bench']} | {line['figure']} | {shown} | {goal} | {met} |")
    return "\n".join(out)


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    with open(sys.argv[1], encoding="utf-8") as results:
        lines = [json.loads(text) for text in results if text.strip()]
    print(f"machine: {machine()}")
    print(table(lines))


if __name__ == "__main__":
    main()
