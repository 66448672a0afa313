"""Hostile inputs to the sources: paths out of the root, malformed annotations and
tables, and sizes declared beyond the bytes that exist.

Each family generates its cases from a fixed seed. Whatever the input, a source gives
its records or an ``InputError`` naming the file (and the line or entry), never another
exception; under ``on_error="skip"`` it never raises for a per-record problem; it reads
no file outside the root the user named (an audit hook watches every ``open``), and it
allocates nothing of a size that only a declaration, not the bytes, backs.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import random
import struct
import sys
import tracemalloc
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import sample_sources as fx
import soundfile
from click.testing import CliRunner
from PIL import Image

import recordkit as rk
from recordkit import sources
from recordkit.cli import main
from recordkit.errors import InputError

# -- an audit hook that records every file opened under a watched folder ---------------

_WATCHED: list[str] = []
_OPENED: list[str] = []


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if event == "open" and _WATCHED and isinstance(args[0], (str, bytes, os.PathLike)):
        path = os.path.realpath(os.fsdecode(args[0]))
        if any(path.startswith(folder) for folder in _WATCHED):
            _OPENED.append(path)


sys.addaudithook(_audit)


@pytest.fixture
def outside(tmp_path: Path) -> Iterator[Path]:
    """A folder beside the root, holding files a hostile input points at; every open of
    one of them is recorded in ``_OPENED``."""
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "secret.png").write_bytes(fx.photo(8, 8, 99, "PNG"))
    (folder / "secret.jpg").write_bytes(fx.photo(30, 24, 99))
    (folder / "secret.txt").write_text("the first bytes of a secret\n", encoding="utf-8")
    soundfile.write(folder / "secret.wav", fx.tone(0.25), 8000, subtype="PCM_16")
    _WATCHED.append(os.path.realpath(folder) + os.sep)
    _OPENED.clear()
    yield folder
    _WATCHED.clear()


# -- containment ------------------------------------------------------------------------

Build = Callable[[Path, Path], tuple[Callable[..., sources.Source], str]]


def _coco(name: Callable[[Path, Path], str]) -> Build:
    def build(tmp: Path, out: Path) -> tuple[Callable[..., sources.Source], str]:
        path = fx.coco(tmp, [])
        images = tmp / "coco" / "images"
        hostile = name(images, out)
        data = json.loads(path.read_text())
        data["images"][1].update(file_name=hostile, width=8, height=8)
        path.write_text(json.dumps(data))
        return (lambda **o: sources.coco(path, images, **o)), hostile

    return build


def _table(kind: str, name: Callable[[Path, Path], str]) -> Build:
    def build(tmp: Path, out: Path) -> tuple[Callable[..., sources.Source], str]:
        folder = tmp / "table"
        (folder / "img").mkdir(parents=True)
        for i in range(2):
            (folder / "img" / f"{i}.png").write_bytes(fx.photo(8, 8, i, "PNG"))
        hostile = name(folder, out)
        rows = [{"image": "img/0.png", "caption": "a"}, {"image": hostile, "caption": "b"}]
        rows.append({"image": "img/1.png", "caption": "c"})
        table = folder / f"t.{kind}"
        if kind == "csv":
            table.write_text("image,caption\n" + "".join(f"{r['image']},{r['caption']}\n" for r in rows))
        else:
            table.write_text("".join(json.dumps(r) + "\n" for r in rows))
        factory = sources.csv if kind == "csv" else sources.jsonl
        return (lambda **o: factory(table, **o)), hostile

    return build


def _voc(tmp: Path, out: Path) -> tuple[Callable[..., sources.Source], str]:
    root = fx.voc(tmp)
    hostile = "../../outside/secret"
    (root / "ImageSets/Segmentation/train.txt").write_text(f"{fx.VOC_IDS[0]}\n{hostile}\n")
    return (lambda **o: sources.pascal_voc(root, "train", task="segmentation", **o)), hostile


def _voc_symlink(tmp: Path, out: Path) -> tuple[Callable[..., sources.Source], str]:
    root = fx.voc(tmp)
    link = root / "JPEGImages" / f"{fx.VOC_IDS[1]}.jpg"
    link.unlink()
    link.symlink_to(out / "secret.jpg")
    return (lambda **o: sources.pascal_voc(root, "train", task="segmentation", **o)), fx.VOC_IDS[1]


def _image_folder(tmp: Path, out: Path) -> tuple[Callable[..., sources.Source], str]:
    root = fx.image_folder(tmp)
    (root / "roses" / "stolen.png").symlink_to(out / "secret.png")
    return (lambda **o: sources.image_folder(root, **o)), "roses/stolen.png"


def _audio_folder(tmp: Path, out: Path) -> tuple[Callable[..., sources.Source], str]:
    root = fx.audio_folder(tmp)
    (root / "metadata.csv").unlink()
    (root / "a" / "stolen.wav").symlink_to(out / "secret.wav")
    return (lambda **o: sources.audio_folder(root, **o)), "a/stolen.wav"


def _audio_metadata(tmp: Path, out: Path) -> tuple[Callable[..., sources.Source], str]:
    root = fx.audio_folder(tmp)
    with (root / "metadata.csv").open("a") as table:
        table.write("../../outside/secret.wav,stolen,9\n")
    return (lambda **o: sources.audio_folder(root, **o)), "../../outside/secret.wav"


def _symlink(target: str) -> Callable[[Path, Path], str]:
    def name(folder: Path, out: Path) -> str:
        (folder / "link.png").symlink_to(out / target)
        return "link.png"

    return name


def _symlinked_folder(folder: Path, out: Path) -> str:
    (folder / "linked").symlink_to(out)
    return "linked/secret.png"


CONTAINMENT: dict[str, Build] = {
    "coco dot-dot": _coco(lambda f, o: "../../outside/secret.png"),
    "coco dot-dot inside a folder": _coco(
        lambda f, o: f.joinpath("x").mkdir() or "x/../../../outside/secret.png"
    ),
    "coco absolute": _coco(lambda f, o: str(o / "secret.png")),
    "coco symlink": _coco(_symlink("secret.png")),
    "coco symlinked folder": _coco(_symlinked_folder),
    "coco text file": _coco(lambda f, o: "../../outside/secret.txt"),
    "csv dot-dot": _table("csv", lambda f, o: "../outside/secret.png"),
    "csv absolute": _table("csv", lambda f, o: str(o / "secret.png")),
    "csv symlink": _table("csv", _symlink("secret.png")),
    "jsonl dot-dot": _table("jsonl", lambda f, o: "../outside/secret.png"),
    "jsonl absolute": _table("jsonl", lambda f, o: str(o / "secret.png")),
    "jsonl symlinked folder": _table("jsonl", _symlinked_folder),
    "voc image id": _voc,
    "voc symlink": _voc_symlink,
    "image_folder symlink": _image_folder,
    "audio_folder symlink": _audio_folder,
    "audio_folder metadata dot-dot": _audio_metadata,
}


#: Cases whose outside file is no item even when allowed (a text file is no image; a
#: metadata row adds no file to those the folder lists).
NOT_ITEMS_WHEN_ALLOWED = {"coco text file", "audio_folder metadata dot-dot"}


def _paths_in(records: list[dict[str, Any]]) -> list[str]:
    return [os.path.realpath(v) for r in records for v in r.values() if isinstance(v, Path)]


@pytest.mark.parametrize("name", list(CONTAINMENT))
def test_no_source_reads_a_file_outside_its_root(
    name: str, tmp_path: Path, outside: Path, fault_cases: Any
) -> None:
    fault_cases.tried("hostile sources: containment")
    make, hostile = CONTAINMENT[name](tmp_path, outside)
    with pytest.raises(InputError, match=r"outside|climbs out|absolute") as caught:
        list(make())
    assert caught.value.context.file is not None
    assert hostile in str(caught.value)
    assert "allow_outside_root=True" in str(caught.value)
    # Skipped like any bad record: nothing of the outside file is opened, even when the
    # records are written (the rejects file included).
    source = make(on_error="skip")
    rk.write_dataset(source, source.schema(), tmp_path / "out", progress=False)
    assert len(source.skipped) >= 1
    assert any(hostile in str(s) for s in source.skipped)
    assert not _OPENED, f"{name}: opened {_OPENED}"
    assert not any(str(outside) in p for p in _paths_in(list(rk.iter_records(tmp_path / "out"))))
    # The option lets the same input through: the outside file is in the records.
    if name in NOT_ITEMS_WHEN_ALLOWED:
        return
    allowed = list(make(allow_outside_root=True, on_error="skip"))
    assert any(p.startswith(os.path.realpath(outside)) for p in _paths_in(allowed)), name


class _ListSource(sources.Source):
    """A plugin's source: one image per line of a list file, named relative to its folder."""

    kind = "image_list"

    def __init__(self, path: Path, **options: Any) -> None:
        super().__init__(**options)
        self.path = path

    def schema(self, name: str | None = None) -> rk.Schema:
        return rk.Schema(
            name="list", fields={"image": rk.FieldSpec(codec="image", options={"format": "keep"})}
        )

    def scan(self) -> Iterator[sources.SourceItem | sources.Skipped | InputError]:
        for number, line in enumerate(self.path.read_text().splitlines(), start=1):
            try:
                image = self.input_path(self.path.parent, line, file=self.path, line=number, field="image")
            except InputError as exc:
                yield exc
                continue
            yield sources.SourceItem(line, {"image": image})


