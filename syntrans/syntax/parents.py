"""Subword parent positions from word dependency heads: PASCAL (Bugliarello & Okazaki 2020), LISA, DBSA (Deguchi et al. 2019)."""
from __future__ import annotations

from typing import List, Sequence

import numpy as np

from .align import check_piece_counts
from .tree_checks import check_head_range

#: Valid ``mode`` values of :func:`subword_parents`.
PARENT_MODES = ("middle", "first", "chain")


def subword_parents(heads: Sequence[int], pieces: Sequence[int], mode: str) -> List[float]:
    """Subword parents: PASCAL "middle" (Bugliarello & Okazaki 2020), LISA "first", DBSA "chain" (Deguchi et al. 2019).

    ``heads[w]`` is the 1-based head word of word ``w`` within the line (0 = root); a line holding several
    sentences has its heads already offset to line positions and one root per sentence. ``pieces[w]`` >= 1 is
    the number of BPE subwords of word ``w``; word ``w`` occupies subwords ``start[w] .. start[w] + pieces[w] - 1``.
    Returns one 0-based parent position per subword (``sum(pieces)`` floats). With ``t`` the head word of
    ``w`` (``t = w`` itself when ``w`` is a root):

    * ``"middle"`` (PASCAL): every subword of ``w`` → ``start[t] + (pieces[t] - 1) / 2``, the mean position of
      ``t``'s subwords (x.5 values occur when ``t`` has an even number of pieces);
    * ``"first"`` (LISA as adapted by Bugliarello & Okazaki): every subword of ``w`` → ``start[t]``;
    * ``"chain"`` (DBSA): a non-final piece at ``s`` → ``s + 1``; the final piece of ``w`` → ``start[t]`` for a
      non-root word, its own position for a root word.

    Raises ValueError on mismatched lengths, a piece count < 1, a head outside ``0..n_words``, a word that is
    its own head, or an unknown mode. Cycles are not checked.
    """
    return subword_parents_array(np.asarray(heads), np.asarray(pieces), mode).tolist()


def _check(heads: np.ndarray, pieces: np.ndarray, mode: str) -> None:
    """Validate :func:`subword_parents_array` inputs; raises ValueError naming the first bad word."""
    if mode not in PARENT_MODES:
        raise ValueError(f"unknown parent mode {mode!r}, expected one of {', '.join(PARENT_MODES)}")
    if heads.ndim != 1 or pieces.ndim != 1:
        raise ValueError(f"heads and pieces must be 1-D, found shapes {heads.shape} and {pieces.shape}")
    if len(heads) != len(pieces):
        raise ValueError(f"expected one head per word: {len(pieces)} piece counts but {len(heads)} heads")
    n = len(heads)
    if n == 0:
        return
    check_piece_counts(pieces, heads, "heads")
    check_head_range(heads)


def subword_parents_array(heads: np.ndarray, pieces: np.ndarray, mode: str) -> np.ndarray:
    """Vectorised :func:`subword_parents`: int arrays (n,), (n,) → float64 (sum(pieces),); same checks."""
    heads, pieces = np.asarray(heads), np.asarray(pieces)
    _check(heads, pieces, mode)
    n = len(heads)
    if n == 0:
        return np.zeros(0, dtype=np.float64)
    heads, pieces = heads.astype(np.int64, copy=False), pieces.astype(np.int64, copy=False)
    ends = np.cumsum(pieces)  # (n,) one past each word's last subword
    starts = ends - pieces  # (n,) first subword of each word
    is_root = heads == 0  # (n,)
    target = np.where(is_root, np.arange(n), heads - 1)  # (n,) 0-based head word, self for roots
    if mode == "middle":
        per_word = starts[target] + (pieces[target] - 1) / 2.0  # (n,) float
        return np.repeat(per_word, pieces)
    if mode == "first":
        return np.repeat(starts[target].astype(np.float64), pieces)
    # chain: each subword → the next one, then overwrite every word's final piece
    out = np.arange(1, int(ends[-1]) + 1, dtype=np.float64)  # (sum(pieces),)
    last = ends - 1  # (n,) final piece of each word
    out[last] = np.where(is_root, last, starts[target])
    return out
