"""One line for a `./dev test` run made of lanes: per lane its counts and wall time (from
pytest's JUnit XML), then the totals as `tests: N passed, N failed`. Exits non-zero when
a test failed or errored, or when no lane ran a test.

    python -m tests.lanes REPORT.xml [REPORT.xml ...]
"""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path


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


def main(paths: list[str]) -> int:
    lanes = [read_lane(Path(p)) for p in paths if Path(p).exists()]
    for lane in lanes:
        print(
            f"lane {lane.name}: {lane.passed} passed, {lane.failed} failed, "
            f"{lane.skipped} skipped in {lane.seconds:.0f} s"
        )
    passed = sum(lane.passed for lane in lanes)
    failed = sum(lane.failed for lane in lanes)
    skipped = sum(lane.skipped for lane in lanes)
    print(f"tests: {passed} passed, {failed} failed" + (f", {skipped} skipped" if skipped else ""))
    return 1 if failed or not passed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