def test_a_plugin_source_gets_the_rule_from_the_base_class(tmp_path: Path, outside: Path) -> None:
    listing = tmp_path / "list.txt"
    (tmp_path / "a.png").write_bytes(fx.photo(8, 8, 1, "PNG"))
    listing.write_text(f"a.png\n../outside/secret.png\n{outside / 'secret.png'}\n")
    with pytest.raises(InputError, match="climbs out") as caught:
        list(_ListSource(listing))
    assert (caught.value.context.line, caught.value.context.field) == (2, "image")
    skipping = _ListSource(listing, on_error="skip")
    assert [r["image"].name for r in skipping] == ["a.png"]
    assert [s.line for s in skipping.skipped] == [2, 3]
    assert len(list(_ListSource(listing, allow_outside_root=True))) == 3


def test_a_path_inside_the_root_through_dot_dot_is_read(tmp_path: Path, outside: Path) -> None:
    path = fx.coco(tmp_path, [])
    data = json.loads(path.read_text())
    data["images"][0]["file_name"] = "sub/../000001.jpg"
    path.write_text(json.dumps(data))
    (tmp_path / "coco" / "images" / "sub").mkdir()
    assert [r["image_id"] for r in sources.coco(path, tmp_path / "coco" / "images")] == [1, 2, 3]


