"""The writer's progress bar: on when asked or on a terminal, off otherwise."""

from __future__ import annotations

import sys

import pytest

from recordkit.write._progress import Progress


def test_counts_records_and_bytes_and_shows_them(capsys: pytest.CaptureFixture[str]) -> None:
    progress = Progress(True, total=1000, desc="writing pets")
    assert progress.enabled
    for _ in range(1000):
        progress.advance(1024)
    progress.close()
    assert (progress.records, progress.bytes) == (1000, 1024 * 1000)
    err = capsys.readouterr().err
    assert "writing pets" in err
    assert "1000/1000" in err
    assert "1000.0 KiB written" in err


def test_auto_follows_whether_stderr_is_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys.stderr, "isatty", lambda: False, raising=False)
    assert not Progress(None).enabled
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    bar = Progress(None)
    assert bar.enabled
    bar.close()
    assert not Progress(False).enabled
