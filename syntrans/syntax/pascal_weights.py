"""PASCAL's Gaussian weights around each query's parent (pure torch: ``syntrans-plot sentence`` draws them without
fairseq; the mechanism is :mod:`syntrans.mechanisms.pascal`)."""
from __future__ import annotations

import math

import torch

#: the weighing functions d_tj of PASCAL's Eq. 2 (Bugliarello & Okazaki 2020): "gaussian", the density of Eq. 3, and
#: "parent-only", Table 3b's ablation ("weights are only placed to the middle token (i.e. the parent)", §3.2)
PASCAL_WEIGHTS = ("gaussian", "parent-only")


def parent_weight(d: torch.Tensor, sigma: float, kind: str = "gaussian") -> torch.Tensor:
    """d_tj of Eq. 2 (Bugliarello & Okazaki 2020) from d = j − p_t (float32, any shape): N(d; 0, σ²), the Gaussian
    density of Eq. 3, for "gaussian"; 1 where |d| < 1, else 0, for "parent-only" (§3.2, Table 3b). Elementwise, so
    that the explicit weights (:func:`pascal_weights`) and flex attention's per-score modification are one formula."""
    if kind == "parent-only":
        return (d.abs() < 1).to(torch.float32)  # the middle token(s) of the parent
    z = d / sigma  # exact for integer and x.5 positions, so left padding shifts nothing
    return torch.exp(-0.5 * z * z) / (sigma * math.sqrt(2.0 * math.pi))


def pascal_weights(parents: torch.Tensor, src_len: int, sigma: float, kind: str = "gaussian") -> torch.Tensor:
    """W[b, i, j] = N(j; p_bi, σ²), the Gaussian density (Bugliarello & Okazaki 2020, §2.1, Eq. 3), for ``kind``
    "gaussian"; for "parent-only" (§3.2, Table 3b: "weights are only placed to the middle token (i.e. the parent)")
    W[b, i, j] = 1 where |j − p_bi| < 1, else 0 (σ unused): 1 on the parent's middle subword, on both middle subwords
    when the middle position is x.5 (an even number of subwords). The value 1 at the parent is ours (the paper gives
    none; an indicator leaves the parent's score as it is under Eq. 2's product).

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
    if kind not in PASCAL_WEIGHTS:
        raise ValueError(f"unknown PASCAL weights {kind!r}, expected one of {', '.join(PASCAL_WEIGHTS)}")
    w = parent_weight(j - p, sigma, kind)  # (B, T, S)
    return torch.where(p < 0, torch.ones_like(w), w)