# -- malformed COCO ---------------------------------------------------------------------

HOSTILE_VALUES: list[Any] = [
    None, [], [1], {}, {"a": [1]}, "yes", "", -1, 0, 7, 2**70, 1e308, float("nan"),
    float("-inf"), True, "x" * 300, "../x.jpg", [[1, 2]], [1, 2, 3], [1, 2, 3, "4"],
    [0, 0, 1e309, 1], [[0, 0, 1, 0, 1, "a"]], {"size": [1, 1], "counts": "!!"},
    {"size": "ab", "counts": [1]}, {"counts": [-1, 2]}, [[0, 0, 1e300, 0, 1, 1]],
    {"size": [48, 64], "counts": "o" * 200_000}, {"size": [48, 64], "counts": [2**80, 1]},
]  # fmt: skip
COCO_KEYS = {
    "images": ["id", "file_name", "width", "height"],
    "annotations": ["id", "image_id", "category_id", "bbox", "area", "iscrowd", "segmentation"],
    "categories": ["id", "name"],
}


def _coco_changes(seed: int, count: int) -> list[Callable[[dict[str, Any]], Any]]:
    rng = random.Random(seed)
    changes: list[Callable[[dict[str, Any]], Any]] = []
    for _ in range(count):
        part = rng.choice(list(COCO_KEYS))
        key = rng.choice(COCO_KEYS[part])
        value = rng.choice([*HOSTILE_VALUES, "<delete>"])

        def change(data: dict[str, Any], part: str = part, key: str = key, value: Any = value) -> None:
            entry = data[part][0]
            if value == "<delete>":
                entry.pop(key, None)
            else:
                entry[key] = copy.deepcopy(value)

        changes.append(change)
    for part in ("images", "annotations", "categories"):
        for value in ("not a list", {"a": 1}, [1, "x", None], None):
            changes.append(lambda data, part=part, value=value: data.__setitem__(part, value))
    return changes


