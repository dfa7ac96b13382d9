"""A hook at the end of fairseq-generate's batch loop, reached through the task's ``get_batch_iterator`` alone.

fairseq-generate calls nothing on the task after its last batch. It does ask the iterator for one more batch,
after printing the last one's lines and before its "Generate … BLEU" line: :class:`EndOfSplit` wraps the task's
``EpochBatchIterator`` so that the epoch iterator it hands out (:class:`NotifyAtEnd`) calls ``on_end`` once, when
that request finds it exhausted. fairseq's ``CountingIterator`` raises StopIteration from its own count and never
resumes its inner iterator, so the hook must wrap the epoch iterator itself (a class with its interface, which
the progress bars read: ``len``, ``n``, ``has_next``, ``take``, ``skip``), not a generator inside it.
"""
from __future__ import annotations

from typing import Callable


class NotifyAtEnd:
    """The epoch iterator ``inner`` (fairseq's ``CountingIterator``); calls ``on_end()`` once, when exhausted."""

    def __init__(self, inner, on_end: Callable[[], None]):
        self.inner, self.on_end, self.ended = inner, on_end, False

    @property
    def n(self) -> int:
        return self.inner.n

    def __len__(self) -> int:
        return len(self.inner)

    def __iter__(self):
        return self

    def __next__(self):
        try:
            return next(self.inner)
        except StopIteration:
            if not self.ended:
                self.ended = True
                self.on_end()
            raise

    def has_next(self) -> bool:
        return self.inner.has_next()

    def take(self, n: int) -> "NotifyAtEnd":
        self.inner.take(n)
        return self

    def skip(self, n: int) -> "NotifyAtEnd":
        self.inner.skip(n)
        return self


class EndOfSplit:
    """fairseq's ``EpochBatchIterator`` whose ``next_epoch_itr`` hands back a :class:`NotifyAtEnd`; every other
    attribute is the wrapped iterator's."""

    def __init__(self, epoch_itr, on_end: Callable[[], None]):
        self._epoch_itr, self._on_end = epoch_itr, on_end

    def __getattr__(self, name):
        if name.startswith("_"):  # not found on this object: never ask the wrapped one for our own private names
            raise AttributeError(name)
        return getattr(self._epoch_itr, name)

    def __len__(self) -> int:
        return len(self._epoch_itr)

    def next_epoch_itr(self, *args, **kwargs) -> NotifyAtEnd:
        return NotifyAtEnd(self._epoch_itr.next_epoch_itr(*args, **kwargs), self._on_end)
