"""The ``audio`` codec: a waveform per record, stored as 16-bit WAV, FLAC or raw PCM bytes.

A record gives a path, encoded bytes (WAV, FLAC or OGG) or a numpy array of samples
(``[samples]`` or ``[samples, channels]``, int16 or float in [-1, 1]). An array carries
its sample rate as a tuple ``(array, rate)`` or a dict ``{"samples": array,
"sample_rate": rate}``; a bare array is taken to be at the schema's rate. The schema
declares ``sample_rate`` and ``channels`` and every record is checked against them: a
mismatch is an error, never a silent resample or remix.

What is stored is 16-bit PCM in the chosen ``format`` under the field's own key, with
the number of samples (per channel) in ``num_samples``:

* ``wav``: a standard WAV file, decoded inside the TensorFlow graph (``tf.audio.decode_wav``);
* ``flac``: lossless and smaller; TensorFlow has no FLAC op, so reading calls soundfile
  through ``tf.numpy_function`` (works in tf.data, but holds the GIL and cannot be
  saved in a SavedModel: the wire spec says ``in_graph=False``);
* ``pcm``: raw int16 little-endian samples, interleaved, decoded in the graph with
  ``tf.io.decode_raw``.

Decoding gives float32 ``[samples, channels]`` in [-1, 1) (int16 / 32768); a TensorFlow
batch is a ``tf.RaggedTensor`` ``[B, (samples), channels]``.

``stored`` reads (and writes) samples stored as numbers instead of encoded bytes, as
TensorFlow Datasets stores its ``Audio`` features: ``int_samples`` is a flat int64 list
of 16-bit samples (channels interleaved), decoded as int / 32768 (a value outside the
16-bit range is a decode error); ``float_samples`` a flat float list, decoded as it is.
No ``num_samples`` is stored then: the list's length gives it.
"""

from __future__ import annotations

import io
import math
import struct
import wave
from collections.abc import Mapping
from typing import Any, Literal

import numpy as np
import pydantic

import recordkit as rk
from recordkit_codecs._hf import encoded_bytes
from recordkit_codecs._inputs import read_input_bytes
from recordkit_codecs._tf_audio import decode_wav_batch, decode_wav_one, not_canonical_message

__all__ = ["AudioCodec", "AudioOptions"]

_SCALE = 32768.0
_INVERSE_SCALE = np.float32(1 / _SCALE)
_SF_FORMATS = {"wav": "WAV", "flac": "FLAC"}
_FLAC_MAX_RATE = 655_350
_FLAC_MAX_CHANNELS = 8


class AudioOptions(rk.CodecOptions):
    """Options of the ``audio`` codec."""

    format: Literal["wav", "flac", "pcm"] = pydantic.Field(
        default="wav",
        description="wav (decoded in-graph), flac (lossless, smaller, read via Python), pcm (raw int16).",
    )
    sample_rate: int = pydantic.Field(
        ge=1, le=768_000, description="Samples per second every record must have (at most 768 kHz)."
    )
    channels: int = pydantic.Field(default=1, ge=1, le=64, description="Channels every record must have.")
    subtype: Literal["PCM_16"] = pydantic.Field(
        default="PCM_16", description="Sample encoding of what is stored; 16-bit PCM is the one supported."
    )
    clip: bool = pydantic.Field(
        default=False, description="Clip float samples outside [-1, 1] instead of refusing them."
    )
    stored: Literal["encoded", "int_samples", "float_samples"] = pydantic.Field(
        default="encoded",
        description=(
            "encoded: the audio in format, with num_samples; int_samples (16-bit values) or "
            "float_samples: a flat list of numbers, as TensorFlow Datasets stores Audio."
        ),
    )

    @pydantic.model_validator(mode="after")
    def _within_flac_limits(self) -> AudioOptions:
        """FLAC stores at most 8 channels at up to 655,350 Hz: refused here, when the schema
        is loaded, rather than by the first record written."""
        beyond = self.sample_rate > _FLAC_MAX_RATE or self.channels > _FLAC_MAX_CHANNELS
        if self.format == "flac" and self.stored == "encoded" and beyond:
            raise ValueError(
                f"flac stores at most {_FLAC_MAX_CHANNELS} channels at up to {_FLAC_MAX_RATE} Hz "
                f"(asked: {self.channels} at {self.sample_rate} Hz); use format wav or pcm"
            )
        return self


