"""A trained model's syntax heads on one sentence: each syntax head's attention matrix (queries × keys).

:func:`sentence_attention` runs the model on sentence ``index`` of a binarized split (the ``syntax_translation``
task's sidecars give its syntax features): the encoder, and for decoder-side DBSA heads the whole model
teacher-forced on the sentence's target. The matrices are the probabilities the model's layers compute in
that forward, kept by the layers themselves (the forward is asked to keep them, ``keep=("probs",)``):
post-softmax, before attention dropout (the model runs in eval mode), for the heads the layer's
blocks make syntax heads (``attn.blocks``, in head order):

* distance-mask (Hou et al. 2022, Eq. 7): softmax(QKᵀ/√d + log M);
* PASCAL (Bugliarello & Okazaki 2020): softmax(QKᵀ/√d ⊙ N(j; p_i, σ²)); the Gaussian centre p_i is marked;
* LISA (Strubell et al. 2018, as adapted by Bugliarello & Okazaki): softmax of the bi-affine scores; the gold
  parent (first subword of the head word) is marked;
* DBSA (Deguchi et al. 2019): softmax(Q U Kᵀ/√d), encoder and causal decoder; the gold parent of the subword
  chain convention is marked (decoder: only arcs to earlier tokens, the ones its loss scores);
* a gated layer's syntax heads attend with G·A_syn + (1 − G)·A_raw (Hou et al.); G is in the panel's title.

LISA and DBSA heads also carry the model's predicted parent per query row: the argmax of the LISA head's kept
probabilities, and for DBSA the argmax of the mean of the layer's DBSA heads (the layer's parse, Deguchi et al. 2019),
the same subword heads fairseq-generate --print-syntax prints.

:func:`plot_attention` draws them, one row per layer with syntax heads, subword tokens as tick labels.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple, Union

import numpy as np
import torch
from fairseq import utils

from ..checkpoints.loading import load_checkpoint
from ..mechanisms.registry import BY_NAME, head_name
from ..modules.attention_record import side_output, syntax_layers
from ..modules.blocks import KEEP_PROBS
from ..modules.layer_report import LayerReport, SyntaxOutput
from ..modules.parse_heads import ParseLayer, rows_to_heads
from .gates import _figure

PathLike = Union[str, "os.PathLike[str]"]
HeadKey = Tuple[str, int, int]  # (side, layer, head)

@dataclass
class HeadAttention:
    """One syntax head's attention on one sentence."""

    side: str  # "encoder" or "decoder"
    layer: int  # 0-based
    head: int  # 0-based, < the layer's syntax_heads
    kind: str  # "distance", "PASCAL", "LISA" or "DBSA"
    matrix: np.ndarray  # (T, S) float32: row i = query token i, column j = key token j; rows sum to 1
    parents: Optional[np.ndarray] = None  # (T,) float: the marked key per query (gold parent, PASCAL centre), NaN: none
    gate: Optional[float] = None  # G of a gated head
    predicted: Optional[np.ndarray] = None  # (T,) float: the predicted parent per query (LISA, DBSA), NaN: none


@dataclass
class SentenceAttention:
    """The syntax heads of a model on one sentence of a split."""

    split: str
    index: int  # 0-based sentence index in the split (line index + 1 of the text)
    src_tokens: List[str]  # the source subwords, EOS last (the encoder's queries and keys)
    tgt_tokens: List[str]  # the decoder input: BOS (fairseq's EOS symbol) then the target subwords
    heads: List[HeadAttention] = field(default_factory=list)

    def matrices(self) -> Dict[HeadKey, np.ndarray]:
        return {(h.side, h.layer, h.head): h.matrix for h in self.heads}


def head_kinds(attn) -> List[str]:
    """The mechanism of each syntax head 0 … ``attn.syntax_heads`` − 1 of a layer, in head order (its blocks), by the
    name the mechanism gives its heads (:func:`~syntrans.mechanisms.registry.head_name`)."""
    return [head_name(b.key) for b in attn.blocks for _ in range(b.num_heads)]


def _marks_centre(kind: str) -> bool:
    """Whether a head kind's marked parent is a weighting's centre (p_i), not a gold parent."""
    return kind in BY_NAME and BY_NAME[kind].marks_centre


def _parents(side: str, kind: str, net_input) -> Optional[np.ndarray]:
    """Marked key per query of sentence 0 of the batch, NaN where a query has none; None without the feature (the
    mechanism's :meth:`~syntrans.mechanisms.base.Mechanism.marked`)."""
    value = BY_NAME[kind].marked(side, net_input) if kind in BY_NAME else None
    if value is None:
        return None
    p = value[0].double().cpu().numpy()  # (T,)
    return np.where(p >= 0, p, np.nan)


