"""One parsed sentence and the syntax inputs the methods compute from it (Hou et al. 2022, Fig. 1; PASCAL's weights).

Panels of :func:`plot_sentence`:

(a) the constituency tree (:func:`tree_layout`: leaves evenly spaced on the bottom line, each internal node
    above the mean of its children, depth counted from the top);
(b) the syntactic distances between consecutive words, Hou et al. 2022, Algorithm 1
    (:func:`~syntrans.syntax.trees.tree_distances`), one bar per word gap;
(c) the hard syntactic local range mask M, Algorithm 2, and (d) the soft one, Eq. 6–7 with temperature τ
    (:func:`~syntrans.syntax.masks.local_range_mask`), query words as rows and key words as columns;
(e) the PASCAL weights W[i, j] = N(j; p_i, σ²) (Bugliarello & Okazaki 2020, PASCAL), p_i the position of
    word i's dependency parent (the root: its own position), with the dependency arcs drawn over the words.

Word level: every word is one token. The model sees subword gaps (distance + 1 between words, 1 inside a
word, :mod:`syntrans.syntax.gaps`); the mask depends only on differences and comparisons of gaps, so on whole
words it is the same. A sentence without a tree (CoNLL-U with dependencies only) draws only (e); one without
dependencies (PTB brackets) draws (a)–(d).

The numbers come from :func:`sentence_matrices` (pure; no matplotlib); the figure draws exactly those arrays.
Plots use matplotlib's Agg canvas directly (no pyplot); matplotlib is imported inside the plotting functions.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple, Union

import numpy as np
import torch

from ..parsing.names import TRIVIAL_PARSERS
from ..parsing.stanza_parser import StanzaParser
from ..parsing.trivial import trivial_parse
from ..syntax.masks import local_range_mask
from ..syntax.parents import subword_parents_array
from ..syntax.parsed import ParsedSentence, read_parsed
from ..syntax.pascal_weights import pascal_weights
from ..syntax.trees import TreeLike, as_tree
from .gates import IMAGE_SUFFIXES, _check_image_path, _figure, _save  # the figure helpers of syntrans-plot gates

PathLike = Union[str, "os.PathLike[str]"]
#: the matrices and vectors :func:`sentence_matrices` computes (those a sentence can give)
MATRIX_NAMES = ("gaps", "hard", "soft", "pascal")
ANNOTATE_MAX_WORDS = 12  # heat map cells show their value up to this sentence length


# ------------------------------------------------------------------------------------------- numbers

def word_parents(heads: Sequence[int]) -> np.ndarray:
    """0-based parent position of every word from 1-based dependency heads (0 = root): (n,) float64.

    The same convention as the model's subword parents (:func:`~syntrans.syntax.parents.subword_parents_array`,
    one piece per word): the head word's position, a root's parent its own position.
    """
    heads = np.asarray(heads, dtype=np.int64)
    return subword_parents_array(heads, np.ones(len(heads), dtype=np.int64), "middle")


def sentence_matrices(parsed: ParsedSentence, tau: float = 10.0, sigma: float = 1.0) -> Dict[str, np.ndarray]:
    """The syntax inputs of one sentence of n words, as numpy arrays:

    * ``gaps`` (n−1,) int64: syntactic distances d_1 … d_{n−1} (Hou et al. 2022, Algorithm 1);
    * ``hard`` (n, n) float32: the local range mask of Algorithm 2 (0/1), M[i, j] for query i, key j;
    * ``soft`` (n, n) float32: the soft mask of Eq. 6–7, M[i, j] = ∏ σ(2(g_ref − g_k)/τ);
    * ``pascal`` (n, n) float32: W[i, j] = N(j; p_i, σ²) (Bugliarello & Okazaki 2020), p_i from the heads.

    The first three need a constituency tree, ``pascal`` needs dependency heads; keys a sentence cannot give
    are absent. ValueError when it has neither, or for τ ≤ 0 or σ ≤ 0.
    """
    if not tau > 0 or not sigma > 0:
        raise ValueError(f"tau and sigma must be > 0, found tau={tau}, sigma={sigma}")
    n = len(parsed.words)
    if parsed.tree is None and parsed.heads is None:
        raise ValueError("the sentence has neither a constituency tree nor dependency heads: nothing to draw")
    out: Dict[str, np.ndarray] = {}
    if parsed.tree is not None:
        gaps = np.asarray(parsed.distances(), dtype=np.int64)  # (n−1,)
        g = torch.from_numpy(gaps)
        out["gaps"] = gaps
        out["hard"] = local_range_mask(g, None).numpy()  # (n, n)
        out["soft"] = local_range_mask(g, float(tau)).numpy()  # (n, n)
    if parsed.heads is not None:
        parents = torch.from_numpy(word_parents(parsed.heads)).unsqueeze(0)  # (1, n)
        out["pascal"] = pascal_weights(parents, n, float(sigma))[0].numpy()  # (n, n)
    return out


@dataclass
class TreeLayout:
    """Node positions of a drawn tree: node k has ``labels[k]`` at (``x[k]``, ``y[k]``), y = depth from the top
    (the root 0, every leaf on the bottom line); ``edges`` are (parent, child) node indices; ``leaves`` the
    leaf nodes left to right (leaf w at x = w)."""

    labels: List[str]
    x: List[float]
    y: List[float]
    edges: List[Tuple[int, int]]
    leaves: List[int]


def tree_layout(tree: TreeLike) -> TreeLayout:
    """Our own simple layout: leaves evenly spaced at x = 0 … n−1 on the bottom line, each internal node at its
    depth from the top and above the mean x of its children. Iterative, so deep trees need no recursion."""
    root = as_tree(tree)
    labels: List[str] = []
    depth: List[int] = []
    children: List[List[int]] = []
    parent_edges: List[Tuple[int, int]] = []
    order: List[int] = []  # pre-order node indices
    stack = [(root, 0, -1)]
    while stack:
        node, d, parent = stack.pop()
        k = len(labels)
        labels.append(str(node.label))
        depth.append(d)
        children.append([])
        order.append(k)
        if parent >= 0:
            children[parent].append(k)
            parent_edges.append((parent, k))
        stack.extend((c, d + 1, k) for c in reversed(node.children))  # left child popped first
    leaves = [k for k in order if not children[k]]
    bottom = max(depth[k] for k in leaves)
    x = [0.0] * len(labels)
    y = [float(d) for d in depth]
    for w, k in enumerate(leaves):
        x[k], y[k] = float(w), float(bottom)
    for k in reversed(order):  # children come after their parent in pre-order
        if children[k]:
            x[k] = float(np.mean([x[c] for c in children[k]]))
    return TreeLayout(labels, x, y, parent_edges, leaves)


# ------------------------------------------------------------------------------------------- sources

def sentence_from_text(text: str, parser: str = "stanza", lang: str = "en") -> ParsedSentence:
    """Parse one tokenized sentence (words split on spaces) with ``parser``: ``right-branching``,
    ``left-branching``, ``flat`` (model-free, :mod:`syntrans.parsing.trivial`) or ``stanza`` (``lang``'s models;
    :class:`~syntrans.parsing.stanza_parser.MissingModelsError` when they are not installed)."""
    tokens = text.split()
    if not tokens:
        raise ValueError("the sentence is empty: give its tokenized words, separated by spaces")
    if parser in TRIVIAL_PARSERS:
        return trivial_parse(tokens, parser)
    if parser != "stanza":
        raise ValueError(f"unknown parser {parser!r}: expected stanza or one of {', '.join(TRIVIAL_PARSERS)}")
    return StanzaParser(lang=lang).parse_batch([tokens])[0]


def sentence_from_corpus(path: PathLike, line: int, sentence: int = 1) -> ParsedSentence:
    """Sentence ``sentence`` (1-based) of text line ``line`` (1-based: the ``# line = N`` comment of CoNLL-U, the
    tree number of PTB brackets) of a parsed corpus (:func:`~syntrans.syntax.parsed.read_parsed`).
    Errors name the file and the line."""
    path = str(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path}: no such parsed corpus (CoNLL-U or PTB brackets)")
    if line < 1:
        raise ValueError(f"{path}: line {line}: lines count from 1")
    sentences = read_parsed(path)
    on_line = [s for s in sentences if s.line == line]
    if not on_line:
        last = max((s.line for s in sentences), default=0)
        if line > last:
            raise ValueError(f"{path}: line {line}: no such line, the corpus has sentences on lines 1..{last}")
        raise ValueError(f"{path}: line {line}: no sentence on this line (an empty line of the text)")
    if not 1 <= sentence <= len(on_line):
        raise ValueError(f"{path}: line {line} holds {len(on_line)} sentence(s), sentence {sentence} was asked for")
    return on_line[sentence - 1]


# ---------------------------------------------------------------------------------------------- plots

def _heatmap(fig, ax, m: np.ndarray, words: Sequence[str], title: str, vmax: float, label: str):
    """One (n, n) matrix, query words as rows, key words as columns; returns the image."""
    image = ax.imshow(m, cmap="viridis", vmin=0.0, vmax=vmax, aspect="equal", interpolation="nearest")
    n = len(words)
    ax.set_xticks(range(n))
    ax.set_xticklabels(words, rotation=90, fontsize=8)
    ax.set_yticks(range(n))
    ax.set_yticklabels(words, fontsize=8)
    ax.set_xlabel("key word j", fontsize=8)
    ax.set_ylabel("query word i", fontsize=8)
    ax.tick_params(length=0)
    ax.set_title(title, fontsize=9)
    if n <= ANNOTATE_MAX_WORDS:
        for (i, j), v in np.ndenumerate(m):
            ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=6,
                    color="white" if v < 0.6 * vmax else "black")
    fig.colorbar(image, ax=ax, fraction=0.046, pad=0.04).set_label(label, fontsize=8)
    return image


def _draw_tree(ax, tree: TreeLike) -> TreeLayout:
    layout = tree_layout(tree)
    for a, b in layout.edges:
        ax.plot([layout.x[a], layout.x[b]], [layout.y[a], layout.y[b]], color="0.55", linewidth=1.0, zorder=1)
    leaves = set(layout.leaves)
    for k, label in enumerate(layout.labels):
        leaf = k in leaves
        ax.text(layout.x[k], layout.y[k], label, ha="center", va="top" if leaf else "center", zorder=2,
                fontsize=9, fontweight="bold" if leaf else "normal",
                bbox=None if leaf else dict(boxstyle="round,pad=0.2", facecolor="white", edgecolor="0.55"))
    ax.set_ylim(max(layout.y) + 0.6, -0.5)  # depth grows downwards
    ax.axis("off")
    return layout


def _draw_gaps(ax, gaps: np.ndarray, words: Sequence[str]) -> None:
    """Bars between the words: gap k (between word k and k+1) at x = k + 0.5, height d_{k+1}."""
    xs = np.arange(len(gaps)) + 0.5
    ax.bar(xs, gaps, width=0.5, color="tab:orange")
    for x, v in zip(xs, gaps):
        ax.text(x, v, f"{int(v)}", ha="center", va="bottom", fontsize=8)
    ax.set_xticks(range(len(words)))
    ax.set_xticklabels(words, fontsize=8)
    ax.set_ylabel("distance", fontsize=8)
    ax.set_ylim(0, max(1, int(gaps.max(initial=0))) * 1.25)
    ax.set_title("(b) syntactic distances between words (Hou et al. 2022, Algorithm 1)", fontsize=9)
    for spine in ("top", "right"):
        ax.spines[spine].set_visible(False)


def _draw_arcs(ax, words: Sequence[str], heads: Sequence[int], deprels: Optional[Sequence[str]]) -> None:
    """Dependency arcs over the words: a half ellipse from each head to its dependent (a triangle marks the
    dependent), height growing with the arc's length; the root gets a vertical stroke."""
    n = len(words)
    for j, w in enumerate(words):
        ax.text(j, 0.0, w, ha="center", va="top", fontsize=9, fontweight="bold")
    span = max([abs(i - (h - 1)) for i, h in enumerate(heads) if h > 0], default=1)
    t = np.linspace(0.0, np.pi, 48)
    for i, h in enumerate(heads):
        if h == 0:
            ax.plot([i, i], [0.12, 1.05], color="tab:blue", linewidth=0.9)
            ax.text(i, 1.08, "root", ha="center", va="bottom", fontsize=7, color="tab:blue")
            ax.plot([i], [0.12], marker="v", markersize=4, color="tab:blue")
            continue
        j = h - 1
        height = 0.25 + 0.75 * abs(i - j) / span
        xs = (i + j) / 2.0 + (j - i) / 2.0 * np.cos(t)  # from the head (t = 0) to the dependent (t = π)
        ax.plot(xs, 0.12 + height * np.sin(t), color="tab:blue", linewidth=0.9)
        ax.plot([i], [0.12], marker="v", markersize=4, color="tab:blue")
        if deprels:
            ax.text((i + j) / 2.0, 0.14 + height, deprels[i], ha="center", va="bottom", fontsize=6, color="tab:blue")
    ax.set_xlim(-0.5, n - 0.5)
    ax.set_ylim(-0.45, 1.3)
    ax.axis("off")
    ax.set_title("dependency arcs (head → dependent ▾); p_i = position of word i's head", fontsize=9)


