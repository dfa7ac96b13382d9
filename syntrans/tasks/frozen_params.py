"""Frozen syntax parts (a warm-up that keeps a part's parameters fixed for the first epochs) under data-parallel
training.

A frozen :class:`~syntrans.modules.blocks.SyntaxPart` runs without gradient, so in one process its parameters end
a backward pass with ``grad = None`` and the optimizer skips them (no weight decay, no step count). Several
processes change that:

- fairseq's ``legacy_ddp`` zero-fills the gradient of every parameter without one before its all-reduce, and
  Adam would then decay the frozen part and count steps for it (its bias correction after warm-up differs);
  :func:`drop_frozen_grads` takes those gradients away again just before the optimizer step;
- torch's DistributedDataParallel (``--ddp-backend pytorch_ddp``/``c10d``) without ``--find-unused-parameters``
  waits for a gradient of every parameter and fails on the next step; :func:`with_zero_tie` gives the frozen
  parameters a zero gradient instead (all-reduced like any other, then dropped before the step). With
  ``--find-unused-parameters`` torch finds them unused by itself, and a tie would be refused as a second
  gradient, so none is added (:func:`needs_zero_tie`).
"""
from __future__ import annotations

from typing import Callable, List

import torch.nn as nn

from ..modules.blocks import SyntaxPart


def frozen_params(model: nn.Module) -> List[nn.Parameter]:
    """The parameters of every frozen syntax part of ``model`` (a wrapped model's inner one included)."""
    return [p for m in model.modules() if isinstance(m, SyntaxPart) and m.frozen for p in m.parameters()]


def drop_frozen_grads(model: nn.Module) -> None:
    """``grad = None`` for the frozen parts' parameters: the optimizer then leaves them as they are."""
    for p in frozen_params(model):
        p.grad = None


def needs_zero_tie(model: nn.Module) -> bool:
    """Whether ``model`` is (wrapped in) torch DistributedDataParallel that expects a gradient for every
    parameter (``find_unused_parameters`` off). fairseq wraps it once more (ModuleProxyWrapper), so the
    ``module`` chain is followed."""
    while model is not None:
        if isinstance(model, nn.parallel.DistributedDataParallel):
            return not model.find_unused_parameters
        model = model._modules.get("module")
    return False


def with_zero_tie(criterion: Callable, params: List[nn.Parameter]) -> Callable:
    """``criterion`` (model, sample) → (loss, sample_size, logging_output) whose loss gets 0 · Σ p over ``params``
    added: the same value, and a gradient of zeros for each of ``params``."""

    def tied(model, sample):
        loss, sample_size, logging_output = criterion(model, sample)
        return loss + sum(p.sum() for p in params) * 0.0, sample_size, logging_output

    return tied