class AudioCodec(rk.Codec[AudioOptions]):
    """A waveform stored as 16-bit PCM (WAV, FLAC or raw), checked against the schema's rate."""

    name = "audio"
    version = "1"

    def data_type(self) -> str:
        """The Croissant data type of its values (:class:`recordkit.DataTyped`)."""
        return "sc:AudioObject"

    options_model = AudioOptions
    summary = "a waveform stored as 16-bit WAV, FLAC or raw PCM bytes"
    #: Whether the WAVs to decode are known to be canonical: set on the codec that
    #: :meth:`for_stored_version` gives for a dataset this codec wrote.
    _canonical_wavs = False

    def wire_spec(self) -> rk.WireSpec:
        if self.options.stored != "encoded":
            kind = rk.WireKind.INT64 if self.options.stored == "int_samples" else rk.WireKind.FLOAT
            what = "the samples as a flat list, channels interleaved"
            return rk.WireSpec((rk.WireFeature("", kind, (None,), what),))
        return rk.WireSpec(
            (
                rk.WireFeature("", rk.WireKind.BYTES, (), f"the audio as 16-bit {self.options.format}"),
                rk.WireFeature("num_samples", rk.WireKind.INT64, (), "samples per channel"),
            ),
            in_graph=self.options.format != "flac",
        )

    # -- encode ----------------------------------------------------------------------

    # -- showing, counting and converting (optional capabilities) ------------------

    def sound(self, value: Any) -> tuple[np.ndarray, int]:
        """The samples and the field's sample rate (rk.Audible)."""
        return np.asarray(value), self.options.sample_rate

    def hf_feature(self) -> rk.HfFeature:
        """Hugging Face's ``Audio`` at the field's sample rate, holding the stored WAV or
        FLAC bytes as they are (rk.HfDescribed); raw PCM and samples stored as numbers
        are not a file Hugging Face decodes."""
        if self.options.stored != "encoded" or self.options.format == "pcm":
            raise ValueError(
                "Hugging Face's Audio holds WAV or FLAC files (stored: encoded, format wav or flac)"
            )
        return rk.HfFeature({"sampling_rate": self.options.sample_rate, "_type": "Audio"}, encoded_bytes)

    def summarize(self, value: Any) -> rk.Statistics:
        """The duration in seconds (rk.Summarized)."""
        return {"duration_s": [np.asarray(value).shape[0] / self.options.sample_rate]}

    def to_native(self, request: rk.NativeRequest) -> rk.NativeField:
        """Samples stay as they are stored, or become WAV or FLAC files when asked
        (rk.Convertible)."""
        options = dict(request.options)
        if request.audio is not None:
            options.pop("stored", None)
            options["format"] = request.audio
        return rk.NativeField(options)

    def encode(self, value: Any) -> rk.WireValues:
        data = read_input_bytes(value, "audio")
        if self.options.stored != "encoded":
            samples = self._from_bytes(data) if data is not None else self._samples(value)
            if self.options.stored == "int_samples":
                return {"": samples.reshape(-1).astype(np.int64)}
            return {"": samples.reshape(-1).astype(np.float32) / np.float32(_SCALE)}
        if data is not None and self.options.format == "wav":
            header = _canonical_wav_header(data)
            if header is not None:
                # Already exactly what would be stored: keep the bytes, copy nothing.
                channels, rate, frames = header
                self._check_rate(rate)
                self._check_channels(channels)
                if frames == 0:
                    raise rk.errors.InvalidValueError("the audio has no samples")
                return {"": data, "num_samples": frames}
        samples = self._from_bytes(data) if data is not None else self._samples(value)
        if samples.shape[0] == 0:
            raise rk.errors.InvalidValueError("the audio has no samples")
        fmt = self.options.format
        if fmt == "pcm":
            data = samples.astype("<i2", copy=False).tobytes()
        elif fmt == "wav":
            data = _wav_bytes(samples, self.options.sample_rate)
        else:
            import soundfile as sf

            buffer = io.BytesIO()
            sf.write(buffer, samples, self.options.sample_rate, format=_SF_FORMATS[fmt], subtype="PCM_16")
            data = buffer.getvalue()
        return {"": data, "num_samples": samples.shape[0]}

    def _samples(self, value: Any) -> np.ndarray:
        """int16 ``[samples, channels]`` from a value that is not encoded bytes (an array,
        ``(array, rate)`` or a dict), checked against the schema."""
        rate: Any = None
        if isinstance(value, tuple):
            if len(value) != 2:
                raise rk.errors.InvalidValueError(
                    f"an audio tuple is (samples, sample_rate), got a tuple of {len(value)} items"
                )
            value, rate = value
        elif isinstance(value, Mapping):
            unknown = set(value) - {"samples", "sample_rate"}
            if "samples" not in value or unknown:
                raise rk.errors.InvalidValueError(
                    f"an audio dict has the keys 'samples' and 'sample_rate', got {sorted(value)}"
                )
            value, rate = value["samples"], value.get("sample_rate")
        if not isinstance(value, np.ndarray):
            raise rk.errors.InvalidValueError(
                "expected a path, encoded audio bytes (WAV, FLAC, OGG), a numpy array of samples, "
                f"(array, sample_rate) or {{'samples': ..., 'sample_rate': ...}}; got {type(value).__name__}"
            )
        if rate is not None:
            if isinstance(rate, bool) or not isinstance(rate, (int, np.integer)):
                raise rk.errors.InvalidValueError(f"the sample rate must be an int, got {rate!r}")
            self._check_rate(int(rate))
        return self._from_array(value)

    def _check_rate(self, rate: int) -> None:
        if rate != self.options.sample_rate:
            raise rk.errors.InvalidValueError(
                f"sample rate is {rate} Hz, the schema declares {self.options.sample_rate} Hz "
                "(recordkit never resamples: resample it first)"
            )

    def _check_channels(self, channels: int, hint: str = "") -> None:
        if channels != self.options.channels:
            raise rk.errors.InvalidValueError(
                f"audio has {channels} channel(s), the schema declares {self.options.channels}{hint}"
            )

    def _from_array(self, array: np.ndarray) -> np.ndarray:
        if array.ndim == 1:
            array = array[:, None]
            self._check_channels(1, " (a 1-D array is mono; give samples x channels)")
        elif array.ndim == 2:
            hint = " (arrays are samples x channels: transpose a channels-first array)"
            self._check_channels(array.shape[1], hint if array.shape[0] == self.options.channels else "")
        else:
            raise rk.errors.InvalidValueError(
                f"an audio array is [samples] or [samples, channels], got shape {array.shape}"
            )
        if array.dtype == np.int16:
            return np.ascontiguousarray(array)
        if array.dtype.kind != "f":
            raise rk.errors.InvalidValueError(
                f"audio samples must be int16 or float (in [-1, 1]), got dtype {array.dtype}"
            )
        # One pass finds the peak; a NaN or an infinity makes it non-finite.
        peak = float(np.max(np.abs(array))) if array.size else 0.0
        if not math.isfinite(peak):
            raise rk.errors.InvalidValueError("audio samples hold NaN or infinite values")
        if not self.options.clip and peak > 1.0:
            raise rk.errors.InvalidValueError(
                f"float samples must be in [-1, 1], got a peak of {peak:.6g} "
                "(normalise them, or set the codec option clip: true)"
            )
        return _quantize(array)

    def _from_bytes(self, data: bytes) -> np.ndarray:
        import soundfile as sf

        kind = _sniff(data)
        if kind is None:
            raise rk.errors.InvalidValueError(
                "unsupported audio bytes: not WAV, FLAC or OGG "
                f"({len(data)} bytes starting with {data[:8]!r})"
            )
        if kind == "WAV":
            samples = self._from_pcm16_wav(data)
            if samples is not None:
                return samples
        try:
            with sf.SoundFile(io.BytesIO(data)) as handle:
                self._check_rate(int(handle.samplerate))
                self._check_channels(int(handle.channels))
                exact = handle.subtype in ("PCM_16", "PCM_S8", "PCM_U8")
                samples = handle.read(dtype="int16" if exact else "float32", always_2d=True)
        except rk.errors.RecordkitError:
            raise
        except (sf.LibsndfileError, RuntimeError, ValueError, TypeError) as exc:
            raise rk.errors.InvalidValueError(f"corrupt or unreadable {kind} audio: {_reason(exc)}") from None
        if exact:
            return np.ascontiguousarray(samples)
        # Decoders of lossy or wider formats may overshoot [-1, 1] a little: clip those.
        return _quantize(samples)

    def _from_pcm16_wav(self, data: bytes) -> np.ndarray | None:
        """The samples of a plain 16-bit PCM WAV, read with the standard library's
        ``wave`` (ten times faster than a soundfile round trip); None for any other WAV
        flavour (float, 24-bit, extensible ...), which soundfile then reads."""
        try:
            with wave.open(io.BytesIO(data)) as handle:
                if handle.getsampwidth() != 2:
                    return None
                self._check_rate(handle.getframerate())
                channels = handle.getnchannels()
                self._check_channels(channels)
                frames = handle.getnframes()
                raw = handle.readframes(frames)
        except rk.errors.RecordkitError:
            raise
        except (wave.Error, EOFError, RuntimeError, ValueError, struct.error):
            return None  # not plain or not readable by wave: soundfile decides and explains
        if len(raw) != frames * channels * 2:
            raise rk.errors.InvalidValueError(
                f"corrupt or truncated WAV audio: the header announces {frames} frames, "
                f"{len(raw) // (2 * channels)} are present"
            )
        return np.frombuffer(raw, dtype="<i2").reshape(-1, channels)

    # -- decode ----------------------------------------------------------------------

    def decode_numpy(self, wire: Mapping[str, Any]) -> np.ndarray:
        if self.options.stored != "encoded":
            return self._decode_samples(np.asarray(wire[""]).reshape(-1))
        samples = _decode_one(wire[""], int(wire["num_samples"]), self.options, rk.errors.DecodeError)
        # int16 * 2**-15 in float32 is exact: the same values as int16 / 32768, in one pass.
        out: np.ndarray = np.multiply(samples, _INVERSE_SCALE, dtype=np.float32)
        return out

    def _decode_samples(self, values: np.ndarray) -> np.ndarray:
        """Samples stored as numbers (``stored``) to float32 ``[samples, channels]``."""
        channels = self.options.channels
        if values.size % channels:
            raise rk.errors.DecodeError(
                f"audio codec: {values.size} stored samples are not a whole number of frames of "
                f"{channels} channel(s)"
            )
        if self.options.stored == "float_samples":
            return values.astype(np.float32).reshape(-1, channels)
        if values.size and (values.min() < -_SCALE or values.max() >= _SCALE):
            raise rk.errors.DecodeError(
                f"audio codec: stored int samples range from {values.min()} to {values.max()}, "
                "beyond 16 bits (-32768..32767)"
            )
        scaled: np.ndarray = values.astype(np.float32) / np.float32(_SCALE)
        return scaled.reshape(-1, channels)

    def decode_tf_source(self) -> rk.DecodeSource | None:
        """:func:`decode_audio_tf` with this field's format, channels and rate: what
        decode_tf runs for WAV and PCM and ``recordkit codegen`` copies (with the batched
        WAV decode it calls); :func:`decode_audio_samples_tf` for samples stored as
        numbers. None for FLAC, which no TensorFlow op reads."""
        options = self.options
        if options.stored != "encoded":
            return rk.DecodeSource(
                decode_audio_samples_tf,
                {"channels": options.channels, "scale": options.stored == "int_samples"},
            )
        if options.format == "flac":
            return None
        arguments = {"fmt": options.format, "channels": options.channels, "sample_rate": options.sample_rate}
        if self._canonical_wavs and options.format == "wav":
            arguments["canonical_only"] = True
        helpers = (decode_wav_batch, decode_wav_one, not_canonical_message)
        return rk.DecodeSource(decode_audio_tf, arguments, helpers=helpers)

    def for_stored_version(self, version: str) -> rk.Codec[Any]:
        """Version 1 (this one) has only ever stored canonical WAV files: those it writes
        (Python's ``wave``, a 44-byte header), or given ones it found canonical for the
        schema and kept. So the records of a dataset it wrote are decoded without the
        choice between the canonical path and ``tf.audio.decode_wav`` (a ``tf.cond``, which
        costs every record; measured: docs/performance.md#wav-read-without-the-choice): a
        WAV that is not canonical there is an error. Records read
        without a dataset's manifest (other tools' files) keep the choice."""
        if version != "1":
            return super().for_stored_version(version)
        reader = AudioCodec(self.options)
        reader._canonical_wavs = True
        return reader

    def decodes_per_record(self) -> bool:
        """WAV and PCM: yes. A batch's decode joins its clips' bytes into one string and
        the reader's split copies each clip's samples out again, which costs more than
        reading each clip's samples where the record is (a batch of one skips the join,
        :func:`~recordkit_codecs._tf_audio.decode_wav_one`). Not FLAC, whose decode calls
        Python, better once a batch."""
        return self.options.stored == "encoded" and self.options.format != "flac"

    def decode_tf(self, wire: Mapping[str, Any]) -> Any:
        source = self.decode_tf_source()
        if source is not None:
            return source(wire)
        # flac: no TensorFlow op reads it; decode the batch in Python with soundfile.
        import tensorflow as tf

        encoded = tf.reshape(wire[""], [-1])
        counts = tf.cast(tf.reshape(wire["num_samples"], [-1]), tf.int64)
        options = self.options

        def decode_batch(batch: np.ndarray, batch_counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            parts = [
                _decode_one(bytes(data), int(count), options, ValueError)
                for data, count in zip(batch, batch_counts, strict=True)
            ]
            values = np.concatenate(parts) if parts else np.zeros((0, options.channels), np.int16)
            return values.astype(np.float32) / np.float32(_SCALE), batch_counts.astype(np.int64)

        values, lengths = tf.numpy_function(
            decode_batch, [encoded, counts], [tf.float32, tf.int64], stateful=False, name="decode_flac"
        )
        values = tf.ensure_shape(values, [None, options.channels])
        lengths = tf.ensure_shape(lengths, [None])
        return tf.RaggedTensor.from_row_lengths(values, lengths, validate=False)


def decode_audio_tf(
    wire: Mapping[str, Any], fmt: str, channels: int, sample_rate: int, canonical_only: bool = False
) -> Any:
    """The batched, in-graph TensorFlow decode of an audio field stored as ``fmt`` (wav
    or pcm): float32 ``[B, (samples), channels]`` in [-1, 1). WAV goes through
    :func:`~recordkit_codecs._tf_audio.decode_wav_batch` (all canonical headers checked
    at once, one ``decode_raw`` for the batch; ``canonical_only``: other WAVs are errors).
    Generated parser modules carry a copy of this function."""
    import tensorflow as tf

    encoded = tf.reshape(wire[""], [-1])
    counts = tf.cast(tf.reshape(wire["num_samples"], [-1]), tf.int64)
    if fmt == "wav":
        return decode_wav_batch(
            encoded, counts, channels=channels, sample_rate=sample_rate, canonical_only=canonical_only
        )
    sizes = tf.cast(tf.strings.length(encoded), tf.int64)
    check = tf.debugging.assert_equal(
        sizes,
        counts * channels * 2,
        message=f"audio codec: raw PCM byte length differs from num_samples x {channels} channels x 2",
    )
    with tf.control_dependencies([check] if check is not None else []):  # None when eager
        # A batch of static size 1 (a reader decoding record by record) has nothing to join.
        joined = encoded[0] if encoded.shape[0] == 1 else tf.strings.reduce_join(encoded)
    flat = tf.io.decode_raw(joined, tf.int16, little_endian=True)
    values = tf.cast(tf.reshape(flat, [-1, channels]), tf.float32) / 32768.0
    return tf.RaggedTensor.from_row_lengths(values, counts, validate=False)


def decode_audio_samples_tf(wire: Mapping[str, Any], channels: int, scale: bool) -> Any:
    """The batched TensorFlow decode of an audio field stored as numbers (``stored``):
    float32 ``[B, (samples), channels]``, int samples (``scale``) divided by 32768 after
    checking they fit 16 bits. Generated parser modules carry a copy of this function."""
    import tensorflow as tf

    data = wire[""]
    values = data.flat_values
    counts = tf.cast(data.row_lengths(), tf.int64)
    checks = [
        tf.debugging.Assert(
            tf.reduce_all(tf.equal(tf.math.floormod(counts, channels), 0)),
            [f"audio codec: stored samples are not a whole number of frames of {channels} channel(s)"],
        )
    ]
    if scale:
        checks.append(
            tf.debugging.Assert(
                tf.reduce_all((values >= -32768) & (values <= 32767)),
                ["audio codec: stored int samples go beyond 16 bits (-32768..32767)"],
            )
        )
    with tf.control_dependencies(checks):
        values = tf.cast(tf.identity(values), tf.float32)
    if scale:
        values = values / 32768.0
    return tf.RaggedTensor.from_row_lengths(
        tf.reshape(values, [-1, channels]), counts // channels, validate=False
    )


def _sniff(data: bytes) -> str | None:
    if data[:4] == b"RIFF" and data[8:12] == b"WAVE":
        return "WAV"
    if data[:4] == b"fLaC":
        return "FLAC"
    if data[:4] == b"OggS":
        return "OGG"
    return None


def _reason(exc: Exception) -> str:
    """libsndfile's own words, without soundfile's "Error opening <BytesIO ...>" prefix."""
    return str(getattr(exc, "error_string", None) or exc)


_WAV_HEADER = struct.Struct("<4sI4s4sIHHIIHH4sI")


def _canonical_wav_header(data: bytes) -> tuple[int, int, int] | None:
    """``(channels, sample rate, frames)`` when ``data`` is exactly a canonical 16-bit PCM
    WAV (the 44-byte header :func:`_wav_bytes` writes, sizes consistent with the length,
    no other chunks); None for anything else, which the full readers then check."""
    if len(data) < _WAV_HEADER.size:
        return None
    fields = _WAV_HEADER.unpack_from(data)
    riff, riff_size, wave_id, fmt_id, fmt_size, audio_format, channels, rate = fields[:8]
    byte_rate, align, bits, data_id, size = fields[8:]
    canonical = (
        (riff, wave_id, fmt_id, data_id) == (b"RIFF", b"WAVE", b"fmt ", b"data")
        and fmt_size == 16
        and audio_format == 1
        and bits == 16
        and channels > 0
        and align == 2 * channels
        and byte_rate == rate * align
        and size == len(data) - _WAV_HEADER.size
        and riff_size == len(data) - 8
        and size % align == 0
    )
    return (channels, rate, size // align) if canonical else None


def _wav_bytes(samples: np.ndarray, rate: int) -> bytes:
    """int16 ``[samples, channels]`` as a canonical 16-bit PCM WAV file (44-byte header),
    the layout ``tf.audio.decode_wav`` reads (and the standard library's ``wave``
    writes)."""
    channels = samples.shape[1]
    data = samples.astype("<i2", copy=False).tobytes()
    align = 2 * channels
    header = _WAV_HEADER.pack(
        b"RIFF", 36 + len(data), b"WAVE",
        b"fmt ", 16, 1, channels, rate, rate * align, align, 16,
        b"data", len(data),
    )  # fmt: skip
    return header + data


def _quantize(samples: np.ndarray) -> np.ndarray:
    """Float samples in [-1, 1] to int16 (round(x * 32768), clipped): the inverse of
    decoding's int16 / 32768, exact for samples that came from int16.

    float32 and float64 samples are scaled in their own precision: multiplying by a
    power of two is exact, so the rounding is the same as in float64 (float32 values
    past 1e34 overflow to infinity, which clips to the same 32767).
    """
    array = np.asarray(samples)
    if array.dtype != np.float32 and array.dtype != np.float64:
        array = array.astype(np.float64)
    with np.errstate(over="ignore"):  # clip: true lets huge values through, to clip them
        scaled = array * array.dtype.type(_SCALE)
    np.rint(scaled, out=scaled)
    np.clip(scaled, -32768, 32767, out=scaled)
    return np.ascontiguousarray(scaled.astype(np.int16))


def _decode_one(data: bytes, count: int, options: AudioOptions, error: type[Exception]) -> np.ndarray:
    """One record's stored bytes to int16 ``[samples, channels]``, checked against the
    schema and ``count``; problems raise ``error`` (DecodeError, or ValueError inside TF)."""
    channels = options.channels
    if options.format == "pcm":
        if len(data) != count * channels * 2:
            raise error(
                f"audio codec: {len(data)} bytes of raw PCM, expected num_samples {count} x "
                f"{channels} channel(s) x 2"
            )
        return np.frombuffer(data, dtype="<i2").astype(np.int16).reshape(-1, channels)
    canonical = _canonical_wav_header(data) if options.format == "wav" else None
    if canonical is not None:
        # The 44-byte header this codec writes, sizes consistent: the samples follow it, as
        # soundfile would read them (a tenth of its cost, which is Python holding the GIL).
        channels_stored, rate, _ = canonical
        samples = np.frombuffer(data, dtype="<i2", offset=_WAV_HEADER.size).reshape(-1, channels_stored)
    else:
        samples, rate = _read_soundfile(data, options, error)
    if rate != options.sample_rate:
        raise error(
            f"audio codec: the stored audio is at {rate} Hz, the schema declares {options.sample_rate} Hz"
        )
    if samples.shape != (count, channels):
        raise error(
            f"audio codec: decoded {samples.shape[0]} samples x {samples.shape[1]} channel(s), the record "
            f"stores num_samples {count} and the schema {channels} channel(s)"
        )
    return np.asarray(samples, dtype=np.int16)


def _read_soundfile(data: bytes, options: AudioOptions, error: type[Exception]) -> tuple[np.ndarray, int]:
    """Stored WAV or FLAC bytes read by soundfile: int16 ``[samples, channels]`` and the rate."""
    import soundfile as sf

    try:
        samples, rate = sf.read(io.BytesIO(data), dtype="int16", always_2d=True)
    except (sf.LibsndfileError, RuntimeError, ValueError) as exc:
        raise error(f"audio codec: the stored {options.format} bytes do not decode: {_reason(exc)}") from None
    return samples, int(rate)


@rk.hookimpl
def recordkit_register_codecs(registry: rk.CodecRegistry) -> None:
    """Register the ``audio`` codec."""
    registry.register(AudioCodec)