def _note(ax, text: str) -> None:
    ax.text(0.5, 0.5, text, ha="center", va="center", fontsize=9, wrap=True, transform=ax.transAxes)
    ax.axis("off")


def plot_sentence(parsed: ParsedSentence, tau: float = 10.0, sigma: float = 1.0, title: Optional[str] = None):
    """The figure of one parsed sentence (panels: module docstring) and the arrays it draws.

    Returns ``(fig, matrices)``, ``matrices`` from :func:`sentence_matrices` (``gaps``, ``hard``, ``soft``,
    ``pascal``, those the sentence can give). Every panel's Axes carries a label (``ax.get_label()``): ``tree``,
    ``gaps`` (the bars' heights are the gaps), ``hard``, ``soft``, ``pascal`` (``ax.images[0]`` holds the
    matrix), ``arcs``, and ``note`` where a part of the parse is missing. Save with :func:`save_figure`.
    """
    matrices = sentence_matrices(parsed, tau, sigma)
    words = list(parsed.words)
    n = len(words)
    has_tree, has_deps = "gaps" in matrices, "pascal" in matrices
    width = min(40.0, max(12.0, 0.8 * n + 2.0))  # inches; the three heat maps share it
    levels = max(tree_layout(parsed.tree).y) + 1 if has_tree else 0
    rows = [("tree", 0.6 + 0.4 * levels), ("gaps", 1.6)] if has_tree else [("note", 0.6)]
    rows += [("arcs", 1.3)] if has_deps else []
    rows += [("maps", max(3.2, width / 3.4))]
    fig = _figure(width, sum(h for _, h in rows) + 0.8)
    grid = fig.add_gridspec(len(rows), 3, height_ratios=[h for _, h in rows], hspace=0.55, wspace=0.7)
    top_axes = None
    for r, (kind, _) in enumerate(rows):
        if kind == "maps":
            continue
        ax = fig.add_subplot(grid[r, :], sharex=top_axes if kind == "gaps" else None)
        ax.set_label(kind)
        if kind == "tree":
            top_axes = ax
            _draw_tree(ax, parsed.tree)
            ax.set_xlim(-0.5, n - 0.5)
            ax.set_title("(a) constituency tree", fontsize=9)
        elif kind == "gaps":
            _draw_gaps(ax, matrices["gaps"], words)
        elif kind == "arcs":
            _draw_arcs(ax, words, parsed.heads, parsed.deprels)
        else:
            _note(ax, "no constituency tree in this parse (dependencies only): panels (a)–(d), the tree, its "
                      "syntactic distances and the local range masks, need one")
    maps = len(rows) - 1
    if has_tree:
        ax = fig.add_subplot(grid[maps, 0])
        ax.set_label("hard")
        _heatmap(fig, ax, matrices["hard"], words, "(c) hard local range mask M (Algorithm 2)", 1.0, "M[i, j]")
        ax = fig.add_subplot(grid[maps, 1])
        ax.set_label("soft")
        _heatmap(fig, ax, matrices["soft"], words, f"(d) soft mask M, τ = {tau:g} (Eq. 6–7)", 1.0, "M[i, j]")
    ax = fig.add_subplot(grid[maps, 2 if has_tree else 1])
    if has_deps:
        ax.set_label("pascal")
        m = matrices["pascal"]
        _heatmap(fig, ax, m, words, f"(e) PASCAL weights N(j; p_i, σ²), σ = {sigma:g}", float(m.max()), "W[i, j]")
    else:
        ax.set_label("note")
        _note(ax, "no dependency heads in this parse:\n(e) PASCAL weights need them")
    head = title if title is not None else " ".join(words)
    if parsed.failed:
        head += f"\n(fallback parse: {parsed.failed})"
    fig.suptitle(head, fontsize=11)
    return fig, matrices


