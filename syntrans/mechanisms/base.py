"""The interface every syntax mechanism implements.

A **mechanism** (:class:`Mechanism`) is one method of a ``syntax_transformer``, built once from its config group
(a dataclass nested in the model config under the mechanism's ``key``, :mod:`syntrans.models.config`). It says

* which heads of which layer it takes (:meth:`Mechanism.heads`) and builds a
  :class:`~syntrans.modules.blocks.HeadBlock` for them, or a :class:`~syntrans.modules.blocks.LayerMixer` over a
  layer's syntax heads, or a module of a whole side (:meth:`Mechanism.side_module`);
* which batch features it reads (:meth:`Mechanism.features`), turned into its per-batch input once per forward
  (:meth:`Mechanism.prepare`) and shared by all layers of that side;
* what it does to the embeddings (:meth:`Mechanism.embed`) and with the final states (:meth:`Mechanism.outputs`),
  and what it reports to the criterion from the layers' reports (:meth:`Mechanism.report`,
  :meth:`Mechanism.model_report`).

Every hook has a neutral default, so a mechanism implements only what it does. Data flows as arguments: a side's
prepared inputs (:class:`~syntrans.modules.blocks.SideInputs`) go down every layer's ``forward``, each layer returns
its report beside its hidden states, and the side returns the reports in its outputs.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any, ClassVar, Dict, Mapping, Optional, Set, Tuple, Type

import torch
import torch.nn as nn
import torch.nn.functional as F

from ..data.features import FeatureNeeds
from ..sides import MODEL_SIDES
from ..modules.blocks import HeadBlock, LayerMixer, SideInputs, SyntaxPart
from ..modules.layer_report import BlockReport, LayerReport, MechanismReport

SIDES = MODEL_SIDES  # encoder, decoder (syntrans/sides.py)
#: ``--syntax-start``: how a method's new tensors start. ``paper``: as its paper (or, where it states none, our
#: choice) initialises them, for training from scratch; ``pretrained``: so that the model computes exactly what the
#: Transformer it is added to computes (closed blends, :mod:`syntrans.modules.closed_start`, and neutral starts)
STARTS = ("paper", "pretrained")


@dataclass(frozen=True)
class ModelShape:
    """The sizes of the model a mechanism is built into (read from the Transformer part of the config)."""

    encoder_layers: int
    decoder_layers: int
    encoder_heads: int
    decoder_heads: int
    encoder_dim: int
    decoder_dim: int

    def layers(self, side: str) -> int:
        return self.encoder_layers if side == "encoder" else self.decoder_layers

    def heads(self, side: str) -> int:
        return self.encoder_heads if side == "encoder" else self.decoder_heads

    def dim(self, side: str) -> int:
        return self.encoder_dim if side == "encoder" else self.decoder_dim


def check_choice(flag: str, value, choices) -> None:
    """An option that takes one of ``choices``."""
    if value not in choices:
        raise ValueError(f"{flag} must be one of {', '.join(map(str, choices))}, found {value!r}")


def is_number(value, integer: bool = False) -> bool:
    """Whether ``value`` is a number (not a bool, not NaN); ``integer``: a whole one."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        return False
    return not integer or float(value).is_integer()


def check_option(ok: bool, flag: str, expected: str, found) -> None:
    """One option's check (a mechanism's constructor is the one place its options are checked): ValueError
    "<flag> <expected>, found <found>" unless ``ok``."""
    if not ok:
        raise ValueError(f"{flag} {expected}, found {found!r}")


def required_feature(features: Mapping[str, Optional[torch.Tensor]], name: str, shape, why: str) -> torch.Tensor:
    """The batch feature ``name`` of the expected shape, or a ValueError saying who needs it and how to get it."""
    value = features.get(name)
    if value is None:
        raise ValueError(f"{why} needs {name} in net_input: use --task syntax_translation on data whose sidecars "
                         "include the parses of that side (syntrans-preprocess --trainparse/--validparse/--testparse)")
    if tuple(value.shape) != tuple(shape):
        raise ValueError(f"{name} has shape {tuple(value.shape)}, expected {tuple(shape)}")
    return value


