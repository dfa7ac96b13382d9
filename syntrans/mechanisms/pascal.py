"""PASCAL heads (Bugliarello & Okazaki 2020, "Enhancing Machine Translation with Dependency-Aware Self-Attention",
§3): in chosen heads of chosen encoder layers the scaled scores are multiplied by a Gaussian around each token's
dependency parent, S ⊙ W with W[i, j] = N(j; p_i, σ²), before the padding mask and the softmax; in training each
query row of W becomes ones with probability q (parent ignoring).

The parent positions p_i ("middle" subword convention, :func:`syntrans.syntax.parents.subword_parents_array`: the
mean position of the head word's subwords, x.5 allowed) come from the batch (``src_parent_middle``, float64 so that
half-precision batch casts leave them exact). W is formed once per batch and shared by the layers (explicit path);
under flex attention it is computed per score from the positions (no (B, T, S) tensor).

The paper's ablations are options: the Gaussian's σ (``--pascal-sigma``; Table 3b lists the variance σ², 1 to 25),
"parent-only" weights (``--pascal-weights``, §3.2, Table 3b) and addition instead of multiplication
(``--pascal-op``, App. B); the defaults are the paper's model (Gaussian, σ = 1, multiplication).
"""
# no ``from __future__ import annotations`` here: fairseq builds the flags from the config fields' real types
from dataclasses import dataclass, field
from typing import Callable, List, Optional

import torch
from fairseq.dataclass import FairseqDataclass

from ..modules.blocks import HeadBlock, SideInputs
from ..syntax.pascal_weights import PASCAL_WEIGHTS, parent_weight, pascal_weights
from .base import FeatureNeeds, check_choice, check_option, is_number, required_feature
from .encoder_heads import EncoderHeads


@dataclass
class PascalConfig(FairseqDataclass):
    """PASCAL heads (Bugliarello & Okazaki 2020): scaled scores ⊙ N(j; parent_i, σ²) in chosen heads."""

    layers: List[int] = field(
        default_factory=list,
        metadata={"help": "0-based encoder layers with PASCAL heads (comma-separated, or 'all'); empty: none"},
    )
    heads: int = field(default=0, metadata={"help": "number of PASCAL heads per chosen layer (after any distance-mask heads)"})
    sigma: float = field(default=1.0, metadata={"help": "standard deviation σ of the parent Gaussian (Table 3b lists σ²)"})
    ignore: float = field(
        default=0.0, metadata={"help": "parent ignoring: probability q that a query row's weights are ones in training"}
    )
    weights: str = field(
        default="gaussian",
        metadata={"help": "the weights W: gaussian (N(j; p_i, σ²), Eq. 3) or parent-only (1 on the parent's middle "
                          "token, 0 elsewhere: Table 3b's ablation)"},
    )
    op: str = field(
        default="multiply",
        metadata={"help": "how W meets the scores: multiply (S ⊙ W, Eq. 2) or add (S + W: App. B's ablation)"},
    )


#: how the weights meet the scores: Eq. 2's product, or App. B's sum (Bugliarello & Okazaki 2020)
PASCAL_OPS = ("multiply", "add")


def weigh(scores: torch.Tensor, w: torch.Tensor, op: str) -> torch.Tensor:
    """n_tj = s_tj · d_tj (Bugliarello & Okazaki 2020, Eq. 2), or n_tj = s_tj + d_tj for ``op`` "add" (App. B,
    "replacing multiplication by addition": z = x + y). A row of ones (no parent, parent ignoring) leaves the
    softmax as it is under either: ×1, or +1 on every key of the row (the softmax is shift-invariant)."""
    return scores + w if op == "add" else scores * w


def ignore_rows(shape, q: float, training: bool, device) -> Optional[torch.Tensor]:
    """Parent ignoring (Bugliarello & Okazaki 2020, §3): the (sentence, query) rows whose weights become ones in this
    training forward, each with probability q; None when none can (evaluation, q = 0). shape (B, T) → (B, T) bool."""
    if not training or q <= 0.0:
        return None
    if q >= 1.0:
        return torch.ones(shape, dtype=torch.bool, device=device)
    return torch.rand(shape, device=device) < q


