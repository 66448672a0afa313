"""recordkit.beam.WriteDataset records each split's picture sizes (``picture_sizes``) as
the local writer does, so that a reader with ``jpeg_scale="auto"`` takes the same one
decode for all the pictures of a Beam-written dataset as for a locally written one."""

from __future__ import annotations

from pathlib import Path

import apache_beam as beam
import numpy as np
import pytest
import tensorflow as tf
from _beam_support import PHOTO, WorkerProcessesWrite, photo_records, run

import recordkit as rk
from recordkit.read._wire_checks import CHECK_BRANCH  # private: the check's branch, left out of the count

SIZE = (224, 224)


@pytest.fixture(scope="module")
def records() -> list[dict[str, bytes]]:
    return photo_records()


def _write_beam(root: Path, records: list[dict[str, bytes]], **kwargs: object) -> None:
    """``records`` written by Beam's DirectRunner with two workers on threads."""

    def body(p: beam.Pipeline) -> None:
        p | beam.Create(records) | rk.beam.WriteDataset(PHOTO, root, **kwargs)

    run(body, workers=2)


@pytest.fixture(scope="module")
def local_and_beam(
    tmp_path_factory: pytest.TempPathFactory,
    records: list[dict[str, bytes]],
    worker_processes_write: WorkerProcessesWrite,
) -> tuple[Path, Path]:
    """``records`` written by the local writer and by Beam's worker processes (2 shards;
    the pipeline test_beam.py shares, which writes these records), for the tests that
    only read both datasets."""
    root = tmp_path_factory.mktemp("picture-sizes")
    rk.write_dataset(records, PHOTO, root / "local", progress=False)
    return root / "local", worker_processes_write.photos


def test_a_beam_written_dataset_lists_the_picture_sizes_the_local_writer_lists(
    local_and_beam: tuple[Path, Path],
) -> None:
    local, written = (rk.Manifest.load(root) for root in local_and_beam)
    sizes = written.splits["train"].picture_sizes
    assert sizes is not None
    assert sizes == local.splits["train"].picture_sizes
    assert (sizes["photo"].min_height, sizes["photo"].max_height) == (1024, 2048)
    assert (sizes["photo"].min_width, sizes["photo"].max_width) == (1057, 1900)
    assert not sizes["photo"].full_size_only
    assert written.format == local.format


def test_a_beam_append_merges_the_new_pictures_sizes_with_the_listed_ones(
    tmp_path: Path, records: list[dict[str, bytes]]
) -> None:
    """The merge happens at the append's commit: the two pipelines run on threads (the
    sizes' way from worker processes is the module's first test's)."""
    root = tmp_path / "beam"
    _write_beam(root, records[:2], num_shards=1)
    _write_beam(root, records[2:], num_shards=1, append=True)
    local = tmp_path / "local"
    rk.write_dataset(records[:2], PHOTO, local, progress=False)
    rk.write_dataset(records[2:], PHOTO, local, append=True, progress=False)

    assert (
        rk.Manifest.load(root).splits["train"].picture_sizes
        == rk.Manifest.load(local).splits["train"].picture_sizes
    )


def _control_flow(dataset: tf.data.Dataset) -> set[str]:
    """The control-flow ops of ``dataset``'s functions: a scale chosen record by record
    is a switch over the scales; one scale for the field (from the sizes) is none. The
    value-count check's branch (:data:`~recordkit.read._wire_checks.CHECK_BRANCH`, taken
    only by a failing record) is not counted."""
    serialized = tf.raw_ops.DatasetToGraphV2(input_dataset=dataset._variant_tensor).numpy()
    graph = tf.compat.v1.GraphDef.FromString(serialized)
    nodes = list(graph.node)
    for function in graph.library.function:
        nodes += function.node_def
    ops = {node.op for node in nodes if CHECK_BRANCH not in node.name}
    return ops & {"Case", "StatelessCase", "If", "StatelessIf"}


def _sorted(pictures: list[np.ndarray]) -> list[np.ndarray]:
    return sorted(pictures, key=lambda picture: picture.tobytes())


def test_a_beam_written_dataset_reads_at_scale_with_the_pixels_of_a_locally_written_one(
    records: list[dict[str, bytes]], local_and_beam: tuple[Path, Path]
) -> None:
    local, written = local_and_beam

    def tf_read(root: Path) -> list[np.ndarray]:
        dataset = rk.load_dataset(root, image_size=SIZE, jpeg_scale="auto")
        return _sorted([r["photo"] for r in dataset.as_numpy_iterator()])

    def numpy_read(root: Path) -> list[np.ndarray]:
        geometry = rk.ImageGeometry(size=SIZE, fit="resize", jpeg_scale="auto")
        return _sorted([r["photo"] for r in rk.iter_records(root, geometry=geometry)])

    # One scale for the field, fixed from the sizes: no choice in tf.data's graph, for both.
    assert _control_flow(rk.load_dataset(written, image_size=SIZE, batch_size=2)) == set()
    assert _control_flow(rk.load_dataset(local, image_size=SIZE, batch_size=2)) == set()
    for read in (tf_read, numpy_read):
        got, want = read(written), read(local)
        assert len(got) == len(records)
        for beam_picture, local_picture in zip(got, want, strict=True):
            np.testing.assert_array_equal(beam_picture, local_picture)
