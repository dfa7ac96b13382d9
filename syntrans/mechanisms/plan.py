"""Where a model's mechanisms act, fixed when the model is built: :class:`SyntaxPlan` (the model) and
:class:`SideSyntax` (one side). The encoder, decoder, model and task loop over these; none of them names a mechanism.

A layer's plan is the ordered list of (mechanism, heads) taking its self-attention's heads (consecutive from head 0,
in the registry's order) and at most one mixer over them; a side's mechanisms also prepare the batch's inputs once
per forward, change the embeddings, read the final states and report losses and metrics.
"""
from __future__ import annotations

from typing import Dict, List, Mapping, Optional, Set, Tuple

import torch
import torch.nn as nn

from ..modules.blocks import HeadBlock, LayerMixer, LayerSyntax, SideInputs, SyntaxPart
from ..modules.layer_report import LayerReport
from .base import SIDES, STARTS, FeatureNeeds, Mechanism, ModelShape, check_choice
from .registry import MECHANISMS


class SideSyntax:
    """The active mechanisms of one side (``encoder``/``decoder``) in registry order, looped over by that side, and
    what each of its layers runs (``heads``: layer → the (mechanism, heads) taking its self-attention's heads)."""

    def __init__(self, side: str, mechanisms: List[Mechanism], heads: Dict[int, List[Tuple[Mechanism, int]]],
                 start: str = "paper"):
        self.side, self.mechanisms, self.heads, self.start = side, mechanisms, heads, start
        self.keep: Set[str] = set().union(*(m.keeps(side) for m in mechanisms))  # what the layers always keep

    def layer(self, index: int) -> "PlannedLayer":
        """What layer ``index``'s self-attention runs (its blocks and mixer, built by the attention)."""
        return PlannedLayer(self, index)

    def side_modules(self, embed_dim: int) -> Dict[str, SyntaxPart]:
        """The modules of the whole side, by mechanism key (the encoder or decoder keeps each under its key)."""
        out = {}
        for m in self.mechanisms:
            module = m.side_module(self.side, embed_dim)
            if module is not None:
                out[m.key] = module
        return out

    @property
    def embeds(self) -> bool:
        return any(m.embeds(self.side) for m in self.mechanisms)

    def features(self) -> FeatureNeeds:
        out = FeatureNeeds()
        for m in self.mechanisms:
            out = out | m.features(self.side)
        return out

    def inputs(self, tokens: torch.Tensor, pad_mask: torch.Tensor, features: Mapping[str, Optional[torch.Tensor]],
               dtype: torch.dtype, training: bool, keep=(), backend: str = "auto") -> SideInputs:
        """This forward's inputs of the side: each mechanism's prepared batch input, and what to keep."""
        data = {}
        for m in self.mechanisms:
            value = m.prepare(self.side, features, tokens, pad_mask, dtype, training)
            if value is not None:
                data[m.key] = value
        return SideInputs(pad_mask=pad_mask, data=data, keep=frozenset(self.keep | set(keep)), backend=backend)

    def embed(self, owner: nn.Module, x: torch.Tensor, inputs: SideInputs, incremental_state=None) -> torch.Tensor:
        for m in self.mechanisms:
            x = m.embed(self.side, owner, x, inputs, incremental_state)
        return x

    def outputs(self, owner: nn.Module, states: torch.Tensor, inputs: SideInputs, extra: Dict,
                incremental_state=None) -> None:
        for m in self.mechanisms:
            m.outputs(self.side, owner, states, inputs, extra, incremental_state)

    def report(self, layers: Dict[int, LayerReport], extra: Dict, training: bool) -> None:
        for m in self.mechanisms:
            m.report(self.side, layers, extra, training)

    def reorder(self, owner: nn.Module, incremental_state, new_order: torch.Tensor) -> None:
        for m in self.mechanisms:
            m.reorder(owner, incremental_state, new_order)


