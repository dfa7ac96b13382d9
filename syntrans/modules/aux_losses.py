"""How a model reports auxiliary losses and metrics to ``syntax_label_smoothed_cross_entropy``."""
from __future__ import annotations

from typing import Dict, Union

import torch


def report_aux_loss(extra: Dict, name: str, loss_sum: torch.Tensor, count: Union[int, torch.Tensor], weight: float) -> None:
    """Add ``name`` to ``extra["aux_losses"]``: a loss summed over ``count`` items, weighted by ``weight``."""
    extra.setdefault("aux_losses", {})[name] = {"loss": loss_sum, "ntokens": count, "weight": float(weight)}


def report_aux_metric(extra: Dict, name: str, value_sum: Union[float, torch.Tensor], count: Union[int, torch.Tensor]) -> None:
    """Add ``name`` to ``extra["aux_metrics"]``: a value summed over ``count`` items, logged as its mean,
    never added to the loss (e.g. the attachment score of a parent-attention head, in percent)."""
    extra.setdefault("aux_metrics", {})[name] = {"value": value_sum, "ntokens": count}


def merge_aux(extra: Dict, more: Dict) -> None:
    """Copy the losses and metrics reported in ``more`` into ``extra``."""
    for key in ("aux_losses", "aux_metrics"):
        if more.get(key):
            extra.setdefault(key, {}).update(more[key])
