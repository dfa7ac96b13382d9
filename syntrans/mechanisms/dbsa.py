"""Dependency-based self-attention (DBSA, Deguchi et al. 2019, "Dependency-Based Self-Attention for Transformer
NMT", §3): bi-affine heads A = softmax(Q U Kᵀ/√d) in chosen encoder and (causal) decoder layers, trained with the
translation to attend to each token's dependency parent: L = L_t + λ_dep·L_dep, L_dep = −Σ log P(head(f_i)) −
Σ log P(head(e_j)).

Subword convention "chain" (:func:`syntrans.syntax.parents.subword_parents_array`): a non-final piece points to the
next piece of its word, a word's final piece to the first piece of its head word, the root to itself. With several
DBSA heads in a layer, the parse is their mean attention (our choice, the same average SyncAttn takes). On the decoder
side arcs whose parent follows the dependent cannot be scored under the causal mask: they are dropped and counted.

Since Q U Kᵀ = (Q U) Kᵀ, a DBSA head is a stock dot-product head whose query is multiplied by U: U lives in the
layer's query projection (:class:`BiaffineQueryProjection`), so fairseq's incremental decoding (its key/value cache,
beam reordering) computes DBSA unchanged and the fused kernels run the heads when their probabilities are not needed.
Logged as ``dbsa_src``/``dbsa_tgt`` with ``…_uas`` and, on the decoder side, ``dbsa_tgt_later``.
"""
# no ``from __future__ import annotations`` here: fairseq builds the flags from the config fields' real types
import math
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

import torch
import torch.nn as nn
import torch.nn.functional as F
from fairseq.dataclass import FairseqDataclass

from ..modules.aux_losses import report_aux_loss, report_aux_metric
from ..modules.blocks import HeadBlock, SideInputs
from ..modules.precision import named_precision
from .base import (FeatureNeeds, Mechanism, ParentReport, check_option, gold_rows, is_number, parent_loss_from_lse,
                   reports_of, required_feature)
from .layer_lists import resolve_layers

FEATURE = {"encoder": "src_parent_chain", "decoder": "tgt_parent_chain"}
REPORT = {"encoder": "dbsa_src", "decoder": "dbsa_tgt"}


@dataclass
class DbsaConfig(FairseqDataclass):
    """DBSA heads (Deguchi et al. 2019): bi-affine heads A = softmax(Q U Kᵀ/√d) trained to attend to dependency parents."""

    encoder_layers: List[int] = field(
        default_factory=list,
        metadata={"help": "0-based encoder layers with DBSA heads (comma-separated, or 'all'); empty: none"},
    )
    decoder_layers: List[int] = field(
        default_factory=list,
        metadata={"help": "0-based decoder layers with causal DBSA heads (comma-separated, or 'all'); empty: none"},
    )
    heads: int = field(
        default=1,
        metadata={"help": "DBSA heads per chosen layer (after any other syntax heads); the parse is their mean attention"},
    )
    weight: float = field(default=0.5, metadata={"help": "λ_dep, weight of each side's DBSA parent loss"})
    gold_parents: bool = field(
        default=False,
        metadata={"help": "at evaluation the encoder's DBSA heads attend to the gold source parents (oracle; the "
                          "decoder's have no gold parse at generation); set at generation time with "
                          "--model-overrides \"{'dbsa': {'gold_parents': True}}\""},
    )


class BiaffineQueryProjection(nn.Module):
    """The layer's query projection followed by Q_h ← Q_h U_h on the DBSA heads (Deguchi et al. 2019, §3.1:
    A_h = softmax(Q_h U_h K_hᵀ/√d_k)).

    It holds the stock ``q_proj``'s own ``weight`` and ``bias`` (the same parameters, so the checkpoint keys stay
    ``…q_proj.weight``/``…q_proj.bias``) plus ``U`` (n, d, d) for the n heads of ``heads``. U starts as the identity
    (our choice: before training the DBSA heads are the stock heads), so building it draws no random numbers.
    """

    def __init__(self, stock: nn.Linear, num_heads: int, heads: slice):
        super().__init__()
        if stock._forward_pre_hooks or stock._forward_hooks:
            raise ValueError("DBSA heads replace the query projection and cannot keep its hooks (e.g. --quant-noise-pq)")
        self.in_features, self.out_features = stock.in_features, stock.out_features
        self.weight = stock.weight  # (C, C_in)
        self.bias = stock.bias  # (C,) or None
        self.num_heads = num_heads
        self.head_dim = self.out_features // num_heads
        self.dbsa = heads
        n = heads.stop - heads.start
        self.U = nn.Parameter(torch.eye(self.head_dim).repeat(n, 1, 1))  # (n, d, d)

    def initialisation(self) -> Dict[str, str]:
        """Only U is an addition: ``weight`` and ``bias`` are the stock query projection's."""
        return {"U": "the identity per head (ours: Deguchi et al. 2019 state none): the DBSA heads start as the stock "
                     "heads they take over"}

    def folded(self):
        """The projection with U folded in: Q_h U_h = (x W_hᵀ + b_h) U_h = x (U_hᵀ W_h)ᵀ + b_h U_h, so the DBSA heads'
        rows of the weight become U_hᵀ W_h and their bias b_h U_h → (weight (C, C_in), bias (C,) or None). A (C, C_in)
        product per forward instead of one over every token's query."""
        H, d, s = self.num_heads, self.head_dim, self.dbsa
        w = self.weight.view(H, d, -1)  # (H, d, C_in)
        with named_precision("the DBSA heads' bi-affine query (Deguchi et al. 2019)", self.weight):
            U = self.U.to(w.dtype)  # (n, d, d)
            w_dbsa = torch.einsum("hde,hdc->hec", U, w[s])  # (n, d, C_in) U_hᵀ W_h
            weight = torch.cat([w[: s.start], w_dbsa, w[s.stop:]], dim=0).view(self.out_features, -1)
            bias = None
            if self.bias is not None:
                b = self.bias.view(H, d)
                bias = torch.cat([b[: s.start], torch.einsum("hd,hde->he", b[s], U), b[s.stop:]], dim=0).view(-1)
        return weight, bias

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x (…, C_in) → (…, C): the stock projection, the DBSA heads' slices multiplied by their U (in the weight:
        the scores Q U Kᵀ are scaled by 1/√d as a stock head's)."""
        weight, bias = self.folded()
        return F.linear(x, weight, bias)