class Mechanism:
    """One syntax method of a model, built from its config group ``cfg`` (an instance of ``Config``) and the model's
    sizes; the constructor checks the group (the one place options are validated)."""

    key: ClassVar[str] = ""  # its config group, its input and report key, the attribute name of its modules
    Config: ClassVar[Type] = type(None)  # its config dataclass (a FairseqDataclass)
    title: ClassVar[str] = ""  # the method and its paper, for messages
    name: ClassVar[str] = ""  # how figures name its heads (default: its key)
    #: side → the batch feature holding the parent marked on its heads' attention in figures (gold parents)
    marked_parents: ClassVar[Mapping[str, str]] = {}
    #: the marked parent is the centre of a weighting (drawn as "p_i"), not a gold parent its heads learn to attend to
    marks_centre: ClassVar[bool] = False
    mixable: ClassVar[bool] = True  # its heads' attention may be mixed with the stock one (HeadBlock.mixable)

    #: the fields that switch it on (:attr:`active`); its other fields only tune it, and are refused while it is off
    #: (:meth:`check_idle_options`)
    switches: ClassVar[Tuple[str, ...]] = ("layers",)

    def __init__(self, cfg, shape: ModelShape):
        self.cfg, self.shape = cfg, shape
        self.start = "paper"  # --syntax-start: set by the plan (start_from) before it builds anything

    def start_from(self, start: str) -> None:
        """``--syntax-start`` (one of :data:`STARTS`), told by the plan after the constructor; ValueError naming an
        option of this mechanism that cannot start as the pretrained model computes (``pretrained``)."""
        self.start = start

    @property
    def neutral(self) -> bool:
        """Whether the mechanism's modules start so that the model computes what the pretrained one does."""
        return self.start == "pretrained"

    def check_idle_options(self, preset: Optional[Mapping[str, Any]] = None) -> None:
        """ValueError naming an option given to this mechanism while it is off (it cannot act): a field other than
        :attr:`switches` that differs from its default and from the value its architecture preset gives it
        (``preset``: field → value; a preset's tuning stays when its switch is turned off) (:mod:`.idle_options`)."""
        from .idle_options import idle_option_fault

        fault = None if self.active else idle_option_fault(self.key, self.title or self.key, self.Config, self.cfg,
                                                           self.switches, preset)
        if fault:
            raise ValueError(fault)

    def check_attention_heads(self, heads, available: int, used: bool, of: str = "") -> None:
        """The one check of a mechanism's ``--<key>-heads``: a whole number in 1..``available`` (the layer's attention
        heads; ``of`` names which, for messages) wherever the mechanism takes heads (``used``)."""
        check_option(not used or (is_number(heads, True) and 1 <= heads <= available), f"--{self.key}-heads",
                     f"must lie in 1..{available} (attention heads{of})", heads)

    # ---------------------------------------------------------------------------------------- where it acts
    @property
    def active(self) -> bool:
        """Whether the mechanism is switched on in this model (an inactive one is not built in)."""
        return False

    def heads(self, side: str, layer: int) -> int:
        """How many heads of this layer's self-attention it takes: they follow those of the mechanisms before it in
        the registry (:data:`syntrans.mechanisms.MECHANISMS`)."""
        return 0

    def block(self, side: str, layer: int, num_heads: int, head_dim: int) -> HeadBlock:
        raise NotImplementedError(f"{type(self).__name__} takes no heads")

    def mixes(self, side: str, layer: int) -> bool:
        """Whether it mixes this layer's syntax heads after their softmax (:meth:`mixer` builds the module)."""
        return False

    def mixer(self, side: str, layer: int, embed_dim: int, num_heads: int) -> Optional[LayerMixer]:
        """The module mixing this layer's syntax heads after their softmax, or None."""
        return None

    def embeds(self, side: str) -> bool:
        """Whether it changes the side's token embeddings (:meth:`embed`)."""
        return False

    def side_module(self, side: str, embed_dim: int) -> Optional[SyntaxPart]:
        """A module of the whole side (the encoder or decoder keeps it under ``key``), or None."""
        return None

    def check(self, plans: Dict[Tuple[str, int], Tuple[str, ...]], mixed: Dict[Tuple[str, int], bool]) -> None:
        """Checks that need the others' placement: ``plans`` maps (side, layer) to the keys of that layer's blocks in
        head order, ``mixed`` says which layers have a mixer."""

    @classmethod
    def data_fields(cls, cfg, value_range) -> Dict[str, Any]:
        """Fields of the config group ``cfg`` that come from the training data when not given, {field: value};
        ``value_range(side, feature) → (min, max)`` reads a feature's range over the training split (the task's)."""
        return {}

    def legacy_keys(self, side: str) -> Dict[str, str]:
        """Checkpoint key prefixes of earlier versions (relative to the side) → today's, for old checkpoints."""
        return {}

    # ----------------------------------------------------------------------------------------------- data
    def features(self, side: str) -> FeatureNeeds:
        return FeatureNeeds()

    def prepare(self, side: str, features: Mapping[str, Optional[torch.Tensor]], tokens: torch.Tensor,
                pad_mask: torch.Tensor, dtype: torch.dtype, training: bool) -> Any:
        """This batch's input of the mechanism on ``side`` (tokens (B, T), pad_mask (B, T)), or None."""
        return None

    def keeps(self, side: str) -> Set[str]:
        """What the side's layers must keep in their reports for this mechanism (e.g. another mechanism's key)."""
        return set()

    def alignment_layer(self) -> Optional[int]:
        """A decoder layer whose encoder-decoder attention this mechanism reads (0-based), or None."""
        return None

    # ------------------------------------------------------------------------------------ hidden states
    def embed(self, side: str, owner: nn.Module, x: torch.Tensor, inputs: SideInputs,
              incremental_state=None) -> torch.Tensor:
        """x (B, T, C) the side's scaled token embeddings → (B, T, C), before the positions are added; ``owner`` is the
        encoder or decoder (its modules, its incremental state)."""
        return x

    def outputs(self, side: str, owner: nn.Module, states: torch.Tensor, inputs: SideInputs, extra: Dict,
                incremental_state=None) -> None:
        """Read the side's final states (B, T, C) (the decoder's features before the output projection)."""

    def reorder(self, owner: nn.Module, incremental_state, new_order: torch.Tensor) -> None:
        """Follow the beams in incremental decoding (state kept in ``incremental_state``)."""

    # ---------------------------------------------------------------------------------------------- reports
    def report(self, side: str, layers: Dict[int, LayerReport], extra: Dict, training: bool) -> None:
        """Add this mechanism's losses and metrics of one side to ``extra`` from its layers' reports."""

    def model_report(self, encoder_out: Dict, decoder_extra: Dict, prev_output_tokens: torch.Tensor, pad: int,
                     extra: Dict) -> None:
        """Losses that need both sides (the encoder's outputs and the decoder's extra, each side's
        :class:`~syntrans.modules.layer_report.SideOutput` under ``"syntax"``)."""

    # ---------------------------------------------------------------------------------------------- figures
    @classmethod
    def marked(cls, side: str, features: Mapping[str, Optional[torch.Tensor]]) -> Optional[torch.Tensor]:
        """The parent marked on the side's heads' attention in figures, per query of the batch (B, T) (−1: none):
        the batch feature :attr:`marked_parents` names, or None without it."""
        name = cls.marked_parents.get(side)
        return features.get(name) if name else None


