"""Whether the forward now running is activation checkpointing's recomputation of one already run (in the backward
pass): a module that updates state in its forward (BatchNorm's running statistics) must not update it twice."""
from __future__ import annotations

import contextlib
import contextvars
from typing import Iterator

_RECOMPUTING = contextvars.ContextVar("syntrans_recomputing", default=False)


@contextlib.contextmanager
def recomputation() -> Iterator[None]:
    """The block recomputes a forward (torch.utils.checkpoint's recompute context)."""
    token = _RECOMPUTING.set(True)
    try:
        yield
    finally:
        _RECOMPUTING.reset(token)


def recomputing() -> bool:
    return _RECOMPUTING.get()
