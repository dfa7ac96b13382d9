"""The pieces a syntax mechanism puts into an attention layer, and the per-batch inputs they read.

* :class:`SideInputs`: one side's syntax inputs for one forward (what each mechanism prepared from the batch, and
  what the layers should keep in their reports), handed down every layer's ``forward`` as an argument.
* :class:`HeadBlock`: what one mechanism does to a block of consecutive heads of one self-attention layer.
* :class:`LayerMixer`: what one mechanism does to all syntax heads of a layer after their softmax (mixes them with
  the stock attention).
* :class:`SyntaxPart`: what they share with the modules of a whole side (warm-up, freezing, how their parameters
  start).

:class:`~syntrans.modules.syntax_attention.SyntaxMultiheadAttention` runs an ordered list of blocks; the mechanisms
(:mod:`syntrans.mechanisms`) build them.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Dict, FrozenSet, List, Optional, Tuple

import torch
import torch.nn as nn

from .layer_report import BlockReport, MixerReport

#: what a forward can ask its layers to keep in their reports (besides a mechanism's key: its blocks' attention)
KEEP_PROBS = "probs"  # every head's probabilities of every layer with syntax heads, (B, H, T, S) float32
KEEP_PARSE = "parse"  # the predicted parent of every query row of every parse-predicting block, (B, T) long
#: how torch's nn.Linear starts, for :meth:`SyntaxPart.initialisation`
LINEAR_DEFAULT = "torch's nn.Linear default (weight and bias uniform in ±1/√fan_in)"


@dataclass
class SideInputs:
    """One side's syntax inputs for one forward, handed to every layer of that side.

    ``data``: each mechanism's prepared input by its key; ``keep``: what the layers return in their reports besides
    losses (:data:`KEEP_PROBS`, :data:`KEEP_PARSE`, or a mechanism key: that mechanism's blocks return their mean
    attention, with its gradient).
    """

    pad_mask: torch.Tensor  # (B, T) True at padding
    data: Dict[str, Any] = field(default_factory=dict)
    keep: FrozenSet[str] = frozenset()
    backend: str = "auto"  # "explicit": every head on the explicit (reference) path; see syntax_attention.BACKENDS
    _masks: List[Tuple[Optional[torch.Tensor], bool, int, Any]] = field(default_factory=list, repr=False,
                                                                         compare=False)

    def get(self, key: str) -> Any:
        return self.data.get(key)

    def block_mask(self, pad: Optional[torch.Tensor], causal: bool, length: int, device: torch.device):
        """flex attention's block mask of this batch's padding keys ``pad`` (B, S) (the tensor the layers are given,
        None: none) and, when ``causal``, later keys, for ``length`` queries: made on first use and shared by every
        layer and block of the side (one per batch, not one per layer and block). None when nothing is masked."""
        for given, was_causal, was_length, mask in self._masks:
            if given is pad and was_causal == causal and was_length == length:
                return mask
        from .attention_kernels import padding_block_mask

        B, S = (pad.shape if pad is not None else (self.pad_mask.size(0), length))
        mask = padding_block_mask(pad, causal, B, length, S, device)
        self._masks.append((pad, causal, length, mask))  # the tensor itself is kept: its identity is the key
        return mask


class SyntaxPart(nn.Module):
    """A module a mechanism puts into the model. ``frozen``: its parameters take no gradient now (a warm-up);
    :meth:`set_epoch` hears fairseq's epoch (1-based) at every epoch start, a resumed one included."""

    key: ClassVar[str] = ""  # the mechanism's key: its input, its report and the attribute it is kept under

    @property
    def frozen(self) -> bool:
        return False

    def initialisation(self) -> Dict[str, str]:
        """How this module's parameters and buffers start, {name relative to it, or the prefix of a submodule: how,
        with the paper that says so or "ours"}: what a warm start from a checkpoint without them prints
        (:mod:`syntrans.models.warm_start`). Every parameter of a syntax part is an addition to the Transformer."""
        return {}

    def set_epoch(self, epoch: int) -> None:
        pass


