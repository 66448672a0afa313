"""Tests of what the ``image`` and ``mask`` codecs share about size (``_raster``): the
``max_pixels``, ``height`` and ``width`` options and the fixed-size check of each record."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from _codec_io import bind, field_error

import recordkit as rk

CODECS = ["image", "mask"]


def options_error(codec: str, options: dict[str, Any]) -> rk.errors.CodecOptionsError:
    with pytest.raises(rk.errors.CodecOptionsError) as info:
        bind(pixels={"codec": codec, "options": options})
    assert info.value.field == "pixels"
    assert f"codec {codec!r}" in str(info.value)
    return info.value


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("options", [{"height": 4}, {"width": 4}])
def test_a_fixed_size_needs_both_sides(codec: str, options: dict[str, Any]) -> None:
    error = options_error(codec, options)
    assert "set both height and width (a fixed size), or neither" in str(error)


@pytest.mark.parametrize("codec", CODECS)
def test_a_fixed_size_over_max_pixels_is_refused(codec: str) -> None:
    error = options_error(codec, {"height": 10, "width": 6, "max_pixels": 59})
    assert "the fixed size 10x6 is over max_pixels=59" in str(error)
    bind(pixels={"codec": codec, "options": {"height": 10, "width": 6, "max_pixels": 60}})


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("option", ["height", "width", "max_pixels"])
def test_sizes_must_be_positive(codec: str, option: str) -> None:
    options = {"height": 4, "width": 4, option: 0}
    error = options_error(codec, options)
    assert option in str(error)
    assert "greater than or equal to 1" in str(error)


@pytest.mark.parametrize("codec", CODECS)
def test_each_record_is_checked_against_the_fixed_size(codec: str) -> None:
    bound = bind(pixels={"codec": codec, "options": {"height": 4, "width": 5}})
    rk.RecordEncoder(bound).encode({"pixels": np.zeros((4, 5), np.uint8)})
    error = field_error(bound, "pixels", np.zeros((5, 4), np.uint8), index=6)
    assert f"{codec} is 5x4 (height x width), the schema declares a fixed size of 4x5" in str(error)


@pytest.mark.parametrize("codec", CODECS)
def test_the_options_describe_their_own_codec(codec: str) -> None:
    """The shared fields still say what they size, in the options' JSON schema."""
    model = rk.default_registry().get(codec).options_model
    properties = model.model_json_schema()["properties"]
    assert properties["height"]["description"] == f"A fixed height every {codec} must have."
    assert properties["width"]["description"] == f"A fixed width every {codec} must have."
    assert properties["max_pixels"]["minimum"] == 1
    assert list(properties)[-3:] == ["max_pixels", "height", "width"]
