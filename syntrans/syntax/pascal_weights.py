"""PASCAL's Gaussian weights around each query's parent (pure torch: ``syntrans-plot sentence`` draws them without
fairseq; the mechanism is :mod:`syntrans.mechanisms.pascal`)."""
from __future__ import annotations

import math

import torch


def pascal_weights(parents: torch.Tensor, src_len: int, sigma: float) -> torch.Tensor:
    """W[b, i, j] = N(j; p_bi, σ²), the Gaussian density (Bugliarello & Okazaki 2020, §3, PASCAL weights).

    parents: (B, T) parent positions in padded coordinates, negative where a query has no parent (EOS, padding):
    those rows are all ones, so their scores pass unchanged. Returns (B, T, src_len) float32 in every precision
    (the attention casts W to its scores' dtype): the positions, x.5 for a head word of an even number of subwords,
    are taken to float32 here, exact below 2²², while a half-precision tensor would already have rounded them
    (bf16: 129.5 → 130); the batch carries them as float64 (``src_parent_middle``), which fairseq's --fp16/--bf16
    leave as they are.
    """
    if parents.dtype in (torch.float16, torch.bfloat16):
        raise TypeError(f"PASCAL parent positions arrived as {parents.dtype}, which rounds them (bf16: 129.5 → 130): "
                        "pass them as float32/float64 or integers (the batch's src_parent_middle is float64)")
    j = torch.arange(src_len, device=parents.device, dtype=torch.float32)  # (S,)
    p = parents.to(torch.float32).unsqueeze(-1)  # (B, T, 1)
    z = (j - p) / sigma  # (B, T, S); exact for integer and x.5 positions, so left padding shifts nothing
    w = torch.exp(-0.5 * z * z) / (sigma * math.sqrt(2.0 * math.pi))
    return torch.where(p < 0, torch.ones_like(w), w)
