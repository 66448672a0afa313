"""A plugin codec's capability that fails inside ``recordkit show`` or ``recordkit stats``
(sdk/recordkit/tools/_codec_calls.py): one line naming the record, the field, the codec
and the method, not a traceback."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner, Result

import recordkit as rk
from recordkit.cli import main

PLUGIN = """
from typing import Any

import numpy as np
import recordkit as rk


class Brittle(rk.Codec[rk.CodecOptions]):
    name = "brittle"

    def wire_spec(self):
        return rk.WireSpec((rk.WireFeature("", rk.WireKind.INT64),))

    def encode(self, value):
        return {"": int(value)}

    def decode_numpy(self, wire):
        return int(wire[""])

    def decode_tf(self, wire):
        return wire[""]

    def draw(self, canvas, value):
        1 / (value - 2)

    def summarize(self, value):
        return {"inverse": [1 / (value - 2)]}


@rk.hookimpl
def recordkit_register_codecs(registry):
    registry.register(Brittle)
"""


def run(*args: str | Path) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.fixture
def brittle(plugin_dist: Any, tmp_path: Path) -> Path:
    """A dataset of an image and a plugin codec's numbers that fail on the value 2."""
    plugin_dist("rk-brittle", {"rk_brittle": PLUGIN})
    schema = rk.Schema(
        name="brittle",
        fields={
            "image": rk.FieldSpec(codec="image", options={"format": "png"}),
            "n": rk.FieldSpec(codec="brittle"),
        },
    )
    records = [{"image": np.zeros((4, 4, 3), np.uint8), "n": n} for n in (0, 1, 2, 3)]
    rk.write_dataset(records, schema, tmp_path / "ds")
    return tmp_path / "ds"


@pytest.mark.parametrize(
    ("command", "method"),
    [(["show", "-o", "shown"], "draw"), (["stats"], "summarize")],
)
def test_a_failing_capability_is_one_line_naming_where(
    brittle: Path, tmp_path: Path, command: list[str], method: str
) -> None:
    result = run(command[0], brittle, *[str(tmp_path / a) if a == "shown" else a for a in command[1:]])
    assert result.exit_code == 1, result.output
    lines = result.output.splitlines()
    assert [line for line in lines if not line.endswith(".png")] == lines[-1:]  # the records drawn before
    assert lines[-1].startswith("Error: PluginError"), result.output
    assert "Traceback" not in result.output
    for part in ("split 'train'", "record 2", "field 'n'", "codec 'brittle'"):
        assert part in lines[-1]
    assert f"the codec's {method}() failed: ZeroDivisionError: division by zero" in lines[-1]
