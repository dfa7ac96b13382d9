"""Constituency trees: reading them and the syntactic distances of Hou et al. (2022).

Pure Python; accepts stanza ``Tree`` objects or PTB bracket strings. stanza's tree classes are imported on first
use (:func:`stanza_tree_classes`): importing stanza takes about half a second, which a training run, whose trees are
already distances in the sidecars, does not need to spend.
"""
from __future__ import annotations

import re
import sys
from typing import TYPE_CHECKING, List, Tuple, Union

if TYPE_CHECKING:
    from stanza.models.constituency.parse_tree import Tree

TreeLike = Union["Tree", str]
_TREE_MODULE = "stanza.models.constituency.parse_tree"


def stanza_tree_classes():
    """(stanza's ``Tree`` class, its ``read_trees``), imported now if not yet."""
    from stanza.models.constituency.parse_tree import Tree
    from stanza.models.constituency.tree_reader import read_trees

    return Tree, read_trees


def is_stanza_tree(value) -> bool:
    """Whether ``value`` is a stanza ``Tree`` (without importing stanza: none exists before it is imported)."""
    module = sys.modules.get(_TREE_MODULE)
    return module is not None and isinstance(value, module.Tree)


def as_tree(tree: TreeLike) -> Tree:
    """Return a stanza ``Tree`` for a ``Tree`` or a one-tree PTB bracket string."""
    if is_stanza_tree(tree):
        return tree
    if isinstance(tree, str):
        trees = stanza_tree_classes()[1](tree)
        if len(trees) != 1:
            raise ValueError(f"expected one bracketed tree, found {len(trees)} in {tree[:80]!r}")
        return trees[0]
    raise TypeError(f"expected a stanza Tree or a PTB bracket string, found {type(tree).__name__}")


def leaves(tree: TreeLike) -> List[str]:
    """The words (leaf labels) of a tree, left to right."""
    return list(as_tree(tree).leaf_labels())


def count_leaves(tree: TreeLike) -> int:
    """Number of words of a tree (a bracket string is scanned, not parsed into objects)."""
    return scan_brackets(tree)[0] if isinstance(tree, str) else len(as_tree(tree).leaf_labels())


def binarize(tree: TreeLike) -> Tree:
    """Right-factored Chomsky normal form with unary chains collapsed (the released code's preprocessing).

    A node with children c1 … ck (k > 2) becomes (X c1 (X|<…> c2 … ck)), recursively; a unary
    chain above a branching node is collapsed into that node; preterminals stay as they are.
    """
    Tree = stanza_tree_classes()[0]

    def collapse(node: Tree) -> Tree:
        while len(node.children) == 1 and node.children[0].children:
            node = node.children[0]  # collapse a unary chain (keeps preterminal → word)
        return node

    # iterative post-order (like _distances) so that deep trees cannot hit the recursion limit
    top = collapse(as_tree(tree))
    done = {}
    stack = [(top, False)]
    while stack:
        node, expanded = stack.pop()
        if not node.children or (len(node.children) == 1 and not node.children[0].children):
            done[id(node)] = node
            continue
        if not expanded:
            stack.append((node, True))
            stack.extend((collapse(c), False) for c in node.children)
            continue
        kids = [done[id(collapse(c))] for c in node.children]
        while len(kids) > 2:  # right factoring: the last two merge first
            kids = kids[:-2] + [Tree(label=f"{node.label}|<>", children=kids[-2:])]
        done[id(node)] = Tree(label=node.label, children=kids)
    return done[id(top)]


_binarize = binarize  # tree_distances' parameter of the same name hides the function

_TOKEN = re.compile(r"\(|\)|[^\s()]+")


_PRETERMINAL = re.compile(r"\([^\s()]+ [^\s()]+\)")  # (TAG word)
_OPEN_LABEL = re.compile(r"\([^\s()\x00]+")  # "(LABEL" of a phrase
_SHAPE = re.compile(r"[^()\x00]")  # anything left once labels and words are gone: not the canonical form


def scan_brackets(text: str) -> Tuple[int, List[int]]:
    """(number of leaves, Algorithm 1 distances) of one PTB bracket string (:func:`scan_brackets_checked`), through a
    faster path for trees in the canonical form (every word alone under its preterminal, every phrase labelled):
    the preterminals become one mark each, the labels go, and the brackets alone are walked. Anything else takes
    the checked path, which gives the same result or the error."""
    shape = _OPEN_LABEL.sub("(", _PRETERMINAL.sub("\x00", text)).replace(" ", "")
    if _SHAPE.search(shape) or "()" in shape or not shape.startswith("("):
        return scan_brackets_checked(text)
    n = shape.count("\x00")
    gaps = [0] * n
    stack: List[list] = []  # per open node: [leaf index after each child, largest nd of a child]
    leaf = 0
    closed = -1
    for i, c in enumerate(shape):
        if c == "(":
            stack.append([[], 0])
        elif c == ")":
            ends, top = stack.pop()
            if len(ends) > 1:
                top += 1
                for e in ends[:-1]:
                    gaps[e] = top
            if not stack:
                closed = i
                break
            parent = stack[-1]
            parent[0].append(ends[-1])
            if top > parent[1]:
                parent[1] = top
        else:  # a preterminal: its leaf ends here
            stack[-1][0].append(leaf)
            leaf += 1
    if closed != len(shape) - 1:  # unbalanced, or text after the tree: the checked path says what is wrong
        return scan_brackets_checked(text)
    gaps.pop()  # the slot after the last leaf is no gap
    return n, gaps


