"""Word-level parses from the subword heads a model predicts (DBSA, LISA): the inverse of :mod:`.parents`.

A DBSA or LISA attention head gives, per subword, the position it attends to most (its predicted parent). The
word-level tree is read back with the convention the head was trained on (:func:`.parents.subword_parents`):

* ``"chain"`` (DBSA, Deguchi et al. 2019): a word's non-final pieces point at the next piece and its **final** piece
  carries the word's arc, so the word's head is read from its final piece;
* ``"first"`` (LISA as adapted by Bugliarello & Okazaki 2020): every piece points at the head word's first piece, so
  the word's head is read from its **first** piece.

A read piece pointing at itself is a root. Argmax heads need not form a tree: a word may point inside itself or
outside the sentence (EOS, BOS, padding), which :data:`SELF_WORD` and :data:`OUTSIDE` mark.
"""
from __future__ import annotations

from typing import List, Optional, Sequence, Tuple

import numpy as np

from .align import bpe_word_index, bpe_words, pieces_per_word
from .parsed import ParsedSentence

#: Word head: the read piece points at another piece of its own word (no valid head; never equals a gold head).
SELF_WORD = -1
#: Word head: the read piece points at EOS, BOS, padding or past the sentence (never equals a gold head).
OUTSIDE = -2
#: Subword parent: no key inside the sentence (EOS/BOS), as in the generation records.
NO_PARENT = -1

#: Conventions :func:`word_heads` reads (PASCAL's "middle" is a fixed target, not a learned parse).
HEAD_MODES = ("chain", "first")

#: CoNLL-U DEPREL of each kind of predicted head (the head column is 0 for all but ``dep``).
DEPREL_ROOT, DEPREL_DEP, DEPREL_SELF, DEPREL_OUTSIDE = "root", "dep", "dep:self", "dep:eos"


def word_heads(parents: Sequence[int], word_index: Sequence[int], mode: str) -> List[int]:
    """Per word its predicted head word: chain reads the final piece (Deguchi et al. 2019), first the first piece
    (Bugliarello & Okazaki 2020); the inverse of :func:`.parents.subword_parents` for these two modes.

    ``parents[s]`` is subword ``s``'s predicted parent as a 0-based subword position of the same line, or
    :data:`NO_PARENT` (-1) for EOS/BOS/none; a position >= the number of subwords counts as outside too.
    ``word_index[s]`` is the 0-based word of subword ``s`` (the ``word`` sidecar; starts at 0, rises by 0 or 1).
    With ``r`` the read piece of word ``w`` and ``k = parents[r]``, returns per word: 0 (root) when ``k == r``;
    the 1-based word holding ``k`` when that is another word; :data:`SELF_WORD` when ``k`` is another piece of
    ``w``; :data:`OUTSIDE` when ``k`` is not a subword of the line. Lines with several sentences need nothing
    special (the heads are line-level, like the ``head`` sidecar).
    """
    if mode not in HEAD_MODES:
        raise ValueError(f"unknown head mode {mode!r}, expected one of {', '.join(HEAD_MODES)} "
                         "(chain for DBSA, first for LISA)")
    wi = np.asarray(word_index, dtype=np.int64)  # (n_sub,)
    p = np.asarray(parents)
    if p.ndim != 1 or wi.ndim != 1 or len(p) != len(wi):
        raise ValueError(f"expected one parent per subword: {len(wi)} word indices but parents of shape {p.shape}")
    if p.dtype.kind == "f":
        if not np.all(np.isfinite(p) & (p == np.round(p))):
            bad = p[~(np.isfinite(p) & (p == np.round(p)))][:5].tolist()
            raise ValueError(f"parents must be whole subword positions, found {bad} (a PASCAL 'middle' target?)")
    elif p.dtype.kind not in "iu" and len(p):
        raise ValueError(f"parents must be integers, found dtype {p.dtype}")
    p = p.astype(np.int64)  # (n_sub,)
    n_sub = len(wi)
    if n_sub == 0:
        return []
    pieces = pieces_per_word(wi)  # (n_words,)
    ends = np.cumsum(pieces)  # (n_words,) one past each word's final piece
    read = ends - 1 if mode == "chain" else ends - pieces  # (n_words,) the piece carrying the word's arc
    key = p[read]  # (n_words,)
    inside = (key >= 0) & (key < n_sub)
    target = np.where(inside, wi[np.clip(key, 0, n_sub - 1)], -1)  # (n_words,) 0-based word of the key
    out = np.where(inside, target + 1, OUTSIDE)
    out = np.where(inside & (target == np.arange(len(pieces))), SELF_WORD, out)
    out = np.where(inside & (key == read), 0, out)
    return out.tolist()


