"""The fault-injection suite's summary: how many cases each family tried.

Each test asks for ``fault_cases`` and counts its cases (``fault_cases.tried(family,
n)``); the counts travel with the test reports (as user properties, so they survive
pytest-xdist) and are printed at the end of the run, one line per family, by the
``pytest_terminal_summary`` hook in ``tests/conftest.py`` (a conftest the xdist
controller loads, unlike this one).
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
