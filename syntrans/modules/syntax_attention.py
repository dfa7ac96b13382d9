"""Self-attention whose heads can run syntax mechanisms (encoder: distance-mask, PASCAL, LISA, DBSA;
decoder: DBSA): :class:`SyntaxMultiheadAttention`, built by the syntax layers in place of fairseq's
``MultiheadAttention`` (same constructor, same parameters, plus the parameters of its mechanisms).

* No mechanism: fairseq's ``MultiheadAttention`` unchanged (same code path, same kernels).
* Distance-mask heads only: softmax(QKᵀ/√d + bias_h) through the same fused path, the additive bias
  being 0 for heads without syntax.
* PASCAL or LISA heads, a gate, DBSA heads, or kept probabilities: the scores are formed explicitly
  (:meth:`SyntaxMultiheadAttention.explicit_scores_needed` says when and why), in the same order of operations
  as fairseq's unfused attention, so heads without syntax give the same numbers. A gated layer's syntax heads
  attend with G·A_syn + (1 − G)·A_raw (:mod:`syntrans.modules.gate`).
* DBSA heads in incremental decoding: the bi-affine U lives in ``q_proj`` (:mod:`syntrans.modules.dbsa`), so
  fairseq's own incremental path (key/value cache, beam reordering) computes them.
"""
from __future__ import annotations

from typing import List, Optional, Tuple

import torch
from fairseq import utils
from fairseq.modules import MultiheadAttention

from .dbsa import BiaffineQueryProjection, causal_parents, dbsa_log_probs, gold_rows
from .gate import SyntaxGate, mix
from .head_plan import HeadPlan, LayerSyntax, SyntaxBatch
from .lisa import LISA_LOSSES, BiaffineScorer, gold_parent_rows, parent_l2_loss, parent_loss
from .pascal import ignore_parents


