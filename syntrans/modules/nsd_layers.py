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
from .precision import named_precision

NSD_INPUT_MODES = ("none", "concat", "add", "linear")


def nsd_classes(values: torch.Tensor, v_min: int, v_max: int) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(class index in 0..V−1 after clipping to [v_min, v_max], mask of tokens with a value, number clipped).
    values (B, T) int → ((B, T) long, (B, T) bool, () long)."""
    real = values > NO_NSD
    clipped = (real & ((values < v_min) | (values > v_max))).sum()
    return (values.clamp(v_min, v_max) - v_min).long().masked_fill(~real, 0), real, clipped


def nsd_embed_size(mode: str, embed_dim: int, nsd_dim: int = 0) -> int:
    """The size k of the NSD embedding E_d of input ``mode`` in a model of dimension C = ``embed_dim``; ``nsd_dim``
    is --nsd-embed-dim, 0 for the default:

    * ``linear``: k = C by default (Ma et al. 2019, Eq. 10: e ∈ ℝ^d and W_f ∈ ℝ^{d×2d});
    * ``concat``: k = C/2 by default: [x_{1..C−k} ; e] stays C wide, and its two parts keep the 1:1 proportion of the
      paper's [x; e] (Eq. 8);
    * ``add``: always C (x + e); ``none``: no embedding (0)."""
    if nsd_dim < 0:
        raise ValueError(f"--nsd-embed-dim must be >= 0 (0: the default size), found {nsd_dim}")
    if mode == "add":
        return embed_dim
    if mode == "linear":
        return nsd_dim or embed_dim
    if mode == "concat":
        return nsd_dim or embed_dim // 2
    return 0


class NsdInput(nn.Module):
    """x (the scaled word embeddings) combined with E_d[d] (Ma et al. 2019, NSD as input), plus the syntactic
    positional encoding SPE(d) when ``spe`` (Ma et al. 2019, syntactic PE).

    * ``concat``: [x_{1..C−k} ; E_d[d]]: the first C − k dimensions of the word embedding, then the k-dim
      NSD embedding (k = ``nsd_dim``), so the two split the model dimension (the paper's [x; e] of Eq. 8 would
      be 2C wide; with k = C/2, the default of :func:`nsd_embed_size`, both halves keep its 1:1 proportion);
    * ``add``: x + E_d[d] (E_d is C-dim);
    * ``linear``: W(x ‖ E_d[d]) + b, W ∈ ℝ^{C×(C+k)} (Ma et al. 2019, Eq. 10: e ∈ ℝ^d, W_f ∈ ℝ^{d×2d}, so k = C
      by default);
    * ``none``: x (SPE only).

    E_d has a row per value of the range, a row for BOS and a zero row for tokens without a value.
    The syntactic PE (Ma et al. 2019, Eq. 15–16) is :meth:`spe_table`, added on top of the conventional PE
    (§4.2); 0 for BOS, EOS, padding.
    """

    def __init__(self, mode: str, embed_dim: int, nsd_dim: int, v_min: int, v_max: int, spe: bool = False,
                 spe_lambda: float = 40.0):
        super().__init__()
        if mode not in NSD_INPUT_MODES:
            raise ValueError(f"unknown NSD input mode {mode!r}, expected one of {', '.join(NSD_INPUT_MODES)}")
        if v_max < v_min:
            raise ValueError(f"empty NSD value range [{v_min}, {v_max}]")
        self.mode, self.v_min, self.v_max, self.spe, self.spe_lambda = mode, int(v_min), int(v_max), bool(spe), float(spe_lambda)
        dim = nsd_embed_size(mode, embed_dim, nsd_dim)  # k; 0 in nsd_dim: the default size of the mode
        if mode == "concat" and not 0 < dim < embed_dim:
            raise ValueError(f"concat NSD input needs 0 < --nsd-embed-dim < {embed_dim} (the model dimension), found {dim}")
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
        """The syntactic positional encoding: (B, T) d' → (B, T, C) float32.

        SPE(d)_{2k} = sin(2π d' / λ_SPE^{2k/C}), SPE(d)_{2k+1} = cos(2π d' / λ_SPE^{2k/C}) (Ma et al. 2019,
        Eq. 15–16): pair k has period exactly λ_SPE^{2k/C} in d', from 1 (k = 0) towards λ_SPE ("the periods of
        these two functions vary from 1 to λ_SPE"). d' = d − v_min + 1 ≥ 1 is the value shifted positive by the
        model's own range (the paper shifts by the corpus' range, d + max − min + 1; a constant shift only
        rotates each pair by a fixed angle). Rows with d' = 0 (no value) are 0. The angle is computed in float64
        so that the periods stay exact for large d'."""
        C = self.embed_dim
        two_k = torch.arange(0, C, 2, device=shifted.device, dtype=torch.float64)  # (C/2,) 2k
        period = self.spe_lambda ** (two_k / C)  # (C/2,) λ^{2k/C}
        angle = 2 * math.pi * shifted.to(torch.float64).unsqueeze(-1) / period  # (B, T, C/2)
        pe = torch.stack([angle.sin(), angle.cos()], dim=-1).flatten(-2)[..., :C]  # (B, T, C)
        return (pe * (shifted > 0).unsqueeze(-1)).to(torch.float32)

    def forward(self, x: torch.Tensor, values: Optional[torch.Tensor] = None) -> torch.Tensor:
        """x (B, T, C) scaled word embeddings, values (B, T) raw NSD values (default: ``self.values``) → (B, T, C) in
        x's dtype (under autocast the ``linear`` projection runs in half precision: its output is cast back, so the
        residual stream that starts here keeps the precision of a stock model's, float32)."""
        values = self.values if values is None else values
        if values is None or values.shape != x.shape[:2]:
            raise ValueError(f"NSD input needs one NSD value per token: tokens {tuple(x.shape[:2])}, values "
                             f"{None if values is None else tuple(values.shape)}")
        rows, shifted = self.index(values.to(x.device))
        with named_precision(f"the NSD input ({self.mode}, Ma et al. 2019)", x):
            if self.mode == "concat":
                e = self.embed(rows).to(x.dtype)
                out = torch.cat([x[..., : self.embed_dim - e.size(-1)], e], dim=-1)
            elif self.mode == "add":
                out = x + self.embed(rows).to(x.dtype)
            elif self.mode == "linear":
                out = self.proj(torch.cat([x, self.embed(rows).to(x.dtype)], dim=-1)).to(x.dtype)
            else:
                out = x
            if self.spe:
                out = out + self.spe_table(shifted).to(x.dtype)
        return out


