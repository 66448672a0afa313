"""recordkit croissant and rk.croissant: the demo dataset's Croissant 1.0 description
validates with MLCommons' mlcroissant, and holds its card, shards with sha256 and fields
with the data type of each codec's values."""

from __future__ import annotations

import fnmatch
import hashlib
import importlib.util
import json
import shutil
from pathlib import Path
from types import ModuleType

import mlcroissant as mlc
import pytest
from click.testing import CliRunner

import recordkit as rk
from recordkit.cli import main

#: mlcroissant 1.1.1 builds its graph with rdflib's ConjunctiveGraph, deprecated in rdflib 7.
pytestmark = pytest.mark.filterwarnings("ignore:ConjunctiveGraph is deprecated:DeprecationWarning")
ROOT = Path(__file__).resolve().parents[3]
CARD = rk.DatasetCard(
    license="CC-BY-4.0",
    homepage="https://example.org/shapes",
    authors=["Jane Doe", "Ravi Rao"],
    citation="@misc{shapes2026, title = {Shapes}, year = {2026}}",
    description="Generated pictures of shapes.",
)


def _demo() -> ModuleType:
    spec = importlib.util.spec_from_file_location("recordkit_demo", ROOT / "examples" / "demo.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def demo_dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo's dataset (examples/demo.py's schema and records, two splits, several shards)."""
    demo = _demo()
    out = tmp_path_factory.mktemp("croissant") / "shapes"
    schema = rk.Schema.load(ROOT / "examples" / "shapes.yaml")
    with rk.DatasetWriter(out, schema, shard_bytes=1 << 16, progress=False) as writer:
        writer.write_all(list(demo.generate(24, seed=1)), split="train")
        writer.write_all(list(demo.generate(8, seed=2)), split="validation")
    return out


def test_the_demo_datasets_description_validates_with_mlcroissant(demo_dataset: Path) -> None:
    described = rk.croissant(demo_dataset)
    dataset = mlc.Dataset(jsonld=described)  # raises on any validation error
    assert not dataset.metadata.ctx.issues.errors
    assert [r.name for r in dataset.metadata.record_sets] == ["train", "validation"]
    manifest = rk.Manifest.load(demo_dataset)
    shards = [s for info in manifest.splits.values() for s in info.shards]
    assert len(shards) > 2
    objects = {d["@id"]: d for d in described["distribution"] if d["@type"] == "cr:FileObject"}
    assert sorted(objects) == sorted(s.file for s in shards)
    for shard in shards:
        sha256 = hashlib.sha256((demo_dataset / shard.file).read_bytes()).hexdigest()
        assert objects[shard.file]["sha256"] == sha256
        assert objects[shard.file]["encodingFormat"] == "application/x-tfrecord"


def test_each_field_has_the_data_type_of_its_codecs_values(demo_dataset: Path) -> None:
    described = rk.croissant(demo_dataset)
    train = next(r for r in described["recordSet"] if r["name"] == "train")
    types = {f["name"]: f["dataType"] for f in train["field"]}
    assert types == {
        "image": "sc:ImageObject",
        "tone": "sc:AudioObject",
        "caption": "sc:Text",
        "objects": "cr:BoundingBox",
        "label": "sc:Integer",
    }
    assert all(f["source"]["fileSet"]["@id"] == "train-shards" for f in train["field"])


def test_the_card_goes_into_the_description_and_it_validates_without_warnings(
    demo_dataset: Path, tmp_path: Path
) -> None:
    out = tmp_path / "carded"
    schema = rk.Schema.load(ROOT / "examples" / "shapes.yaml")
    rk.write_dataset(list(_demo().generate(6, seed=3)), out, schema, card=CARD, progress=False)
    described = rk.croissant(out)
    dataset = mlc.Dataset(jsonld=described)
    assert not dataset.metadata.ctx.issues.errors
    assert not dataset.metadata.ctx.issues.warnings
    assert described["license"] == "CC-BY-4.0"
    assert described["citeAs"] == CARD.citation
    assert described["url"] == "https://example.org/shapes"
    assert described["description"] == "Generated pictures of shapes."
    assert [c["name"] for c in described["creator"]] == ["Jane Doe", "Ravi Rao"]


def test_the_command_writes_the_same_description_to_a_file_or_stdout(
    demo_dataset: Path, tmp_path: Path
) -> None:
    target = tmp_path / "croissant.json"
    written = CliRunner().invoke(main, ["croissant", str(demo_dataset), "-o", str(target)])
    assert written.exit_code == 0, written.output
    assert json.loads(target.read_text()) == rk.croissant(demo_dataset)
    printed = CliRunner().invoke(main, ["croissant", str(demo_dataset)])
    assert json.loads(printed.stdout) == rk.croissant(demo_dataset)


def test_the_command_on_a_folder_without_a_dataset_says_so(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["croissant", str(tmp_path)])
    assert result.exit_code != 0
    assert "no dataset.json: not a recordkit dataset" in result.output
    assert "Traceback" not in result.output


def test_a_split_with_field_groups_describes_each_group_as_a_file_set_and_record_set_of_its_own(
    demo_dataset: Path, tmp_path: Path
) -> None:
    out = tmp_path / "grouped"
    schema = rk.Schema.load(ROOT / "examples" / "shapes.yaml")
    rk.write_dataset(list(_demo().generate(6, seed=4)), out, schema, shard_records=4, progress=False)
    added = rk.Schema.loads("name: x\nfields:\n  score: {codec: scalar, options: {dtype: float32}}\n")
    rk.add_fields(out, "train", added, [float(i) for i in range(6)])

    described = rk.croissant(out)

    dataset = mlc.Dataset(jsonld=described)
    assert not dataset.metadata.ctx.issues.errors
    group = rk.Manifest.load(out).splits["train"].field_groups["score"]  # type: ignore[index]
    file_sets = {d["@id"]: d for d in described["distribution"] if d["@type"] == "cr:FileSet"}
    assert [f["@id"] for f in file_sets["train-score-shards"]["containedIn"]] == [
        s.file for s in group.shards
    ]
    objects = {d["@id"]: d for d in described["distribution"] if d["@type"] == "cr:FileObject"}
    for shard in group.shards:
        assert objects[shard.file]["sha256"] == hashlib.sha256((out / shard.file).read_bytes()).hexdigest()
    record_sets = {r["name"]: r for r in described["recordSet"]}
    assert list(record_sets) == ["train", "train-score"]
    assert [f["name"] for f in record_sets["train"]["field"]] == [
        "image",
        "tone",
        "caption",
        "objects",
        "label",
    ]
    assert record_sets["train-score"]["field"][0]["source"] == {
        "fileSet": {"@id": "train-score-shards"},
        "extract": {"column": "score"},
    }
    assert "record i of each of its shards belongs to record i" in record_sets["train-score"]["description"]


def test_a_split_s_file_set_includes_its_listed_shards_and_never_a_leftover_beside_them(
    demo_dataset: Path, tmp_path: Path
) -> None:
    dataset = tmp_path / "shapes"
    shutil.copytree(demo_dataset, dataset)
    listed = [s.file for s in rk.Manifest.load(dataset).splits["train"].shards]
    leftover = f"train-{len(listed):05d}.tfrecord"  # the next shard, as a run that died left it
    (dataset / leftover).write_bytes((dataset / listed[0]).read_bytes())
    described = rk.croissant(dataset)
    file_set = next(d for d in described["distribution"] if d["@id"] == "train-shards")
    patterns = file_set["includes"]
    patterns = [patterns] if isinstance(patterns, str) else patterns
    on_disk = sorted(p.name for p in dataset.glob("train-*.tfrecord"))
    included = sorted(name for name in on_disk if any(fnmatch.fnmatchcase(name, p) for p in patterns))
    assert leftover in on_disk
    assert included == sorted(listed)
    assert not mlc.Dataset(jsonld=described).metadata.ctx.issues.errors