COCO_BYTES: dict[str, bytes] = {
    "not UTF-8": b'{"images": [], "categories": [{"id": 1, "name": "\xff\xfe"}]}',
    "nested 100000 deep": b"[" * 100_000 + b"]" * 100_000,
    "nested objects": b'{"a":' * 50_000 + b"1" + b"}" * 50_000,
    "a 5000-digit id": b'{"images": [{"id": ' + b"9" * 5000 + b'}], "categories": []}',
    "truncated": b'{"images": [{"id": 1, "file_na',
    "empty": b"",
    "binary": bytes(random.Random(1).randrange(256) for _ in range(4000)),
    "a list": b"[1, 2, 3]",
}


def _drain(make: Callable[..., sources.Source]) -> None:
    """Build a source and read it both ways: only InputErrors under "raise", none of
    the per-record ones under "skip"."""
    failed: InputError | None = None
    try:
        list(make())
    except InputError as exc:
        failed = exc
    assert failed is None or failed.context.file is not None, failed
    try:
        skipping = make(on_error="skip")
    except InputError:
        return  # refused whole at once (the file is not of the source's form)
    list(skipping)
    for skipped in skipping.skipped:
        assert skipped.file != "?"
    with contextlib.suppress(InputError):
        skipping.schema()


def test_malformed_coco_is_an_input_error(tmp_path: Path, fault_cases: Any) -> None:
    base = fx.coco(tmp_path)
    pristine = json.loads(base.read_text())
    images = tmp_path / "coco" / "images"
    for change in _coco_changes(seed=28, count=150):
        data = copy.deepcopy(pristine)
        change(data)
        base.write_text(json.dumps(data))
        fault_cases.tried("hostile sources: malformed COCO")
        for masks in (False, True):
            _drain(lambda masks=masks, **o: sources.coco(base, images, masks=masks, **o))
    for name, raw in COCO_BYTES.items():
        base.write_bytes(raw)
        fault_cases.tried("hostile sources: malformed COCO")
        with pytest.raises(InputError) as caught:
            list(sources.coco(base, images, on_error="skip"))
        assert caught.value.context.file == str(base), name


