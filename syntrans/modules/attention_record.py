"""Recording what a model's syntax layers compute (for figures: ``syntrans-plot attention``).

:func:`record_attention` asks the encoder and decoder of a model to keep every syntax layer's probabilities in their
reports for the forwards run inside the block (an argument of their ``forward``, added by a hook) and hands back what
those layers computed: no attention is recomputed, the layers keep their own post-softmax probabilities::

    with record_attention(model) as probs:
        model(**sample["net_input"])
    probs[("encoder", 0)]  # (B, H, T, S) float32: every head of encoder layer 0, before attention dropout

Which heads are syntax heads, and of which mechanism, is the layer's ``block_keys`` (:func:`syntax_layers`).
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Dict, Iterator, Tuple

import torch

from .blocks import KEEP_PROBS
from .layer_report import LayerReport, SideOutput
from .syntax_attention import SyntaxMultiheadAttention

LayerKey = Tuple[str, int]  # ("encoder" | "decoder", 0-based layer)


def syntax_layers(model) -> Dict[LayerKey, SyntaxMultiheadAttention]:
    """The self-attention modules with syntax heads, by (side, layer), encoder layers first, in layer order.

    ``model`` is a ``syntax_transformer`` (or any module); layers without syntax heads are left out.
    """
    out: Dict[LayerKey, SyntaxMultiheadAttention] = {}
    for name, module in model.named_modules():  # encoder.layers.3.self_attn
        parts = name.split(".")
        if isinstance(module, SyntaxMultiheadAttention) and module.block_keys and len(parts) == 4 and \
                parts[0] in ("encoder", "decoder") and parts[1:4:2] == ["layers", "self_attn"]:
            out[parts[0], int(parts[2])] = module
    return dict(sorted(out.items(), key=lambda kv: (kv[0][0] != "encoder", kv[0][1])))


def side_output(output) -> SideOutput:
    """The syntax output of a side's forward (the encoder's dict, or the decoder's (x, extra)); empty for a side that
    returned none."""
    syntax = output.get("syntax") if isinstance(output, dict) else output[1].get("syntax")
    return syntax if syntax is not None else SideOutput()


def side_reports(side: str, output) -> Dict[int, LayerReport]:
    """The layers' reports in the output of a side's forward: the encoder's dict, or the decoder's (x, extra)."""
    return side_output(output).layers


@contextmanager
def record_attention(model) -> Iterator[Dict[LayerKey, torch.Tensor]]:
    """Keep the attention probabilities of every syntax layer during the ``with`` block.

    Yields a dict that is filled as the encoder and decoder run (called as modules, as the model's forward calls
    them): (side, layer) → probs (B, H, T, S) float32, detached, every head of that layer (its syntax heads first,
    in the order of ``block_keys``), post-softmax and before attention dropout, from the last forward inside the
    block. The hooks are removed on exit, also on errors.
    """
    kept: Dict[LayerKey, torch.Tensor] = {}
    handles = []
    children = dict(model.named_children())
    for side in ("encoder", "decoder"):
        part = children.get(side)
        if part is None:
            continue

        def ask(module, args, kwargs):
            kwargs["keep"] = tuple(kwargs.get("keep", ())) + (KEEP_PROBS,)
            return args, kwargs

        def read(module, args, kwargs, output, side=side):
            for i, report in side_reports(side, output).items():
                if report.probs is not None:
                    kept[side, i] = report.probs

        handles.append(part.register_forward_pre_hook(ask, with_kwargs=True))
        handles.append(part.register_forward_hook(read, with_kwargs=True))
    try:
        yield kept
    finally:
        for h in handles:
            h.remove()
