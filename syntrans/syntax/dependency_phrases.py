"""Phrase-structure trees from dependency trees (pure, no fairseq): constituency training data where a language has a
dependency treebank but no constituency one (German here: UD GSD).

The conversion is the flattest one of Xia & Palmer (2001, "Converting dependency structures to phrase structures",
§3: each head projects one phrase holding itself and the phrases of all its dependents, in word order):

* a word without dependents is its preterminal ``(UPOS word)``;
* a word with dependents projects ``(XP …)`` over its own preterminal and its dependents' phrases, in word order; the
  label comes from the head's UPOS (:data:`PHRASE_OF`): ``NP`` for nouns, pronouns, proper nouns and numbers (``PP``
  when one of its dependents is a ``case`` marker, UD's adposition attachment), ``VP`` for verbs and auxiliaries,
  ``AP``, ``ADVP``; other heads ``XP``;
* the root's phrase is ``S`` when it is verbal, and everything sits under ``ROOT``.

A phrase must be contiguous, so a non-projective tree is first made projective by lifting (Nivre & Nilsson 2005,
"Pseudo-projective dependency parsing", §2: a dependent whose arc crosses another is attached to its head's head,
shortest non-projective arcs first, until no arc crosses; the labels are not encoded). Lifted arcs are counted.
"""
from __future__ import annotations

from typing import List, Optional, Sequence, Tuple

#: the phrase label a head of each UPOS projects (others: ``XP``)
PHRASE_OF = {"NOUN": "NP", "PROPN": "NP", "PRON": "NP", "NUM": "NP", "VERB": "VP", "AUX": "VP", "ADJ": "AP",
             "ADV": "ADVP"}
#: what a bracket (or a space) inside a word is written as in a PTB leaf
_LEAF_ESCAPES = (("(", "-LRB-"), (")", "-RRB-"), (" ", "_"))


def _nonprojective(heads: Sequence[int]) -> List[int]:
    """The 0-based words whose arc is non-projective: some word between the word and its head is not dominated by
    the head (heads 1-based, 0 = root)."""
    n = len(heads)

    def dominated(j: int, h: int) -> bool:  # j (0-based) below h (1-based)?
        seen = 0
        while heads[j] != 0 and seen <= n:
            if heads[j] == h:
                return True
            j, seen = heads[j] - 1, seen + 1
        return False

    out = []
    for d in range(n):
        h = heads[d]
        if h == 0:
            continue
        lo, hi = sorted((d, h - 1))
        if any(not dominated(k, h) for k in range(lo + 1, hi)):
            out.append(d)
    return out


def projectivize(heads: Sequence[int]) -> Tuple[List[int], int]:
    """(projective heads, arcs lifted): each non-projective arc, shortest first, lifted to the head's head until none
    is left (module docstring). Heads 1-based, 0 = root; the input must be a tree."""
    heads = list(heads)
    lifted = 0
    while True:
        bad = _nonprojective(heads)
        if not bad:
            return heads, lifted
        d = min(bad, key=lambda k: (abs(heads[k] - 1 - k), k))
        heads[d] = heads[heads[d] - 1]
        lifted += 1


def phrase_tree(words: Sequence[str], heads: Sequence[int], upos: Sequence[str],
                deprels: Optional[Sequence[str]] = None) -> Tuple[str, int]:
    """(the PTB bracket string of the sentence's phrase-structure tree, arcs lifted to make it projective); rules:
    module docstring. ``heads`` 1-based (0 = root), one root; ``deprels`` give ``case`` markers (PP)."""
    n = len(words)
    if not (len(heads) == len(upos) == n) or (deprels is not None and len(deprels) != n):
        raise ValueError(f"{n} words but {len(heads)} heads and {len(upos)} tags"
                         + ("" if deprels is None else f" and {len(deprels)} relations"))
    roots = [j for j, h in enumerate(heads) if h == 0]
    if len(roots) != 1:
        raise ValueError(f"expected one root, found {len(roots)}")
    heads, lifted = projectivize(heads)
    kids: List[List[int]] = [[] for _ in range(n)]
    for d, h in enumerate(heads):
        if h:
            kids[h - 1].append(d)

    def leaf(j: int) -> str:
        w = words[j]
        for a, b in _LEAF_ESCAPES:  # brackets anywhere in a word (the emoticon ``:-)``), spaces (``100 000``)
            w = w.replace(a, b)
        return f"({upos[j] or 'X'} {w})"

    def phrase(j: int) -> str:  # recursion as deep as the tree (UD trees are tens of arcs deep at most)
        if not kids[j]:
            return leaf(j)
        label = PHRASE_OF.get(upos[j], "XP")
        if label == "NP" and deprels is not None and any(deprels[k].split(":")[0] == "case" for k in kids[j]):
            label = "PP"
        parts = [phrase(k) if k != j else leaf(j) for k in sorted(kids[j] + [j])]
        return f"({label} {' '.join(parts)})"

    top = phrase(roots[0])
    if upos[roots[0]] in ("VERB", "AUX") and kids[roots[0]]:
        top = "(S" + top[len("(VP"):]
    return f"(ROOT {top})", lifted
