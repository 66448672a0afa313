"""Weighted mixtures of datasets: ``rk.mix({a: 0.7, b: 0.3})``, read in epochs like one split.

An epoch of a mixture is ``samples_per_epoch`` samples; source ``i`` gives ``counts[i]``
of them (``weights[i] * samples_per_epoch``, rounded so that they add up). Which source
each position of the epoch takes from is drawn from the seed and the epoch (shuffled) or
spread evenly (not shuffled), so the proportions hold over stretches of the epoch too,
not only over the whole (to one sample when not shuffled). Each source is read in its
own epochs, in its own canonical order (:func:`~recordkit.read._epoch_order.epoch_order`),
continuing where the mixture's last epoch left it: a small source is repeated (a new
order each pass) while a large one is still in its first. The default
``samples_per_epoch`` is the largest for which no source repeats within the mixture's
first epoch.

The mixture's order (:mod:`recordkit.read._mixture_order`, pure numpy) numbers its
samples across the sources; the streaming readers divide and resume it exactly as a
split's (:mod:`recordkit.read._epoch_order`). The PyTorch reader is
:mod:`recordkit.read._mixture_torch`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from recordkit.read._dataset import Dataset, _torch_readers, epoch_options
from recordkit.read._epoch_stream import EpochStream
from recordkit.read._grain_epochs import MixedDataSource
from recordkit.read._mixture_order import MixtureOrder
from recordkit.read._position import Start
from recordkit.read._read_config import Layout
from recordkit.read._stream_order import StreamOrder
from recordkit.read._tf_epochs import TfEpochs
from recordkit.schema._compatibility import check_compatibility

if TYPE_CHECKING:  # the torch readers' types only: importing them needs torch
    from recordkit.read._batch_loader import BatchStream
    from recordkit.read._mixture_torch import MixtureStream
    from recordkit.read._torch import Transform

__all__ = ["Mixture", "mix"]


class Mixture:
    """Several datasets (or splits) read as one, in proportions (see :func:`mix`)."""

    def __init__(
        self, sources: Sequence[Dataset], weights: Sequence[float], *, samples_per_epoch: int | None = None
    ) -> None:
        self.sources = list(sources)
        _check_fields(self.sources)
        orders = [handle._random_access().split_order for handle in self.sources]
        self.order = MixtureOrder(orders, weights, samples_per_epoch)

    @property
    def weights(self) -> list[float]:
        """The sources' proportions (adding up to 1)."""
        return self.order.weights

    @property
    def fields(self) -> tuple[str, ...]:
        """The fields read (every source's)."""
        return self.sources[0].fields

    def __len__(self) -> int:
        """Samples per epoch."""
        return len(self.order)

    def __repr__(self) -> str:
        parts = ", ".join(
            f"{source!r}: {w:.3g}" for source, w in zip(self.sources, self.weights, strict=True)
        )
        return f"recordkit.mix({{{parts}}}, samples_per_epoch={len(self)})"

    def epoch_stream(
        self,
        *,
        shuffle: bool = False,
        seed: int | None = None,
        window: int = 1024,
        rank: int = 0,
        world_size: int = 1,
        start: Start = None,
        prefetch: int = 64,
        batch_size: int | None = None,
    ) -> EpochStream:
        """The mixture's samples as numpy, in its canonical epochs, resumable with any
        number of ranks and workers (:meth:`recordkit.Dataset.epoch_stream`'s options)."""
        sources = [handle._random_access() for handle in self.sources]
        order = StreamOrder.of(shuffle, seed, window, rank, world_size)
        stream = EpochStream.over(sources[0], "mixture", order, prefetch=prefetch, batch_size=batch_size)
        stream.mix_in(sources, self.order)
        if start is not None:
            stream.load_state_dict(start)
        return stream

    def tf_epochs(
        self,
        batch_size: int | None = None,
        *,
        shuffle: bool = False,
        seed: int | None = None,
        window: int = 1024,
        rank: int = 0,
        world_size: int = 1,
        start: Start = None,
        drop_remainder: bool = False,
        layout: Layout | None = None,
    ) -> TfEpochs:
        """The mixture's canonical epochs as ``tf.data``, resumable with any number of
        ranks, with the options of :meth:`recordkit.Dataset.tf_epochs` (one state with
        the mixture's other readers). Each record is parsed with the first source's
        schema (the sources' agree on the fields read)."""
        stream = self.epoch_stream(
            shuffle=shuffle,
            seed=seed,
            window=window,
            rank=rank,
            world_size=world_size,
            start=start,
            batch_size=batch_size,
        )
        return TfEpochs(stream, epoch_options(batch_size, drop_remainder, layout, None))

    def grain(self) -> MixedDataSource:
        """The mixture's sources as one Grain data source, to read with
        ``recordkit.grain.EpochSampler`` (which gives the mixture's epochs); needs the
        ``grain`` extra to be read by Grain."""
        return MixedDataSource([handle._random_access() for handle in self.sources], self.order)

    def torch_iterable(
        self,
        *,
        shuffle: bool = False,
        seed: int | None = None,
        window: int = 1024,
        rank: int | None = None,
        world_size: int | None = None,
        start: Start = None,
        transform: Transform | None = None,
        tensors: bool = True,
        prefetch: int = 64,
        batch_size: int | None = None,
    ) -> MixtureStream:
        """The mixture as a streaming PyTorch dataset, with the options, division between
        ranks and workers, ``set_epoch`` and elastic resume of
        :meth:`recordkit.Dataset.torch_iterable`. Needs the ``torch`` extra."""
        module = _torch_readers("Mixture.torch_iterable()", "recordkit.read._mixture_torch")
        stream: MixtureStream = module.MixtureStream.mixed(
            [handle._random_access() for handle in self.sources],
            self.order,
            StreamOrder.of(shuffle, seed, window, rank, world_size),
            start=start,
            transform=transform,
            tensors=tensors,
            prefetch=prefetch,
            batch_size=batch_size,
        )
        return stream

    def torch_batches(
        self,
        batch_size: int,
        *,
        drop_last: bool = False,
        concat: Sequence[str] = (),
        channels_first: Sequence[str] = (),
        shuffle: bool = False,
        seed: int | None = None,
        window: int = 1024,
        rank: int | None = None,
        world_size: int | None = None,
        start: Start = None,
    ) -> BatchStream:
        """The mixture as whole batches, for ``DataLoader(stream, batch_size=None,
        num_workers=...)`` or ``recordkit.torch.ThreadLoader(stream)``, with the options
        of :meth:`recordkit.Dataset.torch_batches` and the order, division and elastic
        resume of :meth:`torch_iterable` (one state for both). Needs the ``torch`` extra."""
        module = _torch_readers("Mixture.torch_batches()", "recordkit.read._batch_loader")
        sources = [handle._random_access() for handle in self.sources]
        stream: BatchStream = module.BatchStream.batched(
            sources[0],
            "mixture",
            StreamOrder.of(shuffle, seed, window, rank, world_size),
            batch_size=batch_size,
            drop_last=drop_last,
            concat=concat,
            channels_first=channels_first,
        )
        stream.mix_in(sources, self.order)
        if start is not None:
            stream.load_state_dict(start)
        return stream


