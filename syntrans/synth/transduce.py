"""Syntax-directed transduction of a source tree into a head-final target sentence.

The target is built from the source constituency tree by reordering the children of each node
and translating every word with the lexicon (:data:`syntrans.synth.lexicon.LEXICON`); the labels
stay. So the target has exactly the source's words' images, in a permutation determined by the
tree. Rules, applied at every node (by label):

* a coordination (any node with a ``CC`` child) keeps its order;
* ``VP``, ``PP`` and ``SBAR`` are mirrored (children reversed): the verb ends its VP, after its
  adjunct PP and its object (``VB NP PP -> PP NP VB``, so SVO becomes SOV), prepositions become
  postpositions (``IN NP -> NP IN``), and ``that`` closes its relative clause;
* in any other ``NP`` the post-nominal modifiers (``PP``, ``SBAR``) move in front, in mirrored
  order, and the rest (``DT JJ* NN``) keeps its order: ``DT JJ NN PP SBAR -> SBAR PP DT JJ NN``;
* every other node (``ROOT``, ``S``, ``WHNP``) keeps its order, so the subject stays first and
  the full stop last.

For example ``the cat sees the dog in the garden .`` becomes, word by word,
``the cat the garden in the dog sees .`` (before translation). Dependencies are carried over
unchanged (a target word's head is the image of its source word's head), so every target
constituent is again a contiguous span with one external head.
"""
from __future__ import annotations

from collections.abc import Sequence

from stanza.models.constituency.parse_tree import Tree

from ..syntax.parsed import ParsedSentence
from ..syntax.trees import TreeLike, as_tree
from .lexicon import LEXICON, translate_word

MIRRORED = frozenset({"VP", "PP", "SBAR"})
NP_POSTMODIFIERS = frozenset({"PP", "SBAR"})


def child_order(label: str, child_labels: Sequence[str]) -> list[int]:
    """The target order of a node's children, as indices into ``child_labels`` (see module doc)."""
    idx = list(range(len(child_labels)))
    if "CC" in child_labels:
        return idx
    if label in MIRRORED:
        return idx[::-1]
    if label == "NP":
        mods = [i for i in idx if child_labels[i] in NP_POSTMODIFIERS]
        return mods[::-1] + [i for i in idx if child_labels[i] not in NP_POSTMODIFIERS]
    return idx


def _reorder(node: Tree, counter: list[int], lexicon: dict[str, str]) -> tuple[Tree, list[int]]:
    """The transduced copy of ``node`` and the source indices of its words in target order.

    ``counter`` holds the source index of the next word (source order is left to right).
    """
    kids = node.children
    if not kids:  # a word
        counter[0] += 1
        return Tree(translate_word(node.label, lexicon)), [counter[0] - 1]
    if len(kids) == 1:  # a unary node (a preterminal, say): nothing to reorder
        child, order = _reorder(kids[0], counter, lexicon)
        return Tree(node.label, (child,)), order
    done = [_reorder(c, counter, lexicon) for c in kids]
    order: list[int] = []
    children = []
    for i in child_order(node.label, [c.label for c in kids]):
        children.append(done[i][0])
        order.extend(done[i][1])
    return Tree(node.label, children), order


def transduce_tree(tree: TreeLike, lexicon: dict[str, str] = LEXICON) -> tuple[Tree, list[int]]:
    """The target tree of a source tree and ``order``: target word j is the image of source word ``order[j]``."""
    return _reorder(as_tree(tree), [0], lexicon)


def transduce_sentence(src: ParsedSentence, lexicon: dict[str, str] = LEXICON) -> ParsedSentence:
    """The target sentence of a parsed source sentence (needs its tree; carries heads/deprels over)."""
    if src.tree is None:
        raise ValueError("transduction needs the source constituency tree")
    tree, order = transduce_tree(src.tree, lexicon)
    position = {s: t for t, s in enumerate(order)}  # source index -> target index
    heads = deprels = None
    if src.heads is not None:
        heads = [0 if src.heads[s] == 0 else position[src.heads[s] - 1] + 1 for s in order]
    if src.deprels is not None:
        deprels = [src.deprels[s] for s in order]
    return ParsedSentence(words=list(tree.leaf_labels()), heads=heads, deprels=deprels, tree=tree, line=src.line)
