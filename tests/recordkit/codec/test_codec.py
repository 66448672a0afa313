"""The codec contract (sdk/recordkit/codec/_codec.py): options, identity, defaults."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import pydantic
import pytest

import recordkit as rk


class RangeOptions(rk.CodecOptions):
    low: int = 0
    high: int = pydantic.Field(default=10, gt=0)
    unit: Literal["m", "s"] = "m"


class RangeCodec(rk.Codec[RangeOptions]):
    name = "range"
    options_model = RangeOptions

    def wire_spec(self) -> rk.WireSpec:
        return rk.WireSpec((rk.WireFeature("", rk.WireKind.INT64),))

    def encode(self, value: Any) -> rk.WireValues:
        if not self.options.low <= value <= self.options.high:
            raise rk.errors.InvalidValueError(f"{value} is outside [{self.options.low}, {self.options.high}]")
        return {"": value}

    def decode_numpy(self, wire: Mapping[str, Any]) -> Any:
        return int(wire[""])

    def decode_tf(self, wire: Mapping[str, Any]) -> Any:
        return wire[""]


class OtherRangeCodec(RangeCodec):
    name = "other-range"


def test_a_codec_must_implement_the_contract() -> None:
    class Incomplete(rk.Codec[rk.CodecOptions]):
        name = "incomplete"

        def wire_spec(self) -> rk.WireSpec:
            return rk.WireSpec((rk.WireFeature("", rk.WireKind.BYTES),))

    with pytest.raises(TypeError, match="abstract"):
        Incomplete()  # type: ignore[abstract]


def test_class_defaults() -> None:
    assert RangeCodec.version == "1"
    assert RangeCodec.summary == ""
    codec = RangeCodec()
    assert codec.related_fields() == ()
    assert codec.check_related({"": 1}, {}) is None


def test_options_from_a_mapping_none_or_a_model() -> None:
    assert RangeCodec().options == RangeOptions()
    assert RangeCodec({"high": 5}).options == RangeOptions(high=5)
    options = RangeOptions(unit="s")
    assert RangeCodec(options).options is options


def test_options_dict_leaves_out_defaults_and_round_trips() -> None:
    codec = RangeCodec({"high": 5, "unit": "m"})
    assert codec.options_dict() == {"high": 5}
    assert RangeCodec(codec.options_dict()) == codec


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"high": 0}, "option high: Input should be greater than 0"),
        ({"unit": "kg"}, "option unit: "),
        ({"colour": "red"}, "option colour: Extra inputs are not permitted"),
        ({"high": 0, "unit": "kg"}, "option high: .*; option unit: "),
        (["high"], "options must be a mapping"),
        ("high=5", "options must be a mapping"),
        (5, "options must be a mapping"),
    ],
)
def test_bad_options_name_each_option_and_the_codec(options: Any, match: str) -> None:
    with pytest.raises(rk.errors.CodecOptionsError, match=match) as info:
        RangeCodec(options)
    assert info.value.context.codec == "range"
    assert str(info.value).startswith("codec 'range': ")


def test_options_are_immutable() -> None:
    codec = RangeCodec()
    with pytest.raises(pydantic.ValidationError):
        codec.options.high = 3  # type: ignore[misc]


def test_codecs_compare_by_class_and_options() -> None:
    assert RangeCodec({"high": 5}) == RangeCodec({"high": 5})
    assert hash(RangeCodec({"high": 5})) == hash(RangeCodec({"high": 5}))
    assert RangeCodec({"high": 5}) != RangeCodec({"high": 6})
    assert RangeCodec() != OtherRangeCodec()
    assert len({RangeCodec(), RangeCodec({}), RangeCodec({"low": 0})}) == 1


def test_repr_shows_the_options_that_differ_from_defaults() -> None:
    assert repr(RangeCodec({"unit": "s"})) == "RangeCodec({'unit': 's'})"


def test_encode_errors_carry_only_the_reason() -> None:
    with pytest.raises(rk.errors.InvalidValueError) as info:
        RangeCodec().encode(11)
    assert str(info.value) == "11 is outside [0, 10]"
    assert info.value.field is None


# -- stored versions ------------------------------------------------------------------------


def test_a_codec_reads_what_its_own_version_stored() -> None:
    codec = RangeCodec({"high": 5})
    assert codec.for_stored_version("1") is codec


@pytest.mark.parametrize("stored", ["0", "2", "1.0", ""])
def test_by_default_a_codec_reads_no_other_version(stored: str) -> None:
    with pytest.raises(rk.errors.CodecVersionError) as info:
        RangeCodec().for_stored_version(stored)
    assert isinstance(info.value, rk.errors.DatasetError)
    assert info.value.context.codec == "range"
    assert str(info.value) == (
        f"codec 'range': the records were stored by version {stored} of codec 'range'; the installed "
        f"codec is version 1 and does not read them: install version {stored} of codec 'range' "
        "(the version that wrote them)"
    )


def test_a_codec_may_read_what_an_earlier_version_stored() -> None:
    class RangeV2(RangeCodec):
        version = "2"

        def for_stored_version(self, version: str) -> rk.Codec[Any]:
            if version == "1":
                return RangeCodec(self.options)
            return super().for_stored_version(version)

    codec = RangeV2({"unit": "s"})
    assert codec.for_stored_version("2") is codec
    assert codec.for_stored_version("1") == RangeCodec({"unit": "s"})
    with pytest.raises(rk.errors.CodecVersionError, match="stored by version 3 of codec 'range'"):
        codec.for_stored_version("3")