def attachment(pred: Sequence[int], gold: Sequence[int], scorable: Optional[Sequence[bool]] = None) -> Tuple[int, int]:
    """Unlabeled attachment counts (hits, words): words whose predicted head equals the gold head (UAS = hits/words).

    ``pred`` and ``gold`` are per-word heads (1-based, 0 = root; :data:`SELF_WORD`/:data:`OUTSIDE` never match);
    ``scorable`` (optional, per word) restricts both counts to the words marked True.
    """
    p = np.asarray(pred, dtype=np.int64)
    g = np.asarray(gold, dtype=np.int64)
    if p.shape != g.shape or p.ndim != 1:
        raise ValueError(f"expected one predicted head per gold head: {p.shape} predicted, {g.shape} gold")
    keep = np.ones(len(g), dtype=bool) if scorable is None else np.asarray(scorable, dtype=bool)
    if keep.shape != g.shape:
        raise ValueError(f"expected one scorable flag per word: {keep.shape} flags for {g.shape} words")
    return int(np.sum((p == g) & keep)), int(np.sum(keep))


def hypothesis_word_index(pieces: Sequence[str], marker: str = "@@") -> List[int]:
    """0-based word of each BPE piece of a hypothesis: :func:`.align.bpe_word_index`, lenient where that is strict
    (a hypothesis may stop mid-word, so a final piece ending in the marker still closes its word)."""
    return bpe_word_index(pieces, marker, open_end=True)


def hypothesis_words(pieces: Sequence[str], marker: str = "@@") -> List[str]:
    """The words a hypothesis's BPE pieces spell (markers removed; an open final word is closed)."""
    return bpe_words(pieces, marker, open_end=True)


def predicted_sentence(words: Sequence[str], heads: Sequence[int], line: Optional[int] = None) -> ParsedSentence:
    """A :class:`ParsedSentence` of predicted word heads, ready for :func:`.parsed.format_conllu`.

    ``heads`` as :func:`word_heads` returns them. CoNLL-U has no place for a missing head, so
    :data:`SELF_WORD` and :data:`OUTSIDE` are written as head 0 with DEPREL ``dep:self`` / ``dep:eos``; a true root
    has ``root``, every other word ``dep``. ``line`` (1-based) becomes the ``# line`` comment.
    """
    if len(words) != len(heads):
        raise ValueError(f"expected one predicted head per word: {len(words)} words but {len(heads)} heads")
    n = len(words)
    out_heads: List[int] = []
    rels: List[str] = []
    for w, h in enumerate(heads):
        h = int(h)
        if h == SELF_WORD:
            out_heads.append(0)
            rels.append(DEPREL_SELF)
        elif h == OUTSIDE:
            out_heads.append(0)
            rels.append(DEPREL_OUTSIDE)
        elif 0 <= h <= n and h != w + 1:
            out_heads.append(h)
            rels.append(DEPREL_ROOT if h == 0 else DEPREL_DEP)
        else:
            raise ValueError(f"word {w} (0-based) has predicted head {h}, expected 0..{n} other than itself, "
                             f"SELF_WORD ({SELF_WORD}) or OUTSIDE ({OUTSIDE})")
    return ParsedSentence(words=list(words), heads=out_heads, deprels=rels, line=line)
