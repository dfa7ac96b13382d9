"""Self-attention whose heads can run syntax mechanisms (encoder: distance-mask, PASCAL, LISA, DBSA;
decoder: DBSA).

* No mechanism: fairseq's ``MultiheadAttention`` unchanged (same code path, same kernels).
* Distance-mask heads only: softmax(QKᵀ/√d + bias_h) through the same fused path, the additive bias
  being 0 for heads without syntax.
* PASCAL or LISA heads, or a gate: the scores are formed explicitly (:meth:`_explicit_forward`), in the
  same order of operations as fairseq's unfused attention, so heads without syntax give the same numbers.
  A gated layer's syntax heads attend with G·A_syn + (1 − G)·A_raw (:mod:`syntrans.modules.gate`).
* DBSA heads: the bi-affine U lives in ``q_proj`` (:mod:`syntrans.modules.dbsa`), so fairseq's unfused
  path (incremental decoding included) computes them; the explicit path is taken when a batch with
  syntax inputs is set, to record the parent loss and keep the heads' probabilities for SyncAttn.
"""
from __future__ import annotations

from typing import List, Optional, Tuple

import torch
from fairseq import utils
from fairseq.modules import MultiheadAttention

from .dbsa import BiaffineQueryProjection, causal_parents, dbsa_log_probs
from .gate import SyntaxGate, mix
from .head_plan import HeadPlan, SyntaxBatch
from .lisa import BiaffineScorer, gold_parent_rows, parent_loss
from .pascal import ignore_parents