def causal_parents(parents: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
    """Decoder arcs whose parent follows the dependent cannot be scored under the causal mask (Deguchi et al.
    2019, §3.2): they are dropped (set to −1) and counted. parents (B, T) long, −1 = none → (kept (B, T), dropped ())."""
    T = parents.size(1)
    later = parents > torch.arange(T, device=parents.device)  # (B, T); −1 never counts
    return parents.masked_fill(later, -1), later.sum()


def dbsa_parent_loss(scores: torch.Tensor, parents: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """L_dep of one side's layer (Deguchi et al. 2019, §3): −Σ_i log A[i, parent(i)] of the heads' mean attention
    A = (1/n) Σ_h softmax(s_h), from the gathered parent scores and the rows' log-sum-exp:
    log A[i, p] = logsumexp_h(s_h[i, p] − logsumexp_j s_h[i, j]) − log n; with the number of queries that have a
    parent and of those whose argmax key of A is the gold parent.

    scores (B, n, T, S) masked (−inf at masked keys), parents (B, T) long (−1: none) → three scalars. Rows without a
    parent take no part; they are zeroed first, which also keeps a fully masked row (a left-padded target's padding)
    from putting NaN into the gradient."""
    has = parents >= 0  # (B, T)
    rows = scores.float().masked_fill(~has[:, None, :, None], 0.0)  # (B, n, T, S)
    index = parents.clamp(min=0)[:, None, :, None].expand(-1, rows.size(1), -1, 1)
    log_p = rows.gather(-1, index).squeeze(-1) - torch.logsumexp(rows, dim=-1)  # (B, n, T) per head
    n = rows.size(1)
    mean = log_p[:, 0] if n == 1 else torch.logsumexp(log_p, dim=1) - math.log(n)  # (B, T)
    loss = -torch.where(has, mean, torch.zeros_like(mean)).sum()
    with torch.no_grad():
        best = (rows[:, 0] if n == 1 else torch.softmax(rows, dim=-1).mean(dim=1)).argmax(-1)  # (B, T)
    hits = ((best == parents) & has).sum()
    return loss, has.sum(), hits


@dataclass
class DbsaReport(ParentReport):
    """What a layer's DBSA heads report: their parent loss L_dep with its counts (:class:`ParentReport`), the decoder
    arcs left out of it, and their kept mean attention (the layer's parse, (B, T, S))."""

    dropped: Optional[torch.Tensor] = None  # () long, the decoder arcs to a later parent (:func:`causal_parents`)


class DbsaHeads(HeadBlock):
    """n DBSA heads: stock dot-product heads whose U is applied in the query projection (:meth:`query_projection`); here the
    parent loss of their own softmax, the oracle and the kept mean attention."""

    key = "dbsa"
    mixable = False  # their bi-affine scores are the stock scores of a transformed query: no separate A_syn
    incremental = True
    stock_at_start = True  # U starts as the identity (BiaffineQueryProjection)
    parse = "chain"
    Report = DbsaReport

    def __init__(self, num_heads: int, causal: bool, gold_parents: bool):
        super().__init__(num_heads)
        self.causal, self.gold_parents = bool(causal), bool(gold_parents)

    def query_projection(self, stock: nn.Linear, num_heads: int) -> nn.Module:
        return BiaffineQueryProjection(stock, num_heads, self.heads)

    def needs_probs(self, inputs: SideInputs) -> bool:
        return self.key in inputs.keep or (self.gold_parents and not self.training)

    def wants_loss(self, inputs: SideInputs) -> bool:
        return inputs.get(self.key) is not None

    def fused_qk(self, q, k):
        return q, k, None  # U is already in q

    def fused_report(self, q, k, lse, scale, inputs):
        """L_dep of the heads from the fused kernel's log-sum-exp and the gathered parent scores."""
        parents = inputs.get(self.key)
        dropped = parents.new_zeros(())
        if self.causal:
            parents, dropped = causal_parents(parents)
        pad = inputs.pad_mask if inputs.pad_mask.size(1) == k.size(2) else None
        loss, count, hits = parent_loss_from_lse(q, k, lse, scale, parents, pad, self.causal)
        return self.Report(loss=loss, count=count, hits=hits, dropped=dropped)

    def probs(self, scores, probs, inputs):
        parents = inputs.get(self.key)
        report = None
        if parents is not None:
            dropped = parents.new_zeros(())
            if self.causal:
                parents, dropped = causal_parents(parents)
            loss, count, hits = dbsa_parent_loss(scores, parents)
            report = self.Report(loss=loss, count=count, hits=hits, dropped=dropped)
        if self.gold_parents and not self.training:
            if parents is None:
                raise ValueError("--dbsa-gold-parents needs the batch's gold source parents (src_parent_chain), which "
                                 "the encoder prepares from the split's source sidecars")
            probs = gold_rows(probs, parents)
        if self.key in inputs.keep:
            report = self.Report() if report is None else report
            report.attention = self.rows(probs)  # (B, T, S) the parse: the heads' mean attention
        return probs, report


class Dbsa(Mechanism):
    """The DBSA mechanism: its heads follow the other syntax heads of a chosen layer, on either side."""

    switches = ("encoder_layers", "decoder_layers")
    key = "dbsa"
    Config = DbsaConfig
    title = "DBSA (Deguchi et al. 2019)"
    name = "DBSA"
    marked_parents = {"encoder": "src_parent_chain", "decoder": "tgt_parent_chain"}
    mixable = DbsaHeads.mixable

    def __init__(self, cfg: DbsaConfig, shape):
        super().__init__(cfg, shape)
        self.layers = {"encoder": resolve_layers(cfg.encoder_layers, shape.encoder_layers, "--dbsa-encoder-layers"),
                       "decoder": resolve_layers(cfg.decoder_layers, shape.decoder_layers, "--dbsa-decoder-layers")}
        for side, flag in (("encoder", "--dbsa-encoder-layers"), ("decoder", "--dbsa-decoder-layers")):
            H = shape.heads(side)
            self.check_attention_heads(cfg.heads, H, bool(self.layers[side]), of=f" of {flag}")
        check_option(is_number(cfg.weight) and cfg.weight >= 0, "--dbsa-weight",
                     "(λ_dep) is the weight of the DBSA parent loss and must be >= 0", cfg.weight)
        if cfg.gold_parents and not self.layers["encoder"]:
            raise ValueError("--dbsa-gold-parents makes the encoder's DBSA heads attend to the gold source parents, but "
                             "this model has none (--dbsa-encoder-layers is empty); the decoder side has no gold parse "
                             "at generation (the hypothesis is not parsed), so there is nothing to replace")

    @property
    def active(self) -> bool:
        return bool(self.layers["encoder"] or self.layers["decoder"])

    def heads(self, side: str, layer: int) -> int:
        return int(self.cfg.heads) if layer in self.layers[side] else 0

    def block(self, side: str, layer: int, num_heads: int, head_dim: int) -> HeadBlock:
        decoder = side == "decoder"
        return DbsaHeads(num_heads, causal=decoder, gold_parents=bool(self.cfg.gold_parents) and not decoder)

    def features(self, side: str) -> FeatureNeeds:
        if not self.layers[side]:
            return FeatureNeeds()
        wanted = {FEATURE[side]}
        oracle = side == "encoder" and self.cfg.gold_parents
        return FeatureNeeds(required=wanted if oracle else set(), optional=wanted, training=wanted)

    def prepare(self, side, features, tokens, pad_mask, dtype, training):
        if not self.layers[side]:
            return None
        name = FEATURE[side]
        oracle = side == "encoder" and self.cfg.gold_parents
        if not (training or oracle or features.get(name) is not None):
            return None  # generation may go without parents
        why = f"the {side}'s DBSA heads (training{', or --dbsa-gold-parents' if side == 'encoder' else ''})"
        return required_feature(features, name, tuple(tokens.shape), why).long()

    @classmethod
    def marked(cls, side, features):
        """The gold parents; on the decoder side only the arcs its causal heads can attend to and its loss scores
        (:func:`causal_parents`)."""
        value = super().marked(side, features)
        return causal_parents(value.long())[0] if value is not None and side == "decoder" else value

    def report(self, side, layers, extra, training):
        stats = [r.stats for r in reports_of(layers, self.key).values() if r.loss is not None]
        if not stats:
            return
        loss, count, hits, dropped = (sum(x) for x in zip(*stats))
        name = REPORT[side]
        report_aux_loss(extra, name, loss, count, float(self.cfg.weight))
        report_aux_metric(extra, f"{name}_uas", 100.0 * hits.float(), count)
        if side == "decoder":
            report_aux_metric(extra, f"{name}_later", 100.0 * dropped.float(), count + dropped)


__all__ = ["BiaffineQueryProjection", "Dbsa", "DbsaConfig", "DbsaHeads", "DbsaReport", "causal_parents", "dbsa_parent_loss"]
