"""Neural syntactic distances (NSD) of Ma et al. 2019, "Improving Neural Machine Translation with Neural
Syntactic Distance" (NAACL). Pure Python/numpy, no fairseq.

One value per word w_1 … w_n of a sentence (i is 1-based):

* heights count branching nodes (>= 2 children) only, exactly as :func:`~syntrans.syntax.trees.tree_distances`
  does: unary chains and preterminals add nothing; H = :func:`~syntrans.syntax.trees.tree_height` (the largest
  distance, 0 for a one-word sentence);
* depth(v) of a branching node v = the number of branching proper ancestors of v (the top branching node has
  depth 0); for i < n, v_i = the lowest branching node dominating w_i and w_{i+1};
* ``dS(w_i) = H − depth(v_i)``: the height of v_i measured from the top (on a tree whose leaves all sit at the same
  branching depth this is ``tree_distances[i]``; in general it is >= it); ``dS(w_n) = H``;
* ``dG(w_i) = depth(v_i)``: the number of branching common ancestors of w_i and w_{i+1} above their lowest one;
  ``dG(w_n) = 0``; so dS + dG = H for every word;
* ``dR(w_1) = dG(w_1)``, ``dR(w_i) = dG(w_i) − dG(w_{i−1})`` (so the running sum of dR is dG);
* ``dD(w_i) = i − head(i)`` with head(i) 1-based within the sentence and 0 for the root, so the root's dD is its
  own index i.

The depths need no tree: a node's distance is 1 + the largest distance below it, so inside the span of a
node its own gaps are exactly the positions holding the span's maximum, and splitting the span at all of
them gives the spans of its children (:func:`gap_depths`). This is how the data pipeline gets dS/dG/dR from
the ``dist`` sidecar (tree distances per sentence joined by ``SENTENCE_BREAK``) alone (:func:`line_nsd`).
"""
from __future__ import annotations

import operator
from typing import TYPE_CHECKING, List, Optional, Sequence

import numpy as np

from .align import check_piece_counts
from .gaps import SENTENCE_BREAK
from .tree_checks import check_head_range, line_roots
from .trees import as_tree, is_stanza_tree, tree_distances

if TYPE_CHECKING:
    from stanza.models.constituency.parse_tree import Tree

#: Valid ``kind`` values: syntactic (dS), global (dG), relative (dR) and dependency (dD) distances.
NSD_KINDS = ("dS", "dG", "dR", "dD")
#: The kinds computed from a constituency tree (or its distances).
TREE_KINDS = ("dS", "dG", "dR")
#: Per-token NSD value of a token without one (EOS, padding) and of the decoder's BOS: far below any real value,
#: so that the data pipeline and the model's NSD layers agree on them without sharing anything but this module.
NO_NSD, BOS_NSD = -1_000_000, -1_000_001


def _check_kind(kind: str, allowed=NSD_KINDS) -> None:
    if kind not in allowed:
        raise ValueError(f"unknown NSD kind {kind!r}, expected one of {', '.join(allowed)}")


def _ints(values: Sequence[int], name: str, what: str) -> List[int]:
    """Plain Python ints of a 1-D integer sequence; ValueError naming the first non-integer entry."""
    if isinstance(values, (str, bytes)) or is_stanza_tree(values):
        raise ValueError(f"{name} must be a sequence of integers, found {type(values).__name__}")
    if isinstance(values, np.ndarray) and values.ndim != 1:
        raise ValueError(f"{name} must be 1-D, found shape {values.shape}")
    out = []
    for k, x in enumerate(values):
        try:
            out.append(operator.index(x))
        except TypeError:
            raise ValueError(f"{name}: {what} {k} (0-based) is {x!r}, expected an integer") from None
    return out


def _differences(dg: List[int]) -> List[int]:
    """dR from dG: the first value, then each value minus the one before it."""
    return dg[:1] + [b - a for a, b in zip(dg, dg[1:])]


# --------------------------------------------------------------------------- one sentence from its distances

