"""Tests of the ``audio`` codec: real WAV/FLAC/OGG files made with soundfile, real
TFRecord files and batched tf.data pipelines."""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import soundfile as sf
from _codec_io import (
    SingleField,
    assert_stored_near_payload,
    bind,
    read_numpy,
    read_tf,
    run_doc_example_first,
    write,
)
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import recordkit as rk
from recordkit.format._example import (  # private: builds and reads Example bytes by hand
    decode_example,
    encode_example,
    encode_feature,
)
from recordkit.read._numpy_decode import (  # private: decodes as the numpy reader does, no dataset
    decode_record_numpy,
)
from recordkit.testing import BadInput, CodecCase, check_codec
from recordkit_codecs.audio import AudioCodec

FIELD = "speech"
RATE = 16000


def samples(count: int, channels: int = 1, seed: int = 0) -> np.ndarray:
    """int16 noise covering the whole range, [count, channels]."""
    rng = np.random.default_rng(seed)
    return rng.integers(-32768, 32768, (count, channels), dtype=np.int16)


def audio_file(data: np.ndarray, fmt: str, rate: int = RATE, subtype: str | None = "PCM_16") -> bytes:
    buffer = io.BytesIO()
    sf.write(buffer, data, rate, format=fmt, subtype=subtype)
    return buffer.getvalue()


def as_float(data: np.ndarray) -> np.ndarray:
    return data.astype(np.float32) / 32768


@pytest.mark.parametrize("fmt", ["wav", "flac", "pcm"])
@pytest.mark.parametrize("channels", [1, 2])
def test_round_trip_is_exact_to_the_sample(
    audio_field: SingleField, tmp_path: Path, fmt: str, channels: int
) -> None:
    import tensorflow as tf

    clips = [samples(n, channels, seed) for seed, n in enumerate((100, 37, 250))]
    path = tmp_path / "clip.wav"
    path.write_bytes(audio_file(clips[2], "WAV"))
    values = [clips[0], audio_file(clips[1], "FLAC"), path]
    (batch,), numpy_values = audio_field.round_trip(tmp_path, values, format=fmt, channels=channels)
    assert isinstance(batch, tf.RaggedTensor)
    assert batch.shape.as_list() == [3, None, channels]
    assert batch.dtype == tf.float32
    for i, clip in enumerate(clips):
        np.testing.assert_array_equal(batch[i].numpy(), as_float(clip))
        np.testing.assert_array_equal(numpy_values[i], as_float(clip))
        np.testing.assert_array_equal(np.round(numpy_values[i] * 32768).astype(np.int16), clip)


def test_only_flac_leaves_the_graph() -> None:
    assert AudioCodec({"sample_rate": RATE, "format": "wav"}).wire_spec().in_graph
    assert AudioCodec({"sample_rate": RATE, "format": "pcm"}).wire_spec().in_graph
    assert not AudioCodec({"sample_rate": RATE, "format": "flac"}).wire_spec().in_graph


def test_stored_bytes_are_the_declared_format(audio_field: SingleField) -> None:
    clip = samples(200, 2)
    for fmt, start in (("wav", b"RIFF"), ("flac", b"fLaC")):
        data = rk.RecordEncoder(audio_field.bound(format=fmt, channels=2)).encode({FIELD: clip})
        stored = decode_example(data)[FIELD][1][0]
        assert stored.startswith(start)
        read, rate = sf.read(io.BytesIO(stored), dtype="int16", always_2d=True)
        assert rate == RATE
        assert np.array_equal(read, clip)
    pcm = rk.RecordEncoder(audio_field.bound(format="pcm", channels=2)).encode({FIELD: clip})
    assert decode_example(pcm)[FIELD][1][0] == clip.astype("<i2").tobytes()


def test_the_rate_comes_with_the_array_as_a_tuple_or_dict(audio_field: SingleField, tmp_path: Path) -> None:
    clip = samples(50)
    values = [(clip, RATE), {"samples": clip[:, 0], "sample_rate": RATE}, {"samples": clip}, clip[:, 0]]
    _, numpy_values = audio_field.round_trip(tmp_path, values)
    for got in numpy_values:
        np.testing.assert_array_equal(got, as_float(clip))


