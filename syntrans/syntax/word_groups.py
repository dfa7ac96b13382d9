"""A parse contracted onto groups of consecutive words: one rule for multi-word tokens and for joined words.

Two places contract a sentence's words into fewer units, and both use these functions:

* a multi-word token (German ``zum`` = ``zu dem``) collapsed back onto its input token
  (:func:`syntrans.parsing.stanza_parser.align_to_tokens`);
* a word without a subword piece of its own joined to the word whose piece holds its characters
  (:mod:`.word_joins`).

``group`` gives, for each word (0-based), its group: nondecreasing, starting at 0 and rising by 0 or 1.

* **Heads** (:func:`group_heads`): a group's head is the group holding the head of the group's *external* word, the
  word whose head lies outside the group (0 = root stays 0). Where several words of a group have their heads outside
  it, the one closest to the root is taken (the first on a tie): that word is always external, and this choice keeps
  the group-level heads a tree (taking simply the first external word can create a cycle when a group's words are not
  connected). The group's relation is that word's relation. A group with no external word can only come from a
  malformed (cyclic) parse, which is refused.
* **Trees** (:func:`group_tree`): leaf j belongs to group ``group[j]``; the leaf of a group's first word is kept, under
  its preterminal, relabelled with the group's text; the leaves of its other words are dropped, and every node left
  with no children is removed (a node left with one child is kept, a unary node). The tree's leaves are the groups.

Pure Python (stanza's tree class imported on first use, :func:`~.trees.stanza_tree_classes`).
"""
from __future__ import annotations

from typing import List, Optional, Sequence, Tuple

from .tree_checks import head_range_fault
from .trees import TreeLike, as_tree, stanza_tree_classes


def check_groups(group: Sequence[int], n_words: int, where: str = "groups") -> int:
    """The number of groups; ValueError naming ``where`` unless ``group`` has ``n_words`` entries starting at 0 and
    rising by 0 or 1."""
    if len(group) != n_words:
        raise ValueError(f"{where}: {n_words} words but {len(group)} group entries")
    prev = -1
    for j, g in enumerate(group):
        if g not in (prev, prev + 1) or (j == 0 and g != 0):
            raise ValueError(f"{where}: word {j} is in group {g} after group {prev}: groups must start at 0 and rise "
                             "by 0 or 1")
        prev = g
    return prev + 1


def depths(heads: Sequence[int]) -> List[int]:
    """Arcs from each word to the root (heads 1-based, 0 = root); ValueError when the heads hold a cycle."""
    n = len(heads)
    depth: List[Optional[int]] = [None] * n
    for start in range(n):
        path = []
        j = start
        while j >= 0 and depth[j] is None:
            path.append(j)
            if len(path) > n:
                raise ValueError(f"the dependency heads contain a cycle through word {start + 1}")
            j = heads[j] - 1
        base = -1 if j < 0 else depth[j]
        for k, p in enumerate(reversed(path)):
            depth[p] = base + 1 + k
    return depth  # type: ignore[return-value]


def group_heads(heads: Sequence[int], deprels: Optional[Sequence[Optional[str]]],
                group: Sequence[int]) -> Tuple[List[int], Optional[List[Optional[str]]]]:
    """(group heads (1-based over groups, 0 = root), group relations or None) by the external-word rule (module
    docstring). ``heads`` (n_words,) 1-based over words; ``deprels`` (n_words,) or None."""
    m = len(heads)
    n_groups = check_groups(group, m, "group_heads")
    fault = head_range_fault(heads)
    if fault:
        raise ValueError(f"group_heads: {fault}")
    depth = depths(heads)
    members: List[List[int]] = [[] for _ in range(n_groups)]
    for j, g in enumerate(group):
        members[g].append(j)
    out_heads: List[int] = []
    out_rels: List[Optional[str]] = []
    for g, idx in enumerate(members):
        external = [j for j in idx if heads[j] == 0 or group[heads[j] - 1] != g]
        if not external:
            raise ValueError(f"group {g + 1} (words {idx[0] + 1}–{idx[-1] + 1}) has no word headed outside it: the "
                             "dependency heads hold a cycle")
        j = min(external, key=lambda k: (depth[k], k))
        out_heads.append(0 if heads[j] == 0 else group[heads[j] - 1] + 1)
        out_rels.append(None if deprels is None else deprels[j])
    return out_heads, (None if deprels is None else out_rels)


def group_tree(tree: TreeLike, group: Sequence[int], labels: Sequence[str]):
    """``tree`` rebuilt so that its leaves are ``labels`` (leaf j belongs to group ``group[j]``; rules: module
    docstring). Returns a stanza ``Tree``."""
    tree = as_tree(tree)
    Tree = stanza_tree_classes()[0]
    n_leaves = len(tree.leaf_labels())
    if n_leaves != len(group):
        raise ValueError(f"the constituency tree has {n_leaves} leaves but the parser returned {len(group)} words")
    n_groups = check_groups(group, n_leaves, "group_tree")
    if len(labels) != n_groups:
        raise ValueError(f"{n_groups} groups but {len(labels)} labels")
    leaf_no = 0
    built = {}
    stack = [(tree, False)]
    while stack:  # iterative post-order, children left to right
        node, done = stack.pop()
        if not node.children:
            g = group[leaf_no]
            first = leaf_no == 0 or group[leaf_no - 1] != g
            built[id(node)] = Tree(label=labels[g]) if first else None
            leaf_no += 1
            continue
        if not done:
            stack.append((node, True))
            stack.extend((c, False) for c in reversed(node.children))
            continue
        kids = [built.pop(id(c)) for c in node.children]
        kids = [k for k in kids if k is not None]
        built[id(node)] = Tree(label=node.label, children=kids) if kids else None
    return built[id(tree)]
