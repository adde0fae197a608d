"""One line for a `./dev test` run made of lanes: per lane its counts and wall time (from
pytest's JUnit XML), then the slowest xdist scopes, then the totals as `tests: N passed,
N failed`. Exits non-zero when a test failed or errored, or when no lane ran a test.
With `--save-durations`, the seconds per scope also go to `tests/durations.json`, which
orders the parallel lane's scopes longest first (tests/conftest.py).

    python -m tests.lanes [--save-durations] REPORT.xml [REPORT.xml ...]
"""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DURATIONS = ROOT / "tests" / "durations.json"


@dataclass
class Lane:
    name: str
    tests: int = 0
    failed: int = 0
    skipped: int = 0
    seconds: float = 0.0

    @property
    def passed(self) -> int:
        return self.tests - self.failed - self.skipped


def read_lane(path: Path) -> Lane:
    lane = Lane(path.stem)
    root = ET.parse(path).getroot()
    suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
    for suite in suites:
        lane.tests += int(suite.get("tests", 0))
        lane.failed += int(suite.get("failures", 0)) + int(suite.get("errors", 0))
        lane.skipped += int(suite.get("skipped", 0))
        lane.seconds += float(suite.get("time", 0))
    return lane


def scope_seconds(path: Path) -> Counter[str]:
    """Seconds per xdist scope (`file.py::Class`, or `file.py` for test functions), from
    the testcases' `classname` (dotted module, then the class if any) and time."""
    seconds: Counter[str] = Counter()
    for case in ET.parse(path).getroot().iter("testcase"):
        parts = case.get("classname", "").split(".")
        for cut in range(len(parts), 0, -1):
            module = Path(*parts[:cut]).with_suffix(".py")
            if (ROOT / module).exists():
                scope = "::".join([module.as_posix(), *parts[cut:]])
                seconds[scope] += float(case.get("time", 0))
                break
    return seconds


def main(args: list[str]) -> int:
    save = "--save-durations" in args
    paths = [a for a in args if a != "--save-durations"]
    lanes = [read_lane(Path(p)) for p in paths if Path(p).exists()]
    scopes: Counter[str] = Counter()
    for p in paths:
        if Path(p).exists():
            scopes.update(scope_seconds(Path(p)))
    for lane in lanes:
        print(
            f"lane {lane.name}: {lane.passed} passed, {lane.failed} failed, "
            f"{lane.skipped} skipped in {lane.seconds:.0f} s"
        )
    print("slowest scopes: " + ", ".join(f"{s} {t:.0f} s" for s, t in scopes.most_common(8)))
    if save:
        DURATIONS.write_text(
            json.dumps({s: round(t, 1) for s, t in sorted(scopes.items())}, indent=0) + "\n"
        )
    passed = sum(lane.passed for lane in lanes)
    failed = sum(lane.failed for lane in lanes)
    skipped = sum(lane.skipped for lane in lanes)
    print(f"tests: {passed} passed, {failed} failed" + (f", {skipped} skipped" if skipped else ""))
    return 1 if failed or not passed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