def check_output_paths(figure: PathLike, matrices: Optional[PathLike] = None) -> None:
    """ValueError (naming the file) unless ``figure`` ends in .png, .pdf or .svg and ``matrices`` (if given) in .npz."""
    suffix = Path(figure).suffix.lower()
    if suffix not in IMAGE_SUFFIXES:
        raise ValueError(f"{figure}: unsupported image type {suffix or '(none)'!r}; use one of {', '.join(IMAGE_SUFFIXES)}")
    if matrices is not None and Path(matrices).suffix.lower() != ".npz":
        raise ValueError(f"{matrices}: the matrices are written as .npz; give a file name ending in .npz")


def save_figure(fig, out_path: PathLike) -> Path:
    """Save ``fig`` to ``out_path`` (.png, .pdf or .svg by its suffix; folders are created)."""
    out = _check_image_path(out_path)
    _save(fig, out)
    return out


def save_matrices(path: PathLike, arrays: Dict[str, np.ndarray]) -> Path:
    """Write named arrays to an ``.npz`` file (``numpy.load(path)`` reads them back, no pickle needed)."""
    path = Path(path)
    if path.suffix.lower() != ".npz":
        raise ValueError(f"{path}: the matrices are written as .npz; give a file name ending in .npz")
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        np.savez(f, **{k: np.asarray(v) for k, v in arrays.items()})
    return path
