"""The fault-injection suite's summary: how many cases each family tried.

Each test asks for ``fault_cases`` and counts its cases (``fault_cases.tried(family,
n)``); the counts travel with the test reports (as user properties, so they survive
pytest-xdist) and are printed at the end of the run, one line per family.
"""

from __future__ import annotations

import collections
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # _fault_support, also for subprocesses

_PROPERTY = "fault_cases"


class FaultCases:
    """Counts the cases one test tried, by family."""

    def __init__(self) -> None:
        self.counts: collections.Counter[str] = collections.Counter()

    def tried(self, family: str, count: int = 1) -> None:
        self.counts[family] += count


@pytest.fixture
def fault_cases(record_property: pytest.RecordProperty) -> Iterator[FaultCases]:
    cases = FaultCases()
    yield cases
    for family, count in sorted(cases.counts.items()):
        record_property(_PROPERTY, (family, count))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    totals: collections.Counter[str] = collections.Counter()
    for reports in terminalreporter.stats.values():
        for report in reports:
            # The counts are recorded at teardown: only that phase's report carries them all.
            if getattr(report, "when", None) != "teardown":
                continue
            for name, value in getattr(report, "user_properties", []):
                if name == _PROPERTY:
                    family, count = value
                    totals[family] += count
    if not totals:
        return
    terminalreporter.section("fault injection: cases tried per family")
    for family, count in sorted(totals.items()):
        terminalreporter.write_line(f"{family:<44} {count:>6}")
    terminalreporter.write_line(f"{'total':<44} {sum(totals.values()):>6}")
