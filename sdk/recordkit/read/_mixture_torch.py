"""A weighted mixture of datasets as a streaming PyTorch dataset (the ``torch`` extra).

:class:`MixtureStream` is :class:`~recordkit.torch.IterableDataset` with a mixture's
epochs (:class:`~recordkit.read._mixture_order.MixtureOrder`) in place of a split's: the same
division between ranks and DataLoader workers, ``set_epoch``, ``loader_state`` and
elastic resume; each sample is read from its source's :class:`~recordkit.RandomAccess`.
"""

from __future__ import annotations

from typing import cast

from recordkit.read._mixture_order import MixtureOrder
from recordkit.read._position import Start
from recordkit.read._random_access import RandomAccess
from recordkit.read._stream_order import StreamOrder
from recordkit.read._torch import IterableDataset, Transform

__all__ = ["MixtureStream"]


class MixtureStream(IterableDataset):
    """A mixture's samples streamed in its canonical order (made by
    :meth:`recordkit.Mixture.torch_iterable`); records are those of each source, with
    the fields every source reads."""

    @classmethod
    def mixed(
        cls,
        sources: list[RandomAccess],
        mixture: MixtureOrder,
        order: StreamOrder,
        *,
        start: Start,
        transform: Transform | None,
        tensors: bool,
        prefetch: int,
        batch_size: int | None,
    ) -> MixtureStream:
        """The stream of the mixture of ``sources`` in ``mixture``'s epochs, ordered and
        divided by ``order``, with the options of :meth:`recordkit.Dataset.torch_iterable`."""
        self = cast(
            MixtureStream,
            cls.over(
                sources[0],
                "mixture",
                order,
                transform=transform,
                tensors=tensors,
                prefetch=prefetch,
                batch_size=batch_size,
            ),
        )
        self.mix_in(sources, mixture)
        if start is not None:
            self.load_state_dict(start)
        return self
