"""Self-attention whose first heads run syntax mechanisms: :class:`SyntaxMultiheadAttention`.

fairseq's ``MultiheadAttention`` (same constructor, same parameters) given an ordered list of head blocks
(:class:`~syntrans.modules.blocks.HeadBlock`, one per mechanism, consecutive from head 0) and at most one mixer
over them (:class:`~syntrans.modules.blocks.LayerMixer`). Its forward takes the side's syntax inputs
(:class:`~syntrans.modules.blocks.SideInputs`) as an argument and returns, beside fairseq's (output, weights), the
layer's report: each block's and the mixer's by key, and what the inputs asked to keep.

The layer is split by heads, and each part runs on its own kernel (:mod:`~syntrans.modules.attention_kernels`):

* the heads without syntax never leave the stock fused kernel (``scaled_dot_product_attention``, as fairseq's own
  layer runs them);
* a block whose probabilities this forward does not need (no loss, oracle or kept attention) runs fused too: an
  additive block (a bias on the scores) or a dot-product one (``fused_qk``) through SDPA, a block with a score
  modification (``score_mod``) through flex attention where flex runs fused (CUDA, no attention dropout);
* the rest, and a mixed layer's syntax heads in training, form their scores explicitly: the reference path, in
  fairseq's order of operations (q scaled, then QKᵀ; softmax in float32), which every fused kernel is tested against.

``SideInputs.backend = "explicit"`` puts every head on the explicit path; ``"flex"`` takes flex attention wherever a
block allows it, also off CUDA (torch's reference there: forward only, for tests); ``"compiled"`` does too, compiled
on every device (inductor on CPU: forward only, for tests). A compiled kernel that fails (to compile, to run, or past
dynamo's recompile limit) warns once and leaves its block on the explicit path (:mod:`.compiled_kernels`). The flex
block mask (padding, causal) is made once per batch and side (:meth:`SideInputs.block_mask`) for every layer. A block
whose loss needs only each row's log-sum-exp and its parent's score (a parse head's log-likelihood) runs in flex
attention too, its loss formed from the kernel's log-sum-exp and the gathered parent score. Incremental decoding
(decoder blocks that allow it) stays on fairseq's own cached path.
"""
from __future__ import annotations

from typing import List, Optional, Sequence, Tuple

import torch
from fairseq.modules import MultiheadAttention

from .attention_kernels import (
    FLEX,
    additive_mask,
    dropout_keeps,
    dropped,
    flex,
    flex_available,
    masked_scores,
    rows_live,
    sdpa,
    softmax_probs,
)
from .blocks import KEEP_PARSE, KEEP_PROBS, HeadBlock, LayerMixer, LayerSyntax, SideInputs
from .closed_start import ClosedHeadBlend
from .compiled_kernels import KernelUnavailable, usable
from .layer_report import LayerReport

BACKENDS = ("auto", "explicit", "flex", "compiled")