def gold_rows(probs: torch.Tensor, parents: torch.Tensor) -> torch.Tensor:
    """The oracle of a parent-predicting mechanism: each head's row of a query with a gold parent becomes one-hot on
    that parent; rows without one (EOS, padding) keep the heads' own.
    probs (B, n, T, S) float, parents (B, T) long (−1: none) → (B, n, T, S)."""
    has = (parents >= 0)[:, None, :, None]  # (B, 1, T, 1)
    one_hot = F.one_hot(parents.clamp(min=0), probs.size(-1)).to(probs.dtype).unsqueeze(1)  # (B, 1, T, S)
    return torch.where(has, one_hot, probs)


def parent_loss_from_lse(q: torch.Tensor, k: torch.Tensor, lse: torch.Tensor, scale: float, parents: torch.Tensor,
                         pad: torch.Tensor, causal: bool):
    """−Σ_i log A[i, p_i] of the heads' mean attention A = (1/n) Σ_h softmax(s_h) over the queries with a parent,
    from each head's parent score s_h[i, p_i] = scale·q_i·k_{p_i} and its row's log-sum-exp (a fused kernel's):
    log A[i, p] = logsumexp_h(s_h[i, p] − lse_h[i]) − log n; no (B, n, T, S) tensor keeps a gradient. The hits (the
    argmax of A on the gold parent) form the scores once without gradient.

    q (B, n, T, d), k (B, n, S, d), lse (B, n, T), parents (B, T) long (−1: none), pad (B, S) True at padding keys
    (or None); ``causal``: keys after the query are masked → (loss, count, hits) scalars."""
    B, n, T, d = q.shape
    has = parents >= 0  # (B, T)
    index = parents.clamp(min=0)[:, None, :, None].expand(B, n, T, d)
    score = (q.float() * k.gather(2, index).float()).sum(-1) * scale  # (B, n, T) s_h[i, p_i]
    log_p = (score - lse.float()).masked_fill(~has[:, None], 0.0)  # rows without a parent take no part
    mean = log_p[:, 0] if n == 1 else torch.logsumexp(log_p, dim=1) - math.log(n)  # (B, T)
    loss = -torch.where(has, mean, torch.zeros_like(mean)).sum()
    with torch.no_grad():
        scores = torch.matmul(q, k.transpose(-1, -2)).float() * scale  # (B, n, T, S)
        S = scores.size(-1)
        if pad is not None:
            scores = scores.masked_fill(pad[:, None, None, :], float("-inf"))
        if causal:
            later = torch.ones(T, S, dtype=torch.bool, device=q.device).triu(1)
            scores = scores.masked_fill(later, float("-inf"))
        best = scores[:, 0].argmax(-1) if n == 1 else torch.softmax(scores, dim=-1).mean(dim=1).argmax(-1)
    return loss, has.sum(), ((best == parents) & has).sum()