@pytest.mark.parametrize(
    ("key", "value", "reason", "kept"),
    [
        ("id", [1], "integer 'id'", 2),  # the image, then its two annotations
        ("area", None, "area must be a number", 2),
        ("iscrowd", "yes", "iscrowd must be 0 or 1", 2),
        ("bbox", [1, 2, 3], "bbox must be", 2),
        ("bbox", [1, 2, "3", 4], "bbox must be", 2),
        ("category_id", [1], "unknown category id", 2),
        ("image_id", [1], "does not list", 3),  # whose image it was cannot be known
    ],
)
def test_each_malformed_coco_annotation_names_its_entry_and_key(
    tmp_path: Path, key: str, value: Any, reason: str, kept: int
) -> None:
    path = fx.coco(tmp_path)
    data = json.loads(path.read_text())
    data["annotations" if key != "id" else "images"][0][key] = value
    path.write_text(json.dumps(data))
    images = tmp_path / "coco" / "images"
    with pytest.raises(InputError, match=reason) as caught:
        list(sources.coco(path, images))
    assert caught.value.context.file == str(path)
    assert caught.value.context.entry is not None
    assert caught.value.context.field in (key, "id", "image_id")
    skipping = sources.coco(path, images, on_error="skip")
    assert len(list(skipping)) == kept
    assert reason in str(skipping.skipped[0])


# -- malformed VOC ----------------------------------------------------------------------

VOC_TEXTS = ["yes", "", "nan", "1e999", "-5", "abc", "1" * 50, "0x10", "\u0661", " 3 ", "2.5"]


def test_malformed_voc_is_an_input_error(tmp_path: Path, fault_cases: Any) -> None:
    root = fx.voc(tmp_path)
    xml = root / "Annotations" / f"{fx.VOC_IDS[0]}.xml"
    pristine = xml.read_text()
    rng = random.Random(28)
    elements = ["width", "height", "difficult", "truncated", "xmin", "ymin", "xmax", "ymax", "name"]
    cases: list[str | bytes] = []
    for _ in range(80):
        element = rng.choice(elements)
        start = pristine.index(f"<{element}>") + len(element) + 2
        end = pristine.index(f"</{element}>", start)
        cases.append(pristine[:start] + rng.choice(VOC_TEXTS) + pristine[end:])
    for _ in range(30):
        cut = rng.randrange(len(pristine))
        cases.append(pristine[:cut])
        raw = bytearray(pristine.encode())
        raw[rng.randrange(len(raw))] = rng.randrange(256)
        cases.append(bytes(raw))
    cases.append("<a>" * 100_000 + "</a>" * 100_000)
    cases.append(
        '<!DOCTYPE a [<!ENTITY b "bbbbbbbbbb"><!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">]><a>&c;</a>'
    )
    for case in cases:
        if isinstance(case, bytes):
            xml.write_bytes(case)
        else:
            xml.write_text(case, encoding="utf-8")
        fault_cases.tried("hostile sources: malformed VOC")
        _drain(lambda **o: sources.pascal_voc(root, "train", **o))
    lists = root / "ImageSets" / "Main" / "train.txt"
    for text in (b"\xff\xfe\n", b"/etc/passwd\n", b"x" * 300 + b"\n", b"a\x00b\n", b"..\n"):
        lists.write_bytes(text)
        fault_cases.tried("hostile sources: malformed VOC")
        _drain(lambda **o: sources.pascal_voc(root, "train", **o))


def test_a_voc_flag_that_is_not_0_or_1_names_the_object_and_element(tmp_path: Path) -> None:
    root = fx.voc(tmp_path)
    xml = root / "Annotations" / f"{fx.VOC_IDS[0]}.xml"
    xml.write_text(xml.read_text().replace("<difficult>1</difficult>", "<difficult>yes</difficult>"))
    with pytest.raises(InputError, match="<difficult> must be 0 or 1, not 'yes'") as caught:
        list(sources.pascal_voc(root, "train"))
    assert (caught.value.context.file, caught.value.context.entry) == (str(xml), "object 1")
    assert caught.value.context.field == "difficult"
    assert [r["image_id"] for r in sources.pascal_voc(root, "train", on_error="skip")] == fx.VOC_IDS[1:2]


# -- malformed tables -------------------------------------------------------------------

