"""Which heads of one attention layer run which syntax mechanism (:class:`HeadPlan`), the rest of that layer's
syntax settings (:class:`LayerSyntax`), and the per-batch inputs its heads share (:class:`SyntaxBatch`)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Optional

import torch

from .distance_bias import spread_over_heads


@dataclass(frozen=True)
class HeadPlan:
    """Consecutive blocks of heads from head 0, in the order distance-mask, PASCAL, LISA, DBSA; the rest stock.

    E.g. 2 distance + 2 PASCAL heads of 8: heads 0–1 distance, 2–3 PASCAL, 4–7 stock.
    """

    num_heads: int
    distance: int = 0
    pascal: int = 0
    lisa: int = 0
    dbsa: int = 0  # bi-affine dependency heads (Deguchi et al. 2019), encoder or decoder self-attention
    gated: bool = False  # the syntax heads mix A_syn with the stock A_raw through a learned gate

    def __post_init__(self):
        used = self.syntax_heads
        if min(self.distance, self.pascal, self.lisa, self.dbsa) < 0 or self.lisa > 1 or used > self.num_heads:
            raise ValueError(
                f"a layer has {self.num_heads} heads but its syntax heads ask for {self.distance} distance-mask + "
                f"{self.pascal} PASCAL + {self.lisa} LISA (at most one LISA head) + {self.dbsa} DBSA; lower "
                "--distance-heads/--pascal-heads/--dbsa-heads or put the mechanisms in different layers"
            )
        if self.gated and not used:
            raise ValueError("a gated layer needs syntax heads to gate (--distance-heads/--pascal-heads/--lisa-layers "
                             "in the same layer)")
        if self.gated and self.dbsa:
            raise ValueError("DBSA heads cannot be gated: their bi-affine scores are the stock scores of a transformed "
                             "query, so there is no separate syntax attention to mix; put them in an ungated layer")

    @property
    def active(self) -> bool:
        return self.syntax_heads > 0

    @property
    def syntax_heads(self) -> int:
        return self.distance + self.pascal + self.lisa + self.dbsa

    @property
    def explicit(self) -> bool:
        """Whether the scores must be formed explicitly (multiplied, replaced, gated, or their probabilities
        needed by a loss), not only biased additively."""
        return self.pascal + self.lisa + self.dbsa > 0 or self.gated

    @property
    def pascal_heads(self) -> slice:
        return slice(self.distance, self.distance + self.pascal)

    @property
    def lisa_head(self) -> Optional[int]:
        return self.distance + self.pascal if self.lisa else None

    @property
    def dbsa_heads(self) -> slice:
        start = self.distance + self.pascal + self.lisa
        return slice(start, start + self.dbsa)


@dataclass(frozen=True)
class GateSpec:
    """The gate network of a gated layer (Hou et al., gated self-attention): :class:`~syntrans.modules.gate.SyntaxGate`."""

    hidden: int = 256
    batchnorm: bool = True
    mode: str = "gated"  # gated, pure (G ≡ 1) or avg (G ≡ 0.5)
    warmup_epochs: int = 0  # pre-warm-up K: frozen in epochs 1..K


@dataclass(frozen=True)
class LayerSyntax:
    """Everything one self-attention layer needs to run its syntax heads, fixed when the model is built."""

    plan: HeadPlan
    pascal_ignore: float = 0.0  # PASCAL parent ignoring: probability q per query row in training
    lisa_gold_parents: bool = False  # oracle: at evaluation the LISA head attends to the gold parent
    gate: Optional[GateSpec] = None  # the gate of a gated plan
    syntax_dropout: float = 0.0  # gated layers' "syntax ignoring": dropout on A_syn in training
    causal: bool = False  # decoder self-attention: DBSA arcs to later tokens are dropped
    lisa_loss: str = "ce"  # the LISA head: bi-affine with the parent log-likelihood (ce) or stock with the L2 (l2)
    dbsa_gold_parents: bool = False  # oracle: at evaluation the (encoder) DBSA heads attend to the gold parent

    def __post_init__(self):
        if self.plan.gated != (self.gate is not None):
            raise ValueError("a gated head plan needs a GateSpec, and only a gated plan takes one")


@dataclass
class SyntaxBatch:
    """Syntax inputs of one batch in padded coordinates, built once by the encoder and shared by its layers."""

    pad_mask: torch.Tensor  # (B, T) True at padding
    distance_log_mask: Optional[torch.Tensor] = None  # (B, T, T) log M, 0 on padding-query rows, model dtype
    pascal_weights: Optional[torch.Tensor] = None  # (B, T, T) float32 N(j; p_i, σ²), ones on rows without parent
    parents_first: Optional[torch.Tensor] = None  # (B, T) long first-subword parent, −1 for EOS and padding
    parents_chain: Optional[torch.Tensor] = None  # (B, T) long DBSA chain parent, −1 where none (EOS/BOS, padding)
    _biases: Dict[int, torch.Tensor] = field(default_factory=dict)

    def distance_bias(self, num_heads: int, heads: int) -> torch.Tensor:
        """Additive bias (B·H, T, T): log M in heads 0…heads−1, 0 in the others (cached per head count)."""
        if heads not in self._biases:
            self._biases[heads] = spread_over_heads(self.distance_log_mask, num_heads, heads)
        return self._biases[heads]