def gap_depths(dists: Sequence[int]) -> List[int]:
    """depth(v_i) for each gap of one sentence from its tree_distances (n − 1 values) → n − 1 values.

    Splits the gap span of each node at all positions holding the span's maximum (the node's own gaps, which
    get the node's depth); the pieces between them are the children's spans, one level deeper. Raises
    ValueError on a non-integer, ``SENTENCE_BREAK`` (one sentence only: use :func:`line_nsd` for a line), a
    value < 1, or values no tree gives (a node's distance must be 1 + the largest distance below it).
    """
    d = _ints(dists, "dists", "gap")
    for k, x in enumerate(d):
        if x == SENTENCE_BREAK:
            raise ValueError(f"gap {k} (0-based) is SENTENCE_BREAK ({SENTENCE_BREAK}): these functions take one "
                             f"sentence; split a line at SENTENCE_BREAK or use line_nsd")
        if x < 1:
            raise ValueError(f"gap {k} (0-based) holds {x}, but tree distances are >= 1")
    depth = [0] * len(d)
    todo = [(0, len(d), 0)]  # (first gap, one past the last gap, depth) of a node's gap span
    while todo:
        lo, hi, k = todo.pop()
        if lo >= hi:  # a child over one word
            continue
        span = d[lo:hi]
        m = max(span)
        cuts = _positions(span, m, lo)  # the node's own gaps
        bounds = [lo - 1] + cuts + [hi]
        children = [(a + 1, b) for a, b in zip(bounds, bounds[1:])]  # gap spans between the node's own gaps
        below = max((max(d[a:b]) for a, b in children if a < b), default=0)
        if below != m - 1:
            raise ValueError(f"gap {cuts[0]} (0-based) holds {m} but the largest distance inside its constituent is "
                             f"{below}: tree distances give a node 1 + the largest distance below it (1 over words "
                             f"only); these are not the tree_distances of one sentence (shifted subword gaps?)")
        for j in cuts:
            depth[j] = k
        todo.extend((a, b, k + 1) for a, b in children)
    return depth


def _positions(span: List[int], m: int, offset: int) -> List[int]:
    """offset + every index of ``m`` in ``span`` (list.index scans in C: deep trees stay fast)."""
    out = []
    j = span.index(m)
    while True:
        out.append(offset + j)
        try:
            j = span.index(m, j + 1)
        except ValueError:
            return out


def nsd_from_distances(dists: Sequence[int], kind: str) -> List[int]:
    """dS/dG/dR of one sentence from its tree_distances (n − 1 gaps) → n values (n = len + 1).

    ``dists`` are :func:`~syntrans.syntax.trees.tree_distances` values (a sentence's row of the ``dist``
    sidecar); H is their maximum (0 when empty: a one-word sentence). See the module docstring for the
    definitions and :func:`gap_depths` for the checks.
    """
    _check_kind(kind, TREE_KINDS)
    depths = gap_depths(dists)
    if kind == "dS":
        h = max((int(x) for x in dists), default=0)
        return [h - k for k in depths] + [h]
    dg = depths + [0]
    return dg if kind == "dG" else _differences(dg)


# --------------------------------------------------------------------------- one sentence from a tree or heads

def _tree_dg(root: Tree) -> List[int]:
    """dG by counting on the tree: the branching ancestors each leaf has in common with the next, minus the lowest.

    A pre-order walk: the node taken right after leaf w_i is a child of the lowest common ancestor of w_i and
    w_{i+1} (a branching node), so its branching ancestors are exactly their common branching ancestors.
    """
    out: List[int] = []
    after_leaf = False
    stack = [(root, 0)]  # (node, its number of branching proper ancestors); iterative: deep trees cannot recurse
    while stack:
        node, above = stack.pop()
        if after_leaf:
            out.append(above - 1)
            after_leaf = False
        if not node.children:
            after_leaf = True
            continue
        inner = above + (len(node.children) >= 2)
        stack.extend((c, inner) for c in reversed(node.children))
    return out + [0]


def nsd_from_heads(heads: Sequence[int]) -> List[int]:
    """dD of one sentence: ``i − heads[i − 1]`` for i = 1 … n (the root, head 0, gets its own index i).

    ``heads`` are 1-based within the sentence, 0 = root. Raises ValueError naming the word on a non-integer
    head, a head outside 0..n, a word that is its own head, or a root count other than one (several
    sentences: use :func:`line_nsd`).
    """
    h = _ints(heads, "heads", "word")
    n = len(h)
    check_head_range(h)
    roots = [w for w, x in enumerate(h) if x == 0]
    if n and len(roots) != 1:
        raise ValueError(f"one sentence needs exactly one root (head 0), found {len(roots)} at words (0-based) "
                         f"{roots[:10]}; for a line of several sentences use line_nsd")
    return [i - x for i, x in enumerate(h, 1)]



