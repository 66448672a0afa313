"""docs/plugins.md: its code is the example plugin's real code, its stand-alone examples
run, and what it says about the worked codec holds.

The guide shows its code inline, so that it reads as a guide on GitHub and in an editor
too (not only in the built site). Each block copied from a file carries a comment
``<!-- source: PATH#SECTION -->`` just above it; this test checks the block equals that
section of the file (``# --8<-- [start:SECTION]`` ... ``[end:SECTION]``, dedented), or
the whole file without ``#SECTION``.
"""

from __future__ import annotations

import ast
import io
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _console import run_console_block
from _sourced import rebuilt, section
from _sourced import sourced_blocks as blocks_copied_into
from PIL import Image

import recordkit as rk

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "plugins.md"
KEYPOINTS = ROOT / "plugins" / "recordkit-keypoints" / "src" / "recordkit_keypoints" / "keypoints.py"


def sourced_blocks() -> list[tuple[str, str | None, str]]:
    """(path, section, the block's code) of each block the guide copies from a file."""
    return blocks_copied_into(GUIDE)


def test_the_guide_shows_its_code_as_code() -> None:
    text = GUIDE.read_text(encoding="utf-8")
    assert "--8<--" not in text, "raw Markdown readers see no included code: copy it in"
    shown = {(path, name) for path, name, _ in sourced_blocks()}
    plugin = "plugins/recordkit-keypoints"
    for expected in [
        ("sdk/recordkit/hookspecs.py", "recordkit_register_codecs"),  # the hook
        (f"{plugin}/src/recordkit_keypoints/keypoints.py", "hook"),
        (f"{plugin}/src/recordkit_keypoints/keypoints.py", "codec"),  # the codec class
        (f"{plugin}/src/recordkit_keypoints/keypoints.py", "encode"),
        (f"{plugin}/src/recordkit_keypoints/keypoints.py", "helpers"),  # _as_points, _fail_at
        (f"{plugin}/src/recordkit_keypoints/keypoints.py", "decode"),
        (f"{plugin}/pyproject.toml", None),  # the entry point
        (f"{plugin}/tests/test_keypoints_codec.py", "conformance"),  # the conformance test
    ]:
        assert expected in shown, expected


@pytest.mark.parametrize(
    ("path", "name", "body"), sourced_blocks(), ids=[f"{p}#{n}" for p, n, _ in sourced_blocks()]
)
def test_each_copied_block_equals_its_source(path: str, name: str | None, body: str) -> None:
    source = section(ROOT / path, name)
    if body == source:
        return
    # A test excerpt may be preceded by the imports it needs (the module's are elsewhere).
    assert body.endswith(source), f"docs/plugins.md shows {path}#{name} other than it is: copy it again"
    module = ast.parse((ROOT / path).read_text(encoding="utf-8"))
    for node in ast.parse(body[: -len(source)]).body:  # only imports the test module has
        if isinstance(node, ast.ImportFrom):
            assert any(
                isinstance(m, ast.ImportFrom)
                and m.module == node.module
                and {a.name for a in m.names} >= {a.name for a in node.names}
                for m in module.body
            ), ast.unparse(node)
        else:
            assert isinstance(node, ast.Import), ast.unparse(node)
            assert ast.unparse(node) in {ast.unparse(m) for m in module.body if isinstance(m, ast.Import)}


def test_the_copied_module_is_the_whole_codec_and_works(tmp_path: Path) -> None:
    """The keypoints module rebuilt from the guide's blocks (each put where its section
    is) is the whole module, and its codec passes the conformance kit."""
    from recordkit.testing import CodecCase, check_codec

    relative = str(KEYPOINTS.relative_to(ROOT))
    shown = {name: body for path, name, body in sourced_blocks() if path == relative}
    code = rebuilt(KEYPOINTS, shown)
    namespace: dict[str, Any] = {"__name__": "guide_keypoints"}
    exec(compile(code, "<docs/plugins.md keypoints>", "exec"), namespace)  # the guide's code
    codec = namespace["KeypointsCodec"]({"visibility": True})
    points = [[1.0, 2.0, 2.0], [3.0, 4.0, 0.0]]
    report = check_codec(codec, [CodecCase(points), CodecCase([[5.0, 6.0, 1.0]])], tmp_path=tmp_path)
    assert "sequence field: numpy decode" in report.checks


