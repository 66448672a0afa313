"""Fixtures of the codec tests: one single-field schema harness per codec whose tests
need one (see ``_codec_io.SingleField``). Session-scoped: they are immutable, and
hypothesis tests may use them."""

from __future__ import annotations

import pytest
from _codec_io import SingleField


@pytest.fixture(scope="session")
def image_field() -> SingleField:
    return SingleField("image", "photo")


@pytest.fixture(scope="session")
def mask_field() -> SingleField:
    return SingleField("mask", "segmentation")


@pytest.fixture(scope="session")
def audio_field() -> SingleField:
    return SingleField("audio", "speech", {"sample_rate": 16000})
