"""Syntax gates (Hou et al., "Learning to Adaptively Incorporate External Syntax through Gated Self-Attention", §3):
per sentence and head, how much of a syntax head's attention comes from its syntax mechanism,
A = G·A_syn + (1 − G)·A_raw, with A_syn what the head's own mechanism produces and A_raw
the stock softmax of the same scores.

G = σ(BN(W₂·LayerNorm(ReLU(W₁·maxpool(X) + b₁)) + b₂)) from the layer's input X. Against the gate collapsing to 0 or
1: pre-warm-up (the gate network frozen for the first K epochs), BatchNorm before the sigmoid, and "syntax ignoring"
(dropout with rate p on A_syn in training). ``--gate-mode pure|avg`` fixes G at 1 or 0.5 (the paper's Table 6) and
builds no gate network: torch's DistributedDataParallel would otherwise wait for gradients of parameters no loss uses.
At evaluation the gate values G of every gated layer × syntax head are logged as ``gate_l{layer}h{head}``.
"""
# no ``from __future__ import annotations`` here: fairseq builds the flags from the config fields' real types
import logging
from dataclasses import dataclass, field
from typing import Dict, List, Optional

import torch
import torch.nn as nn
import torch.nn.functional as F
from fairseq.dataclass import FairseqDataclass

from ..modules.attention_kernels import dropped
from ..modules.aux_losses import report_aux_metric
from ..modules.blocks import LINEAR_DEFAULT, LayerMixer, SideInputs
from ..modules.layer_report import MixerReport
from ..modules.precision import full_precision, named_precision
from ..modules.recompute import recomputing
from .base import Mechanism, check_choice, check_option, is_number, reports_of
from .layer_lists import resolve_layers

GATE_MODES = ("gated", "pure", "avg")
CONSTANT_GATES = {"pure": 1.0, "avg": 0.5}  # the ablations' fixed G (Hou et al., Table 6)
NETWORK = ("fc1", "norm", "fc2", "bn")  # the submodules of the learned gate network

logger = logging.getLogger(__name__)


@dataclass
class GateConfig(FairseqDataclass):
    """Syntax gates (Hou et al., gated self-attention): A = G·A_syn + (1 − G)·A_raw per sentence and head."""

    layers: List[int] = field(
        default_factory=list,
        metadata={"help": "0-based encoder layers whose syntax heads are gated (comma-separated, or 'all'); empty: none"},
    )
    mode: str = field(
        default="gated", metadata={"help": "gated (learned G), pure (G = 1) or avg (G = 0.5): the paper's ablations"}
    )
    hidden: int = field(default=256, metadata={"help": "hidden size of the gate network"})
    no_batchnorm: bool = field(
        default=False, metadata={"help": "no BatchNorm before the gate's sigmoid (the paper's ablation)"}
    )
    warmup_epochs: int = field(
        default=0, metadata={"help": "pre-warm-up K: the gate network is frozen during epochs 1..K and trains afterwards"}
    )
    syntax_dropout: float = field(
        default=0.0, metadata={"help": "syntax ignoring: dropout rate p on the syntax attention A_syn in training"}
    )


def masked_max_pool(x: torch.Tensor, pad_mask: torch.Tensor) -> torch.Tensor:
    """Max over the sequence with padding excluded: x (T, B, C), pad_mask (B, T) True at padding → (B, C)."""
    return x.masked_fill(pad_mask.t().unsqueeze(-1), float("-inf")).max(dim=0).values


def mix(p_syn: torch.Tensor, p_raw: torch.Tensor, gates: torch.Tensor) -> torch.Tensor:
    """A = G·A_syn + (1 − G)·A_raw per (sentence, head) (Hou et al., §3): p_* (B, h, T, S) (or the heads' outputs
    (B, h, T, d): the mix is linear), gates (B, h) → (B, h, T, S|d)."""
    g = gates.to(p_syn.dtype).view(gates.size(0), gates.size(1), 1, 1)
    return torch.lerp(p_raw, p_syn, g)  # p_raw + G·(p_syn − p_raw), one pass over the (B, h, T, S) tensors


@dataclass
class GateReport(MixerReport):
    """What a gated layer's mixer reports: its gates."""

    values: torch.Tensor  # (B, n) G of each sentence and syntax head, detached

    @property
    def weights_per_head(self) -> torch.Tensor:
        return self.values


