"""How a model reports an auxiliary loss to ``syntax_label_smoothed_cross_entropy``."""
from __future__ import annotations

from typing import Dict, Union

import torch


def report_aux_loss(extra: Dict, name: str, loss_sum: torch.Tensor, count: Union[int, torch.Tensor], weight: float) -> None:
    """Add ``name`` to ``extra["aux_losses"]``: a loss summed over ``count`` items, weighted by ``weight``."""
    extra.setdefault("aux_losses", {})[name] = {"loss": loss_sum, "ntokens": count, "weight": float(weight)}
