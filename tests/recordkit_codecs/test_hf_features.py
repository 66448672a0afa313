"""The built-in codecs' Hugging Face features (rk.HfDescribed): the feature each field
becomes, and the column value made from the stored wire values."""

from __future__ import annotations

import numpy as np
import pytest

import recordkit as rk


def _feature(codec: str, **options: object) -> rk.HfFeature:
    described = rk.default_registry().create(codec, options)
    assert isinstance(described, rk.HfDescribed)
    return described.hf_feature()


def _value(codec: str, value: object, **options: object) -> object:
    described = rk.default_registry().create(codec, options)
    wire = {
        name: np.asarray(v) if not isinstance(v, bytes) else v for name, v in described.encode(value).items()
    }
    assert isinstance(described, rk.HfDescribed)
    return described.hf_feature().value(wire)


def test_labels_become_class_labels_with_their_names_or_numbered_names() -> None:
    assert _feature("label", names=["cat", "dog"]).entry == {"names": ["cat", "dog"], "_type": "ClassLabel"}
    assert _feature("label", num_classes=3).entry["names"] == ["0", "1", "2"]
    assert _feature("label").entry == {"dtype": "int64", "_type": "Value"}
    multi = _feature("label", names=["a", "b", "c"], multi=True)
    assert multi.entry == {"feature": {"names": ["a", "b", "c"], "_type": "ClassLabel"}, "_type": "List"}
    assert _value("label", ["c", "a"], names=["a", "b", "c"], multi=True) == [2, 0]
    assert _value("label", "b", names=["a", "b"]) == 1


def test_tensors_become_nested_lists_with_their_fixed_lengths() -> None:
    entry = _feature("tensor", dtype="int32", shape=[None, 3]).entry
    assert entry == {
        "feature": {"feature": {"dtype": "int32", "_type": "Value"}, "_type": "List", "length": 3},
        "_type": "List",
    }
    assert _value("tensor", np.arange(6, dtype=np.int32).reshape(2, 3), dtype="int32", shape=[None, 3]) == [
        [0, 1, 2],
        [3, 4, 5],
    ]
    with pytest.raises(ValueError, match="needs the tensor's rank"):
        _feature("tensor", dtype="float32")


def test_scalars_and_text_become_values_of_their_dtype() -> None:
    assert _feature("scalar", dtype="float32").entry == {"dtype": "float32", "_type": "Value"}
    assert _feature("scalar", dtype="str").entry == {"dtype": "string", "_type": "Value"}
    assert _value("scalar", 2.5, dtype="float32") == 2.5
    assert _feature("text").entry == {"dtype": "string", "_type": "Value"}
    assert _value("text", "héllo") == "héllo"


def test_audio_is_handed_over_as_its_wav_or_flac_bytes_and_raw_pcm_is_refused() -> None:
    assert _feature("audio", sample_rate=16000).entry == {"sampling_rate": 16000, "_type": "Audio"}
    with pytest.raises(ValueError, match="holds WAV or FLAC files"):
        _feature("audio", sample_rate=16000, format="pcm")
    with pytest.raises(ValueError, match="holds WAV or FLAC files"):
        _feature("audio", sample_rate=16000, stored="float_samples")
