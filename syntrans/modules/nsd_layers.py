"""NSD (Ma et al. 2019) as model parts: the NSD input embedding with its syntactic positional
encoding, the NSD classifier, and its losses L_entdist and L_dist.

NSD values v are integers; a model knows the range [v_min, v_max] seen in training (fixed into its
embedding and classifier sizes). Class k ↔ value v_min + k; values outside the range are clipped (and
counted). Tokens without a value (EOS, padding) carry ``NO_NSD``, the decoder's BOS carries ``BOS_NSD``.
"""
from __future__ import annotations

import math
from typing import Optional, Tuple

import torch
import torch.nn as nn
import torch.nn.functional as F

from ..syntax.nsd import BOS_NSD, NO_NSD

NSD_INPUT_MODES = ("none", "concat", "add", "linear")


def nsd_classes(values: torch.Tensor, v_min: int, v_max: int) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(class index in 0..V−1 after clipping to [v_min, v_max], mask of tokens with a value, number clipped).
    values (B, T) int → ((B, T) long, (B, T) bool, () long)."""
    real = values > NO_NSD
    clipped = (real & ((values < v_min) | (values > v_max))).sum()
    return (values.clamp(v_min, v_max) - v_min).long().masked_fill(~real, 0), real, clipped


class NsdInput(nn.Module):
    """x (the scaled word embeddings) combined with E_d[d] (Ma et al. 2019, NSD as input), plus the syntactic
    positional encoding SPE(d) when ``spe`` (Ma et al. 2019, syntactic PE).

    * ``concat``: [x_{1..C−k} ; E_d[d]]: the first C − k dimensions of the word embedding, then the k-dim
      NSD embedding (k = ``nsd_dim``), so the two split the model dimension;
    * ``add``: x + E_d[d] (E_d is C-dim);
    * ``linear``: W(x ‖ E_d[d]) + b, W ∈ ℝ^{C×(C+k)};
    * ``none``: x (SPE only).

    E_d has a row per value of the range, a row for BOS and a zero row for tokens without a value.
    SPE(d)_{2j} = sin(d' / (2π λ^{2j/C})), SPE(d)_{2j+1} = cos(d' / (2π λ^{2j/C})) with d' = d − v_min + 1 ≥ 1
    the value shifted positive (our reading of "(d shifted positive)/λ^{2k/d}·2π"); 0 for BOS, EOS, padding.
    """

    def __init__(self, mode: str, embed_dim: int, nsd_dim: int, v_min: int, v_max: int, spe: bool = False,
                 spe_lambda: float = 40.0):
        super().__init__()
        if mode not in NSD_INPUT_MODES:
            raise ValueError(f"unknown NSD input mode {mode!r}, expected one of {', '.join(NSD_INPUT_MODES)}")
        if v_max < v_min:
            raise ValueError(f"empty NSD value range [{v_min}, {v_max}]")
        self.mode, self.v_min, self.v_max, self.spe, self.spe_lambda = mode, int(v_min), int(v_max), bool(spe), float(spe_lambda)
        dim = embed_dim if mode == "add" else nsd_dim
        if mode == "concat" and not 0 < nsd_dim < embed_dim:
            raise ValueError(f"concat NSD input needs 0 < --nsd-embed-dim < {embed_dim}, found {nsd_dim}")
        if mode != "none":
            self.embed = nn.Embedding(self.v_max - self.v_min + 3, dim, padding_idx=0)  # 0: none, 1: BOS, 2+k: class k
            nn.init.normal_(self.embed.weight, mean=0.0, std=dim ** -0.5)
            nn.init.constant_(self.embed.weight[0], 0.0)
        if mode == "linear":
            self.proj = nn.Linear(embed_dim + dim, embed_dim)
        self.embed_dim = embed_dim
        self.values: Optional[torch.Tensor] = None  # (B, T) set by the owner before a forward that omits them
        self.clipped = 0

    def index(self, values: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        """Embedding rows (B, T) and the shifted values d' (B, T) float (0 where no value)."""
        cls, real, clipped = nsd_classes(values, self.v_min, self.v_max)
        self.clipped = int(clipped)
        rows = torch.where(real, cls + 2, torch.where(values == BOS_NSD, 1, 0))
        return rows, torch.where(real, cls + 1, 0).to(torch.float32)

    def spe_table(self, shifted: torch.Tensor) -> torch.Tensor:
        """SPE (Ma et al. 2019, syntactic positional encoding): (B, T) d' → (B, T, C); rows with d' = 0 are 0."""
        C = self.embed_dim
        j = torch.arange(0, C, 2, device=shifted.device, dtype=torch.float32)  # 2j
        angle = shifted.unsqueeze(-1) / (2 * math.pi * self.spe_lambda ** (j / C))  # (B, T, C/2)
        pe = torch.stack([angle.sin(), angle.cos()], dim=-1).flatten(-2)[..., :C]  # (B, T, C)
        return pe * (shifted > 0).unsqueeze(-1)

    def forward(self, x: torch.Tensor, values: Optional[torch.Tensor] = None) -> torch.Tensor:
        """x (B, T, C) scaled word embeddings, values (B, T) raw NSD values (default: ``self.values``) → (B, T, C)."""
        values = self.values if values is None else values
        if values is None or values.shape != x.shape[:2]:
            raise ValueError(f"NSD input needs one NSD value per token: tokens {tuple(x.shape[:2])}, values "
                             f"{None if values is None else tuple(values.shape)}")
        rows, shifted = self.index(values.to(x.device))
        if self.mode == "concat":
            e = self.embed(rows).to(x.dtype)
            x = torch.cat([x[..., : self.embed_dim - e.size(-1)], e], dim=-1)
        elif self.mode == "add":
            x = x + self.embed(rows).to(x.dtype)
        elif self.mode == "linear":
            x = self.proj(torch.cat([x, self.embed(rows).to(x.dtype)], dim=-1))
        if self.spe:
            x = x + self.spe_table(shifted).to(x.dtype)
        return x