class NsdClassifier(nn.Module):
    """A softmax classifier over the NSD values of the range from each hidden state (Ma et al. 2019, NSD output)."""

    def __init__(self, embed_dim: int, v_min: int, v_max: int):
        super().__init__()
        self.v_min, self.v_max = int(v_min), int(v_max)
        self.out = nn.Linear(embed_dim, self.v_max - self.v_min + 1)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        """h (…, C) → logits (…, V) (in half precision under autocast; the losses take them to float32)."""
        with named_precision("the NSD classifier (Ma et al. 2019)", h):
            return self.out(h)

    def predict(self, logits: torch.Tensor) -> torch.Tensor:
        """The most probable NSD value (…,) long."""
        return logits.argmax(-1) + self.v_min


def nsd_losses(logits: torch.Tensor, values: torch.Tensor, v_min: int, v_max: int):
    """L_entdist and L_dist (Ma et al. 2019, Eq. 20 and Eq. 19) of one side, summed over the sentences of the batch,
    with the number of tokens with a value and the number of gold values clipped to the range.

    L_entdist = −Σ_i log p(d_i | h_i) (Ma et al. 2019, Eq. 20: the cross-entropy of the NSD classifier of Eq. 11).

    L_dist = Σ_i (d_i − d̂_i)² + Σ_{i, j>i} [1 − sign(d_i − d_j)(d̂_i − d̂_j)]₊ per sentence (Ma et al. 2019, Eq. 19),
    with d the gold value clipped to the range and d̂ the classifier's expected value Σ_k p_k (v_min + k) (our
    choice: differentiable, unlike the argmax). Summed as written its two terms are far larger per token than
    L_NMT and L_entdist (the squared error is of the order of the values' variance, the hinge sums O(n) pairs
    per token), and the unweighted total of Eq. 17 stalls translation. So each term is normalised to O(1) per
    token (our normalisation):

        L_dist = Σ_i (d_i − d̂_i)² / σ² + 2/(n − 1) · Σ_{i, j>i} [1 − sign(d_i − d_j)(d̂_i − d̂_j)]₊

    * σ² is the variance of the sentence's gold values (at least 1), so the squared term is the share of the
      values' variance left unexplained (1 per token for a constant prediction at their mean); per sentence, so a
      sentence's loss does not depend on the batch it is in (nor on the number of workers);
    * 2/(n − 1), n the sentence's tokens with a value, averages each token's hinge over its n − 1 pairs
      (Σ_i 1/(n − 1) Σ_{j≠i} h_ij = 2/(n − 1) Σ_{i<j} h_ij); a pair with equal gold values counts 1, as written.

    logits (B, T, V), values (B, T) → (ce, dist, count, clipped) scalars."""
    cls, real, clipped = nsd_classes(values, v_min, v_max)  # (B, T)
    logp = F.log_softmax(logits.float(), dim=-1)  # (B, T, V)
    ce = -(logp.gather(-1, cls.unsqueeze(-1)).squeeze(-1) * real).sum()
    grid = torch.arange(v_min, v_max + 1, device=logits.device, dtype=torch.float32)  # (V,)
    d_hat = (logp.exp() * grid).sum(-1)  # (B, T)
    d = (cls + v_min).float()  # (B, T)
    count = real.sum()
    n = real.sum(1).float()  # (B,) tokens with a value per sentence
    mean = (d * real).sum(1) / n.clamp(min=1)  # (B,)
    variance = (((d - mean.unsqueeze(1)) ** 2) * real).sum(1).div(n.clamp(min=1)).clamp(min=1.0)  # (B,) σ², constant
    square = (((d - d_hat) ** 2 * real).sum(1) / variance).sum()
    T = values.size(1)
    later = torch.ones(T, T, dtype=torch.bool, device=values.device).triu(1)  # (T, T) j > i
    pairs = later & real.unsqueeze(2) & real.unsqueeze(1)  # (B, T, T)
    hinge = F.relu(1 - torch.sign(d.unsqueeze(2) - d.unsqueeze(1)) * (d_hat.unsqueeze(2) - d_hat.unsqueeze(1)))
    per_sentence = (hinge * pairs).sum((1, 2)) * 2 / (n - 1).clamp(min=1)  # (B,)
    return ce, square + per_sentence.sum(), count, clipped