TABLE_LINES: list[bytes] = [
    b"\xff\xfe\xfd", b"{not json", b"[1, 2]", b"null", b'{"image": 5}', b'{"image": ["img/0.png"]}',
    b'{"image": "' + b"y" * 5000 + b'.png"}', b'{"image": "img/0.png\\n"}', b'{"image": "img/0.png\\u0000"}',
    b'{"caption": ' + b"[" * 5000 + b"]" * 5000 + b"}", b'{"n": ' + b"9" * 5000 + b"}",
    b'{"a b": 1, "a_b": 2}', b'"\xe9t\xe9"', b"\x00\x00\x00",
]  # fmt: skip


def test_malformed_tables_are_input_errors_by_line(tmp_path: Path, fault_cases: Any) -> None:
    folder = tmp_path / "t"
    (folder / "img").mkdir(parents=True)
    (folder / "img" / "0.png").write_bytes(fx.photo(8, 8, 0, "PNG"))
    good = b'{"image": "img/0.png", "caption": "fine"}'
    rng = random.Random(28)
    for line in TABLE_LINES:
        for kind in ("jsonl", "csv"):
            table = folder / f"t.{kind}"
            if kind == "csv":
                table.write_bytes(b"image,caption\nimg/0.png,fine\n" + line + b"\nimg/0.png,again\n")
            else:
                table.write_bytes(good + b"\n" + line + b"\n" + good + b"\n")
            fault_cases.tried("hostile sources: malformed tables")
            factory = sources.csv if kind == "csv" else sources.jsonl
            _drain(lambda factory=factory, table=table, **o: factory(table, **o))
            skipping = factory(table, on_error="skip")
            assert len(list(skipping)) >= 2, (kind, line)
            assert all(s.line == (3 if kind == "csv" else 2) for s in skipping.skipped), skipping.skipped
    for _ in range(40):
        table = folder / "r.csv"
        noise = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 400)))
        table.write_bytes(b"image,caption\nimg/0.png,a\n" + noise + b"\nimg/0.png,b\n")
        fault_cases.tried("hostile sources: malformed tables")
        _drain(lambda table=table, **o: sources.csv(table, **o))


# -- declared sizes ---------------------------------------------------------------------


