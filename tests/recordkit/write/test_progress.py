"""The writer's progress bar: on when asked or on a terminal, off otherwise."""

from __future__ import annotations

import inspect
import sys
from pathlib import Path

import pytest
from _writer_support import SCHEMA, make_records

import recordkit as rk
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


class _Clock:
    """A clock the test moves by hand (no real time, no timing threshold)."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_plain_lines_every_few_seconds_when_not_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    from recordkit.write._progress import LOG_EVERY_SECONDS

    monkeypatch.setattr(sys.stderr, "isatty", lambda: False, raising=False)
    log, clock = io.StringIO(), _Clock()
    progress = Progress(None, total=2048, desc="writing pets", stream=log, clock=clock)
    assert not progress.enabled  # no bar ...
    for _ in range(512):
        progress.advance(1024)
    assert log.getvalue() == ""  # ... and no line before the interval has passed
    clock.now += LOG_EVERY_SECONDS
    for _ in range(256):
        progress.advance(1024)
    assert log.getvalue() == "writing pets: 768 of 2,048 records, 768.0 KiB written, 77 records/s\n"
    clock.now += 1
    for _ in range(1280):
        progress.advance(1024)
    progress.close()
    lines = log.getvalue().splitlines()
    assert len(lines) == 2
    assert lines[1] == "writing pets: 2,048 of 2,048 records, 2.0 MiB written, 186 records/s (done in 11 s)"


def test_a_short_write_prints_nothing_in_a_log(monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    monkeypatch.setattr(sys.stderr, "isatty", lambda: False, raising=False)
    log = io.StringIO()
    progress = Progress(None, stream=log, clock=_Clock())
    for _ in range(5000):
        progress.advance(10)
    progress.close()
    assert log.getvalue() == ""
    silent = Progress(False, stream=log, clock=_Clock())
    silent.advance(1)
    silent.close()
    assert log.getvalue() == ""


def test_a_total_expected_later_is_shown(capsys: pytest.CaptureFixture[str]) -> None:
    progress = Progress(True, desc="writing pets")
    progress.expect(300)
    for _ in range(300):
        progress.advance(10)
    progress.close()
    assert "300/300" in capsys.readouterr().err


def test_write_dataset_shows_progress_as_a_share_of_a_sized_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rk.write_dataset(list(make_records(40)), SCHEMA, tmp_path / "sized", progress=True)
    assert "40/40" in capsys.readouterr().err
    rk.write_dataset(make_records(40), SCHEMA, tmp_path / "unsized", progress=True)
    assert "40/40" not in capsys.readouterr().err  # a generator's length is unknown


def test_the_public_writer_takes_no_private_arguments() -> None:
    parameters = inspect.signature(rk.DatasetWriter).parameters
    assert [name for name in parameters if name.startswith("_")] == []