def test_the_counts_the_guide_gives_are_the_codecs() -> None:
    tree = ast.parse(KEYPOINTS.read_text(encoding="utf-8"))
    (cls,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "KeypointsCodec"]
    assigned = [n for n in cls.body if isinstance(n, ast.Assign)]
    attributes = [t.id for n in assigned for t in n.targets if isinstance(t, ast.Name)]
    methods = [n.name for n in cls.body if isinstance(n, ast.FunctionDef) and not n.name.startswith("_")]
    words = {
        2: "two",
        3: "three",
        4: "four",
        5: "five",
        6: "six",
        7: "seven",
        8: "eight",
        9: "nine",
        10: "ten",
    }
    text = " ".join(GUIDE.read_text(encoding="utf-8").split())
    assert f"{words[len(attributes)]} class attributes ({', '.join(f'`{a}`' for a in attributes)})" in text
    listed = re.search(rf"{words[len(methods)]} methods \(([^)]*)\)", text)
    assert listed is not None
    assert sorted(re.findall(r"`(\w+)`", listed.group(1))) == sorted(methods)


@pytest.mark.usefixtures("keypoints_plugin")
def test_the_stand_alone_examples_run(page_examples: Any, in_tmp_path: Path) -> None:
    blocks = page_examples.code_blocks(GUIDE)
    copied = {body for _, _, body in sourced_blocks()}
    page_examples.run_python_blocks(blocks, skip=lambda b: b.body in copied)
    outputs = [b.output for b in blocks if b.language == "python" and b.body not in copied and b.output]
    frames, versions, allow_block, without_pytest = outputs
    assert frames == "True\n"  # the ragged JPEG codec passes the kit (checked by its text block too)
    assert versions.splitlines()[:3] == ["{'counts': '1'}", "[1 2 3]", "[4 5 6]"]  # version 1's, read by 2
    allow_block, without_pytest = ast.literal_eval(allow_block), ast.literal_eval(without_pytest)
    assert allow_block == rk.load_plugins(allow=["recordkit"]).registry.names()
    assert "keypoints" not in allow_block
    assert "plain field: tf.data batched decode" in without_pytest
    assert "sequence field: numpy decode" in without_pytest


@pytest.mark.usefixtures("keypoints_plugin")
def test_the_statistics_the_guide_shows_are_what_stats_reports(page_examples: Any, in_tmp_path: Path) -> None:
    """The `recordkit stats` block of the capabilities section, run on the dataset it
    describes: two grey images with a pose of three named points each."""
    picture = io.BytesIO()
    Image.new("RGB", (48, 32), (90, 90, 90)).save(picture, format="PNG")
    pose = np.array([[10, 8, 2], [30, 20, 1], [40, 4, 0]], dtype=np.float32)
    schema = rk.Schema(
        name="poses",
        fields={
            "image": rk.FieldSpec(codec="image", options={"format": "png"}),
            "pose": rk.FieldSpec(
                codec="keypoints", options={"names": ["head", "hand", "foot"], "visibility": True}
            ),
        },
    )
    records = [
        {"image": picture.getvalue(), "pose": pose},
        {"image": picture.getvalue(), "pose": pose + np.array([1, 1, 0])},
    ]
    rk.write_dataset(records, schema, in_tmp_path / "poses")
    blocks = page_examples.code_blocks(GUIDE)
    (stats,) = [b for b in blocks if b.language == "console" and "$ recordkit stats" in b.body]
    assert run_console_block(stats.body)
