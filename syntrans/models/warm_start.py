"""Warm start: a syntax model started from a checkpoint without its syntax parameters, a stock fairseq Transformer's
(``fairseq-train --arch transformer``) or a syntax model's with fewer mechanisms, through fairseq-train's own routes
(``--finetune-from-model``, or ``--restore-file`` with the ``--reset-*`` flags).

fairseq loads a checkpoint strictly (``Trainer.load_checkpoint``) after the model has upgraded the loaded state dict
(``upgrade_state_dict_named``). :func:`complete_state_dict`, called there, puts the values of the syntax parameters
the checkpoint lacks into that state dict, taken from the model just built, so that each starts as its mechanism
initialises it (:meth:`~syntrans.modules.blocks.SyntaxPart.initialisation` says how, and on whose authority), and
strict loading stays (fairseq's BART adds new classification heads the same way). It logs what is new, with how it
starts, and what was loaded.

Only syntax additions are filled, and only when the rest of the model is in the checkpoint with the same shapes: a
Transformer tensor missing, one of another shape or a tensor the model does not have is an error naming them and the
flag that usually causes it (the Transformer flags of the two runs differ). A checkpoint that has every tensor of the
model (resuming, generation) is left alone.
"""
from __future__ import annotations

import logging
import re
from collections import OrderedDict
from typing import Dict, Iterable, List, Optional, Tuple

import torch.nn as nn

from ..modules.blocks import SyntaxPart

logger = logging.getLogger(__name__)

#: how an addition whose module states nothing starts
UNSTATED = "as its module builds it (not stated)"
_LAYER = re.compile(r"\.layers\.(\d+)\.")


def syntax_additions(model: nn.Module) -> Dict[str, str]:
    """{state-dict key: how it starts} of every parameter and buffer a mechanism adds to the Transformer: those of a
    :class:`~syntrans.modules.blocks.SyntaxPart`, and those another module names in its own ``initialisation()``
    (a DBSA query projection: its ``U``, not the stock ``weight`` and ``bias`` it holds)."""
    out: Dict[str, str] = {}
    for name, module in model.named_modules():
        describe = getattr(module, "initialisation", None)
        if not callable(describe):
            continue
        notes = describe()
        prefix = f"{name}." if name else ""
        for rel in module.state_dict().keys():
            note = _note(rel, notes)
            if note is None and isinstance(module, SyntaxPart):
                note = UNSTATED
            if note is not None and out.get(prefix + rel, UNSTATED) == UNSTATED:
                out[prefix + rel] = note
    return out


def _note(rel: str, notes: Dict[str, str]) -> Optional[str]:
    """The note of the longest of ``notes``' names that is ``rel`` or a prefix of it ending in '.', or None."""
    hits = [p for p in notes if rel == p or (p.endswith(".") and rel.startswith(p))]
    return notes[max(hits, key=len)] if hits else None


def complete_state_dict(model: nn.Module, state_dict: Dict, name: str = "") -> Optional[Dict[str, List[str]]]:
    """Fill ``state_dict`` (a checkpoint's, upgraded; the model's keys under ``name``) with the model's own values of
    the syntax additions it lacks (module docstring) → {"new": keys, "loaded": keys}, or None when it lacks none (then
    it is left as it is). ValueError when it lacks other tensors of the model, has tensors the model does not have or
    has a tensor of another shape than the model's."""
    prefix = f"{name}." if name else ""
    own = model.state_dict()
    given = {k[len(prefix):]: v for k, v in state_dict.items() if k.startswith(prefix)}
    missing = [k for k in own if k not in given]
    additions = syntax_additions(model) if missing else {}
    new = [k for k in missing if k in additions]
    if not new:
        return None
    other = [k for k in missing if k not in additions]
    unexpected = [k for k in given if k not in own]
    reshaped = [k for k in own if k in given and tuple(own[k].shape) != tuple(given[k].shape)]
    if other or unexpected or reshaped:
        raise ValueError(mismatch_message(other, unexpected, [(k, tuple(given[k].shape), tuple(own[k].shape))
                                                              for k in reshaped]))
    for k in new:
        state_dict[prefix + k] = own[k].detach().clone()
    loaded = [k for k in own if k in given]
    log_warm_start(new, loaded, {k: tuple(own[k].shape) for k in own}, additions)
    return {"new": new, "loaded": loaded}