class SyntaxMultiheadAttention(MultiheadAttention):
    """fairseq's MultiheadAttention whose heads 0 … k−1 run syntax mechanisms: their scores can be biased
    (distance-mask), multiplied (PASCAL), replaced (a ``ce`` LISA head, DBSA) or gated, as the layer's
    :class:`HeadPlan` says; an ``l2`` LISA head keeps its stock scores and only its probabilities are supervised.

    Takes fairseq's constructor arguments plus ``syntax`` (:class:`LayerSyntax`, none: a stock layer).
    Per batch, the owning encoder/decoder sets ``syntax_batch`` (the inputs, :class:`SyntaxBatch`) and, for
    distance-only layers, ``syntax_bias`` (the additive bias of the fused path).
    """

    def __init__(self, *args, syntax: Optional[LayerSyntax] = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.init_syntax()
        if syntax is not None:
            gate = None
            if syntax.gate is not None:
                g = syntax.gate
                gate = SyntaxGate(self.embed_dim, self.num_heads, g.hidden, g.batchnorm, g.mode, g.warmup_epochs)
            self.configure(syntax.plan, syntax.pascal_ignore, syntax.lisa_gold_parents, gate, syntax.syntax_dropout,
                           syntax.causal, syntax.lisa_loss, syntax.dbsa_gold_parents)

    def init_syntax(self) -> None:
        """The plain attributes of the syntax hooks: a layer with no syntax head."""
        self.syntax_bias: Optional[torch.Tensor] = None  # (B·H, T, S) additive, for the fused path
        self.syntax_batch: Optional[SyntaxBatch] = None  # per-batch inputs of the explicit path
        self.plan = HeadPlan(self.num_heads)
        self.pascal_ignore = 0.0  # parent-ignoring probability q
        self.lisa_gold_parents = False  # oracle: at evaluation the LISA head attends to the gold parent
        self.lisa_loss = "ce"  # the LISA head: bi-affine, parent log-likelihood (ce); stock, L2 to the parent mask (l2)
        self.lisa_stats: Optional[Tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = None  # loss, tokens, hits
        self.syntax_dropout = 0.0  # "syntax ignoring": dropout on A_syn of a gated layer in training
        self.gate_values: Optional[torch.Tensor] = None  # (B, H) the last batch's gates, detached
        self.causal = False  # decoder self-attention: DBSA arcs to later tokens are dropped
        self.dbsa_gold_parents = False  # oracle: at evaluation the (encoder) DBSA heads attend to the gold parent
        self.keep_dbsa_probs = False  # keep the DBSA heads' mean attention of the next forward (SyncAttn)
        self.dbsa_stats: Optional[Tuple[torch.Tensor, ...]] = None  # loss, tokens, hits, dropped later arcs
        self.dbsa_probs: Optional[torch.Tensor] = None  # (B, T, S) mean attention of the DBSA heads
        self.keep_probs = False  # keep every head's probabilities of the next forwards (figures)
        self.probs: Optional[torch.Tensor] = None  # (B, H, T, S) float32 of the last forward with keep_probs

    def configure(self, plan: HeadPlan, pascal_ignore: float = 0.0, lisa_gold_parents: bool = False,
                  gate: Optional[SyntaxGate] = None, syntax_dropout: float = 0.0, causal: bool = False,
                  lisa_loss: str = "ce", dbsa_gold_parents: bool = False) -> None:
        """Give this layer its head plan; a LISA head trained with ``lisa_loss`` ce adds its bi-affine parameters U
        (with l2 it is a stock head and adds none), a gated plan its gate, DBSA heads a query projection with their U
        (:class:`BiaffineQueryProjection`, the same weight and bias); ``causal``: this is decoder self-attention;
        ``dbsa_gold_parents``: the DBSA oracle (encoder only: the decoder has no gold parse at generation)."""
        if plan.num_heads != self.num_heads:
            raise ValueError(f"head plan for {plan.num_heads} heads given to a layer with {self.num_heads}")
        if plan.gated != (gate is not None):
            raise ValueError("a gated head plan needs a SyntaxGate, and only a gated plan takes one")
        if lisa_loss not in LISA_LOSSES:
            raise ValueError(f"--lisa-loss must be one of {', '.join(LISA_LOSSES)}, found {lisa_loss!r}")
        self.plan, self.pascal_ignore, self.lisa_gold_parents = plan, float(pascal_ignore), bool(lisa_gold_parents)
        self.syntax_dropout, self.lisa_loss = float(syntax_dropout), lisa_loss
        if plan.lisa and lisa_loss == "ce":
            self.lisa = BiaffineScorer(self.head_dim)
        if gate is not None:
            self.gate = gate
        self.causal = bool(causal)
        if dbsa_gold_parents and self.causal:
            raise ValueError("--dbsa-gold-parents: the decoder side has no gold parse at generation (the hypothesis is "
                             "not parsed); the oracle applies to encoder DBSA heads")
        self.dbsa_gold_parents = bool(dbsa_gold_parents)
        if plan.dbsa:
            self.q_proj = BiaffineQueryProjection(self.q_proj, self.num_heads, plan.dbsa_heads)

    def explicit_scores_needed(self, query, key, incremental_state, static_kv: bool, before_softmax: bool) -> bool:
        """Whether this call forms the scores itself (:meth:`_explicit_forward`) instead of fairseq's paths.

        fairseq's fused path (torch's ``multi_head_attention_forward``) projects the query with ``q_proj.weight``
        itself (it would skip the DBSA heads' U), takes only an additive mask (no multiplied, replaced or gated
        scores) and returns head-averaged weights (no per-head probabilities to keep). So a full-sequence
        self-attention call takes the explicit path whenever a mechanism other than an additive bias runs, or the
        probabilities are kept. Incremental decoding (only decoder DBSA heads get there) stays on fairseq's own
        unfused path, which calls ``q_proj`` as a module and so applies U.
        """
        full_self = incremental_state is None and not static_kv and not before_softmax and key is query
        if full_self:
            return self.plan.explicit or (self.keep_probs and self.plan.active)
        if self.plan.explicit and self.plan.syntax_heads != self.plan.dbsa:
            raise NotImplementedError("PASCAL, LISA and gated heads run in full-sequence self-attention only")
        if self.plan.dbsa and incremental_state is None and not static_kv:
            raise NotImplementedError("DBSA heads run in full-sequence self-attention or in incremental decoding: "
                                      "fairseq's fused path, which this call would take, skips their U")
        return False

    def forward(self, query, key, value, key_padding_mask=None, incremental_state=None, need_weights=True,
                static_kv=False, attn_mask=None, before_softmax=False, need_head_weights=False):
        if self.explicit_scores_needed(query, key, incremental_state, static_kv, before_softmax):
            return self._explicit_forward(query, key_padding_mask, attn_mask, need_weights or need_head_weights,
                                          need_head_weights)
        bias = self.syntax_bias
        if bias is not None:
            # attn_mask (T, S) from the caller is shared by all heads: broadcast it onto the bias
            attn_mask = bias if attn_mask is None else bias + attn_mask.to(bias.dtype).unsqueeze(0)
        keep = self.keep_probs and self.plan.active and not before_softmax  # then never the fused path
        attn, weights = super().forward(query, key, value, key_padding_mask=key_padding_mask,
                                        incremental_state=incremental_state, need_weights=need_weights or keep,
                                        static_kv=static_kv, attn_mask=attn_mask, before_softmax=before_softmax,
                                        need_head_weights=need_head_weights or keep)
        if keep:  # incremental decoding: fairseq's unfused path returned every head's probabilities (H, B, T, S)
            self.probs = weights.detach().float().transpose(0, 1)  # (B, H, T, S)
            if not need_head_weights:
                weights = weights.mean(dim=0) if need_weights else None
        return attn, weights

    def _syntax_scores(self, scores: torch.Tensor, q: torch.Tensor, k: torch.Tensor, batch: SyntaxBatch) -> torch.Tensor:
        """Apply each head block's mechanism to the scaled scores.

        scores: (B, H, T, S) = QKᵀ/√d; q, k: (B, H, T|S, d) unscaled projections → (B, H, T, S).
        """
        plan = self.plan
        for heads, given, what in ((plan.distance, batch.distance_log_mask, "distance-mask"),
                                   (plan.pascal, batch.pascal_weights, "PASCAL")):
            if heads and given is None:
                raise ValueError(f"this layer's {what} heads need the batch's syntax inputs (syntax_batch), which the "
                                 "encoder sets in its forward")
        blocks: List[torch.Tensor] = []
        if plan.distance:  # Hou et al. 2022, Eq. 7: QKᵀ/√d + log M
            blocks.append(scores[:, : plan.distance] + batch.distance_log_mask.unsqueeze(1).to(scores.dtype))
        if plan.pascal:  # Bugliarello & Okazaki 2020 (PASCAL, Eq. 3): S ⊙ W before masking and softmax
            w = ignore_parents(batch.pascal_weights, self.pascal_ignore, self.training).to(scores.dtype)  # (B, T, S)
            blocks.append(scores[:, plan.pascal_heads] * w.unsqueeze(1))
        h = plan.lisa_head
        if h is not None:  # ce: the bi-affine scores replace the head's own; l2: the stock QKᵀ/√d (Hou et al., §5.2)
            # the bi-affine block in the scores' dtype: a float32 block would promote the whole (B, H, T, S) in torch.cat
            blocks.append(self.lisa(q[:, h], k[:, h]).unsqueeze(1).to(scores.dtype) if self.lisa_loss == "ce"
                          else scores[:, h : h + 1])
        rest = plan.distance + plan.pascal + plan.lisa
        if rest < self.num_heads:
            blocks.append(scores[:, rest:])
        return torch.cat(blocks, dim=1) if len(blocks) > 1 else blocks[0]

    def _explicit_forward(self, x, key_padding_mask, attn_mask, need_weights, need_head_weights):
        """Self-attention with explicit scores; x: (T, B, C) → ((T, B, C), weights or None)."""
        T, B, C = x.shape
        H, d = self.num_heads, self.head_dim
        q = self.q_proj(x)  # (T, B, C)
        k = self.k_proj(x)
        v = self.v_proj(x)
        q_heads = q.view(T, B, H, d).permute(1, 2, 0, 3)  # (B, H, T, d), unscaled, for the LISA head
        k_heads = k.view(T, B, H, d).permute(1, 2, 0, 3)
        # fairseq's order of operations: scale q, then bmm over (B·H, T, d)
        qs = (q * self.scaling).contiguous().view(T, B * H, d).transpose(0, 1)  # (B·H, T, d)
        ks = k.contiguous().view(T, B * H, d).transpose(0, 1)  # (B·H, S, d)
        vs = v.contiguous().view(T, B * H, d).transpose(0, 1)
        raw = torch.bmm(qs, ks.transpose(1, 2)).view(B, H, T, T)  # (B, H, T, S)
        batch = self.syntax_batch if self.syntax_batch is not None else SyntaxBatch(pad_mask=x.new_zeros(B, T, dtype=torch.bool))
        scores = self._masked(self._syntax_scores(raw, q_heads, k_heads, batch), attn_mask, key_padding_mask)
        probs = utils.softmax(scores, dim=-1)  # (B, H, T, S) float32
        if self.plan.gated:
            raw_syntax = self._masked(raw[:, : self.plan.syntax_heads], attn_mask, key_padding_mask)
            probs = self._gated_probs(probs, raw_syntax, x, key_padding_mask)
        probs = self._lisa_probs(scores, probs, batch)
        probs = self._dbsa_probs(scores, probs, batch)
        if self.keep_probs:
            self.probs = probs.detach()  # (B, H, T, S) the probabilities this layer attends with
        attn = torch.bmm(self.dropout_module(probs.type_as(scores)).view(B * H, T, T), vs)  # (B·H, T, d)
        attn = self.out_proj(attn.transpose(0, 1).contiguous().view(T, B, C))
        weights = None
        if need_weights:
            weights = probs.transpose(1, 0)  # (H, B, T, S), as fairseq returns them
            if not need_head_weights:
                weights = weights.mean(dim=0)
        return attn, weights

    @staticmethod
    def _masked(scores: torch.Tensor, attn_mask, key_padding_mask) -> torch.Tensor:
        """scores (B, H, T, S) + the caller's attn_mask, padding keys at −inf."""
        if attn_mask is not None:
            scores = scores + attn_mask.to(scores.dtype)
        if key_padding_mask is not None:
            B, _, _, S = scores.shape
            scores = scores.masked_fill(key_padding_mask.bool().view(B, 1, 1, S), float("-inf"))
        return scores

    def _gated_probs(self, p_syn: torch.Tensor, raw: torch.Tensor, x: torch.Tensor, key_padding_mask) -> torch.Tensor:
        """Syntax heads: G·A_syn + (1 − G)·A_raw (Hou et al., gated self-attention), A_syn with syntax ignoring
        (dropout, training only); other heads keep their (stock) probabilities.
        p_syn: (B, H, T, S) softmax of the syntax scores; raw: (B, n, T, S) masked stock scores of the n syntax
        heads; x (T, B, C) → (B, H, T, S)."""
        n = self.plan.syntax_heads
        B, T = x.size(1), x.size(0)
        pad = key_padding_mask.bool() if key_padding_mask is not None else x.new_zeros(B, T, dtype=torch.bool)
        gates = self.gate(x, pad)  # (B, H)
        self.gate_values = gates.detach()
        p_raw = utils.softmax(raw, dim=-1)  # (B, n, T, S) float32
        syn = p_syn[:, :n]
        if self.training and self.syntax_dropout > 0:
            syn = torch.nn.functional.dropout(syn, self.syntax_dropout, training=True)
        mixed = mix(syn, p_raw, gates[:, :n])
        return torch.cat([mixed, p_syn[:, n:]], dim=1) if n < self.num_heads else mixed

    def _lisa_probs(self, scores: torch.Tensor, probs: torch.Tensor, batch: SyntaxBatch) -> torch.Tensor:
        """Record the LISA head's loss statistics (ce: :func:`parent_loss`; l2: :func:`parent_l2_loss`), both on the
        head's own softmax, before any gate and before attention dropout; with the oracle at evaluation, put its
        mass on the gold parent. scores (B, H, T, S) masked, probs (B, H, T, S) float32 → (B, H, T, S)."""
        h = self.plan.lisa_head
        parents = batch.parents_first
        self.lisa_stats = None
        if h is None or parents is None:
            return probs
        log_probs = torch.log_softmax(scores[:, h].float(), dim=-1)  # (B, T, S)
        self.lisa_stats = (parent_loss(log_probs, parents) if self.lisa_loss == "ce"
                           else parent_l2_loss(log_probs.exp(), parents))
        if not (self.lisa_gold_parents and not self.training):
            return probs
        gold = gold_parent_rows(log_probs, parents).exp().unsqueeze(1)  # (B, 1, T, S)
        return torch.cat([probs[:, :h], gold, probs[:, h + 1:]], dim=1)

    def _dbsa_probs(self, scores: torch.Tensor, probs: torch.Tensor, batch: SyntaxBatch) -> torch.Tensor:
        """DBSA (Deguchi et al. 2019): record the parent loss −Σ log A[i, parent(i)] of the heads' mean attention
        with its token count, hits and (decoder) dropped later-parent arcs, on the heads' own scores; with the
        oracle at evaluation (``dbsa_gold_parents``, encoder only) put every DBSA head's mass on the gold parent;
        keep the heads' mean attention (after the oracle) when asked.
        scores (B, H, T, S) masked, probs (B, H, T, S) float32 before dropout → (B, H, T, S)."""
        self.dbsa_stats = self.dbsa_probs = None
        if not self.plan.dbsa:
            return probs
        s = self.plan.dbsa_heads
        parents = batch.parents_chain
        if parents is not None:
            dropped = parents.new_zeros(())
            if self.causal:
                parents, dropped = causal_parents(parents)
            # rows without a parent take no part; zeroing them keeps a fully masked row (a left-padded
            # target's padding) from putting NaN into the gradient
            rows = scores[:, s].masked_fill((parents < 0)[:, None, :, None], 0.0)  # (B, n, T, S)
            self.dbsa_stats = parent_loss(dbsa_log_probs(rows), parents) + (dropped,)
        if self.dbsa_gold_parents and not self.training:
            if parents is None:
                raise ValueError("--dbsa-gold-parents needs the batch's gold source parents (src_parent_chain), which "
                                 "the encoder sets from the split's source sidecars")
            probs = torch.cat([probs[:, : s.start], gold_rows(probs[:, s], parents), probs[:, s.stop:]], dim=1)
        if self.keep_dbsa_probs:
            self.dbsa_probs = probs[:, s].mean(dim=1)  # (B, T, S)
        return probs