def _png_header(width: int, height: int) -> bytes:
    """A PNG whose header declares ``width`` x ``height`` and whose data is empty."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"")) + chunk(b"IEND", b"")
    )


def _peak_bytes(run: Callable[[], Any]) -> int:
    tracemalloc.start()
    try:
        run()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize(
    ("declared", "file", "annotations", "reason"),
    [
        ((100_000, 100_000), "small", 1, "declares 100000 x 100000 pixels"),
        ((2**31, 2**31), "small", 1, "declares"),
        ((200_000, 200_000), "bomb", 1, "MAX_IMAGE_PIXELS"),
        ((10_000, 10_000), "bomb", 1, "MAX_IMAGE_PIXELS"),
        ((4096, 4096), "large", 65, "mask pixels one image may hold"),
    ],
)
def test_declared_sizes_are_bounded_by_the_bytes_that_exist(
    tmp_path: Path,
    declared: tuple[int, int],
    file: str,
    annotations: int,
    reason: str,
    fault_cases: Any,
) -> None:
    fault_cases.tried("hostile sources: declared sizes")
    path = fx.coco(tmp_path, [])
    images = tmp_path / "coco" / "images"
    image = images / "big.png"
    if file == "small":
        image.write_bytes(fx.photo(8, 8, 1, "PNG"))
    elif file == "bomb":
        image.write_bytes(_png_header(*declared))
    else:
        Image.new("L", declared).save(image)
    width, height = declared
    data = json.loads(path.read_text())
    data["images"] = [{"id": 1, "file_name": "big.png", "width": width, "height": height}]
    square = [[0, 0, 4, 0, 4, 4, 0, 4]]
    data["annotations"] = [
        {"id": i, "image_id": 1, "category_id": 1, "bbox": [0, 0, 4, 4], "segmentation": square}
        for i in range(annotations)
    ]
    path.write_text(json.dumps(data))
    source = sources.coco(path, images, masks=True, on_error="skip")
    peak = _peak_bytes(lambda: list(source))
    assert peak < 32 * image.stat().st_size + 8 * 2**20, peak
    assert len(source.skipped) == 1
    assert reason in source.skipped[0].reason
    with pytest.raises(InputError, match=reason):
        list(sources.coco(path, images, masks=True))


def test_an_rle_mask_of_the_declared_size_is_built_once_the_size_is_the_files(tmp_path: Path) -> None:
    path = fx.coco(tmp_path)
    records = list(sources.coco(path, tmp_path / "coco" / "images", masks=True))
    assert [np.asarray(m).shape for m in records[1]["masks"]] == [(40, 40), (40, 40)]


# -- at the terminal --------------------------------------------------------------------

CLI_CASES: dict[str, Callable[[dict[str, Any]], Any]] = {
    "file_name out of the root": lambda d: d["images"][0].update(file_name="../../outside/secret.png"),
    "id a list": lambda d: d["images"][0].update(id=[1]),
    "iscrowd yes": lambda d: d["annotations"][0].update(iscrowd="yes"),
    "area null": lambda d: d["annotations"][0].update(area=None),
    "gigapixels declared": lambda d: d["images"][0].update(width=100_000, height=100_000),
    "nested deeply": lambda d: b"[" * 100_000 + b"]" * 100_000,
    "not UTF-8": lambda d: b'{"images": [], "categories": [{"id": 1, "name": "\xff"}]}',
}


@pytest.mark.parametrize("name", list(CLI_CASES))
def test_ingest_of_hostile_coco_is_one_error_line_or_a_skip(
    name: str, tmp_path: Path, outside: Path, fault_cases: Any
) -> None:
    fault_cases.tried("hostile sources: ingest")
    path = fx.coco(tmp_path)
    data = json.loads(path.read_text())
    raw = CLI_CASES[name](data)
    path.write_bytes(raw if isinstance(raw, bytes) else json.dumps(data).encode())
    images = f"images_dir={tmp_path / 'coco' / 'images'}"
    for extra, out in (([], "out"), (["--on-error", "skip"], "skipped")):
        result = CliRunner().invoke(
            main, ["ingest", "coco", str(path), str(tmp_path / out), "--opt", images, *extra]
        )
        assert "Traceback" not in result.output
        assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
        if result.exit_code != 0:
            assert result.output.strip().splitlines()[-1].startswith("Error: InputError: "), result.output
            assert "unexpected" not in result.output
        else:
            assert extra, f"{name}: ingested without --on-error skip"
    assert not _OPENED


@pytest.mark.parametrize(
    "segmentation",
    [
        {"size": [48, 64], "counts": "o" * 200_000},
        {"size": [48, 64], "counts": [2**80, 1]},
        {"size": [48, 64], "counts": [-5, 3077]},
        {"size": [48, 64], "counts": {"a": 1}},
        [[0, 0, float("nan"), 0, 1, 1]],
        [[0, 0, float("inf"), 0, 1, 1]],
        [[0, 0, 10**400, 0, 1, 1]],
        [["x"] * 6],
        "polygon",
    ],
)
def test_a_hostile_segmentation_is_refused_naming_the_annotation(
    tmp_path: Path, segmentation: Any, fault_cases: Any
) -> None:
    fault_cases.tried("hostile sources: segmentations")
    path = fx.coco(tmp_path)
    data = json.loads(path.read_text())
    data["annotations"][0]["segmentation"] = segmentation
    path.write_text(json.dumps(data))
    source = sources.coco(path, tmp_path / "coco" / "images", masks=True, on_error="skip")
    assert [r["image_id"] for r in source] == [2, 3]
    assert source.skipped[0].entry is not None
    assert source.skipped[0].entry.startswith("annotation 1 of image 1")
    assert source.skipped[0].field == "segmentation"