class SyntaxGate(LayerMixer):
    """G = σ(BN(W₂·LayerNorm(ReLU(W₁·maxpool(X) + b₁)) + b₂)) ∈ (0, 1)^{B×H} (Hou et al., gated self-attention, §3).

    ``mode``: ``gated`` (learned), ``pure`` (G ≡ 1) or ``avg`` (G ≡ 0.5), the paper's ablations. While ``frozen``
    (pre-warm-up) the network runs without gradient, so its parameters do not move; BatchNorm still normalises with
    the batch statistics in training and its running statistics at evaluation. ``pure`` and ``avg`` build no
    network (no parameters): a parameter that never receives a gradient stops torch's DistributedDataParallel
    without ``--find-unused-parameters`` at the first update after warm-up.
    """

    key = "gate"
    Report = GateReport

    def __init__(self, embed_dim: int, num_heads: int, hidden: int, batchnorm: bool = True, mode: str = "gated",
                 warmup_epochs: int = 0, syntax_dropout: float = 0.0):
        super().__init__()
        self.mode, self.num_heads = mode, num_heads
        self.bn: Optional[nn.BatchNorm1d] = None
        if mode == "gated":
            self.fc1 = nn.Linear(embed_dim, hidden)
            self.norm = nn.LayerNorm(hidden)
            self.fc2 = nn.Linear(hidden, num_heads)
            self.bn = nn.BatchNorm1d(num_heads) if batchnorm else None
        self.warmup_epochs = int(warmup_epochs) if mode == "gated" else 0  # a constant gate has nothing to warm up
        self.syntax_dropout = float(syntax_dropout)
        self._frozen = self.warmup_epochs >= 1  # training starts in epoch 1

    @property
    def frozen(self) -> bool:
        return self._frozen

    def initialisation(self) -> Dict[str, str]:
        """The gate network starts random and frozen, G near 0.5 (Hou et al., gated self-attention, §3 "Pre-warmup
        Training": "the gating network is frozen, yielding random weights around 0.5")."""
        if self.mode != "gated":
            return {}
        random = f"{LINEAR_DEFAULT}: the paper's random gate network (Hou et al., §3 pre-warm-up; no law stated)"
        out = {"fc1.": f"W₁, b₁: {random}", "norm.": "LayerNorm γ = 1, β = 0 (torch's default; ours, not stated)",
               "fc2.": f"W₂, b₂: {random}"}
        if self.bn is not None:
            out["bn."] = ("BatchNorm γ = 1, β = 0, running mean 0 and variance 1 (torch's default): σ(BN(·)) starts "
                          "around 0.5, as the paper's pre-warm-up (Hou et al., §3)")
        return out

    def set_epoch(self, epoch: int) -> None:
        """Pre-warm-up from fairseq's epoch counter (1-based): frozen in epochs 1..K, trained from K + 1 on.
        fairseq calls this at every epoch start, also the resumed one, so a resumed run follows the same schedule."""
        self._frozen = epoch <= self.warmup_epochs

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        """Checkpoints written before constant gates lost their network hold its (never used, never trained)
        weights: they are left out, with a log line naming them; G did not depend on them."""
        if self.mode != "gated":
            unused = [k for k in state_dict if k.startswith(prefix) and k[len(prefix):].split(".")[0] in NETWORK]
            if unused:
                logger.info("--gate-mode %s: the checkpoint's gate network %s* (%d tensors) is not used and not "
                            "loaded (G is constant)", self.mode, prefix, len(unused))
                for k in unused:
                    del state_dict[k]
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)

    def _logits(self, x: torch.Tensor, pad_mask: torch.Tensor) -> torch.Tensor:
        """x (T, B, C) → the gate logits (B, H), in the parameters' dtype with autocast off (float32 under autocast:
        CPU autocast would run the linear layers in half precision and leaves LayerNorm and BatchNorm to their
        input's dtype, quantising G to steps of 2⁻⁸ in bfloat16; the network is (B, C) → (B, H), so this costs
        nothing)."""
        pooled = masked_max_pool(x, pad_mask).to(self.fc1.weight.dtype)  # (B, C); the max is exact in any dtype
        o = self.fc2(self.norm(F.relu(self.fc1(pooled))))  # (B, H)
        if self.bn is None:
            return o
        bn = self.bn
        if self.training and o.size(0) < 2:  # batch statistics need two sentences: use the running ones
            return F.batch_norm(o, bn.running_mean, bn.running_var, bn.weight, bn.bias, False, 0.0, bn.eps)
        if self.training and recomputing():  # activation checkpointing: the same computation, its update thrown away
            momentum = bn.momentum if bn.momentum is not None else 0.0
            return F.batch_norm(o, bn.running_mean.clone(), bn.running_var.clone(), bn.weight, bn.bias, True, momentum,
                                bn.eps)
        return bn(o)

    def forward(self, x: torch.Tensor, pad_mask: torch.Tensor) -> torch.Tensor:
        """x: (T, B, C) the layer's input, pad_mask (B, T) → G (B, H): learned, in the gate parameters' dtype (float32
        under autocast, see :meth:`_logits`); ``pure``/``avg``, in x's dtype."""
        B = x.size(1)
        if self.mode != "gated":
            return x.new_full((B, self.num_heads), CONSTANT_GATES[self.mode])
        with named_precision("the syntax gate (Hou et al., gated self-attention)", x), full_precision(x.device.type):
            if self.frozen:
                with torch.no_grad():
                    return torch.sigmoid(self._logits(x, pad_mask))
            return torch.sigmoid(self._logits(x, pad_mask))

    def syntax_dropout_p(self) -> float:
        """Syntax ignoring: dropout rate p on A_syn, in training only."""
        return self.syntax_dropout if self.training else 0.0

    def mix(self, p_syn, p_raw, x, pad, inputs: SideInputs, syntax_keep=None):
        """Syntax heads: G·A_syn + (1 − G)·A_raw, A_syn with syntax ignoring (dropout rate p, training only; its mask
        ``syntax_keep`` when the attention drew it)."""
        gates = self(x, pad)  # (B, H)
        n = p_syn.size(1)
        if self.syntax_dropout_p() > 0:
            p_syn = dropped(p_syn, syntax_keep) if syntax_keep is not None else F.dropout(p_syn, self.syntax_dropout,
                                                                                          True)
        return mix(p_syn, p_raw, gates[:, :n]), self.Report(gates[:, :n].detach())  # (B, n)

    def mix_outputs(self, o_syn, o_raw, x, pad, inputs: SideInputs):
        if self.training and self.syntax_dropout > 0:
            raise RuntimeError("the gate's syntax ignoring acts on probabilities: mix them, not the outputs")
        n = o_syn.size(1)
        gates = self(x, pad)
        return mix(o_syn, o_raw, gates[:, :n]), self.Report(gates[:, :n].detach())  # (B, n)