def predicted_parents(side: str, layer: int, kind: str, kept: torch.Tensor, attn) -> Optional[np.ndarray]:
    """The predicted parent of every query of sentence 0, as generation reads it
    (:func:`~syntrans.modules.parse_heads.rows_to_heads`): argmax of the LISA head's probabilities, or of the mean of
    the layer's DBSA heads (Deguchi et al. 2019: the layer's parse); None for other heads. kept (1, H, T, S) →
    (T,) float, NaN on the row with no parent (the encoder's EOS query, the decoder's BOS query)."""
    key = BY_NAME[kind].key if kind in BY_NAME else kind
    block = getattr(attn, key, None)
    if block is None or not block.parse:
        return None
    out = rows_to_heads(kept.float(), ParseLayer(side, layer, key, attn))[0].double().cpu().numpy()  # (T,)
    out[-1 if side == "encoder" else 0] = np.nan
    return out


def sentence_attention(model, task, split: str = "test", index: int = 0) -> SentenceAttention:
    """Run ``model`` (a ``syntax_transformer``) on sentence ``index`` (0-based) of ``split`` and keep its syntax
    heads' attention. The encoder runs alone unless the decoder has syntax heads (then the whole model,
    teacher-forced on the target). Eval mode, no gradient; the model's mode is restored afterwards.
    ValueError for a model without syntax heads or an index outside the split."""
    layers = syntax_layers(model)
    if not layers:
        raise ValueError("the model has no syntax heads (no distance-mask, PASCAL, LISA or DBSA heads in any layer)")
    if split not in getattr(task, "datasets", {}):
        task.load_dataset(split)
    dataset = task.dataset(split)
    if not 0 <= index < len(dataset):
        raise ValueError(f"split {split!r} has {len(dataset)} sentences: the sentence index must lie in "
                         f"0..{len(dataset) - 1} (0-based), found {index}")
    sample = dataset.collater([dataset[index]])
    device = next(model.parameters()).device
    net_input = utils.apply_to_sample(lambda t: t.to(device), sample)["net_input"]
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            if any(side == "decoder" for side, _ in layers):
                syntax: SyntaxOutput = model(**net_input, keep=(KEEP_PROBS,))[1]["syntax"]
            else:
                syntax = SyntaxOutput(encoder=side_output(model.encoder.forward_torchscript(
                    {**net_input, "keep": (KEEP_PROBS,)})))
    finally:
        model.train(was_training)

    out = SentenceAttention(split, index, [task.source_dictionary[int(t)] for t in net_input["src_tokens"][0]],
                            [task.target_dictionary[int(t)] for t in net_input["prev_output_tokens"][0]])
    for (side, layer), attn in layers.items():
        report = syntax.side(side).layers.get(layer, LayerReport())
        kept = report.probs
        if kept is None:
            raise RuntimeError(f"{side} layer {layer} has syntax heads but kept no attention in this forward")
        mix = report.mechanisms.get(attn.mixer_key) if attn.mixer_key else None
        gates = mix.weights_per_head if mix is not None else None  # (1, n) the syntax heads' G (a mixer with one per head)
        for h, kind in enumerate(head_kinds(attn)):
            out.heads.append(HeadAttention(side, layer, h, kind, kept[0, h].float().cpu().numpy(),
                                           _parents(side, kind, net_input),
                                           float(gates[0, h]) if gates is not None else None,
                                           predicted_parents(side, layer, kind, kept, attn)))
    return out


def predicted_agreement(attention: SentenceAttention) -> Dict[Tuple[str, int, str], Tuple[int, int]]:
    """Per parse ``(side, layer, kind)`` (a LISA head; a layer's DBSA heads share one parse): (rows whose predicted
    parent equals the marked gold parent, rows with both), in the order the heads come."""
    out: Dict[Tuple[str, int, str], Tuple[int, int]] = {}
    for h in attention.heads:
        key = (h.side, h.layer, h.kind)
        if h.predicted is None or h.parents is None or key in out:
            continue
        both = ~np.isnan(h.predicted) & ~np.isnan(h.parents)  # (T,)
        out[key] = int(np.sum(h.predicted[both] == h.parents[both])), int(np.sum(both))
    return out


def attention_from_checkpoint(path: PathLike, data: PathLike, split: str = "test", index: int = 0,
                              device: Optional[str] = None) -> SentenceAttention:
    """:func:`sentence_attention` of a checkpoint's model on its task reading ``data``."""
    model, _cfg, task = load_checkpoint(path, data, device=device)
    try:
        return sentence_attention(model, task, split, index)
    except ValueError as e:
        raise ValueError(f"{path}: {e}") from e


# ---------------------------------------------------------------------------------------------- plots

def _panel_title(h: HeadAttention) -> str:
    kind = f"gated {h.kind}" if h.gate is not None else h.kind
    title = f"{h.side} layer {h.layer}, head {h.head}: {kind}"
    if h.gate is not None:
        title += f", G = {h.gate:.3f}"
    return title


