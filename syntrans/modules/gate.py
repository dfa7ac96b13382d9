"""Syntax gates (Hou et al., gated self-attention): per sentence and head, how much of a head's
attention comes from its syntax mechanism, A = G·A_syn + (1 − G)·A_raw.

The gate is a mechanism of its own: A_syn is whatever the head's syntax mechanism produces (distance mask,
PASCAL, LISA), A_raw the stock softmax of the same scores.
"""
from __future__ import annotations

from typing import Optional

import torch
import torch.nn as nn
import torch.nn.functional as F

from .precision import full_precision, named_precision

GATE_MODES = ("gated", "pure", "avg")


def masked_max_pool(x: torch.Tensor, pad_mask: torch.Tensor) -> torch.Tensor:
    """Max over the sequence with padding excluded: x (T, B, C), pad_mask (B, T) True at padding → (B, C)."""
    return x.masked_fill(pad_mask.t().unsqueeze(-1), float("-inf")).max(dim=0).values


class SyntaxGate(nn.Module):
    """G = σ(BN(W₂·LayerNorm(ReLU(W₁·maxpool(X) + b₁)) + b₂)) ∈ (0, 1)^{B×H} (Hou et al., gated self-attention).

    ``mode``: ``gated`` (learned), ``pure`` (G ≡ 1) or ``avg`` (G ≡ 0.5), the paper's ablations. While
    ``frozen`` (pre-warm-up) the network runs without gradient, so its parameters do not move; BatchNorm
    still normalises with the batch statistics in training and its running statistics at evaluation.
    """

    def __init__(self, embed_dim: int, num_heads: int, hidden: int, batchnorm: bool = True, mode: str = "gated",
                 warmup_epochs: int = 0):
        super().__init__()
        if mode not in GATE_MODES:
            raise ValueError(f"gate mode must be one of {', '.join(GATE_MODES)}, found {mode!r}")
        self.mode, self.num_heads = mode, num_heads
        self.fc1 = nn.Linear(embed_dim, hidden)
        self.norm = nn.LayerNorm(hidden)
        self.fc2 = nn.Linear(hidden, num_heads)
        self.bn: Optional[nn.BatchNorm1d] = nn.BatchNorm1d(num_heads) if batchnorm else None
        self.warmup_epochs = int(warmup_epochs)
        self.frozen = self.warmup_epochs >= 1  # training starts in epoch 1

    def set_epoch(self, epoch: int) -> None:
        """Pre-warm-up from fairseq's epoch counter (1-based): frozen in epochs 1..K, trained from K + 1 on.
        fairseq calls this at every epoch start, also the resumed one, so a resumed run follows the same schedule."""
        self.frozen = epoch <= self.warmup_epochs

    def _logits(self, x: torch.Tensor, pad_mask: torch.Tensor) -> torch.Tensor:
        """x (T, B, C) → the gate logits (B, H), in the parameters' dtype with autocast off (float32 under autocast:
        CPU autocast would run the linear layers in half precision and leaves LayerNorm and BatchNorm to their
        input's dtype, quantising G to steps of 2⁻⁸ in bfloat16; the network is (B, C) → (B, H), so this costs
        nothing)."""
        pooled = masked_max_pool(x, pad_mask).to(self.fc1.weight.dtype)  # (B, C); the max is exact in any dtype
        o = self.fc2(self.norm(F.relu(self.fc1(pooled))))  # (B, H)
        if self.bn is None:
            return o
        if self.training and o.size(0) < 2:  # batch statistics need two sentences: use the running ones
            bn = self.bn
            return F.batch_norm(o, bn.running_mean, bn.running_var, bn.weight, bn.bias, False, 0.0, bn.eps)
        return self.bn(o)

    def forward(self, x: torch.Tensor, pad_mask: torch.Tensor) -> torch.Tensor:
        """x: (T, B, C) the layer's input, pad_mask (B, T) → G (B, H): learned, in the gate parameters' dtype (float32
        under autocast, see :meth:`_logits`); ``pure``/``avg``, in x's dtype."""
        B = x.size(1)
        if self.mode != "gated":
            return x.new_full((B, self.num_heads), 1.0 if self.mode == "pure" else 0.5)
        with named_precision("the syntax gate (Hou et al., gated self-attention)", x), full_precision(x.device.type):
            if self.frozen:
                with torch.no_grad():
                    return torch.sigmoid(self._logits(x, pad_mask))
            return torch.sigmoid(self._logits(x, pad_mask))


def mix(p_syn: torch.Tensor, p_raw: torch.Tensor, gates: torch.Tensor) -> torch.Tensor:
    """A = G·A_syn + (1 − G)·A_raw per (sentence, head): p_* (B, h, T, S), gates (B, h) → (B, h, T, S)."""
    g = gates.to(p_syn.dtype).view(gates.size(0), gates.size(1), 1, 1)
    return g * p_syn + (1.0 - g) * p_raw
