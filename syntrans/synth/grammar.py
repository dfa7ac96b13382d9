"""A small recursive English-like grammar with gold constituency trees and dependency heads.

Phrase structure (PTB labels; preterminals DT JJ NN VB IN CC WDT and ``.``)::

    ROOT -> S                      S    -> S CC S [CC S] .   (clause coordination, top level only)
    S    -> NP VP [.]              VP   -> VB | VB NP | VB PP | VB NP PP
    NP   -> NP CC NP [CC NP]       NP   -> [DT] JJ* NN [PP] [SBAR]
    PP   -> IN NP                  SBAR -> (WHNP (WDT that)) (S VP)

Verbs are transitive (take an object NP) or intransitive; PP and relative-clause attachment
decays with embedding depth, so sentences stay short. Sentences whose length falls outside
``[min_len, max_len]`` are redrawn.

Dependency convention (Universal-Dependencies style, content words are heads):

* the verb heads its clause (``nsubj`` subject noun, ``obj`` object noun, ``obl`` PP noun);
* the noun heads its NP (``det`` determiner, ``amod`` adjectives, ``nmod`` PP noun,
  ``acl:relcl`` relative-clause verb);
* the noun heads its PP; the preposition is its ``case`` dependent;
* in a relative clause the verb is the head and ``that`` is its ``nsubj``;
* coordination: the first conjunct heads, later conjuncts attach to it as ``conj``, and each
  ``CC`` attaches to the conjunct that follows it as ``cc``;
* the final ``.`` attaches to the root verb (``punct``); the root verb has head 0.

Every constituent therefore spans a contiguous subtree with exactly one word whose head lies
outside it (the lexical head of the constituent).
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field

from .lexicon import (
    ADJECTIVES,
    CONJUNCTIONS,
    DETERMINERS,
    INTRANSITIVE_VERBS,
    NOUNS,
    PREPOSITIONS,
    TRANSITIVE_VERBS,
)


@dataclass
class Node:
    """A constituent; a preterminal has ``word`` set and no children.

    ``head`` is the index of the head child; ``rel`` is the relation of this node's lexical head
    to its governor (ignored on a head child, which shares its parent's head); ``attach`` names the
    sibling this child attaches to when that is not the head child (coordinators).
    """

    label: str
    children: list[Node] = field(default_factory=list)
    word: str | None = None
    head: int = 0
    rel: str = "dep"
    attach: int | None = None


def leaf(tag: str, word: str, rel: str = "dep") -> Node:
    """A preterminal ``(tag word)``."""
    return Node(tag, word=word, rel=rel)


def words_of(node: Node) -> list[str]:
    """The words under ``node``, left to right."""
    if node.word is not None:
        return [node.word]
    return [w for c in node.children for w in words_of(c)]


def to_ptb(node: Node) -> str:
    """The PTB bracket string of ``node``."""
    if node.word is not None:
        return f"({node.label} {node.word})"
    return f"({node.label} {' '.join(to_ptb(c) for c in node.children)})"


def dependencies(root: Node) -> tuple[list[int], list[str]]:
    """Heads (1-based, 0 = root) and relations of the words under ``root`` (see the module doc)."""
    n = len(words_of(root))
    heads = [0] * n
    rels = ["root"] * n
    counter = [0]

    def visit(node: Node) -> int:  # returns the 0-based index of the node's lexical head
        if node.word is not None:
            counter[0] += 1
            return counter[0] - 1
        lex = [visit(c) for c in node.children]
        h = lex[node.head]
        for i, c in enumerate(node.children):
            if i != node.head:
                gov = h if c.attach is None else lex[c.attach]
                heads[lex[i]] = gov + 1
                rels[lex[i]] = c.rel
        return h

    top = visit(root)
    heads[top], rels[top] = 0, "root"
    return heads, rels


def coordinate(label: str, conjuncts: list[Node], rng: random.Random) -> Node:
    """``conjunct CC conjunct [CC conjunct]``: first conjunct heads, each CC leans right."""
    children: list[Node] = [conjuncts[0]]
    for conj in conjuncts[1:]:
        children.append(Node("CC", word=rng.choice(CONJUNCTIONS), rel="cc", attach=len(children) + 1))
        conj.rel = "conj"
        children.append(conj)
    return Node(label, children, head=0)


class Grammar:
    """Samples sentences from the grammar with a caller-owned ``random.Random``."""

    p_clause_coord = 0.15  # a second top-level clause
    p_third_conjunct = 0.2
    p_np_coord = 0.1
    p_det = 0.75
    p_adj = 0.35  # each further adjective (at most ``max_adj``)
    max_adj = 3
    p_np_pp = 0.25  # halves with each level of embedding
    p_relcl = 0.18  # halves with each level of embedding
    p_transitive = 0.6
    p_vp_pp = 0.3  # halves with each level of embedding
    max_depth = 3

    def __init__(self, rng: random.Random):
        self.rng = rng

    def _chance(self, p: float, depth: int = 0) -> bool:
        return depth <= self.max_depth and self.rng.random() < p * 0.5 ** depth

    def sentence(self, min_len: int = 3, max_len: int = 40, max_tries: int = 10000) -> Node:
        """A ROOT tree with between ``min_len`` and ``max_len`` words (redrawn until it fits)."""
        if max_len < 3 or min_len > max_len:
            raise ValueError(f"need 3 <= max_len and min_len <= max_len, got min_len={min_len} max_len={max_len}")
        for _ in range(max_tries):
            root = self._root()
            if min_len <= len(words_of(root)) <= max_len:
                return root
        raise ValueError(f"no sentence of {min_len}..{max_len} words after {max_tries} draws")

    def _root(self) -> Node:
        clauses = [self.clause(0)]
        if self._chance(self.p_clause_coord):
            clauses.append(self.clause(0))
            if self._chance(self.p_third_conjunct):
                clauses.append(self.clause(0))
        s = clauses[0] if len(clauses) == 1 else coordinate("S", clauses, self.rng)
        s.children.append(leaf(".", ".", rel="punct"))
        return Node("ROOT", [s])

    def clause(self, depth: int) -> Node:
        """``S -> NP VP``; the verb heads the clause."""
        subj = self.np(depth, "nsubj")
        return Node("S", [subj, self.vp(depth)], head=1)

    def vp(self, depth: int) -> Node:
        """``VP -> VB [NP] [PP]``; an object only after a transitive verb."""
        rng = self.rng
        if rng.random() < self.p_transitive:
            children = [leaf("VB", rng.choice(TRANSITIVE_VERBS)), self.np(depth + 1, "obj")]
        else:
            children = [leaf("VB", rng.choice(INTRANSITIVE_VERBS))]
        if self._chance(self.p_vp_pp, depth):
            children.append(self.pp(depth + 1, "obl"))
        return Node("VP", children, head=0)

    def np(self, depth: int, rel: str) -> Node:
        """A noun phrase, possibly a coordination of base NPs."""
        if depth <= 1 and self._chance(self.p_np_coord):
            conjuncts = [self.base_np(depth), self.base_np(depth)]
            if self._chance(self.p_third_conjunct):
                conjuncts.append(self.base_np(depth))
            node = coordinate("NP", conjuncts, self.rng)
        else:
            node = self.base_np(depth)
        node.rel = rel
        return node

    def base_np(self, depth: int) -> Node:
        """``NP -> [DT] JJ* NN [PP] [SBAR]``; the noun heads it."""
        rng = self.rng
        children: list[Node] = []
        if rng.random() < self.p_det:
            children.append(leaf("DT", rng.choice(DETERMINERS), "det"))
        n_adj = 0
        while n_adj < self.max_adj and rng.random() < self.p_adj:
            children.append(leaf("JJ", rng.choice(ADJECTIVES), "amod"))
            n_adj += 1
        head = len(children)
        children.append(leaf("NN", rng.choice(NOUNS)))
        if self._chance(self.p_np_pp, depth):
            children.append(self.pp(depth + 1, "nmod"))
        if self._chance(self.p_relcl, depth):
            children.append(self.relative_clause(depth + 1))
        return Node("NP", children, head=head)

    def pp(self, depth: int, rel: str) -> Node:
        """``PP -> IN NP``; the noun heads it, the preposition is its ``case``."""
        return Node("PP", [leaf("IN", self.rng.choice(PREPOSITIONS), "case"), self.np(depth, rel)], head=1, rel=rel)

    def relative_clause(self, depth: int) -> Node:
        """``SBAR -> (WHNP (WDT that)) (S VP)``; the verb heads it, ``that`` is its subject."""
        whnp = Node("WHNP", [leaf("WDT", "that")], rel="nsubj")
        return Node("SBAR", [whnp, Node("S", [self.vp(depth)])], head=1, rel="acl:relcl")
