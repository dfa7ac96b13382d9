"""Path lengths in a dependency tree: the distance of syntax-aware local attention (SLA, Li et al. 2021, "Improving
BERT with Syntax-aware Local Attention", Findings of ACL), as Hou et al. ("Learning to Adaptively Incorporate External
Syntax through Gated Self-Attention", §5.2) describe it: "The distance between two nodes is defined as their shortest
path length in the dependency tree."

Word level (:func:`word_path_lengths`) and subword level (:func:`subword_path_lengths`: the subwords of one word are
at distance 0 of each other, subword i vs j takes their words' distance). Words of different sentences of one line
(each sentence has its own root) have no path: :data:`NO_PATH`, larger than any threshold.
"""
from __future__ import annotations

from typing import List, Sequence

import numpy as np

from .align import check_piece_counts
from .tree_checks import line_roots

#: the length of a path that does not exist (words of two sentences of one line): above any window's threshold
NO_PATH = int(np.iinfo(np.int64).max)


def _check_dependency_heads(heads: np.ndarray) -> None:
    """The dependency heads of a line, ``heads[w]`` the 1-based head word of word w (0 = root): a 1-D integer array
    whose heads lie in range (:func:`~syntrans.syntax.tree_checks.check_head_range`) and run into no cycle
    (:func:`~syntrans.syntax.tree_checks.line_roots`). Raises ValueError naming the first bad word."""
    if heads.ndim != 1:
        raise ValueError(f"heads must be 1-D, found shape {heads.shape}")
    if heads.size and heads.dtype.kind not in "iu":
        raise ValueError(f"heads must be integers, found dtype {heads.dtype}")
    line_roots(heads)


def word_path_lengths(heads: Sequence[int]) -> np.ndarray:
    """All-pairs shortest path lengths of the dependency tree given by ``heads`` (Hou et al., gated self-attention,
    §5.2: "their shortest path length in the dependency tree"), every arc one step in either direction.

    ``heads[w]`` is the 1-based head word of word w (0 = root; a line holding several sentences has its heads offset
    to line positions and one root per sentence). Returns (n, n) int64: D[u, v] the number of arcs between u and v,
    D[u, u] = 0, :data:`NO_PATH` between words of different sentences. Breadth-first search from every word."""
    heads = np.asarray(heads)
    _check_dependency_heads(heads)
    n = len(heads)
    neighbours: List[List[int]] = [[] for _ in range(n)]
    for w, h in enumerate(heads.tolist()):
        if h:
            neighbours[w].append(h - 1)
            neighbours[h - 1].append(w)
    out = np.full((n, n), NO_PATH, dtype=np.int64)
    for start in range(n):
        row = out[start]
        row[start] = 0
        frontier, d = [start], 0
        while frontier:
            d += 1
            nxt = []
            for u in frontier:
                for v in neighbours[u]:
                    if row[v] == NO_PATH:
                        row[v] = d
                        nxt.append(v)
            frontier = nxt
    return out


def subword_path_lengths(heads: Sequence[int], pieces: Sequence[int]) -> np.ndarray:
    """:func:`word_path_lengths` on subwords: ``pieces[w]`` >= 1 subwords of word w, in order; subwords i and j take
    their words' distance (0 within one word). Returns (sum(pieces), sum(pieces)) int64."""
    heads, pieces = np.asarray(heads), np.asarray(pieces)
    if pieces.ndim != 1 or len(pieces) != len(heads):
        raise ValueError(f"expected one piece count per word: {len(heads)} heads but pieces of shape {pieces.shape}")
    if len(pieces):
        check_piece_counts(pieces, heads, "heads")
    words = word_path_lengths(heads)
    word_of = np.repeat(np.arange(len(pieces)), pieces)  # (n_sub,) each subword's word
    return words[np.ix_(word_of, word_of)]