class HeadBlock(SyntaxPart):
    """What one mechanism does to ``num_heads`` consecutive heads of one self-attention layer.

    The attention forms the block's scaled stock scores S = QKᵀ/√d (B, n, T, S) and calls :meth:`scores` (add to,
    multiply or replace S), masks them (padding, causal), takes the softmax and calls :meth:`probs` (read or change
    the block's probabilities: a loss, an oracle, kept attention). A block can also run in a fused kernel: an
    ``additive`` one with its :meth:`bias`, or one with a :meth:`score_mod` under flex attention, when this forward
    needs none of its probabilities (:meth:`needs_probs`).
    """

    additive: ClassVar[bool] = False  # its whole effect is scores + bias(inputs)
    mixable: ClassVar[bool] = True  # a mixer may mix its probabilities with the stock ones
    incremental: ClassVar[bool] = False  # it runs in incremental decoding (fairseq's own cached path)
    parse: ClassVar[Optional[str]] = None  # it predicts parents, under this subword convention ("first", "chain")
    #: its heads attend as the stock heads they take over when built (so ``--syntax-start pretrained`` leaves them
    #: unblended: :class:`~syntrans.modules.closed_start.ClosedHeadBlend`)
    stock_at_start: ClassVar[bool] = False
    #: what the block reports of a forward (:meth:`probs`, :meth:`fused_report`): its mechanism's subclass
    Report: ClassVar[type] = BlockReport

    def __init__(self, num_heads: int):
        super().__init__()
        self.num_heads = int(num_heads)  # n, the heads of this block
        self.heads = slice(0, self.num_heads)  # where they sit in the layer: set by the attention (attach)

    def attach(self, attention: nn.Module, heads: slice) -> None:
        """Called once when the attention places the block on ``heads``."""
        self.heads = heads

    def query_projection(self, stock: nn.Linear, num_heads: int) -> Optional[nn.Module]:
        """The layer's query projection this block's heads need instead of ``stock`` (the attention's own, over
        ``num_heads`` heads), or None: asked once, after :meth:`attach`, by the attention, which keeps the result."""
        return None

    def needs_probs(self, inputs: SideInputs) -> bool:
        """Whether this forward must form the block's probabilities (kept attention, an oracle, a loss that reads
        them), beyond a loss :meth:`fused_report` can give."""
        return self.key in inputs.keep

    def wants_loss(self, inputs: SideInputs) -> bool:
        """Whether this forward reports a loss of the block (its inputs carry what the loss needs)."""
        return False

    def fused_report(self, q: torch.Tensor, k: torch.Tensor, lse: torch.Tensor, scale: float,
                     inputs: SideInputs) -> Optional[BlockReport]:
        """The block's report from a fused kernel: q, k (B, n, T|S, d) as :meth:`fused_qk` gave them, lse (B, n, T) the
        log-sum-exp of every row's masked scores, ``scale`` the scores' scale. None: the block needs its
        probabilities (the explicit path) for its loss."""
        return None

    def bias(self, inputs: SideInputs, dtype: torch.dtype) -> torch.Tensor:
        """Additive blocks: the bias (B, 1, T, S) added to the scaled scores of each of the block's heads."""
        raise NotImplementedError(f"{type(self).__name__} is not additive")

    def scores(self, scores: torch.Tensor, q: torch.Tensor, k: torch.Tensor, inputs: SideInputs) -> torch.Tensor:
        """scores (B, n, T, S) = QKᵀ/√d of the block's heads; q, k (B, n, T|S, d) their unscaled projections."""
        if self.additive:
            return scores + self.bias(inputs, scores.dtype)
        return scores

    def probs(self, scores: torch.Tensor, probs: torch.Tensor,
              inputs: SideInputs) -> Tuple[torch.Tensor, Optional[BlockReport]]:
        """scores (B, n, T, S) masked, probs (B, n, T, S) float32 their softmax → (the probabilities the heads
        attend with, the block's report or None: here its mean attention (B, T, S) when its key is kept)."""
        return probs, (self.Report(attention=self.rows(probs)) if self.key in inputs.keep else None)

    def fused_qk(self, q: torch.Tensor, k: torch.Tensor) -> Optional[Tuple[torch.Tensor, torch.Tensor, Optional[float]]]:
        """The block as a dot-product attention a fused kernel can run: (q', k', scale) with scores q'k'ᵀ·scale
        (+ :meth:`bias` for an additive block; scale None: 1/√d), or None. q, k (B, n, T|S, d)."""
        return (q, k, None) if self.additive else None

    def score_mod(self, inputs: SideInputs) -> Optional[Callable]:
        """flex attention's score modification equal to :meth:`scores`, or None (no fused kernel beyond SDPA)."""
        return None

    def rows(self, probs: torch.Tensor) -> torch.Tensor:
        """The block's attention as one distribution per query (B, n, T, S) → (B, T, S): the heads' mean; a parse
        block's predicted parent is its argmax."""
        return probs.mean(dim=1)