def scan_brackets_checked(text: str) -> Tuple[int, List[int]]:
    """(number of leaves, Algorithm 1 distances) of one PTB bracket string in a single pass.

    Same result as :func:`tree_distances` on the parsed tree, without building tree objects: the gap
    after a child's last leaf gets its parent's nd when the child is not the parent's last one.
    Raises ValueError on unbalanced or empty brackets and on a word beside other children of a node
    (stanza's reader would raise on some such trees and glue words into one leaf on others).
    """
    gaps: List[int] = []
    # per open node: [seen its label?, end leaf of each child, max nd of each child, child is a leaf?]
    stack: List[list] = []
    n_leaves = 0
    done = False
    for tok in _TOKEN.findall(text):
        if done:
            raise ValueError(f"text after the end of the tree in {text[:80]!r}")
        if tok == "(":
            if stack and stack[-1][3]:
                raise ValueError(f"a bracketed node next to a leaf in {text[:80]!r}")
            stack.append([False, [], [], False])
        elif tok == ")":
            if not stack:
                raise ValueError(f"unbalanced ')' in {text[:80]!r}")
            _, ends, maxes, _ = stack.pop()
            if not ends:
                raise ValueError(f"a node without children in {text[:80]!r}")
            if len(ends) > 1:
                nd = 1 + max(maxes)
                for e in ends[:-1]:
                    gaps[e] = nd
            else:
                nd = maxes[0]
            if stack:
                stack[-1][1].append(ends[-1])
                stack[-1][2].append(nd)
            else:
                done = True
        else:
            if not stack:
                raise ValueError(f"a word outside brackets in {text[:80]!r}")
            top = stack[-1]
            if not top[0] and not top[1]:
                top[0] = True  # the node's label
                continue
            if top[1]:  # a leaf must be a node's only child, after its label
                raise ValueError(f"word {tok!r} next to other children (a leaf must stand alone under its "
                                 f"preterminal) in {text[:80]!r}")
            top[1].append(n_leaves)
            top[2].append(0)
            top[3] = True  # this node's child is a leaf
            n_leaves += 1
            gaps.append(0)
    if stack or not done:
        raise ValueError(f"unbalanced brackets in {text[:80]!r}")
    gaps.pop()  # the slot after the last leaf is no gap
    return n_leaves, gaps


def tree_distances(tree: TreeLike, binarize: bool = False) -> List[int]:
    """Word-level syntactic distances, Hou et al. 2022, Algorithm 1 (length n − 1).

    A node's list is its children's lists joined by nd = 1 + the largest value in any child's list
    (nd = 1 when all are empty); a leaf gives []; unary chains add nothing. So d_i is the number of
    branching nodes on the longest downward path from the lowest common ancestor of w_i and w_{i+1}.
    ``binarize=True`` first applies the released code's CNF binarization (see :func:`binarize`).
    """
    if isinstance(tree, str) and not binarize:
        return scan_brackets(tree)[1]
    node = _binarize(tree) if binarize else as_tree(tree)
    return _distances(node)



def _distances(root: Tree) -> List[int]:
    # iterative post-order so that very deep (e.g. right-branching) trees cannot hit the recursion limit
    out = {}
    stack = [(root, False)]
    while stack:
        node, done = stack.pop()
        if not node.children:
            out[id(node)] = []
            continue
        if not done:
            stack.append((node, True))
            stack.extend((c, False) for c in node.children)
            continue
        lists = [out.pop(id(c)) for c in node.children]
        if len(lists) == 1:
            out[id(node)] = lists[0]
            continue
        nd = 1 + max((max(lst) for lst in lists if lst), default=0)
        joined: List[int] = []
        for k, lst in enumerate(lists):
            if k:
                joined.append(nd)
            joined.extend(lst)
        out[id(node)] = joined
    return out[id(root)]


def tree_height(tree: TreeLike) -> int:
    """Height counted like :func:`tree_distances`: branching nodes on the longest root-to-leaf path."""
    d = tree_distances(tree)
    return max(d, default=0)
