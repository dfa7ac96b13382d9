"""Per-token syntax features built from word-level sidecars when a batch item is read.

A :class:`Feature` turns the word-level arrays of one sentence into one value per token of that
sentence (EOS included), so that the collater can pad and offset it exactly like the tokens; a
model asks for features by name (its ``syntax_needs()``), and the batch carries each one under
that name in ``net_input``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Dict, Set, Tuple

import numpy as np
import torch

from ..syntax.align import pieces_per_word
from ..syntax.deprels import NO_LABEL, PAD_LABEL, subword_labels
from ..syntax.gaps import EOS_GAP, subword_gaps_array
from ..syntax.nsd_labels import BOS_NSD, NO_NSD, NSD_KINDS, line_nsd, subword_nsd
from ..syntax.parents import subword_parents_array

#: Parent position of a token that has none (EOS, padding).
NO_PARENT = -1

__all__ = ["BOS_NSD", "FEATURES", "Feature", "NO_NSD", "NO_PARENT", "after_prefix"]  # the NSD fillers are defined in syntax.nsd_labels


@dataclass
class FeatureNeeds:
    """Batch features (``net_input`` keys) by when they are needed: always (``required``), where the data has them
    (``optional``), and the optional ones the training split must have (``training``: the auxiliary losses)."""

    required: Set[str] = field(default_factory=set)
    optional: Set[str] = field(default_factory=set)
    training: Set[str] = field(default_factory=set)

    def __or__(self, other: "FeatureNeeds") -> "FeatureNeeds":
        return FeatureNeeds(self.required | other.required, self.optional | other.optional,
                            self.training | other.training)



@dataclass(frozen=True)
class Feature:
    name: str
    side: str  # "source" or "target"
    needs: Tuple[str, ...]  # sidecar kinds
    pad: int  # value at padding positions
    build: Callable[[Dict[str, np.ndarray]], np.ndarray]  # word-level arrays → (tokens incl. EOS,)
    finish: Callable[[torch.Tensor], torch.Tensor] = lambda t: t  # (B, T) padded → what the model gets
    positions: bool = False  # values ≥ 0 are token positions in the sentence: shifted by the left padding
    fillers: Tuple[int, ...] = ()  # values that stand for no value (besides ``pad``), e.g. at EOS or BOS
    before: int = NO_PARENT  # value of a token fairseq puts before the sentence's first piece (a language token)
    first: int = 0  # index of the sentence's first piece in the values (1: decoder-input coordinates, BOS first)


def after_prefix(f: Feature, values: np.ndarray, n: int) -> np.ndarray:
    """``values`` (one sentence's feature, :attr:`Feature.build`'s) for the sentence with ``n`` tokens put before its
    first piece (``translation_multi_simple_epoch``'s language token, ``PrependTokenDataset``): ``n`` times
    ``f.before`` at index ``f.first``, and positions (values ≥ 0 of a ``positions`` feature) moved ``n`` on:
    (len + n,)."""
    if n == 0:
        return values
    out = np.insert(values, f.first, np.full(n, f.before, dtype=values.dtype))
    if f.positions:
        out = np.where(out >= 0, out + n, out).astype(values.dtype)
    return out


def _gaps_per_token(arrays: Dict[str, np.ndarray]) -> np.ndarray:
    """Subword gaps (Hou et al. 2022 §3) with a filler in the EOS slot: (n_sub + 1,)."""
    pieces = pieces_per_word(arrays["word"])
    gaps = subword_gaps_array(arrays["dist"], pieces)
    return np.append(gaps, EOS_GAP)


def _parents_per_token(mode: str, dtype) -> Callable[[Dict[str, np.ndarray]], np.ndarray]:
    """Subword parent positions (:func:`subword_parents_array`) with ``NO_PARENT`` in the EOS slot: (n_sub + 1,)."""

    def build(arrays: Dict[str, np.ndarray]) -> np.ndarray:
        parents = subword_parents_array(arrays["head"], pieces_per_word(arrays["word"]), mode)
        return np.append(parents, NO_PARENT).astype(dtype)

    return build


def _decoder_input_parents(arrays: Dict[str, np.ndarray]) -> np.ndarray:
    """Target "chain" parents in the coordinates of the decoder input (``prev_output_tokens`` = BOS, y_1 … y_n):
    target subword s sits at input position s + 1, so its parent p becomes p + 1; the BOS slot has none.
    Same length as the target (n_sub + 1, EOS included), so it pads like the target: (n_sub + 1,) int64."""
    parents = subword_parents_array(arrays["head"], pieces_per_word(arrays["word"]), "chain")
    return np.concatenate([[NO_PARENT], parents + 1]).astype(np.int64)


def _word_first_per_token(arrays: Dict[str, np.ndarray]) -> np.ndarray:
    """The first subword of each subword's own word (0-based position in the sentence), ``NO_PARENT`` in the EOS slot:
    (n_sub + 1,) int64. With the "first" parents it gives the dependency tree over token positions (every token is
    the node of its word's first subword, joined to its head word's first subword)."""
    pieces = pieces_per_word(arrays["word"])
    starts = np.cumsum(pieces) - pieces  # (n_words,)
    return np.append(starts[arrays["word"]], NO_PARENT).astype(np.int64)



def _nsd_per_token(kind: str, where: str) -> Callable[[Dict[str, np.ndarray]], np.ndarray]:
    """NSD of every subword (its word's value, :func:`subword_nsd`) of one sentence, (n_sub + 1,) int64:
    ``end``: NO_NSD in the EOS slot (source tokens, target labels); ``start``: BOS_NSD first (decoder input)."""
    source = "head" if kind == "dD" else "dist"

    def build(arrays: Dict[str, np.ndarray]) -> np.ndarray:
        pieces = pieces_per_word(arrays["word"])
        words = line_nsd(kind, **{"heads" if kind == "dD" else "dists": arrays[source]}, n_words=len(pieces))
        values = subword_nsd(words, pieces)
        return np.concatenate([[BOS_NSD], values] if where == "start" else [values, [NO_NSD]]).astype(np.int64)

    return build


def _labels_per_token(arrays: Dict[str, np.ndarray]) -> np.ndarray:
    """Each source subword's dependency label id (its word's, :func:`subword_labels`) with ``NO_LABEL`` in the EOS
    slot: (n_sub + 1,) int64."""
    labels = subword_labels(arrays["label"], pieces_per_word(arrays["word"]))
    return np.append(labels, NO_LABEL).astype(np.int64)


def _nsd_features() -> Dict[str, Feature]:
    out = {}
    for kind in NSD_KINDS:
        needs = ("word", "head" if kind == "dD" else "dist")
        for name, side, where in ((f"src_nsd_{kind}", "source", "end"), (f"tgt_nsd_in_{kind}", "target", "start"),
                                  (f"tgt_nsd_out_{kind}", "target", "end")):
            out[name] = Feature(name, side, needs, NO_NSD, _nsd_per_token(kind, where), fillers=(NO_NSD, BOS_NSD),
                                before=NO_NSD, first=1 if where == "start" else 0)
    return out


FEATURES: Dict[str, Feature] = {
    # gaps between consecutive source tokens, (B, T−1) after padding like src_tokens
    "src_gaps": Feature("src_gaps", "source", ("word", "dist"), EOS_GAP, _gaps_per_token, lambda t: t[:, :-1],
                        before=EOS_GAP),  # a language token is set apart from the words as EOS is
    # "middle" parents: mean position of the head word's subwords (x.5 between two), (B, T) float64 in padded
    # coordinates:
    # fairseq's --fp16/--bf16 cast every float32 tensor of a batch to half precision (Trainer._fp_convert_sample),
    # where bf16 rounds 129.5 to 130 and 513 to 512; a float64 feature is left alone and stays exact
    "src_parent_middle": Feature("src_parent_middle", "source", ("word", "head"), NO_PARENT,
                                 _parents_per_token("middle", np.float64), positions=True),
    # "first" parents: first subword of the head word, (B, T) int64 in padded coordinates
    "src_parent_first": Feature("src_parent_first", "source", ("word", "head"), NO_PARENT,
                                _parents_per_token("first", np.int64), positions=True),
    # "chain" parents (a word's pieces chained, its last piece to its head word's first), (B, T) int64 in padded
    # coordinates
    "src_parent_chain": Feature("src_parent_chain", "source", ("word", "head"), NO_PARENT,
                                _parents_per_token("chain", np.int64), positions=True),
    # the first subword of each source token's own word, (B, T) int64 in padded coordinates (with src_parent_first:
    # the dependency tree over token positions, whose path lengths bound a tree-distance window)
    "src_word_first": Feature("src_word_first", "source", ("word",), NO_PARENT, _word_first_per_token, positions=True),
    # chain parents of the decoder input tokens, (B, T) int64 padded like prev_output_tokens
    "tgt_parent_chain": Feature("tgt_parent_chain", "target", ("word", "head"), NO_PARENT,
                                _decoder_input_parents, positions=True, first=1),
    # dependency label ids (syntax.deprels) per source token, its word's; NO_LABEL at EOS, PAD_LABEL at padding:
    # (B, T) int64
    "src_dep_label": Feature("src_dep_label", "source", ("word", "label"), PAD_LABEL, _labels_per_token,
                             fillers=(NO_LABEL,), before=NO_LABEL),
    # syntactic distances of kind K (dS, dG, dR, dD; syntax.nsd_labels): src_nsd_K per source token; tgt_nsd_in_K per
    # decoder input token (BOS first), tgt_nsd_out_K per target token (as labels)
    **_nsd_features(),
}
