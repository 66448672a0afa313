"""``recordkit verify``: check every shard of a dataset against its manifest.

For each shard ``dataset.json`` lists: the file exists, has the recorded size and
sha256, and reads as TFRecord with every length and data CRC intact and the recorded
number of records; and its record index, when the manifest lists one, has the recorded
sha256 and gives exactly the offsets of the records read. The shards of a split's field
groups are checked the same way (the manifest holds each aligned with its split's shard:
the same record count). Every shard is checked (one
bad shard does not hide another); the command exits with status 1 naming each bad
shard. A dataset with no splits, or a split that holds no records, fails too (status 1):
that is what a write that stopped before its first record leaves, not a dataset to
train on (``--allow-empty`` accepts empty splits). ``--jobs`` checks several shards at
once, in threads or (``--processes``) in processes, with a progress bar on a terminal;
the results are printed in manifest order whatever the order they finish in. Nothing
here imports TensorFlow.
"""

from __future__ import annotations

import sys

import click

from recordkit._cli._common import dataset_at, split_option, storage_option
from recordkit._units import human_bytes
from recordkit.dataset._detect import load_manifest
from recordkit.tools._verify import Parallel, verify_dataset

__all__ = ["UnfinishedDataset", "verify_command"]


class UnfinishedDataset(click.ClickException):
    """The shards match, but a split has an unfinished write: exit status 3."""

    exit_code = 3


@click.command("verify", short_help="Check every shard of a dataset against its manifest.")
@click.argument("dataset")  # a folder or URL: the manifest says what is wrong
@split_option
@storage_option
@click.option("-q", "--quiet", is_flag=True, help="Print only the shards that fail.")
@click.option(
    "--allow-empty",
    is_flag=True,
    help="Pass a finished split that holds no records (default: status 1).",
)
@click.option(
    "--allow-unfinished",
    is_flag=True,
    help="Pass a split with an unfinished write when its complete shards match (default: status 3).",
)
@click.option(
    "-j",
    "--jobs",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Shards checked at once (threads; with --processes, processes).",
)
@click.option(
    "--processes",
    is_flag=True,
    help="Check in processes instead of threads: for splits of many small shards.",
)
@click.option("--progress/--no-progress", default=None, help="Show a progress bar (default: on a terminal).")
def verify_command(
    dataset: str,
    splits: tuple[str, ...],
    storage_options: tuple[str, ...],
    quiet: bool,
    allow_empty: bool,
    allow_unfinished: bool,
    jobs: int,
    processes: bool,
    progress: bool | None,
) -> None:
    """Check every shard of DATASET against its manifest (sha256, size, CRCs, records).

    DATASET is a dataset folder (or its dataset.json), or a remote URL (s3://, gs:// ...).
    Exits with status 1, naming each
    bad shard, when any shard is missing, changed, truncated or corrupt, or when the
    dataset has no splits or a split holds no records; with status 3
    when the shards match but a split has an unfinished write (records may be missing).
    """
    root = dataset_at(dataset, storage_options)
    manifest = load_manifest(root)
    if not manifest.splits:
        raise click.ClickException(
            f"{root}: the dataset has no splits, so no records: a write that stopped before its first "
            "record leaves this; write it again"
        )
    for name in splits:
        manifest.split(name)  # ManifestError listing the splits there are
    chosen = list(dict.fromkeys(splits)) if splits else list(manifest.splits)
    unfinished = [name for name in chosen if manifest.splits[name].unfinished is not None]
    for name in unfinished:
        click.echo(f"note: split {name!r} has an unfinished write; its complete shards are checked")
    from tqdm.auto import tqdm  # as the stats command: only when it runs

    total = sum(len(manifest.splits[name].listed_shards) for name in chosen)
    enabled = sys.stderr.isatty() if progress is None else progress
    with tqdm(total=total, desc="verify", unit=" shards", disable=not enabled) as bar:
        parallel: Parallel = "processes" if processes else "threads"
        checks = verify_dataset(root, manifest, chosen, jobs=jobs, parallel=parallel, progress=bar.update)
    width = max((len(check.shard.file) for check in checks), default=0)
    for check in checks:
        if check.ok and not quiet:
            size = human_bytes(check.shard.bytes)
            click.echo(f"ok    {check.shard.file.ljust(width)}  {check.records} records, {size}")
        elif not check.ok:
            click.echo(f"FAIL  {check.shard.file.ljust(width)}  {'; '.join(check.problems)}")
    bad = [check for check in checks if not check.ok]
    if bad:
        names = ", ".join(check.shard.file for check in bad)
        raise click.ClickException(
            f"shards that do not match the manifest ({len(bad)} of {len(checks)}): {names}"
        )
    if unfinished and not allow_unfinished:
        names = ", ".join(repr(name) for name in unfinished)
        raise UnfinishedDataset(
            f"unfinished write in split{'s' * (len(unfinished) != 1)} {names}: the {len(checks)} complete "
            "shards match, but records may be missing; finish the write (rerun it with --resume, or "
            "resume=True in Python), or pass --allow-unfinished to accept the complete shards"
        )
    records = sum(check.records for check in checks if check.group is None)
    empty = [name for name in chosen if name not in unfinished and not manifest.splits[name].num_records]
    if empty and not allow_empty:
        names = ", ".join(repr(name) for name in empty)
        rejected = sum(manifest.splits[name].rejected for name in empty)
        why = f" ({rejected} records were rejected)" if rejected else ""
        raise click.ClickException(
            f"split{'s' * (len(empty) != 1)} {names} hold{'s' * (len(empty) == 1)} no records{why}; "
            "pass --allow-empty to accept empty splits"
        )
    total = sum(check.shard.bytes for check in checks)
    click.echo(
        f"verified {len(checks)} shard{'s' * (len(checks) != 1)} of {len(chosen)} "
        f"split{'s' * (len(chosen) != 1)}: {records} records, {human_bytes(total)}, all match the manifest"
    )