class NsdClassifier(nn.Module):
    """A softmax classifier over the NSD values of the range from each hidden state (Ma et al. 2019, NSD output)."""

    def __init__(self, embed_dim: int, v_min: int, v_max: int):
        super().__init__()
        self.v_min, self.v_max = int(v_min), int(v_max)
        self.out = nn.Linear(embed_dim, self.v_max - self.v_min + 1)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        """h (…, C) → logits (…, V)."""
        return self.out(h)

    def predict(self, logits: torch.Tensor) -> torch.Tensor:
        """The most probable NSD value (…,) long."""
        return logits.argmax(-1) + self.v_min


def nsd_losses(logits: torch.Tensor, values: torch.Tensor, v_min: int, v_max: int):
    """L_entdist (cross-entropy) and L_dist (Ma et al. 2019, Eq. 19–20) of one side, summed over the tokens
    with a value, with their count and the number of gold values clipped to the range.

    L_dist = Σ_i (d_i − d̂_i)² + Σ_{j>i} [1 − sign(d_i − d_j)(d̂_i − d̂_j)]₊ within each sentence, d̂ the
    classifier's expected value Σ_k p_k (v_min + k) (our choice: differentiable, unlike the argmax), d the gold
    value clipped to the range. logits (B, T, V), values (B, T) → (ce, dist, count, clipped) scalars."""
    cls, real, clipped = nsd_classes(values, v_min, v_max)  # (B, T)
    logp = F.log_softmax(logits.float(), dim=-1)  # (B, T, V)
    ce = -(logp.gather(-1, cls.unsqueeze(-1)).squeeze(-1) * real).sum()
    grid = torch.arange(v_min, v_max + 1, device=logits.device, dtype=torch.float32)  # (V,)
    d_hat = (logp.exp() * grid).sum(-1)  # (B, T)
    d = (cls + v_min).float()
    square = ((d - d_hat) ** 2 * real).sum()
    T = values.size(1)
    later = torch.ones(T, T, dtype=torch.bool, device=values.device).triu(1)  # j > i
    pairs = later & real.unsqueeze(2) & real.unsqueeze(1)  # (B, T, T)
    hinge = F.relu(1 - torch.sign(d.unsqueeze(2) - d.unsqueeze(1)) * (d_hat.unsqueeze(2) - d_hat.unsqueeze(1)))
    return ce, square + (hinge * pairs).sum(), real.sum(), clipped