class LogMaskHeads(HeadBlock):
    """Heads that attend with softmax(QKᵀ/√d + log M), log M (B, T, T) one per batch that the side prepares under the
    block's key and every layer shares: additive, so they run in the fused SDPA kernel with log M as the bias, and
    under flex attention with it as the score modification."""

    additive = True
    heads_name: ClassVar[str] = "log-mask"  # the heads' name in the error for a missing log M
    needs: ClassVar[str] = "log M"  # what that error says is missing: the input and where it comes from

    def log_mask(self, inputs: SideInputs) -> torch.Tensor:
        """The side's log M (B, T, T) under the block's key; ValueError when the inputs lack it."""
        log_m = inputs.get(self.key)
        if log_m is None:
            raise ValueError(f"this layer's {self.heads_name} heads need the batch's {self.needs}; pass the side's "
                             "inputs to the attention")
        return log_m

    def bias(self, inputs: SideInputs, dtype: torch.dtype) -> torch.Tensor:
        return self.log_mask(inputs).unsqueeze(1).to(dtype)  # (B, 1, T, T)

    def score_mod(self, inputs: SideInputs) -> Optional[Callable]:
        log_m = self.log_mask(inputs)  # (B, T, T)
        # read as one flat vector with its sizes as tensors: a kernel compiled for one length serves every length
        # (inductor's CPU flex template fails to compile a (B, T, T) buffer read at [b, q, kv] for dynamic shapes)
        flat = log_m.reshape(-1)  # (B·T·T,)
        T, S = (torch.tensor(n, device=log_m.device) for n in log_m.shape[1:])

        def add_log_mask(score, b, h, q_idx, kv_idx):
            return score + flat[(b * T + q_idx) * S + kv_idx].to(score.dtype)

        return add_log_mask


class LayerSyntax:
    """What one self-attention layer runs: its blocks' keys in head order (none: a stock layer), and its blocks and
    mixer, which the attention builds after its own parameters, so that a model draws its parameters in fairseq's
    order with the syntax parts after each layer's projections (a seed gives the same model as before these parts
    were modules of their own)."""

    keys: Tuple[str, ...] = ()
    #: ``--syntax-start pretrained``: the attention blends its syntax heads with the stock ones, closed at the start
    #: (:class:`~syntrans.modules.closed_start.ClosedHeadBlend`)
    closed_start: bool = False

    def blocks(self, head_dim: int) -> List["HeadBlock"]:
        return []

    def mixer(self, embed_dim: int, num_heads: int) -> Optional["LayerMixer"]:
        return None

    def __bool__(self) -> bool:
        return bool(self.keys)


class LayerMixer(SyntaxPart):
    """What a mechanism does to all syntax heads of a layer after their softmax (e.g. mixes them with the stock
    probabilities)."""

    #: what the mixer reports of a forward (:meth:`mix`, :meth:`mix_outputs`): its mechanism's subclass
    Report: ClassVar[type] = MixerReport

    def syntax_dropout_p(self) -> float:
        """The dropout rate on the syntax heads' probabilities in this forward (0: none). The attention draws that
        mask together with its attention dropout mask (one draw) and hands it to :meth:`mix` as ``syntax_keep``."""
        return 0.0

    def mix(self, p_syn: torch.Tensor, p_raw: torch.Tensor, x: torch.Tensor, pad: torch.Tensor,
            inputs: SideInputs, syntax_keep: Optional[torch.Tensor] = None) -> Tuple[torch.Tensor, MixerReport]:
        """p_syn (B, n, T, S) the syntax heads' probabilities, p_raw (B, n, T, S) their stock ones, x (T, B, C) the
        layer input, pad (B, T), ``syntax_keep`` the dropout of p_syn at :meth:`syntax_dropout_p` as the attention
        drew it (a mask and its scale, :func:`~syntrans.modules.attention_kernels.dropped` applies it; None: the
        mixer draws its own) → (probabilities the heads attend with, report)."""
        raise NotImplementedError

    def mix_outputs(self, o_syn: torch.Tensor, o_raw: torch.Tensor, x: torch.Tensor, pad: torch.Tensor,
                    inputs: SideInputs) -> Tuple[torch.Tensor, MixerReport]:
        """The same mix applied to the heads' outputs, where it is linear (evaluation): o_syn = A_syn·V and
        o_raw = A_raw·V (B, n, T, d) → (outputs, report)."""
        raise NotImplementedError
