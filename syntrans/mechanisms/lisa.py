"""LISA's parent-attention head (Strubell et al. 2018, "Linguistically-Informed Self-Attention for Semantic Role
Labeling", as adapted to NMT by Bugliarello & Okazaki 2020, §3.1 and App. B): one head of chosen encoder layers
attends with bi-affine scores s_ij = [f(W_q x_i); 1]ᵀ U f(W_k x_j) and is trained to put its mass on each token's
parent (the first subword of its head word) by the parent log-likelihood (``--lisa-loss ce``). With ``--lisa-loss
l2`` it is Hou et al.'s LISA baseline (gated self-attention, §2.2 and §5.2): a stock dot-product head whose
probabilities are pulled to the 0/1 parent mask by the squared L2 distance.

Logged as ``lisa`` (the loss per token with a parent) and ``lisa_uas`` (the % of those whose argmax key is the gold
parent). ``--lisa-gold-parents``: at evaluation the head attends to the gold parent (an oracle).
"""
# no ``from __future__ import annotations`` here: fairseq builds the flags from the config fields' real types
from dataclasses import dataclass, field
from typing import Dict, List, Tuple

import torch
import torch.nn as nn
import torch.nn.functional as F
from fairseq.dataclass import FairseqDataclass

from ..modules.aux_losses import report_aux_loss, report_aux_metric
from ..modules.blocks import HeadBlock, SideInputs
from ..modules.precision import full_precision, to_dtype_clamped
from .base import (
    FeatureNeeds,
    Mechanism,
    ParentReport,
    check_choice,
    check_option,
    gold_rows,
    is_number,
    parent_loss_from_lse,
    reports_of,
    required_feature,
)
from .layer_lists import resolve_layers

#: ``--lisa-loss``: ce, the bi-affine head's parent log-likelihood; l2, a stock head's squared distance to the parent mask
LISA_LOSSES = ("ce", "l2")


@dataclass
class LisaConfig(FairseqDataclass):
    """LISA heads (Strubell et al. 2018, as in Bugliarello & Okazaki 2020): a bi-affine head trained to attend to
    parents; or, with ``--lisa-loss l2``, Hou et al.'s baseline (gated self-attention, §5.2): a stock head, L2 to the
    parent mask."""

    layers: List[int] = field(
        default_factory=list,
        metadata={"help": "0-based encoder layers with one LISA head each (comma-separated, or 'all'); empty: none"},
    )
    weight: float = field(default=1.0, metadata={"help": "weight of the LISA parent loss"})
    loss: str = field(
        default="ce",
        metadata={"help": "ce: bi-affine head, parent log-likelihood (Bugliarello & Okazaki 2020); l2: stock dot-product "
                          "head, squared L2 distance to the 0/1 parent mask (Hou et al., gated self-attention)"},
    )
    gold_parents: bool = field(
        default=False,
        metadata={"help": "at evaluation the LISA head attends to the gold parent (oracle); set at generation "
                          "time with --model-overrides \"{'lisa': {'gold_parents': True}}\""},
    )


def biaffine_query(q: torch.Tensor, U: torch.Tensor) -> torch.Tensor:
    """q' = [f(q); 1]ᵀ U with f = leaky ReLU (Bugliarello & Okazaki 2020, their LISA head), so that the bi-affine
    scores are the dot products q'·f(k): q (…, d), U (d+1, d) → (…, d) in q's dtype (computed as U's)."""
    fq = F.leaky_relu(q.to(U.dtype))
    return (fq @ U[:-1] + U[-1]).to(q.dtype)


