"""Constituency trees: reading them and the syntactic distances of Hou et al. (2022).

Pure Python; accepts stanza ``Tree`` objects or PTB bracket strings.
"""
from __future__ import annotations

from typing import List, Sequence, Union

from stanza.models.constituency.parse_tree import Tree
from stanza.models.constituency.tree_reader import read_trees

TreeLike = Union[Tree, str]


def as_tree(tree: TreeLike) -> Tree:
    """Return a stanza ``Tree`` for a ``Tree`` or a one-tree PTB bracket string."""
    if isinstance(tree, Tree):
        return tree
    if isinstance(tree, str):
        trees = read_trees(tree)
        if len(trees) != 1:
            raise ValueError(f"expected one bracketed tree, found {len(trees)} in {tree[:80]!r}")
        return trees[0]
    raise TypeError(f"expected a stanza Tree or a PTB bracket string, found {type(tree).__name__}")


def leaves(tree: TreeLike) -> List[str]:
    """The words (leaf labels) of a tree, left to right."""
    return list(as_tree(tree).leaf_labels())


def binarize(tree: TreeLike) -> Tree:
    """Right-factored Chomsky normal form with unary chains collapsed (the released code's preprocessing).

    A node with children c1 … ck (k > 2) becomes (X c1 (X|<…> c2 … ck)), recursively; a unary
    chain above a branching node is collapsed into that node; preterminals stay as they are.
    """
    def walk(node: Tree) -> Tree:
        while len(node.children) == 1 and node.children[0].children:
            node = node.children[0]  # collapse a unary chain (keeps preterminal → word)
        if not node.children or (len(node.children) == 1 and not node.children[0].children):
            return node
        kids = [walk(c) for c in node.children]
        while len(kids) > 2:  # right factoring: the last two merge first
            kids = kids[:-2] + [Tree(label=f"{node.label}|<>", children=kids[-2:])]
        return Tree(label=node.label, children=kids)

    return walk(as_tree(tree))


def tree_distances(tree: TreeLike, binarize: bool = False) -> List[int]:
    """Word-level syntactic distances, Hou et al. 2022, Algorithm 1 (length n − 1).

    A node's list is its children's lists joined by nd = 1 + the largest value in any child's list
    (nd = 1 when all are empty); a leaf gives []; unary chains add nothing. So d_i is the number of
    branching nodes on the longest downward path from the lowest common ancestor of w_i and w_{i+1}.
    ``binarize=True`` first applies the released code's CNF binarization (see :func:`binarize`).
    """
    node = _binarize(tree) if binarize else as_tree(tree)
    return _distances(node)


_binarize = binarize


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


def check_tokens(tree: TreeLike, words: Sequence[str]) -> None:
    """Raise ValueError when a tree's leaves are not the given words in number."""
    n = len(leaves(tree))
    if n != len(words):
        raise ValueError(f"tree has {n} leaves but the sentence has {len(words)} words")
