"""Dependency relation labels (CoNLL-U DEPREL) as a fixed inventory of ids (pure Python/numpy, no fairseq).

The ids need no dictionary file: 0…36 are the 37 universal relations of Universal Dependencies v2
(:data:`UD_RELATIONS`, in alphabetical order), :data:`OTHER_LABEL` (37) is anything else. A relation is read by its
universal part (``nmod:poss`` → ``nmod``, ``acl:relcl`` → ``acl``, case ignored: CoreNLP writes ``ROOT``); the
relations UD v1 renamed are read as their v2 names (:data:`UD_V1`: ``dobj`` → ``obj``, ``nsubjpass`` → ``nsubj``, …);
an unspecified relation (``_``) and any other name are :data:`OTHER_LABEL`. Every id means the same relation in every
corpus and language a UD parser (stanza) parses, so a model's label table is fixed and translating new text needs
nothing but its parse.

Per-token view: every subword takes its word's label (:func:`subword_labels`); the data layer adds a filler for EOS
(:data:`NO_LABEL`) and pads with :data:`PAD_LABEL`.
"""
from __future__ import annotations

from typing import Iterable, List, Optional, Sequence

import numpy as np

#: the 37 universal dependency relations of UD v2 (https://universaldependencies.org/u/dep/), id = position
UD_RELATIONS = (
    "acl", "advcl", "advmod", "amod", "appos", "aux", "case", "cc", "ccomp", "clf", "compound", "conj", "cop",
    "csubj", "dep", "det", "discourse", "dislocated", "expl", "fixed", "flat", "goeswith", "iobj", "list", "mark",
    "nmod", "nsubj", "nummod", "obj", "obl", "orphan", "parataxis", "punct", "reparandum", "root", "vocative", "xcomp",
)
#: the id of a relation outside :data:`UD_RELATIONS` (and of an unspecified one, ``_``)
OTHER_LABEL = len(UD_RELATIONS)
#: the number of label ids (37 relations + other)
N_LABELS = OTHER_LABEL + 1
#: per-token label of a token without a word (EOS), and of padding
NO_LABEL = -1
PAD_LABEL = -2
#: UD v1 relations renamed or merged in v2 (the v2 relation that replaced each)
UD_V1 = {"dobj": "obj", "nsubjpass": "nsubj", "csubjpass": "csubj", "auxpass": "aux", "name": "flat",
         "mwe": "fixed", "foreign": "flat", "neg": "advmod", "remnant": "orphan"}

_ID = {r: i for i, r in enumerate(UD_RELATIONS)}


def label_id(deprel: Optional[str]) -> int:
    """The id of one DEPREL: its universal part's position in :data:`UD_RELATIONS` (a UD v1 name read as its v2
    name), :data:`OTHER_LABEL` for anything else (None, ``_``, a name outside UD)."""
    if not deprel:
        return OTHER_LABEL
    base = deprel.strip().split(":", 1)[0].lower()
    return _ID.get(UD_V1.get(base, base), OTHER_LABEL)


_SEEN: dict = {}  # DEPREL → its id, for the relations met so far (a corpus has few distinct ones)


def label_ids(deprels: Iterable[Optional[str]]) -> List[int]:
    """:func:`label_id` of each DEPREL of a sentence."""
    out = []
    for r in deprels:
        i = _SEEN.get(r)
        if i is None:
            i = label_id(r)
            if len(_SEEN) < 10000:
                _SEEN[r] = i
        out.append(i)
    return out


def label_name(label: int) -> str:
    """The relation an id stands for (``other`` for :data:`OTHER_LABEL`)."""
    if not 0 <= label < N_LABELS:
        raise ValueError(f"a dependency label id lies in 0..{N_LABELS - 1}, found {label}")
    return UD_RELATIONS[label] if label < OTHER_LABEL else "other"


def line_labels(sentences: Sequence) -> Optional[List[int]]:
    """The label ids of the words of one line holding ``sentences`` (ParsedSentence objects) in order; None when a
    sentence has no dependency heads (a PTB tree). Heads without relations (a trivial or fallback parse in memory)
    read as CoNLL-U writes them (:func:`syntrans.syntax.parsed.format_conllu`): ``root`` for the root, ``dep`` for
    every other word, so a parse gives the same labels from memory as from its file."""
    out: List[int] = []
    for s in sentences:
        if s.heads is None:
            return None
        rels = s.deprels if s.deprels is not None else ["root" if h == 0 else "dep" for h in s.heads]
        out.extend(label_ids(rels))
    return out


def subword_labels(labels: Sequence[int], pieces: Sequence[int]) -> np.ndarray:
    """Each subword's label: its word's (the word's every piece takes it). labels (n_words,) ids in 0..N_LABELS−1,
    pieces (n_words,) subwords per word → (n_sub,) int64."""
    labels = np.asarray(labels, dtype=np.int64)
    pieces = np.asarray(pieces, dtype=np.int64)
    if len(labels) != len(pieces):
        raise ValueError(f"the line has {len(pieces)} words but its label row gives {len(labels)} labels")
    bad = np.flatnonzero((labels < 0) | (labels >= N_LABELS))
    if len(bad):
        w = int(bad[0])
        raise ValueError(f"word {w} (0-based) has dependency label id {int(labels[w])}, expected 0..{N_LABELS - 1} "
                         "(a label sidecar of another inventory? re-run syntrans-preprocess)")
    return np.repeat(labels, pieces)


__all__ = ["N_LABELS", "NO_LABEL", "OTHER_LABEL", "PAD_LABEL", "UD_RELATIONS", "UD_V1", "label_id", "label_ids",
           "label_name", "line_labels", "subword_labels"]
