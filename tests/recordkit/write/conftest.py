"""The Beam writer's tests share one pipeline run on the DirectRunner's worker processes."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from _beam_support import WorkerProcessesWrite


@pytest.fixture(scope="session")
def worker_processes_write(tmp_path_factory: pytest.TempPathFactory) -> WorkerProcessesWrite:
    """test_beam.py's keyed splits and test_beam_picture_sizes.py's photos, written by one
    pipeline on two worker processes (:func:`_beam_support.write_on_worker_processes`;
    imported here, not above, so that the other writer tests do not import Beam)."""
    from _beam_support import write_on_worker_processes

    return write_on_worker_processes(tmp_path_factory.mktemp("beam-worker-processes"))