class Gate(Mechanism):
    """The gate mechanism: a mixer over the syntax heads of each chosen encoder layer."""

    key = "gate"
    Config = GateConfig
    title = "gated self-attention (Hou et al.)"

    def __init__(self, cfg: GateConfig, shape):
        super().__init__(cfg, shape)
        self.layers = resolve_layers(cfg.layers, shape.encoder_layers, "--gate-layers")
        check_choice("--gate-mode", cfg.mode, GATE_MODES)
        check_option(is_number(cfg.syntax_dropout) and 0 <= cfg.syntax_dropout < 1, "--gate-syntax-dropout",
                     "is a dropout rate in [0, 1)", cfg.syntax_dropout)
        check_option(is_number(cfg.hidden, True) and cfg.hidden >= 1, "--gate-hidden",
                     "is the gate network's hidden size, an integer >= 1", cfg.hidden)
        check_option(is_number(cfg.warmup_epochs, True) and cfg.warmup_epochs >= 0, "--gate-warmup-epochs",
                     "is a number of epochs (the gate frozen in epochs 1..K), an integer >= 0", cfg.warmup_epochs)

    @property
    def active(self) -> bool:
        return bool(self.layers)

    def mixes(self, side, layer):
        return side == "encoder" and layer in self.layers

    def mixer(self, side, layer, embed_dim, num_heads):
        if not self.mixes(side, layer):
            return None
        c = self.cfg
        return SyntaxGate(embed_dim, num_heads, int(c.hidden), not c.no_batchnorm, c.mode, int(c.warmup_epochs),
                          float(c.syntax_dropout))

    def check(self, plans, mixed):
        for layer in self.layers:
            keys = plans.get(("encoder", layer), ())
            if not keys:
                raise ValueError(f"--gate-layers: encoder layer {layer} has no syntax heads to gate (give it heads of a "
                                 "mechanism in the same layer)")

    def report(self, side, layers, extra, training):
        """At evaluation the gate value G of every gated (layer, syntax head), mean over sentences."""
        if training:
            return
        for i, rep in sorted(reports_of(layers, self.key).items()):
            g = rep.values  # (B, n) the layer's syntax heads
            for h in range(g.size(1)):
                report_aux_metric(extra, f"gate_l{i}h{h}", g[:, h].float().sum(), g.size(0))


__all__ = ["CONSTANT_GATES", "GATE_MODES", "Gate", "GateConfig", "GateReport", "SyntaxGate", "masked_max_pool", "mix"]
