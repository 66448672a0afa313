"""One shard as ``dataset.json`` lists it: its file, records, bytes, sha256 and index.

Its own module so that both the manifest (:mod:`recordkit.dataset._manifest`) and the
shard table (:mod:`recordkit.dataset._shard_table`) that holds many of them as columns
build the same entries.
"""

from __future__ import annotations

import pydantic

from recordkit.dataset._paths import check_member_name

__all__ = ["ShardIndex", "ShardInfo", "StrictModel"]


class StrictModel(pydantic.BaseModel):
    # strict: a manifest is untrusted input; "5" or true is not a record count.
    model_config = pydantic.ConfigDict(extra="forbid", strict=True)


class ShardIndex(StrictModel):
    """A shard's record index (:mod:`recordkit.format._index`): its file and sha256."""

    file: str = pydantic.Field(description="File name of the index, relative to the dataset root.")
    sha256: str = pydantic.Field(pattern=r"^[0-9a-f]{64}$", description="Hex sha256 of the index bytes.")

    @pydantic.field_validator("file")
    @classmethod
    def _inside_the_dataset(cls, value: str) -> str:
        return check_member_name(value)


class ShardInfo(StrictModel):
    """One complete shard file."""

    file: str = pydantic.Field(description="File name, relative to the dataset root.")
    records: int = pydantic.Field(ge=0, description="Number of records in the shard.")
    bytes: int = pydantic.Field(ge=0, description="File size in bytes (as stored, compressed or not).")
    # Empty only in the view of a folder another tool wrote (TFDS records no sha256).
    sha256: str = pydantic.Field(
        pattern=r"^([0-9a-f]{64})?$", description="Hex sha256 of the file's bytes (empty: not recorded)."
    )
    index: ShardIndex | None = pydantic.Field(
        default=None,
        description="The record index beside the shard (absent in datasets written before format 2).",
    )

    @pydantic.field_validator("file")
    @classmethod
    def _inside_the_dataset(cls, value: str) -> str:
        return check_member_name(value)