def plot_attention(attention: SentenceAttention, title: Optional[str] = None):
    """One heat map per syntax head, a row per (side, layer) with syntax heads (encoder first); rows are query
    tokens, columns key tokens, colour 0..1. Parents (where known) are marked per query row: ○ the gold parent
    of a LISA or DBSA head, + the Gaussian centre p_i of a PASCAL head, then × the parent a LISA or DBSA head
    predicts (argmax; for DBSA of the layer's mean over its DBSA heads).

    Returns ``(fig, {(side, layer, head): matrix})``; each head's Axes has the label ``"{side} {layer} {head}"``
    and its image (``ax.images[0]``) holds exactly that matrix; its scatter collections carry the labels
    ``"gold parent"``/``"p_i"`` (first) and ``"predicted parent"`` (drawn after). Save with
    :func:`syntrans.plots.sentence.save_figure`.
    """
    heads = attention.heads
    if not heads:
        raise ValueError("no syntax heads to draw")
    rows: Dict[Tuple[str, int], List[HeadAttention]] = {}
    for h in heads:
        rows.setdefault((h.side, h.layer), []).append(h)
    n_cols = max(len(v) for v in rows.values())
    longest = max(max(h.matrix.shape) for h in heads)
    size = max(3.2, 0.13 * longest + 1.2)  # inches per panel
    fontsize = 7 if longest <= 30 else 6 if longest <= 60 else 4
    fig = _figure(n_cols * (size + 0.4) + 1.2, len(rows) * (size + 0.9) + 0.8)
    grid = fig.add_gridspec(len(rows), n_cols, hspace=0.55, wspace=0.45)
    image, axes = None, []
    for r, ((side, _layer), row) in enumerate(rows.items()):
        tokens = attention.src_tokens if side == "encoder" else attention.tgt_tokens
        for c in range(n_cols):
            ax = fig.add_subplot(grid[r, c])
            if c >= len(row):
                ax.axis("off")
                continue
            h = row[c]
            axes.append(ax)
            ax.set_label(f"{h.side} {h.layer} {h.head}")
            T, S = h.matrix.shape
            image = ax.imshow(h.matrix, cmap="viridis", vmin=0.0, vmax=1.0, aspect="equal", interpolation="nearest")
            ax.set_xticks(range(S))
            ax.set_xticklabels(tokens[:S], rotation=90, fontsize=fontsize)
            ax.set_yticks(range(T))
            ax.set_yticklabels(tokens[:T], fontsize=fontsize)
            ax.tick_params(length=0)
            ax.set_xlabel("key", fontsize=8)
            ax.set_ylabel("query", fontsize=8)
            if h.parents is not None:
                q = np.flatnonzero(~np.isnan(h.parents))
                if _marks_centre(h.kind):
                    ax.scatter(h.parents[q], q, marker="+", s=30, linewidths=1.0, color="red", label="p_i")
                else:
                    ax.scatter(h.parents[q], q, marker="o", s=30, linewidths=1.0, facecolors="none",
                               edgecolors="red", label="gold parent")
            if h.predicted is not None:  # after the gold mark, so that × shows on top of ○ where they agree
                q = np.flatnonzero(~np.isnan(h.predicted))
                ax.scatter(h.predicted[q], q, marker="x", s=22, linewidths=1.0, color="orange", label="predicted parent")
            if h.parents is not None or h.predicted is not None:
                ax.set_xlim(-0.5, S - 0.5)
                ax.set_ylim(T - 0.5, -0.5)
            ax.set_title(_panel_title(h), fontsize=9)
    fig.colorbar(image, ax=axes, shrink=0.5, label="attention probability")
    centres = " and ".join(k for k in BY_NAME if BY_NAME[k].marks_centre)
    marks = f"; ○ gold parent, + {centres} centre p_i" if any(h.parents is not None for h in heads) else ""
    if any(h.predicted is not None for h in heads):
        marks += ", × predicted parent" if marks else "; × predicted parent"
    fig.suptitle(title if title is not None else
                 f"syntax heads on sentence {attention.index} of split {attention.split!r}{marks}", fontsize=11)
    return fig, attention.matrices()


def attention_arrays(attention: SentenceAttention) -> Dict[str, np.ndarray]:
    """Every drawn matrix as ``{side}_l{layer}_h{head}`` (T, S), its marked parents as ``…_parents`` (T,), the
    predicted parents as ``…_predicted`` (T,), the tokens as ``src_tokens``/``tgt_tokens`` and gates as ``…_gate``:
    the arrays ``--matrices`` writes."""
    out: Dict[str, np.ndarray] = {"src_tokens": np.array(attention.src_tokens, dtype=str),
                                  "tgt_tokens": np.array(attention.tgt_tokens, dtype=str)}
    for h in attention.heads:
        key = f"{h.side}_l{h.layer}_h{h.head}"
        out[key] = h.matrix
        if h.parents is not None:
            out[key + "_parents"] = h.parents
        if h.predicted is not None:
            out[key + "_predicted"] = h.predicted
        if h.gate is not None and not math.isnan(h.gate):
            out[key + "_gate"] = np.array(h.gate)
    return out