class PlannedLayer(LayerSyntax):
    """One layer of a side's plan: its blocks' keys in head order, and its blocks and mixer, built by the attention."""

    def __init__(self, side: SideSyntax, index: int):
        self.side, self.index = side, index
        self.keys = tuple(m.key for m, _ in side.heads.get(index, ()))
        self.closed_start = side.start == "pretrained"

    def blocks(self, head_dim: int) -> List[HeadBlock]:
        return [m.block(self.side.side, self.index, n, head_dim) for m, n in self.side.heads.get(self.index, ())]

    def mixer(self, embed_dim: int, num_heads: int) -> Optional[LayerMixer]:
        built = (m.mixer(self.side.side, self.index, embed_dim, num_heads) for m in self.side.mechanisms)
        return next((x for x in built if x is not None), None)


class SyntaxPlan:
    """Every mechanism of one model, built from its config (one group per mechanism, under the mechanism's key) and
    sizes; building checks every group and how they share the heads (the one place options are validated)."""

    def __init__(self, cfg, shape: ModelShape):
        self.shape = shape
        self.start = getattr(cfg, "syntax_start", None) or "paper"  # a config of before the option: the papers'
        check_choice("--syntax-start", self.start, STARTS)
        self.mechanisms: List[Mechanism] = [M(getattr(cfg, M.key), shape) for M in MECHANISMS]
        self.active = [m for m in self.mechanisms if m.active]
        for m in self.active:
            m.start_from(self.start)
        self.heads: Dict[Tuple[str, int], List[Tuple[Mechanism, int]]] = {}
        for side in SIDES:
            H = shape.heads(side)
            for i in range(shape.layers(side)):
                taking = [(m, m.heads(side, i)) for m in self.active if m.heads(side, i)]
                if sum(n for _, n in taking) > H:
                    asked = " + ".join(f"{n} {m.title.split(' (')[0]}" for m, n in taking)
                    raise ValueError(f"{side} layer {i} has {H} heads but its syntax heads ask for {asked}; give fewer "
                                     "heads to a mechanism or put the mechanisms in different layers")
                self.heads[side, i] = taking
        plans = {k: tuple(m.key for m, _ in v) for k, v in self.heads.items() if v}
        mixed = {k: any(m.mixes(*k) for m in self.active) for k in self.heads}
        for (side, i), taking in self.heads.items():
            mixers = [m for m in self.active if m.mixes(side, i)]
            if len(mixers) > 1:
                raise ValueError(f"{side} layer {i}: both {mixers[0].title} and {mixers[1].title} would mix its syntax "
                                 "heads with the stock attention; a layer takes one mixer: leave the layer out of one "
                                 "of them")
            mixer = mixers[0] if mixers else None
            fixed = [m for m, _ in taking if not m.mixable]
            if mixer is not None and fixed:
                raise ValueError(f"{side} layer {i}: the heads of {fixed[0].title} cannot be mixed by {mixer.title} "
                                 "(their attention is the stock attention of a transformed query, with no syntax "
                                 f"attention of its own to mix); leave layer {i} out of --{mixer.key}-layers or put "
                                 "them in another layer")
        for m in self.active:
            m.check(plans, mixed)
        self.sides = {side: SideSyntax(side, self.active, {i: h for (s, i), h in self.heads.items() if s == side and h},
                                       self.start)
                      for side in SIDES}

    def block_keys(self, side: str, layer: int) -> Tuple[str, ...]:
        return tuple(m.key for m, _ in self.heads[side, layer])

    def features(self) -> FeatureNeeds:
        out = FeatureNeeds()
        for side in self.sides.values():
            out = out | side.features()
        return out

    def alignment_layer(self) -> Optional[int]:
        """The decoder layer whose encoder-decoder attention a mechanism reads (at most one may ask)."""
        asked = {m.alignment_layer() for m in self.active} - {None}
        if len(asked) > 1:
            raise ValueError(f"two mechanisms read the encoder-decoder attention of different layers: {sorted(asked)}")
        return next(iter(asked), None)

    def model_report(self, encoder_out: Dict, decoder_extra: Dict, prev_output_tokens: torch.Tensor, pad: int,
                     extra: Dict) -> None:
        for m in self.active:
            m.model_report(encoder_out, decoder_extra, prev_output_tokens, pad, extra)

    def legacy_keys(self) -> Dict[str, str]:
        """Checkpoint key prefixes of earlier versions → today's, over both sides."""
        return {f"{side}.{old}": f"{side}.{new}" for side in SIDES for m in self.active
                for old, new in m.legacy_keys(side).items()}


__all__ = ["SideSyntax", "SyntaxPlan"]