def _check_fields(sources: Sequence[Dataset]) -> None:
    """The sources read the same fields, stored in layouts the first source's schema reads."""
    if not sources:
        raise ValueError("mix() needs at least one source")
    first = sources[0]
    for i, other in enumerate(sources[1:], start=1):
        if set(other.fields) != set(first.fields):
            raise ValueError(
                f"the sources of a mixture must read the same fields: source 0 reads {sorted(first.fields)}, "
                f"source {i} reads {sorted(other.fields)} (use .select([...]) on each)"
            )
        check_compatibility(other.schema, first.schema, fields=list(first.fields)).raise_for_incompatible()


def mix(
    sources: Mapping[Dataset, float] | Sequence[Dataset],
    weights: Sequence[float] | None = None,
    *,
    samples_per_epoch: int | None = None,
) -> Mixture:
    """A weighted mixture of datasets (handles from :func:`recordkit.open`, each of a split
    and with the same fields selected), read in epochs like one dataset.

    ``rk.mix({a: 0.7, b: 0.3})`` or ``rk.mix([a, b], weights=[0.7, 0.3])`` (no weights:
    equal). An epoch is ``samples_per_epoch`` samples (default: the most for which no
    source repeats in the first epoch), each source giving its share; a source that runs
    out continues into its next epoch, in a new order. The schemas must agree on the
    fields read (:func:`recordkit.check_compatibility`)."""
    if isinstance(sources, Mapping):
        if weights is not None:
            raise ValueError("give the weights in the mapping or as weights=, not both")
        handles, weights = list(sources), list(sources.values())
    else:
        handles = list(sources)
        weights = [1.0] * len(handles) if weights is None else list(weights)
    for i, handle in enumerate(handles):
        if not isinstance(handle, Dataset):
            raise TypeError(
                f"mix() takes datasets opened with recordkit.open; source {i} is {type(handle).__name__}"
            )
    return Mixture(handles, weights, samples_per_epoch=samples_per_epoch)