def ignore_parents(weights: torch.Tensor, q: float, training: bool) -> torch.Tensor:
    """W with parent ignoring applied (:func:`ignore_rows`): weights (B, T, S) → (B, T, S)."""
    drop = ignore_rows(weights.shape[:2], q, training, weights.device)
    if drop is None:
        return weights
    return torch.where(drop.unsqueeze(-1), torch.ones_like(weights), weights)


class PascalInputs:
    """A batch's parent positions (B, T) float64 and, formed on first use and shared by the layers, W (B, T, S)."""

    def __init__(self, positions: torch.Tensor, sigma: float, kind: str = "gaussian"):
        self.positions, self.sigma, self.kind = positions, float(sigma), str(kind)
        self._weights: Optional[torch.Tensor] = None

    def weights(self) -> torch.Tensor:
        if self._weights is None:
            self._weights = pascal_weights(self.positions, self.positions.size(1), self.sigma, self.kind)
        return self._weights


class PascalHeads(HeadBlock):
    """S ⊙ W (Bugliarello & Okazaki 2020, §3, Eq. 2), or S + W (``op`` "add", App. B), in each of the block's heads,
    W with parent ignoring q."""

    key = "pascal"

    def __init__(self, num_heads: int, ignore: float, op: str = "multiply"):
        super().__init__(num_heads)
        self.ignore, self.op = float(ignore), op

    def _inputs(self, inputs: SideInputs) -> PascalInputs:
        given = inputs.get(self.key)
        if given is None:
            raise ValueError("this layer's PASCAL heads need the batch's parent positions (the encoder prepares them "
                             "from src_parent_middle); pass the side's inputs to the attention")
        return given

    def scores(self, scores, q, k, inputs):
        w = ignore_parents(self._inputs(inputs).weights(), self.ignore, self.training).to(scores.dtype)  # (B, T, S)
        return weigh(scores, w.unsqueeze(1), self.op)

    def score_mod(self, inputs: SideInputs) -> Optional[Callable]:
        given = self._inputs(inputs)
        p = given.positions.to(torch.float32)  # (B, T)
        drop = ignore_rows(p.shape, self.ignore, self.training, p.device)
        keep = p >= 0 if drop is None else (p >= 0) & ~drop  # rows that take a Gaussian
        sigma, kind, op = given.sigma, given.kind, self.op

        def weighed(score, b, h, q_idx, kv_idx):  # W's entry computed for this score (pascal_weights' formula)
            w = parent_weight(kv_idx.to(torch.float32) - p[b, q_idx], sigma, kind)
            w = torch.where(keep[b, q_idx], w, torch.ones_like(w))
            return weigh(score, w.to(score.dtype), op)

        return weighed


class Pascal(EncoderHeads):
    """The PASCAL mechanism: its heads follow the distance-mask heads in the chosen encoder layers."""

    key = "pascal"
    Config = PascalConfig
    title = "PASCAL (Bugliarello & Okazaki 2020)"
    name = "PASCAL"
    marked_parents = {"encoder": "src_parent_middle"}  # the Gaussian's centre p_i
    marks_centre = True

    def __init__(self, cfg: PascalConfig, shape):
        super().__init__(cfg, shape)
        check_option(is_number(cfg.ignore) and 0 <= cfg.ignore <= 1, "--pascal-ignore", "is a probability in [0, 1]",
                     cfg.ignore)
        check_option(is_number(cfg.sigma) and cfg.sigma > 0, "--pascal-sigma", "must be > 0", cfg.sigma)
        check_choice("--pascal-weights", cfg.weights, PASCAL_WEIGHTS)
        check_choice("--pascal-op", cfg.op, PASCAL_OPS)

    def block(self, side: str, layer: int, num_heads: int, head_dim: int) -> HeadBlock:
        return PascalHeads(num_heads, float(self.cfg.ignore), str(self.cfg.op))

    def features(self, side: str) -> FeatureNeeds:
        return FeatureNeeds(required={"src_parent_middle"}) if side == "encoder" and self.active else FeatureNeeds()

    def prepare(self, side, features, tokens, pad_mask, dtype, training):
        if side != "encoder" or not self.active:
            return None
        positions = required_feature(features, "src_parent_middle", tuple(tokens.shape), "the PASCAL heads")
        if positions.dtype in (torch.float16, torch.bfloat16):
            pascal_weights(positions, 1, 1.0)  # raises the rounding error, naming it
        return PascalInputs(positions, float(self.cfg.sigma), str(self.cfg.weights))