class SyntaxBiasedMultiheadAttention(MultiheadAttention):
    """fairseq MultiheadAttention plus per-head syntax mechanisms for one batch (set by the encoder)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.init_syntax()

    def init_syntax(self) -> None:
        """Plain attributes of the syntax hooks (also called after a class swap of a stock module)."""
        self.syntax_bias: Optional[torch.Tensor] = None  # (B·H, T, S) additive, for the fused path
        self.syntax_batch: Optional[SyntaxBatch] = None  # per-batch inputs of the explicit path
        self.plan = HeadPlan(self.num_heads)
        self.pascal_ignore = 0.0  # parent-ignoring probability q
        self.lisa_gold_parents = False  # oracle: at evaluation the LISA head attends to the gold parent
        self.lisa_stats: Optional[Tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = None  # loss, tokens, hits
        self.syntax_dropout = 0.0  # "syntax ignoring": dropout on A_syn of a gated layer in training
        self.gate_values: Optional[torch.Tensor] = None  # (B, H) the last batch's gates, detached
        self.causal = False  # decoder self-attention: DBSA arcs to later tokens are dropped
        self.keep_dbsa_probs = False  # keep the DBSA heads' mean attention of the next forward (SyncAttn)
        self.dbsa_stats: Optional[Tuple[torch.Tensor, ...]] = None  # loss, tokens, hits, dropped later arcs
        self.dbsa_probs: Optional[torch.Tensor] = None  # (B, T, S) mean attention of the DBSA heads
        self.keep_probs = False  # keep every head's probabilities of the next forwards (figures)
        self.probs: Optional[torch.Tensor] = None  # (B, H, T, S) float32 of the last forward with keep_probs
        self._unfused_bias: Optional[torch.Tensor] = None  # (B·H, T, S) distance bias during such a forward

    def configure(self, plan: HeadPlan, pascal_ignore: float = 0.0, lisa_gold_parents: bool = False,
                  gate: Optional[SyntaxGate] = None, syntax_dropout: float = 0.0, causal: bool = False) -> None:
        """Give this layer its head plan; a LISA head adds its bi-affine parameters U, a gated plan its gate,
        DBSA heads their U inside ``q_proj``; ``causal``: this is decoder self-attention."""
        if plan.num_heads != self.num_heads:
            raise ValueError(f"head plan for {plan.num_heads} heads given to a layer with {self.num_heads}")
        if plan.gated != (gate is not None):
            raise ValueError("a gated head plan needs a SyntaxGate, and only a gated plan takes one")
        self.plan, self.pascal_ignore, self.lisa_gold_parents = plan, float(pascal_ignore), bool(lisa_gold_parents)
        self.syntax_dropout = float(syntax_dropout)
        if plan.lisa:
            self.lisa = BiaffineScorer(self.head_dim)
        if gate is not None:
            self.gate = gate
        self.causal = bool(causal)
        if plan.dbsa:
            self.q_proj.__class__ = BiaffineQueryProjection  # same weight and bias; adds U after them
            self.q_proj.init_biaffine(self.num_heads, plan.dbsa_heads)
            self.skip_embed_dim_check = True  # torch's fused path reads q_proj.weight and would skip U

    def forward(self, query, key, value, key_padding_mask=None, incremental_state=None, need_weights=True,
                static_kv=False, attn_mask=None, before_softmax=False, need_head_weights=False):
        if self.plan.explicit and self.syntax_batch is not None:
            if incremental_state is None and not static_kv and not before_softmax and key is query:
                return self._explicit_forward(query, key_padding_mask, attn_mask, need_weights or need_head_weights,
                                              need_head_weights)
            if self.plan.syntax_heads != self.plan.dbsa:
                raise NotImplementedError("PASCAL, LISA and gated heads are encoder self-attention only")
            # DBSA in incremental decoding: U is inside q_proj, fairseq's own path computes the heads
        bias = self.syntax_bias
        if self.keep_probs and not before_softmax:
            return self._stock_forward_keeping_probs(query, key, value, key_padding_mask, incremental_state,
                                                     need_weights, static_kv, attn_mask, need_head_weights, bias)
        if bias is not None:
            # attn_mask (T, S) from the caller is shared by all heads: broadcast it onto the bias
            attn_mask = bias if attn_mask is None else bias + attn_mask.to(bias.dtype).unsqueeze(0)
        return super().forward(query, key, value, key_padding_mask=key_padding_mask, incremental_state=incremental_state,
                               need_weights=need_weights, static_kv=static_kv, attn_mask=attn_mask,
                               before_softmax=before_softmax, need_head_weights=need_head_weights)

    def _stock_forward_keeping_probs(self, query, key, value, key_padding_mask, incremental_state, need_weights,
                                     static_kv, attn_mask, need_head_weights, bias):
        """fairseq's forward through its unfused path, the only one that returns every head's probabilities
        (its fused path is skipped under ``skip_embed_dim_check``); keeps them in ``probs`` (B, H, T, S) and
        returns what the caller asked for. That path takes only a (T, S) ``attn_mask``: the distance-mask bias
        (B·H, T, S) is added to the scaled scores by fairseq's own hook for it, :meth:`apply_sparse_mask`."""
        skip, self.skip_embed_dim_check = self.skip_embed_dim_check, True
        self._unfused_bias = bias
        try:
            attn, weights = super().forward(query, key, value, key_padding_mask=key_padding_mask,
                                            incremental_state=incremental_state, need_weights=True, static_kv=static_kv,
                                            attn_mask=attn_mask, need_head_weights=True)
        finally:
            self.skip_embed_dim_check, self._unfused_bias = skip, None
        self.probs = weights.detach().transpose(0, 1)  # (H, B, T, S) → (B, H, T, S)
        if need_head_weights:
            return attn, weights
        return attn, weights.mean(dim=0) if need_weights else None

    def apply_sparse_mask(self, attn_weights, tgt_len: int, src_len: int, bsz: int):
        """fairseq's hook on the unfused path's scaled scores (B·H, T, S): + the distance bias while a forward keeps
        its probabilities (:meth:`_stock_forward_keeping_probs`), unchanged otherwise."""
        bias = getattr(self, "_unfused_bias", None)
        return attn_weights if bias is None else attn_weights + bias.to(attn_weights.dtype)

    def _syntax_scores(self, scores: torch.Tensor, q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
        """Apply each head block's mechanism to the scaled scores.

        scores: (B, H, T, S) = QKᵀ/√d; q, k: (B, H, T|S, d) unscaled projections → (B, H, T, S).
        """
        plan, batch = self.plan, self.syntax_batch
        blocks: List[torch.Tensor] = []
        if plan.distance:  # Hou et al. 2022, Eq. 7: QKᵀ/√d + log M
            blocks.append(scores[:, : plan.distance] + batch.distance_log_mask.unsqueeze(1).to(scores.dtype))
        if plan.pascal:  # Bugliarello & Okazaki 2020 (PASCAL; DESIGN §4.4): S ⊙ W before masking and softmax
            w = ignore_parents(batch.pascal_weights, self.pascal_ignore, self.training).to(scores.dtype)  # (B, T, S)
            blocks.append(scores[:, plan.pascal_heads] * w.unsqueeze(1))
        h = plan.lisa_head
        if h is not None:  # the bi-affine scores replace the head's own
            blocks.append(self.lisa(q[:, h], k[:, h]).unsqueeze(1))
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
        scores = self._masked(self._syntax_scores(raw, q_heads, k_heads), attn_mask, key_padding_mask)
        probs = utils.softmax(scores, dim=-1)  # (B, H, T, S) float32
        if self.plan.gated:
            raw_syntax = self._masked(raw[:, : self.plan.syntax_heads], attn_mask, key_padding_mask)
            probs = self._gated_probs(probs, raw_syntax, x, key_padding_mask)
        probs = self._lisa_probs(scores, probs)
        self._record_dbsa(scores, probs)
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

    def _lisa_probs(self, scores: torch.Tensor, probs: torch.Tensor) -> torch.Tensor:
        """Record the LISA head's loss statistics; with the oracle at evaluation, put its mass on the gold parent."""
        h = self.plan.lisa_head
        parents = self.syntax_batch.parents_first
        self.lisa_stats = None
        if h is None or parents is None:
            return probs
        log_probs = torch.log_softmax(scores[:, h].float(), dim=-1)  # (B, T, S)
        self.lisa_stats = parent_loss(log_probs, parents)
        if not (self.lisa_gold_parents and not self.training):
            return probs
        gold = gold_parent_rows(log_probs, parents).exp().unsqueeze(1)  # (B, 1, T, S)
        return torch.cat([probs[:, :h], gold, probs[:, h + 1:]], dim=1)

    def _record_dbsa(self, scores: torch.Tensor, probs: torch.Tensor) -> None:
        """DBSA (Deguchi et al. 2019): the parent loss −Σ log A[i, parent(i)] of the heads' mean attention with
        its token count, hits and (decoder) dropped later-parent arcs; the mean attention itself when kept.
        scores (B, H, T, S) masked, probs (B, H, T, S) float32 before dropout."""
        self.dbsa_stats = self.dbsa_probs = None
        if not self.plan.dbsa:
            return
        s = self.plan.dbsa_heads
        parents = self.syntax_batch.parents_chain
        if parents is not None:
            dropped = parents.new_zeros(())
            if self.causal:
                parents, dropped = causal_parents(parents)
            # rows without a parent take no part; zeroing them keeps a fully masked row (a left-padded
            # target's padding) from putting NaN into the gradient
            rows = scores[:, s].masked_fill((parents < 0)[:, None, :, None], 0.0)  # (B, n, T, S)
            self.dbsa_stats = parent_loss(dbsa_log_probs(rows), parents) + (dropped,)
        if self.keep_dbsa_probs:
            self.dbsa_probs = probs[:, s].mean(dim=1)  # (B, T, S)
