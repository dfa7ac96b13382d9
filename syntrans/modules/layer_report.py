"""What a layer returns beside its output, and what a side and a model return of their syntax, as typed data.

* :class:`LayerReport`: one layer's report, filled by its syntax attention: what each mechanism's block or mixer
  reports (a :class:`BlockReport` or a :class:`MixerReport`, each mechanism's own subclass, by mechanism key), and
  the probabilities and parses a forward keeps. Read by the mechanisms (their losses and metrics), the attention
  recorder, the parse recorder and the figures.
* :class:`SideOutput`: what the encoder or decoder returns of its syntax (``encoder_out["syntax"]``, the decoder's
  ``extra["syntax"]``): its layers' reports, its losses and metrics.
* :class:`SyntaxOutput`: what the model's forward returns of its syntax (``extra["syntax"]``): both sides'.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Optional, Union

import torch

from ..sides import MODEL_SIDES


@dataclass
class BlockReport:
    """What a head block reports of one forward (:attr:`HeadBlock.Report <syntrans.modules.blocks.HeadBlock>`; a
    mechanism's blocks may report a subclass: a loss's statistics)."""

    #: the block's attention as one distribution per query (``HeadBlock.rows``), with its gradient, (B, T, S) float32,
    #: when the forward keeps the block's key; else None
    attention: Optional[torch.Tensor] = None


@dataclass
class MixerReport:
    """What a layer's mixer reports of one forward (:attr:`LayerMixer.Report <syntrans.modules.blocks.LayerMixer>`):
    each mechanism's mixer reports its own subclass, holding the weights it mixed with."""

    @property
    def weights_per_head(self) -> Optional[torch.Tensor]:
        """The weight of each syntax head per sentence (B, n), detached (what figures draw as G); None for a mixer
        whose weights are not one per sentence and head."""
        return None


MechanismReport = Union[BlockReport, MixerReport]


@dataclass
class LayerReport:
    """One layer's report of one forward (empty for a layer without syntax heads)."""

    #: by mechanism key: what its block or mixer reports (a loss's statistics, a mixer's weights, mean attention, …)
    mechanisms: Dict[str, MechanismReport] = field(default_factory=dict)
    #: every head's probabilities (B, H, T, S) float32, when the forward keeps ``probs`` (``KEEP_PROBS``)
    probs: Optional[torch.Tensor] = None
    #: by mechanism key: the predicted parent of every query row (B, T) long, when the forward keeps ``parse``
    parse: Dict[str, torch.Tensor] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.mechanisms) or self.probs is not None or bool(self.parse)


@dataclass
class SideOutput:
    """What one side (the encoder or the decoder) returns of its syntax beside its states: ``encoder_out["syntax"]``,
    the decoder's ``extra["syntax"]``."""

    #: by 0-based layer, the reports of the layers that reported anything
    layers: Dict[int, LayerReport] = field(default_factory=dict)
    #: the side's losses and metrics, as :mod:`syntrans.modules.aux_losses` reports them ({"aux_losses": …,
    #: "aux_metrics": …}), which the mechanisms add from the layers' reports and the final states
    aux: Dict[str, Dict] = field(default_factory=dict)


@dataclass
class SyntaxOutput:
    """What a ``syntax_transformer``'s forward returns of its syntax (``extra["syntax"]``): each side's output."""

    encoder: SideOutput = field(default_factory=SideOutput)
    decoder: SideOutput = field(default_factory=SideOutput)

    def side(self, side: str) -> SideOutput:
        """The output of a model side (``encoder``/``decoder``)."""
        if side not in MODEL_SIDES:
            raise ValueError(f"a model side is one of {', '.join(MODEL_SIDES)}, found {side!r}")
        return getattr(self, side)


__all__ = ["BlockReport", "LayerReport", "MechanismReport", "MixerReport", "SideOutput", "SyntaxOutput"]