class LisaHead(HeadBlock):
    """The LISA head: bi-affine scores (ce, its parameter U ∈ ℝ^{(d+1)×d}) or stock ones (l2), the parent loss of its
    own softmax (before any mixer and attention dropout), and the oracle at evaluation."""

    key = "lisa"
    parse = "first"
    Report = ParentReport  # its parent loss with its counts; its kept attention is its own softmax (B, T, S)

    def __init__(self, head_dim: int, loss: str, gold_parents: bool):
        super().__init__(1)
        self.loss, self.gold_parents = loss, bool(gold_parents)
        if loss == "ce":
            self.U = nn.Parameter(torch.empty(head_dim + 1, head_dim))
            nn.init.xavier_uniform_(self.U)

    @property
    def stock_at_start(self) -> bool:
        """The ``l2`` head is a stock head (its loss only pulls it); the bi-affine scores of ``ce`` replace its own."""
        return self.loss == "l2"

    def initialisation(self) -> Dict[str, str]:
        if self.loss != "ce":
            return {}
        return {"U": "Xavier-uniform (ours: Bugliarello & Okazaki 2020 and Strubell et al. 2018 state none)"}

    def needs_probs(self, inputs: SideInputs) -> bool:
        return (self.key in inputs.keep or (self.gold_parents and not self.training)
                or (self.loss == "l2" and inputs.get(self.key) is not None))  # the l2 loss reads every probability

    def wants_loss(self, inputs: SideInputs) -> bool:
        return inputs.get(self.key) is not None

    def fused_report(self, q, k, lse, scale, inputs):
        """The parent log-likelihood (``ce``) from the fused kernel's log-sum-exp and the gathered parent score."""
        if self.loss != "ce":
            return None
        pad = inputs.pad_mask if inputs.pad_mask.size(1) == k.size(2) else None
        loss, count, hits = parent_loss_from_lse(q, k, lse, scale, inputs.get(self.key), pad, False)
        return self.Report(loss=loss, count=count, hits=hits)

    def biaffine(self, q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
        """s_ij = [f(W_q x_i); 1]ᵀ U f(W_k x_j) (Bugliarello & Okazaki 2020, LISA): q (B, T, d), k (B, S, d) unscaled
        head projections → (B, T, S) in q's dtype.

        Computed in float32 with autocast off, then clamped into q's dtype: unlike QKᵀ/√d these scores are not
        scaled, so they grow with d and the activations and can pass float16's 65504 (+inf would make the head's
        softmax NaN). One head's (B, T, S), so the float32 costs little; the result is cast back so that the layer's
        scores keep their dtype."""
        work = torch.promote_types(q.dtype, torch.float32)
        with full_precision(q.device.type):
            scores = torch.matmul(biaffine_query(q.to(work), self.U.to(work)), F.leaky_relu(k.to(work)).transpose(-1, -2))
        return to_dtype_clamped(scores, q.dtype)

    def scores(self, scores, q, k, inputs):
        if self.loss == "ce":  # the bi-affine scores replace the head's own
            return self.biaffine(q[:, 0], k[:, 0]).unsqueeze(1)  # (B, 1, T, S)
        return scores  # l2: the stock QKᵀ/√d (Hou et al., §5.2)

    def fused_qk(self, q, k):
        if self.loss == "ce":  # q'·f(k), unscaled
            return biaffine_query(q, self.U), F.leaky_relu(k), 1.0
        return q, k, None

    def probs(self, scores, probs, inputs):
        parents = inputs.get(self.key)
        report = None
        if parents is not None:
            loss, count, hits = (parent_loss(scores[:, 0].float(), parents) if self.loss == "ce"
                                 else parent_l2_loss(probs[:, 0], parents))
            report = self.Report(loss=loss, count=count, hits=hits)
        if self.key in inputs.keep:
            report = self.Report() if report is None else report
            report.attention = probs[:, 0]  # (B, T, S)
        if self.gold_parents and not self.training:
            if parents is None:
                raise ValueError("--lisa-gold-parents needs the batch's gold source parents (src_parent_first)")
            probs = gold_rows(probs, parents)
        return probs, report


def parent_loss(scores: torch.Tensor, parents: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """LISA loss −Σ_i log A[i, parent(i)] = −Σ_i (s_{i,parent(i)} − logsumexp_j s_ij) (Bugliarello & Okazaki 2020,
    §3.1; LISA's ``ce`` loss) from the gathered parent score and the row's log-sum-exp (no second (B, T, S) tensor),
    over the queries that have a parent (real tokens: no pad, no EOS), with the number of such queries and of those
    whose argmax key is the gold parent. scores (B, T, S) float with −inf at masked keys, parents (B, T) long (−1:
    none) → three scalars."""
    has = parents >= 0  # (B, T)
    rows = scores.masked_fill(~has.unsqueeze(-1), 0.0)  # rows without a parent take no part (and stay finite)
    picked = rows.gather(-1, parents.clamp(min=0).unsqueeze(-1)).squeeze(-1)  # (B, T)
    log_p = picked - torch.logsumexp(rows, dim=-1)
    loss = -torch.where(has, log_p, torch.zeros_like(log_p)).sum()
    hits = ((scores.argmax(-1) == parents) & has).sum()
    return loss, has.sum(), hits


def parent_l2_loss(probs: torch.Tensor, parents: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """LISA loss Σ_i Σ_j (A_ij − M_ij)², M_i the 0/1 row with its 1 on token i's parent (Hou et al., gated
    self-attention, §2.2 and §5.2: "squared L2 distance between the label and computed attention"), over the queries
    that have a parent (real tokens: no pad, no EOS), with the number of such queries and of those whose argmax key
    is the gold parent. Padded keys have A = 0 and M = 0, so the sum over all keys is the sum over the real ones.
    probs (B, T, S) float, parents (B, T) long (−1: none) → three scalars."""
    has = parents >= 0  # (B, T)
    mask = F.one_hot(parents.clamp(min=0), probs.size(-1)).to(probs.dtype)  # (B, T, S) M
    rows = (probs - mask).pow(2).sum(-1)  # (B, T)
    loss = torch.where(has, rows, torch.zeros_like(rows)).sum()
    hits = ((probs.argmax(-1) == parents) & has).sum()
    return loss, has.sum(), hits


class Lisa(Mechanism):
    """The LISA mechanism: one head in each chosen encoder layer (after the heads of the mechanisms before it)."""

    key = "lisa"
    Config = LisaConfig
    title = "LISA (Strubell et al. 2018, as adapted by Bugliarello & Okazaki 2020)"
    name = "LISA"
    marked_parents = {"encoder": "src_parent_first"}

    def __init__(self, cfg: LisaConfig, shape):
        super().__init__(cfg, shape)
        check_choice("--lisa-loss", cfg.loss, LISA_LOSSES)
        check_option(is_number(cfg.weight) and cfg.weight >= 0, "--lisa-weight",
                     "is the weight of the LISA parent loss and must be >= 0", cfg.weight)
        self.layers = resolve_layers(cfg.layers, shape.encoder_layers, "--lisa-layers")

    @property
    def active(self) -> bool:
        return bool(self.layers)

    def heads(self, side: str, layer: int) -> int:
        return 1 if side == "encoder" and layer in self.layers else 0

    def block(self, side: str, layer: int, num_heads: int, head_dim: int) -> HeadBlock:
        return LisaHead(head_dim, self.cfg.loss, bool(self.cfg.gold_parents))

    def features(self, side: str) -> FeatureNeeds:
        if side != "encoder" or not self.active:
            return FeatureNeeds()
        wanted = {"src_parent_first"}
        return FeatureNeeds(required=wanted if self.cfg.gold_parents else set(), optional=wanted, training=wanted)

    def prepare(self, side, features, tokens, pad_mask, dtype, training):
        if side != "encoder" or not self.active:
            return None
        if not (training or self.cfg.gold_parents or features.get("src_parent_first") is not None):
            return None  # generation may go without parents
        why = "the LISA heads (training, or --lisa-gold-parents)"
        return required_feature(features, "src_parent_first", tuple(tokens.shape), why).long()

    def report(self, side, layers, extra, training):
        stats = [r.stats for r in reports_of(layers, self.key).values() if r.loss is not None]
        if not stats:
            return
        loss, count, hits = (sum(x) for x in zip(*stats))
        report_aux_loss(extra, "lisa", loss, count, float(self.cfg.weight))
        report_aux_metric(extra, "lisa_uas", 100.0 * hits.float(), count)


__all__ = ["LISA_LOSSES", "Lisa", "LisaConfig", "LisaHead", "biaffine_query", "gold_rows", "parent_l2_loss",
           "parent_loss"]
