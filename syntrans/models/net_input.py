"""The syntax features a model reads from a batch (``net_input`` keys, built by the ``syntax_translation`` task)."""
from __future__ import annotations

from typing import Dict, Optional

import torch


def required_feature(features: Dict[str, Optional[torch.Tensor]], name: str, shape, why: str) -> torch.Tensor:
    """The batch feature ``name`` of the expected shape, or a ValueError saying who needs it and how to get it."""
    value = features.get(name)
    if value is None:
        raise ValueError(f"{why} needs {name} in net_input: use --task syntax_translation on data whose sidecars "
                         "include the parses of that side (syntrans-preprocess --trainparse/--validparse/--testparse)")
    if tuple(value.shape) != tuple(shape):
        raise ValueError(f"{name} has shape {tuple(value.shape)}, expected {tuple(shape)}")
    return value
