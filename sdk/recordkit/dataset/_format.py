"""The format versions of ``dataset.json``: every rule about them, in one place.

A manifest says which format it is written in (its ``format`` key). This recordkit
reads all the versions in :data:`READABLE` and writes, for each dataset, the oldest
version that can hold what the dataset has (:func:`format_for`), so that a dataset that
uses nothing new stays readable by older recordkits:

* ``recordkit.dataset/1``: shards with their counts, sizes and sha256;
* ``recordkit.dataset/2``: each shard's record index (``index``) too;
* ``recordkit.dataset/3``: field groups (``field_groups`` in a split: fields added
  after the split was written, in their own aligned shards). Written only for a dataset
  that has a field group; older recordkits refuse it (their manifest model does not
  know the version), so none of them reads such a split without its added fields.
* ``recordkit.dataset/4``: shard tables (``shard_table`` in a split: a split of many
  shards listed as columns in a file of its own, :mod:`recordkit.dataset._shard_table`).
  Written only for a dataset that has one; older recordkits refuse it.
* ``recordkit.dataset/5``: a dataset card (``card``: license, citation, homepage,
  authors ...). Written only for a dataset that has a card; older recordkits refuse it
  rather than read the dataset and drop its license and citation unseen.
* ``recordkit.dataset/6``: the sizes of each split's pictures (``picture_sizes`` in a
  split: the smallest and largest height and width of each picture field, which readers
  use to choose one decode for every picture). Written only for a dataset that has them.

A manifest of a version this recordkit does not know (written by a newer one) is
refused by :func:`check_readable` with a message that says to upgrade.
"""

from __future__ import annotations

from typing import Literal, get_args

__all__ = ["READABLE", "FormatVersion", "check_readable", "format_for"]

#: Every version this recordkit reads, oldest first.
FormatVersion = Literal[
    "recordkit.dataset/1",
    "recordkit.dataset/2",
    "recordkit.dataset/3",
    "recordkit.dataset/4",
    "recordkit.dataset/5",
    "recordkit.dataset/6",
]
READABLE: tuple[str, ...] = get_args(FormatVersion)

#: The version written for a dataset without field groups (readable since record indexes).
_PLAIN: FormatVersion = "recordkit.dataset/2"
#: The version written for a dataset with field groups, and the first that may hold them.
_WITH_FIELD_GROUPS: FormatVersion = "recordkit.dataset/3"
#: The first version that may list a split by a shard table.
_WITH_SHARD_TABLES: FormatVersion = "recordkit.dataset/4"
#: The version written for a dataset with a card, and the first that may hold one.
_WITH_CARD: FormatVersion = "recordkit.dataset/5"
#: The version written for a dataset with picture sizes, and the first that may hold them.
_WITH_PICTURE_SIZES: FormatVersion = "recordkit.dataset/6"


def format_for(
    *, field_groups: bool, shard_tables: bool = False, card: bool = False, picture_sizes: bool = False
) -> FormatVersion:
    """The version to write for a dataset that has (or has not) field groups, shard
    tables, a card and picture sizes: the oldest that holds all it has."""
    if picture_sizes:
        return _WITH_PICTURE_SIZES
    if card:
        return _WITH_CARD
    if shard_tables:
        return _WITH_SHARD_TABLES
    return _WITH_FIELD_GROUPS if field_groups else _PLAIN


def check_readable(
    version: object, *, field_groups: bool, card: bool = False, picture_sizes: bool = False
) -> str | None:
    """What is wrong with a manifest of format ``version`` (None: nothing): a version
    this recordkit does not know, or field groups, a card or picture sizes in a version
    older than the first that holds them."""
    if version not in READABLE:
        return (
            f"format {version!r} is not one this recordkit reads ({', '.join(READABLE)}); "
            "the dataset was written by a newer recordkit: upgrade recordkit to read it"
        )
    if field_groups and READABLE.index(str(version)) < READABLE.index(_WITH_FIELD_GROUPS):
        return f"format {version!r} cannot hold field groups (they need {_WITH_FIELD_GROUPS!r} or later)"
    if card and READABLE.index(str(version)) < READABLE.index(_WITH_CARD):
        return f"format {version!r} cannot hold a dataset card (it needs {_WITH_CARD!r} or later)"
    if picture_sizes and READABLE.index(str(version)) < READABLE.index(_WITH_PICTURE_SIZES):
        return f"format {version!r} cannot hold picture sizes (they need {_WITH_PICTURE_SIZES!r} or later)"
    return None