@dataclass
class ParentReport(BlockReport):
    """What a block of parse heads (heads trained to attend to each token's dependency head) reports of a forward: its
    parent loss with its counts, when the batch has the gold parents (else None), and its kept attention
    (:class:`BlockReport`)."""

    loss: Optional[torch.Tensor] = None  # () float32, the loss summed over the queries with a gold parent
    count: Optional[torch.Tensor] = None  # () long, those queries
    hits: Optional[torch.Tensor] = None  # () long, those whose predicted parent (argmax key) is the gold one

    @property
    def stats(self) -> Tuple[Optional[torch.Tensor], ...]:
        """The loss and its counts, in field order: (loss, count, hits, and a subclass's counts after them)."""
        return tuple(getattr(self, f.name) for f in fields(self) if f.name != "attention")


def reports_of(layers: Dict[int, LayerReport], key: str) -> Dict[int, MechanismReport]:
    """{layer: the report of mechanism ``key``} over the layers whose report has one."""
    return {i: r.mechanisms[key] for i, r in layers.items() if r.mechanisms.get(key) is not None}


__all__ = ["FeatureNeeds", "HeadBlock", "LayerMixer", "Mechanism", "ModelShape", "ParentReport", "SIDES", "STARTS",
           "SideInputs", "SyntaxPart",
           "check_choice", "check_option", "gold_rows", "is_number", "parent_loss_from_lse", "reports_of",
           "required_feature"]