def test_float_samples(audio_field: SingleField, tmp_path: Path) -> None:
    clip = samples(64, 2, 4)
    exact = as_float(clip)  # floats that came from int16 come back exactly
    loud = exact.copy()
    loud[3, 1] = 1.5
    loud[5, 0] = -2.0
    (batch,), numpy_values = audio_field.round_trip(tmp_path, [exact, exact.astype(np.float64)], channels=2)
    np.testing.assert_array_equal(numpy_values[0], exact)
    np.testing.assert_array_equal(numpy_values[1], exact)
    np.testing.assert_array_equal(batch[0].numpy(), exact)
    assert "float samples must be in [-1, 1], got a peak of 2" in str(audio_field.error(loud, channels=2))
    _, (clipped,) = audio_field.round_trip(tmp_path, [loud], channels=2, clip=True)
    np.testing.assert_array_equal(clipped, np.clip(np.round(loud * 32768), -32768, 32767) / 32768)
    assert "NaN or infinite" in str(audio_field.error(np.array([0.0, np.nan], np.float32)))


def test_ogg_input_is_decoded_and_stored_as_pcm(audio_field: SingleField, tmp_path: Path) -> None:
    t = np.arange(RATE // 4) / RATE
    tone = (0.5 * np.sin(2 * np.pi * 440 * t)).astype(np.float32)
    ogg = audio_file(tone, "OGG", subtype="VORBIS")
    assert ogg.startswith(b"OggS")
    (batch,), (decoded,) = audio_field.round_trip(tmp_path, [ogg])
    assert decoded.shape == (len(tone), 1)
    np.testing.assert_array_equal(batch[0].numpy(), decoded)
    assert np.abs(decoded[:, 0] - tone).max() < 0.05  # lossy, but the same tone


def test_wrong_rate_and_channels_are_refused(audio_field: SingleField, tmp_path: Path) -> None:
    wav8k = audio_file(samples(80), "WAV", rate=8000)
    message = "sample rate is 8000 Hz, the schema declares 16000 Hz"
    assert message in str(audio_field.error(wav8k))
    assert message in str(audio_field.error((samples(80), 8000)))
    assert message in str(audio_field.error({"samples": samples(80), "sample_rate": 8000}))
    path = tmp_path / "stereo.flac"
    path.write_bytes(audio_file(samples(80, 2), "FLAC"))
    assert "audio has 2 channel(s), the schema declares 1" in str(audio_field.error(path))
    assert "a 1-D array is mono" in str(audio_field.error(samples(80)[:, 0], channels=2))
    assert "transpose a channels-first array" in str(audio_field.error(samples(80, 2).T, channels=2))


def test_bad_inputs_are_refused(audio_field: SingleField, tmp_path: Path) -> None:
    assert "unsupported audio bytes: not WAV, FLAC or OGG" in str(
        audio_field.error(b"ID3\x03\x00\x00 mp3 data")
    )
    wav = audio_file(samples(80), "WAV")
    assert "corrupt or unreadable WAV audio" in str(audio_field.error(wav[:12] + b"garbage!" * 4))
    assert "int16 or float" in str(audio_field.error(samples(8).astype(np.int32)))
    assert "no samples" in str(audio_field.error(np.zeros((0, 1), np.int16)))
    assert "cannot read audio file" in str(audio_field.error(tmp_path / "missing.wav"))
    assert "(samples, sample_rate)" in str(audio_field.error((samples(8), RATE, 1)))
    assert "the sample rate must be an int" in str(audio_field.error((samples(8), 16000.0)))
    assert "keys 'samples' and 'sample_rate'" in str(audio_field.error({"audio": samples(8)}))
    assert "got shape (2, 2, 2)" in str(audio_field.error(np.zeros((2, 2, 2), np.int16)))
    assert "expected a path, encoded audio bytes" in str(audio_field.error([0.1, 0.2]))


@pytest.mark.parametrize("fmt", ["wav", "flac", "pcm"])
def test_decoding_checks_the_stored_length(audio_field: SingleField, fmt: str) -> None:
    import tensorflow as tf

    bound = audio_field.bound(format=fmt)
    data = rk.RecordEncoder(bound).encode({FIELD: samples(20)})
    stored = decode_example(data)[FIELD][1][0]
    wrong = encode_example(
        [
            (FIELD.encode(), encode_feature(rk.WireKind.BYTES, [stored])),
            (f"{FIELD}/num_samples".encode(), encode_feature(rk.WireKind.INT64, np.array([21]))),
        ]
    )
    dataset = tf.data.Dataset.from_tensors([data, wrong]).map(rk.make_parser(bound))
    with pytest.raises(tf.errors.OpError, match="audio codec"):
        list(dataset)
    with pytest.raises(rk.errors.DecodeError, match=r"field 'speech'.*audio codec"):
        decode_record_numpy(bound.fields, wrong)


def test_a_wav_at_another_rate_fails_to_decode(audio_field: SingleField) -> None:
    import tensorflow as tf

    bound = audio_field.bound()
    wav8k = audio_file(samples(20), "WAV", rate=8000)
    foreign = encode_example(
        [
            (FIELD.encode(), encode_feature(rk.WireKind.BYTES, [wav8k])),
            (f"{FIELD}/num_samples".encode(), encode_feature(rk.WireKind.INT64, np.array([20]))),
        ]
    )
    with pytest.raises(tf.errors.InvalidArgumentError, match="sample rate is not 16000 Hz"):
        rk.make_parser(bound)(tf.constant([foreign]))
    with pytest.raises(rk.errors.DecodeError, match="8000 Hz, the schema declares 16000 Hz"):
        decode_record_numpy(bound.fields, foreign)


def _stored_wav(wav: bytes, count: int) -> bytes:
    """An Example holding ``wav`` as the field's stored bytes, as a foreign writer may."""
    return encode_example(
        [
            (FIELD.encode(), encode_feature(rk.WireKind.BYTES, [wav])),
            (f"{FIELD}/num_samples".encode(), encode_feature(rk.WireKind.INT64, np.array([count]))),
        ]
    )


@pytest.mark.parametrize("channels", [1, 2])
def test_canonical_wavs_decode_without_soundfile_to_its_values(
    audio_field: SingleField, channels: int
) -> None:
    """The numpy reader takes the samples of a canonical WAV (the 44-byte header the codec
    writes) straight from the bytes; any other WAV goes to soundfile. Both give the same
    values, and the checks against the schema are the same."""
    clip = samples(333, channels, seed=channels)
    canonical = audio_file(clip, "WAV")
    riff_body = canonical[12:36] + b"LIST" + (4).to_bytes(4, "little") + b"INFO" + canonical[36:]
    with_metadata = b"RIFF" + (len(riff_body) + 4).to_bytes(4, "little") + b"WAVE" + riff_body
    bound = audio_field.bound(channels=channels)
    fast = decode_record_numpy(bound.fields, _stored_wav(canonical, 333))[FIELD]
    read_by_soundfile = decode_record_numpy(bound.fields, _stored_wav(with_metadata, 333))[FIELD]
    assert fast.dtype == read_by_soundfile.dtype == np.float32
    np.testing.assert_array_equal(fast, read_by_soundfile)
    np.testing.assert_array_equal(fast, as_float(clip))
    for wav in (canonical, with_metadata):
        with pytest.raises(rk.errors.DecodeError, match=f"decoded 333 samples x {channels} channel"):
            decode_record_numpy(audio_field.bound(channels=3).fields, _stored_wav(wav, 333))
        with pytest.raises(rk.errors.DecodeError, match="stores num_samples 334"):
            decode_record_numpy(bound.fields, _stored_wav(wav, 334))


@pytest.mark.parametrize("channels", [1, 2])
def test_a_batch_of_one_decodes_as_its_record_does_in_a_larger_batch(
    audio_field: SingleField, channels: int
) -> None:
    """A reader decoding record by record gives the codec batches of static size 1,
    which take a shorter path (``decode_wav_one``): canonical WAVs and others (a
    metadata chunk before the samples) give the values and the errors of a larger
    batch, eagerly and inside a tf.data graph."""
    import tensorflow as tf

    clip = samples(333, channels, seed=channels)
    canonical = audio_file(clip, "WAV")
    riff_body = canonical[12:36] + b"LIST" + (4).to_bytes(4, "little") + b"INFO" + canonical[36:]
    with_metadata = b"RIFF" + (len(riff_body) + 4).to_bytes(4, "little") + b"WAVE" + riff_body
    parse = rk.make_parser(audio_field.bound(channels=channels))
    records = [_stored_wav(canonical, 333), _stored_wav(with_metadata, 333)]
    batch = parse(tf.constant(records))[FIELD]
    in_graph = tf.data.Dataset.from_tensor_slices(records).batch(1, drop_remainder=True).map(parse)
    for record, row, from_graph in zip(records, batch, in_graph, strict=True):
        one = parse(tf.constant([record]))[FIELD]  # static shape [1]
        for got in (one, from_graph[FIELD]):
            assert isinstance(got, tf.RaggedTensor)
            np.testing.assert_array_equal(got.row_splits.numpy(), [0, 333])
            np.testing.assert_array_equal(got.values.numpy(), row.numpy())
            np.testing.assert_array_equal(got.values.numpy(), as_float(clip))
    wav8k = audio_file(clip, "WAV", rate=8000)
    wrong: list[tuple[bytes, int, str | None]] = [
        (canonical, 334, "differs from num_samples"),
        # count x frame bytes wraps around int64 to the data's size: still refused.
        (canonical, 2**62 + 333, "differs from num_samples"),
        (with_metadata, 334, "differs from num_samples"),
        (wav8k, 333, "sample rate is not 16000 Hz"),
        (canonical[:40], 0, None),  # shorter than a header: tf.audio.decode_wav refuses it
    ]
    for wav, count, message in wrong:
        with pytest.raises(tf.errors.InvalidArgumentError, match=message):
            parse(tf.constant([_stored_wav(wav, count)]))
        graph = tf.data.Dataset.from_tensors([_stored_wav(wav, count)]).map(parse)
        with pytest.raises(tf.errors.InvalidArgumentError, match=message):
            list(graph)


def test_stored_bytes_are_the_payload(audio_field: SingleField) -> None:
    t = np.arange(4000) / RATE
    tone = np.stack([np.sin(2 * np.pi * 220 * t), np.sin(2 * np.pi * 330 * t)], -1) * 0.5
    clip = np.round(tone * 32767).astype(np.int16)
    sizes = {}
    for fmt in ("wav", "flac", "pcm"):
        bound = audio_field.bound(format=fmt, channels=2)
        data = rk.RecordEncoder(bound).encode({FIELD: clip})
        payload = decode_example(data)[FIELD][1][0]
        framing = sum(len(key) + 16 for key in bound[FIELD].keys)
        sizes[fmt] = rk.byte_breakdown(bound, data)[FIELD]
        assert len(payload) <= sizes[fmt] <= len(payload) * 1.01 + framing
    # 16 bits a sample plus a header, never an int64 list (up to 10 bytes a sample); FLAC smaller.
    assert sizes["pcm"] < sizes["wav"] <= clip.size * 2 + 100
    assert sizes["flac"] < sizes["pcm"] / 2


@pytest.mark.parametrize("fmt", ["wav", "flac", "pcm"])
def test_a_long_clip_costs_its_encoded_bytes_by_the_byte_breakdown(
    audio_field: SingleField, fmt: str
) -> None:
    """Twenty seconds of stereo speech-like audio: the field's share of the record
    (rk.byte_breakdown) is the stored file plus a few bytes; WAV and PCM take 2 bytes a
    sample (never an int64 or float list), FLAC less."""
    t = np.arange(20 * RATE) / RATE
    envelope = 0.5 + 0.5 * np.sin(2 * np.pi * 3 * t)
    tone = np.stack([np.sin(2 * np.pi * 220 * t), np.sin(2 * np.pi * 331 * t)], -1) * envelope[:, None]
    clip = np.round(tone * 12000).astype(np.int16)
    bound = audio_field.bound(format=fmt, channels=2)
    payload = AudioCodec({"sample_rate": RATE, "channels": 2, "format": fmt}).encode(clip)[""]
    share = assert_stored_near_payload(bound, FIELD, clip, len(payload))
    assert share - len(payload) < 60
    if fmt == "flac":
        assert share < clip.nbytes / 2
    else:
        assert share <= clip.nbytes + 44 + 60


def test_optional_and_default_fields(tmp_path: Path) -> None:
    """An optional clip is absent (presence flag False, None in numpy) where a record
    leaves it out; a field with a default (the path of a WAV file) gets it."""
    silence = np.zeros((5, 1), np.int16)
    default_path = tmp_path / "silence.wav"
    default_path.write_bytes(audio_file(silence, "WAV"))
    options = {"sample_rate": RATE, "format": "flac"}
    bound = rk.Schema(
        name="speech",
        fields={
            "maybe": rk.FieldSpec(codec="audio", options=options, optional=True),
            "speech": rk.FieldSpec(codec="audio", options={"sample_rate": RATE}, default=str(default_path)),
        },
    ).bind()
    first, second = samples(30, 1, 1), samples(12, 1, 2)
    records: list[dict[str, Any]] = [{"maybe": first, "speech": second}, {}, {"maybe": (second, RATE)}]
    path = write(bound, records, tmp_path / "optional.tfrecord")

    (batch,) = read_tf(bound, path, batch=3)
    assert batch["maybe/present"].numpy().tolist() == [True, False, True]
    assert batch["maybe"].row_lengths().numpy().tolist() == [30, 0, 12]
    np.testing.assert_array_equal(batch["maybe"][2].numpy(), as_float(second))
    assert batch["speech"].row_lengths().numpy().tolist() == [12, 5, 5]
    np.testing.assert_array_equal(batch["speech"][1].numpy(), as_float(silence))

    rows = read_numpy(bound, path)
    assert [r["maybe"] is None for r in rows] == [False, True, False]
    np.testing.assert_array_equal(rows[0]["maybe"], as_float(first))
    np.testing.assert_array_equal(rows[2]["speech"], as_float(silence))


@given(
    hnp.arrays(np.int16, st.tuples(st.integers(1, 64), st.sampled_from([1, 2]))),
    st.sampled_from(["wav", "flac", "pcm"]),
)
def test_round_trip_property(clip: np.ndarray, fmt: str) -> None:
    codec = AudioCodec({"sample_rate": RATE, "channels": clip.shape[1], "format": fmt})
    wire = codec.encode(clip)
    assert wire["num_samples"] == clip.shape[0]
    np.testing.assert_array_equal(codec.decode_numpy(wire), as_float(clip))


@given(hnp.arrays(np.int16, st.tuples(st.integers(1, 32), st.just(2))))
def test_in_graph_round_trip_property(clip: np.ndarray) -> None:
    import tensorflow as tf

    for fmt in ("wav", "pcm"):
        codec = AudioCodec({"sample_rate": RATE, "channels": 2, "format": fmt})
        wire = codec.encode(clip)
        batch = {"": tf.constant([wire[""]]), "num_samples": tf.constant([wire["num_samples"]], tf.int64)}
        np.testing.assert_array_equal(codec.decode_tf(batch)[0].numpy(), as_float(clip))


def check_stereo_conformance(options: dict[str, Any], tmp_path: Path, *bad: BadInput) -> None:
    """The conformance kit on three stereo clips given as an int16 array, WAV bytes and a
    float array with its rate; a wrong rate and a wrong channel count are refused, and
    so is each of ``bad``."""
    clips = [samples(30, 2, 1), samples(7, 2, 2), samples(12, 2, 3)]
    check_codec(
        AudioCodec({"sample_rate": RATE, "channels": 2, **options}),
        cases=[
            CodecCase(clips[0], expected=as_float(clips[0]), id="int16 array"),
            CodecCase(audio_file(clips[1], "WAV"), expected=as_float(clips[1]), id="wav bytes"),
            CodecCase((as_float(clips[2]), RATE), expected=as_float(clips[2]), id="float array with rate"),
        ],
        bad_inputs=[
            BadInput((clips[0], 44100), match="sample rate is 44100 Hz"),
            BadInput(clips[0][:, :1], match="1 channel"),
            *bad,
        ],
        tmp_path=tmp_path,
    )


@pytest.mark.parametrize("fmt", ["wav", "flac", "pcm"])
def test_conformance(tmp_path: Path, fmt: str) -> None:
    check_stereo_conformance(
        {"format": fmt}, tmp_path, BadInput(b"not audio at all", match="unsupported audio bytes")
    )


# -- docs --------------------------------------------------------------------------------------


def test_docs_page_examples_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """docs/codecs/audio.md: the example runs and prints what the page says (the other
    snippets run after it, on its results)."""
    namespace = run_doc_example_first("audio.md", tmp_path, monkeypatch)
    printed = capsys.readouterr().out
    lines = printed.splitlines()
    assert lines[:2] == ["(2, None, 1)", "[4000 1600]"]
    assert lines[2].startswith("record 2, field 'tone': sample rate is 8000 Hz, the schema declares 16000 Hz")
    assert len(namespace["tones"]) == 2


def test_a_truncated_wav_is_refused_not_shortened(audio_field: SingleField) -> None:
    """The data chunk announces more frames than the bytes hold: an error, never silently
    fewer samples."""
    buffer = io.BytesIO()
    sf.write(buffer, np.zeros(1600, np.int16), RATE, format="WAV", subtype="PCM_16")
    wav = buffer.getvalue()
    assert "truncated WAV audio" in str(audio_field.error(wav[: len(wav) - 100]))


def test_a_canonical_wav_is_stored_as_given_and_others_are_rewritten(audio_field: SingleField) -> None:
    clip = samples(300, 2)
    canonical = audio_file(clip, "WAV")  # soundfile writes the plain 44-byte header
    assert audio_field.stored_bytes(canonical, channels=2) == canonical
    # The same audio with a metadata chunk before the samples: stored canonical.
    riff_body = canonical[12:36] + b"LIST" + (4).to_bytes(4, "little") + b"INFO" + canonical[36:]
    with_metadata = b"RIFF" + (len(riff_body) + 4).to_bytes(4, "little") + b"WAVE" + riff_body
    assert audio_field.stored_bytes(with_metadata, channels=2) == canonical


def test_a_canonical_wav_is_still_checked(audio_field: SingleField) -> None:
    wav = audio_file(samples(100), "WAV", rate=8000)
    assert "sample rate is 8000 Hz, the schema declares 16000 Hz" in str(audio_field.error(wav))
    mono = audio_file(samples(100), "WAV")
    assert "audio has 1 channel(s), the schema declares 2" in str(audio_field.error(mono, channels=2))
    assert "the audio has no samples" in str(audio_field.error(audio_file(samples(0), "WAV")))


@pytest.mark.parametrize(
    ("options", "reason"),
    [
        ({"sample_rate": 10**10}, "option sample_rate: Input should be less than or equal to 768000"),
        ({"sample_rate": 768_000, "format": "flac"}, "flac stores at most 8 channels at up to 655350 Hz"),
        ({"sample_rate": 16_000, "channels": 9, "format": "flac"}, "asked: 9 at 16000 Hz"),
    ],
)
def test_rates_and_channels_beyond_the_formats_limits_are_refused_with_the_options(
    options: dict[str, Any], reason: str
) -> None:
    with pytest.raises(rk.errors.CodecOptionsError, match=re.escape(reason)):
        AudioCodec(options)
    assert AudioCodec({"sample_rate": 768_000, "format": "wav"}).options.sample_rate == 768_000


@pytest.mark.parametrize("stored", ["int_samples", "float_samples"])
def test_conformance_samples_stored_as_numbers(tmp_path: Path, stored: str) -> None:
    """``stored``: samples as a flat list of numbers (TFDS's Audio), no num_samples."""
    check_stereo_conformance({"stored": stored}, tmp_path)


def test_int_samples_are_stored_flat_and_checked_on_read() -> None:
    import tensorflow as tf

    bound = bind(
        a={"codec": "audio", "options": {"sample_rate": RATE, "channels": 2, "stored": "int_samples"}}
    )
    clip = samples(5, 2, 4)
    example = decode_example(rk.RecordEncoder(bound).encode({"a": clip}))
    assert list(example) == ["a"]  # no num_samples
    assert [int(v) for v in example["a"][1]] == clip.reshape(-1).tolist()
    odd = encode_example([(b"a", encode_feature(rk.WireKind.INT64, np.array([1, 2, 3])))])
    with pytest.raises(rk.errors.DecodeError, match="not a whole number of frames"):
        decode_record_numpy(bound.fields, odd)
    loud = encode_example([(b"a", encode_feature(rk.WireKind.INT64, np.array([40000, 0])))])
    with pytest.raises(rk.errors.DecodeError, match="beyond 16 bits"):
        decode_record_numpy(bound.fields, loud)
    codec = AudioCodec({"sample_rate": RATE, "channels": 2, "stored": "int_samples"})
    wire = {"": tf.ragged.constant([[40000, 0]], dtype=tf.int64)}
    with pytest.raises(tf.errors.InvalidArgumentError, match="beyond 16 bits"):
        codec.decode_tf(wire)


def _decode_ops(parse: Any) -> set[str]:
    """The op types of ``parse``'s graph on a batch of serialized records, with those of
    the functions it calls (a ``tf.cond``'s branches)."""
    import tensorflow as tf

    graph = tf.function(parse).get_concrete_function(tf.TensorSpec([None], tf.string)).graph
    ops = {op.type for op in graph.get_operations()}
    for function in graph.as_graph_def().library.function:
        ops.update(node.op for node in function.node_def)
    return ops


@pytest.mark.parametrize("channels", [1, 2])
def test_a_dataset_recordkit_wrote_decodes_its_wavs_without_the_choice(
    audio_field: SingleField, tmp_path: Path, channels: int
) -> None:
    """Every WAV the audio codec stores is canonical, so the records of a dataset it wrote
    (bound with the manifest's codec version) are decoded without ``tf.audio.decode_wav``
    and its ``tf.cond``: the same values, and a WAV that is not canonical is an error
    there, while other tools' records (no version known) keep the choice."""
    import tensorflow as tf

    schema = audio_field.schema(channels=channels)
    clips = [samples(n, channels, seed=n) for n in (333, 10, 1000)]
    rk.write_dataset([{FIELD: clip} for clip in clips], schema, tmp_path / "ds", progress=False)
    manifest = rk.Manifest.load(tmp_path / "ds")
    assert manifest.codec_versions == {"audio": "1"}
    written = schema.bind(versions=manifest.codec_versions)
    assert written[FIELD].codec == schema.bind()[FIELD].codec  # the same options
    assert written[FIELD].codec.decode_tf_source().constants["canonical_only"] is True
    assert "canonical_only" not in schema.bind()[FIELD].codec.decode_tf_source().constants
    assert "DecodeWav" in _decode_ops(rk.make_parser(schema.bind()))
    assert "DecodeWav" not in _decode_ops(rk.make_parser(written))
    for batch_size in (None, 2):
        rows = [r[FIELD] for r in rk.load_dataset(tmp_path / "ds", batch_size=batch_size)]
        got = [
            row.numpy().reshape(-1, channels) for batch in rows for row in (batch if batch_size else [batch])
        ]
        for clip, values in zip(clips, got, strict=True):
            np.testing.assert_array_equal(values[: len(clip)], as_float(clip))
    canonical = audio_file(clips[0], "WAV")
    riff_body = canonical[12:36] + b"LIST" + (4).to_bytes(4, "little") + b"INFO" + canonical[36:]
    with_metadata = b"RIFF" + (len(riff_body) + 4).to_bytes(4, "little") + b"WAVE" + riff_body
    records = [_stored_wav(canonical, 333), _stored_wav(with_metadata, 333)]
    general = rk.make_parser(schema.bind())(tf.constant(records))[FIELD]
    np.testing.assert_array_equal(general[1].numpy().reshape(-1, channels), as_float(clips[0]))
    parse = rk.make_parser(written)
    for batch in (records, records[1:]):  # a batch, and a batch of one (decode_wav_one)
        with pytest.raises(tf.errors.InvalidArgumentError, match="not the canonical one recordkit writes"):
            parse(tf.constant(batch))
    np.testing.assert_array_equal(parse(tf.constant(records[:1]))[FIELD].values.numpy(), general[0].numpy())


def test_only_wav_reads_differ_by_the_stored_version() -> None:
    for options in ({"format": "pcm"}, {"format": "flac"}, {"stored": "int_samples"}):
        codec = AudioCodec({"sample_rate": RATE, **options})
        reader = codec.for_stored_version("1")
        assert reader == codec
        source = reader.decode_tf_source()
        assert source is None or "canonical_only" not in source.constants
    with pytest.raises(rk.errors.CodecVersionError, match="stored by version 2 of codec 'audio'"):
        AudioCodec({"sample_rate": RATE}).for_stored_version("2")