class SyntaxMultiheadAttention(MultiheadAttention):
    """fairseq's MultiheadAttention whose heads 0 … n−1 run the given syntax blocks (see the module docstring).

    Takes fairseq's constructor arguments plus ``blocks`` (in head order; each is kept as a submodule under its key)
    and ``mixer``, or ``layer`` (:class:`~syntrans.modules.blocks.LayerSyntax`), whose blocks and mixer are built
    after the layer's own parameters. ``forward`` takes ``inputs`` (the side's syntax inputs) and returns (output,
    weights, report).
    """

    def __init__(self, *args, blocks: Sequence[HeadBlock] = (), mixer: Optional[LayerMixer] = None,
                 layer: Optional[LayerSyntax] = None, closed_start: bool = False, **kwargs):
        super().__init__(*args, **kwargs)
        if layer is not None:  # the mixer first, then the blocks in head order: the order of the draws before
            mixer = layer.mixer(self.embed_dim, self.num_heads)
            blocks = layer.blocks(self.head_dim)
            closed_start = layer.closed_start
        # the blocks as the model's plan placed them (it checked their heads, keys and mixer: SyntaxPlan)
        start = 0
        for block in blocks:
            self.add_module(block.key, block)
            block.attach(self, slice(start, start + block.num_heads))
            projection = block.query_projection(self.q_proj, self.num_heads)
            if projection is not None:
                self.q_proj = projection
            start += block.num_heads
        self.block_keys: Tuple[str, ...] = tuple(b.key for b in blocks)
        self.syntax_heads = start  # heads 0 … syntax_heads − 1 run blocks; the rest are stock
        self.mixer_key: Optional[str] = None
        if mixer is not None:
            self.add_module(mixer.key, mixer)
            self.mixer_key = mixer.key
        # --syntax-start pretrained: the syntax heads blended with the stock ones after the mixer, closed (no draw)
        closing = ClosedHeadBlend.over(blocks) if closed_start else None
        self.start_key: Optional[str] = None
        if closing is not None:
            self.add_module(closing.key, closing)
            self.start_key = closing.key

    @property
    def blocks(self) -> List[HeadBlock]:
        return [getattr(self, k) for k in self.block_keys]

    @property
    def mixer(self) -> Optional[LayerMixer]:
        return getattr(self, self.mixer_key) if self.mixer_key else None

    @property
    def closing(self) -> Optional[ClosedHeadBlend]:
        """The closed blend of the syntax heads with the stock ones (``--syntax-start pretrained``), or None."""
        return getattr(self, self.start_key) if self.start_key else None

    @property
    def mixes(self) -> bool:
        """Whether the syntax heads' attention is mixed with the stock one after their softmax (a mixer, a blend)."""
        return self.mixer_key is not None or self.start_key is not None

    def _mix(self, syn, raw, x, pad, inputs: SideInputs, report: LayerReport, syntax_keep=None,
             outputs: bool = False) -> torch.Tensor:
        """The syntax heads' probabilities syn (or outputs, ``outputs``) mixed with the stock ones raw (B, n, T, S|d):
        the mixer's mix, then the closed blend's; each reports under its key."""
        if self.mixer is not None:
            mixer = self.mixer
            syn, report.mechanisms[mixer.key] = (mixer.mix_outputs(syn, raw, x, pad, inputs) if outputs else
                                                 mixer.mix(syn, raw, x, pad, inputs, syntax_keep=syntax_keep))
        closing = self.closing
        if closing is not None:
            syn, report.mechanisms[closing.key] = (closing.mix_outputs if outputs else closing.mix)(syn, raw, x, pad,
                                                                                                   inputs)
        return syn

    # ------------------------------------------------------------------------------------------------ forward
    def forward(self, query, key, value, key_padding_mask=None, incremental_state=None, need_weights=True,
                static_kv=False, attn_mask=None, before_softmax=False, need_head_weights=False,
                inputs: Optional[SideInputs] = None):
        """fairseq's arguments plus ``inputs`` (the side's syntax inputs) → (output (T, B, C), weights or None, the
        layer's report)."""
        if not self.block_keys:
            out, weights = super().forward(query, key, value, key_padding_mask=key_padding_mask,
                                           incremental_state=incremental_state, need_weights=need_weights,
                                           static_kv=static_kv, attn_mask=attn_mask, before_softmax=before_softmax,
                                           need_head_weights=need_head_weights)
            return out, weights, LayerReport()
        if inputs is None:
            B, T = query.size(1), query.size(0)
            pad = key_padding_mask.bool() if key_padding_mask is not None else query.new_zeros(B, T, dtype=torch.bool)
            inputs = SideInputs(pad_mask=pad)
        if incremental_state is not None:
            return self._incremental(query, key_padding_mask, incremental_state, need_weights, attn_mask,
                                     need_head_weights, inputs)
        if static_kv or before_softmax or key is not query:
            raise NotImplementedError("syntax heads run in self-attention over the whole sequence (or in incremental "
                                      "decoding where their block allows it)")
        return self._split(query, key_padding_mask, attn_mask, need_weights or need_head_weights, need_head_weights,
                           inputs)

    def _incremental(self, x, key_padding_mask, incremental_state, need_weights, attn_mask, need_head_weights,
                     inputs: SideInputs):
        """One decoding step on fairseq's cached path (blocks whose effect lives in the projections, e.g. a matrix a
        block put into ``q_proj``); the current query row of every head when the inputs keep probabilities or parses."""
        bad = [b.key for b in self.blocks if not b.incremental]
        if bad or self.mixes:
            named = bad or [self.mixer_key or self.start_key]
            raise NotImplementedError(f"{', '.join(named)} heads run in full-sequence self-attention "
                                      "only, not in incremental decoding")
        rows = bool(inputs.keep & {KEEP_PROBS, KEEP_PARSE})
        out, weights = super().forward(x, x, x, key_padding_mask=key_padding_mask, incremental_state=incremental_state,
                                       need_weights=need_weights or rows, attn_mask=attn_mask,
                                       need_head_weights=need_head_weights or rows)
        report = LayerReport()
        if rows:
            probs = weights.detach().float().transpose(0, 1)  # (B, H, 1, S)
            self._keep(probs, inputs, report)
            if not need_head_weights:
                weights = weights.mean(dim=0) if need_weights else None
        return out, weights, report

    def _keep(self, probs: torch.Tensor, inputs: SideInputs, report: LayerReport) -> None:
        """Kept probabilities (B, H, T, S) and the parse blocks' predicted parents (argmax of their rows)."""
        if KEEP_PROBS in inputs.keep:
            report.probs = probs.detach()
        if KEEP_PARSE in inputs.keep:
            report.parse = {b.key: b.rows(probs[:, b.heads]).argmax(dim=-1) for b in self.blocks if b.parse}

    def _dropout_p(self) -> float:
        return self.dropout_module.p if (self.training or self.dropout_module.apply_during_inference) else 0.0

    # ------------------------------------------------------------------------------------------------- split
    def _split(self, x, key_padding_mask, attn_mask, need_weights: bool, need_head_weights: bool,
               inputs: SideInputs):
        """Full-sequence self-attention, the heads split by kernel; x (T, B, C)."""
        T, B, C = x.shape
        H, d = self.num_heads, self.head_dim
        q = self.q_proj(x).view(T, B, H, d).permute(1, 2, 0, 3)  # (B, H, T, d), unscaled (a block's query transform applied)
        k = self.k_proj(x).view(T, B, H, d).permute(1, 2, 0, 3)
        v = self.v_proj(x).view(T, B, H, d).permute(1, 2, 0, 3)
        pad = key_padding_mask.bool() if key_padding_mask is not None else None
        report = LayerReport()
        keep_all = need_weights or KEEP_PROBS in inputs.keep
        explicit_all = keep_all or inputs.backend == "explicit"
        n = self.syntax_heads
        mixes = self.mixes
        parts: List[torch.Tensor] = []
        probs: List[torch.Tensor] = []
        # the heads are cut into parts with split (its backward joins the gradients; a slice's would zero-fill the
        # whole projection for each part)
        if explicit_all or (mixes and (self.training or any(b.needs_probs(inputs) or b.wants_loss(inputs)
                                                                        for b in self.blocks))):
            # one explicit group: all syntax heads (the mixer mixes them), or every head (probabilities kept)
            sizes = [H] if explicit_all else [n, H - n]
            (qg, *qs), (kg, *ks), (vg, *vs) = (t.split(sizes, dim=1) for t in (q, k, v))
            ctx, p = self._explicit(x, qg, kg, vg, pad, attn_mask, inputs, report)
            parts.append(ctx)
            probs.append(p)
        elif mixes:  # a mixed layer at evaluation, nothing kept: both sides fused, then mixed
            (qg, *qs), (kg, *ks), (vg, *vs) = (t.split([n, H - n], dim=1) for t in (q, k, v))
            parts.append(self._mixed_fused(x, qg, kg, vg, pad, attn_mask, inputs, report))
        else:
            sizes = [b.num_heads for b in self.blocks] + [H - n]
            *qb, q_rest = q.split(sizes, dim=1)
            *kb, k_rest = k.split(sizes, dim=1)
            *vb, v_rest = v.split(sizes, dim=1)
            qs, ks, vs = [q_rest], [k_rest], [v_rest]
            for block, qi, ki, vi in zip(self.blocks, qb, kb, vb):
                parts.append(self._block(x, block, qi, ki, vi, pad, attn_mask, inputs, report))
        if qs and qs[0].size(1):  # the stock heads
            parts.append(sdpa(qs[0], ks[0], vs[0], additive_mask(pad, attn_mask, None, q.dtype, B, T), self._dropout_p()))
        ctx = torch.cat(parts, dim=1) if len(parts) > 1 else parts[0]  # (B, H, T, d)
        out = self.out_proj(ctx.permute(2, 0, 1, 3).reshape(T, B, C))
        weights = None
        if keep_all:
            every = probs[0]  # (B, H, T, S) float32
            if KEEP_PROBS in inputs.keep:
                report.probs = every.detach()
            if need_weights:
                weights = every.transpose(0, 1)  # (H, B, T, S), as fairseq returns them
                if not need_head_weights:
                    weights = weights.mean(dim=0)
        return out, weights, report

    def _block(self, x, block: HeadBlock, qb, kb, vb, pad, attn_mask, inputs: SideInputs, report: LayerReport) -> torch.Tensor:
        """One block's heads (qb, kb, vb: (B, n, T|S, d), its part of the layer's) on the fastest kernel this forward
        allows → (B, n, T, d)."""
        if not block.needs_probs(inputs) and not (block.parse and KEEP_PARSE in inputs.keep):
            loss = block.wants_loss(inputs)
            fused = block.fused_qk(qb, kb)
            flexible = self._flexible(x, attn_mask, inputs)
            if fused is not None and not loss:
                qf, kf, scale = fused
                bias = block.bias(inputs, qb.dtype) if block.additive else None
                return sdpa(qf, kf, vb, additive_mask(pad, attn_mask, bias, qb.dtype, qb.size(0), kb.size(2)),
                            self._dropout_p(), scale=scale)
            if fused is not None and flexible:  # the loss from the rows' log-sum-exp: no (B, n, T, S) probabilities
                qf, kf, scale = fused
                scale = self.scaling if scale is None else scale
                got = self._flex(x, block, qf, kf, vb, None, pad, attn_mask, inputs, scale, return_lse=True)
                fused_report = None if got is None else block.fused_report(qf, kf, got[1], scale, inputs)
                if fused_report is not None:
                    report.mechanisms[block.key] = fused_report
                    return got[0]
            mod = block.score_mod(inputs)
            if mod is not None and not loss and flexible and attn_mask is None:
                got = self._flex(x, block, qb, kb, vb, mod, pad, None, inputs, self.scaling)
                if got is not None:
                    return got[0]
        ctx, _ = self._explicit(x, qb, kb, vb, pad, attn_mask, inputs, report, blocks=[block])
        return ctx

    def _flex(self, x, block: HeadBlock, q, k, v, mod, pad, attn_mask, inputs: SideInputs, scale: float,
              return_lse: bool = False):
        """The block in flex attention: compiled on CUDA (and under ``backend="compiled"``), torch's eager reference
        under ``backend="flex"`` off CUDA; the side's block mask of this batch. None when the compiled kernel cannot
        run for this block (it failed once: :mod:`~syntrans.modules.compiled_kernels`): the caller takes the explicit
        path."""
        compiled = x.device.type == "cuda" or inputs.backend == "compiled"
        caller = f"{block.key} heads"
        if compiled and not usable(FLEX, caller, x.device):
            return None
        causal = attn_mask is not None
        mask = inputs.block_mask(pad, causal, q.size(2), q.device)
        try:
            return flex(q, k, v, mod, pad, causal=causal, scale=scale, return_lse=return_lse, compiled=compiled,
                        block_mask=mask, caller=caller)
        except KernelUnavailable:
            return None

    def _flexible(self, x, attn_mask, inputs: SideInputs) -> bool:
        """Whether flex attention can run this forward's blocks fused: on CUDA (or forced, ``backend="flex"``: its
        reference, forward only off CUDA; ``"compiled"``: compiled on every device, inductor's forward only on CPU),
        without attention dropout (flex attention has none), and with no mask from the caller but the decoder's causal
        one (as a mask function)."""
        wanted = inputs.backend in ("flex", "compiled") or (inputs.backend == "auto" and flex_available(x.device))
        return wanted and self._dropout_p() == 0.0 and (attn_mask is None or self.causal_mask_ok(attn_mask))

    @staticmethod
    def causal_mask_ok(attn_mask: torch.Tensor) -> bool:
        """Whether the caller's (T, S) mask is exactly the causal one (−inf above the diagonal, 0 elsewhere)."""
        T, S = attn_mask.shape
        future = torch.ones(T, S, dtype=torch.bool, device=attn_mask.device).triu(1)
        return T == S and bool(torch.isneginf(attn_mask[future]).all()) and bool((attn_mask[~future] == 0).all())

    def _explicit(self, x, q, k, v, pad, attn_mask, inputs: SideInputs, report: LayerReport,
                  blocks: Optional[List[HeadBlock]] = None) -> Tuple[torch.Tensor, torch.Tensor]:
        """Consecutive heads with explicit scores (the reference path): q, k, v (B, n, T|S, d) those of ``blocks``
        and then of stock heads →
        (context (B, n, T, d), probabilities they attend with (B, n, T, S) float32, before attention dropout).
        ``blocks`` defaults to every block of the layer, from head 0 (then the mixer mixes them)."""
        group = blocks is None
        blocks = self.blocks if group else blocks
        n = q.size(1)
        raw = torch.matmul(q * self.scaling, k.transpose(-1, -2))  # (B, n, T, S) QKᵀ/√d, fairseq's order
        at = sum(b.num_heads for b in blocks)
        sizes = [b.num_heads for b in blocks] + ([n - at] if at < n else [])
        live = False  # no row of the scores is fully masked (known on CPU only: rows_live)
        if len(sizes) == 1 and blocks and blocks[0].additive:  # the bias and the masks added in one pass
            pieces = None
            bias = blocks[0].bias(inputs, raw.dtype)  # (B, 1, T, S)
            scores = raw + additive_mask(pad, attn_mask, bias, raw.dtype, raw.size(0), raw.size(-1))
            live = rows_live(pad, attn_mask) and not bool(torch.isneginf(bias).all(dim=-1).any())
        elif len(sizes) == 1:
            pieces = [blocks[0].scores(raw, q, k, inputs) if blocks else raw]
        else:
            pieces = [block.scores(r, qi, ki, inputs)
                      for block, r, qi, ki in zip(blocks, raw.split(sizes, 1), q.split(sizes, 1), k.split(sizes, 1))]
            if at < n:
                pieces.append(raw.split(sizes, 1)[-1])  # stock heads kept explicit (their probabilities are kept)
        if pieces is not None:
            scores = masked_scores(torch.cat(pieces, dim=1) if len(pieces) > 1 else pieces[0], attn_mask, pad)
        probs = softmax_probs(scores, live=live)  # (B, n, T, S) float32
        mixer = self.mixer if group else None
        attn_keep = None
        if group and self.mixes:
            m = self.syntax_heads  # = at: the mixer mixes every block's heads
            syn, *stock = probs.split([m, n - m], dim=1) if m < n else (probs,)
            raw_m = raw.split([m, n - m], dim=1)[0] if m < n else raw
            # the stock scores, masked by adding (one pass, nothing to do backward); only the masks can empty a row
            p_raw = softmax_probs(raw_m + additive_mask(pad, attn_mask, None, raw.dtype, raw.size(0), raw.size(-1))
                                  if pad is not None or attn_mask is not None else raw_m,
                                  live=rows_live(pad, attn_mask))
            # the mixer's dropout of the syntax probabilities and the attention dropout: both masks in one draw
            syn_keep, attn_keep = dropout_keeps([tuple(syn.shape), tuple(probs.shape)],
                                                [mixer.syntax_dropout_p() if mixer is not None else 0.0,
                                                 self._dropout_p()], raw.device)
            mixed = self._mix(syn, p_raw, x, self._pad(x, pad), inputs, report, syntax_keep=syn_keep)
            probs = torch.cat([mixed, *stock], dim=1) if stock else mixed
        p_parts = probs.split(sizes, dim=1) if len(sizes) > 1 else (probs,)
        s_parts = scores.split(sizes, dim=1) if len(sizes) > 1 else (scores,)
        out = []
        for block, p, sc in zip(blocks, p_parts, s_parts):
            p, block_report = block.probs(sc, p, inputs)
            if block_report is not None:
                report.mechanisms[block.key] = block_report
            if block.parse and KEEP_PARSE in inputs.keep:
                report.parse[block.key] = block.rows(p.detach()).argmax(dim=-1)
            out.append(p)
        if at < n:
            out.append(p_parts[-1])
        probs = torch.cat(out, dim=1) if len(out) > 1 else out[0]
        attended = probs.type_as(raw)
        if attn_keep is None:
            return torch.matmul(self.dropout_module(attended), v), probs  # (B, n, T, d)
        # the drawn attention dropout: the mask on the probabilities, its scale on the (smaller) product
        return torch.matmul(dropped(attended, attn_keep, scale=False), v) * attn_keep[1], probs

    def _mixed_fused(self, x, q, k, v, pad, attn_mask, inputs: SideInputs, report: LayerReport) -> torch.Tensor:
        """A mixed layer's syntax heads at evaluation, where the mix is linear: (mix of A_syn, A_raw)·V = mix of
        A_syn·V and A_raw·V, both fused."""
        sizes = [b.num_heads for b in self.blocks]
        syn = torch.cat([self._block(x, b, qi, ki, vi, pad, attn_mask, inputs, report)
                         for b, qi, ki, vi in zip(self.blocks, q.split(sizes, 1), k.split(sizes, 1), v.split(sizes, 1))],
                        dim=1)
        raw = sdpa(q, k, v, additive_mask(pad, attn_mask, None, q.dtype, q.size(0), k.size(2)), 0.0)
        return self._mix(syn, raw, x, self._pad(x, pad), inputs, report, outputs=True)

    @staticmethod
    def _pad(x: torch.Tensor, pad: Optional[torch.Tensor]) -> torch.Tensor:
        return pad if pad is not None else x.new_zeros(x.size(1), x.size(0), dtype=torch.bool)
