"""Shared test configuration: quiet TensorFlow, deterministic hypothesis profile."""

from __future__ import annotations

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from hypothesis import HealthCheck, settings  # noqa: E402 - after the environment is set

settings.register_profile(
    "recordkit",
    deadline=None,
    max_examples=30,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
settings.load_profile("recordkit")
