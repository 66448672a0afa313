"""The conformance kit as a pytest plugin (entry point ``pytest11: recordkit``).

Loaded automatically wherever recordkit is installed; it only adds fixtures, so it
changes nothing for test suites that do not use them::

    def test_my_codec(codec_conformance):
        codec_conformance(MyCodec(), cases=[...], bad_inputs=[...])
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from recordkit.testing._conformance import ConformanceReport, check_codec

__all__ = ["codec_conformance"]


@pytest.fixture
def codec_conformance(tmp_path: Path) -> Callable[..., ConformanceReport]:
    """:func:`recordkit.testing.check_codec` with pytest's ``tmp_path`` filled in."""

    def run(codec: Any, cases: Any, **kwargs: Any) -> ConformanceReport:
        return check_codec(codec, cases, tmp_path=tmp_path, **kwargs)

    return run