def nsd(parse, kind: str) -> List[int]:
    """One value per word. parse: a constituency tree (stanza Tree or PTB bracket string) for dS/dG/dR;
    a sequence of dependency heads (1-based, 0 = root) of ONE sentence for dD.

    Conventions (Ma et al. 2019, with heights counted like tree_distances): H = tree_height; for i < n,
    v_i = the lowest branching node over w_i, w_{i+1} and depth(v) = its number of branching proper ancestors;
    dS(w_i) = H − depth(v_i), dS(w_n) = H; dG(w_i) = depth(v_i), dG(w_n) = 0; dR(w_1) = dG(w_1),
    dR(w_i) = dG(w_i) − dG(w_{i−1}); dD(w_i) = i − head(i) (root: i).

    dS comes from ``tree_distances`` and :func:`gap_depths`; dG (and dR) by counting the common branching
    ancestors of adjacent leaves in the tree, an independent route (so dS + dG = H is a real check).
    Raises ValueError on an unknown kind or a parse of the wrong type for the kind.
    """
    _check_kind(kind)
    is_tree = isinstance(parse, str) or is_stanza_tree(parse)
    if kind == "dD":
        if is_tree:
            raise ValueError(f"dD needs dependency heads (1-based, 0 = root), found a constituency tree "
                             f"({type(parse).__name__})")
        return nsd_from_heads(parse)
    if not is_tree:
        raise ValueError(f"{kind} needs a constituency tree (stanza Tree or PTB bracket string), "
                         f"found {type(parse).__name__}")
    if kind == "dS":
        return nsd_from_distances(tree_distances(parse), "dS")
    dg = _tree_dg(as_tree(parse))
    return dg if kind == "dG" else _differences(dg)


# --------------------------------------------------------------------------- corpus lines

def _line_dd(heads: Sequence[int]) -> List[int]:
    """dD of a line whose heads are line positions; each sentence (a contiguous run of one root's words) local."""
    h = _ints(heads, "heads", "word")
    n = len(h)
    root = line_roots(h)  # (n,) 0-based root word of each word
    out = []
    start = 0
    seen = set()
    for w in range(n):
        if w == 0 or root[w] != root[w - 1]:
            if root[w] in seen:
                raise ValueError(f"word {w} (0-based) belongs to the sentence of root word {root[w]} (0-based), "
                                 f"which does not continue here: the sentences of a line must be contiguous")
            seen.add(root[w])
            start = w
        # i − head with i and head relative to the sentence's first word: the offset cancels except at the root
        out.append(w + 1 - h[w] if h[w] else w + 1 - start)
    return out


def line_nsd(kind: str, dists=None, heads=None, n_words: Optional[int] = None) -> np.ndarray:
    """Word-level values of one corpus line (int64, one per word of the line). dists: the line's `dist`
    sidecar row (tree_distances per sentence joined by SENTENCE_BREAK) for dS/dG/dR; heads: the line's `head`
    sidecar row (1-based LINE positions, 0 = root, one root per sentence, sentences contiguous) for dD.
    Each sentence of a multi-sentence line gets its own values (its own H; dD with indices and heads relative
    to its own first word — find the sentences from the heads: each word's root, contiguous runs).

    An empty ``dists`` row means one word (a one-word line); pass ``n_words`` (e.g. from the ``word``
    sidecar) to check the count and to get an empty array for an empty line. Raises ValueError on an unknown
    kind, a missing row, bad values (see :func:`gap_depths`), heads out of range, self-heads, head cycles or
    non-contiguous sentences, and a word count other than ``n_words``.
    """
    _check_kind(kind)
    if kind == "dD":
        if heads is None:
            raise ValueError("dD needs the line's head row (heads=...)")
        out = _line_dd(heads)
    else:
        if dists is None:
            raise ValueError(f"{kind} needs the line's dist row (dists=...)")
        d = _ints(dists, "dists", "gap")
        if n_words == 0 and not d:
            return np.zeros(0, dtype=np.int64)
        out, start = [], 0
        for k in range(len(d) + 1):
            if k == len(d) or d[k] == SENTENCE_BREAK:
                out.extend(nsd_from_distances(d[start:k], kind))
                start = k + 1
    if n_words is not None and len(out) != n_words:
        raise ValueError(f"the line has {n_words} words but its {'head' if kind == 'dD' else 'dist'} row gives "
                         f"{len(out)}")
    return np.asarray(out, dtype=np.int64)


def subword_nsd(values, pieces) -> np.ndarray:
    """Subword view: every subword of a word carries its word's value (np.repeat), int64.

    ``values`` has one integer per word, ``pieces[w]`` >= 1 subwords per word; returns ``sum(pieces)`` values.
    """
    v, p = np.asarray(values), np.asarray(pieces)
    if v.ndim != 1 or p.ndim != 1:
        raise ValueError(f"values and pieces must be 1-D, found shapes {v.shape} and {p.shape}")
    if len(v) != len(p):
        raise ValueError(f"expected one value per word: {len(p)} piece counts but {len(v)} values")
    if not len(v):
        return np.zeros(0, dtype=np.int64)
    check_piece_counts(p, v, "values")
    return np.repeat(v.astype(np.int64, copy=False), p.astype(np.int64, copy=False))
