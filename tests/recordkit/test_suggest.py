"""did_you_mean: the closest valid name to a misspelt one, or nothing."""

from __future__ import annotations

import pytest

from recordkit._suggest import did_you_mean


@pytest.mark.parametrize(
    ("name", "choices", "hint"),
    [
        ("imgae", ["audio", "image", "text"], "did you mean 'image'? "),
        ("Image", ["image", "mask"], "did you mean 'image'? "),
        ("fromat", ["format", "quality"], "did you mean 'format'? "),
        ("spectrogram", ["audio", "image"], ""),
        (3, ["a"], ""),
        ("a", [], ""),
    ],
)
def test_did_you_mean(name: object, choices: list[str], hint: str) -> None:
    assert did_you_mean(name, choices) == hint