def log_warm_start(new: List[str], loaded: List[str], shapes: Dict[str, Tuple[int, ...]],
                   notes: Dict[str, str]) -> None:
    """The warm start's log lines: a summary, one line per new tensor (layers collapsed, with its shape and how it
    starts) and one per top-level module of what was loaded."""
    logger.info(f"warm start from a checkpoint without this model's syntax parameters: {len(loaded)} tensors loaded "
                f"from it, {len(new)} new")
    rows: Dict[Tuple[str, str], List[str]] = OrderedDict()
    for k in new:  # one line per module and start: its tensors with their shapes, layers collapsed
        module = _layer_pattern(k.rpartition(".")[0] + ".")[0]
        rows.setdefault((module, notes[k]), []).append(k)
    for (module, note), keys in rows.items():
        names = OrderedDict()
        for k in keys:
            pattern, layer = _layer_pattern(k)
            names.setdefault((pattern, shapes[k]), []).append(layer)
        tensors = ", ".join(f"{_fill(p, layers).rpartition('.')[2]} {shape}" for (p, shape), layers in names.items())
        layers = [layer for _, layer in map(_layer_pattern, keys)]
        logger.info(f"warm start: new {_fill(module, layers).rstrip('.')}: {tensors}: {note}")
    by_module: Dict[str, List[str]] = OrderedDict()
    for k in loaded:
        by_module.setdefault(k.split(".")[0], []).append(k)
    for module, keys in by_module.items():
        logger.info(f"warm start: loaded {module} ({len(keys)} tensors): {', '.join(collapse_layers(keys, module))}")


def _layer_pattern(key: str) -> Tuple[str, Optional[int]]:
    match = _LAYER.search(key)
    if match is None:
        return key, None
    return key[:match.start()] + ".layers.{}." + key[match.end():], int(match[1])


def _fill(pattern: str, layers: List[Optional[int]]) -> str:
    if "{}" not in pattern:
        return pattern
    numbers = sorted(set(x for x in layers if x is not None))
    if len(numbers) > 2 and numbers == list(range(numbers[0], numbers[-1] + 1)):
        return pattern.format(f"[{numbers[0]}-{numbers[-1]}]")
    return pattern.format(numbers[0] if len(numbers) == 1 else "[" + ",".join(map(str, numbers)) + "]")


def collapse_layers(keys: Iterable[str], within: str = "") -> List[str]:
    """State-dict keys written compactly, in first-seen order: the same name in several layers once
    (``encoder.layers.[0-5].fc1.weight``), a module's tensors together (``fc1.{weight,bias}``), ``within`` (a module
    prefix) left out."""
    groups: Dict[str, List[Optional[int]]] = OrderedDict()
    for k in keys:
        rel = k[len(within) + 1:] if within and k.startswith(within + ".") else k
        pattern, layer = _layer_pattern("." + rel)
        groups.setdefault(pattern[1:], []).append(layer)
    modules: Dict[str, List[str]] = OrderedDict()
    for pattern, layers in groups.items():
        module, dot, name = _fill(pattern, layers).rpartition(".")
        modules.setdefault(module + dot, []).append(name)
    return [m + (names[0] if len(names) == 1 else "{" + ",".join(names) + "}") for m, names in modules.items()]


def likely_flag(key: str) -> str:
    """The Transformer flag that usually explains a checkpoint key missing, unexpected or of another shape."""
    side = "decoder" if key.startswith("decoder.") else "encoder"
    hints = (("layernorm_embedding", "--layernorm-embedding"),
             ("embed_positions", f"--{side}-learned-pos, --max-{'target' if side == 'decoder' else 'source'}-positions"),
             ("output_projection", "--share-decoder-input-output-embed, --share-all-embeddings"),
             ("embed_tokens", "the dictionary (another data-bin) or --" + side + "-embed-dim"),
             (".fc1.", f"--{side}-ffn-embed-dim"), (".fc2.", f"--{side}-ffn-embed-dim"),
             (".layers.", f"--{side}-layers or --{side}-embed-dim"),
             (f"{side}.layer_norm.", f"--{side}-normalize-before"))
    return next((flag for part, flag in hints if part in key), "the Transformer's flags")


def mismatch_message(missing: List[str], unexpected: List[str],
                     reshaped: List[Tuple[str, Tuple[int, ...], Tuple[int, ...]]]) -> str:
    """What a warm start says when the checkpoint's Transformer is not this model's Transformer."""
    parts = []
    if missing:
        parts.append("missing from the checkpoint: " + ", ".join(f"{k} ({likely_flag(k)})" for k in missing[:6]))
    if unexpected:
        parts.append("in the checkpoint, not in the model: " + ", ".join(f"{k} ({likely_flag(k)})"
                                                                       for k in unexpected[:6]))
    if reshaped:
        parts.append("of another shape: " + ", ".join(f"{k} checkpoint {a}, model {b} ({likely_flag(k)})"
                                                      for k, a, b in reshaped[:6]))
    return ("warm start: only the syntax parameters may be missing from the checkpoint, but its Transformer differs "
            "from this model's (it was trained with other Transformer flags): " + "; ".join(parts) + ". Give this "
            "run the Transformer flags the checkpoint was trained with")


__all__ = ["collapse_layers", "complete_state_dict", "syntax_additions"]
