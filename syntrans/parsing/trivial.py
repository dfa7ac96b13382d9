"""Model-free parses: right-/left-branching and flat trees, and the fallback for a failed parse.

Trees are stanza ``Tree`` objects whose leaves are the given tokens, each under a preterminal ``W``;
every other node is labelled ``X`` and the root is ``ROOT``. For tokens w1 … wn:

* ``right-branching``: (ROOT (X (W w1) (X (W w2) … (X (W wn-1) (W wn))))); heads: head(i) = i + 1,
  the last word is the root (0). Syntactic distances (Hou et al.) are n−1, n−2, …, 1.
* ``left-branching``: the mirror image, (ROOT (X (X … (X (W w1) (W w2)) … (W wn-1)) (W wn)));
  heads: head(i) = i − 1, the first word is the root. Distances are 1, 2, …, n−1.
* ``flat``: (ROOT (X (W w1) … (W wn))); heads: every word attaches to the last word, which is the
  root. Distances are all 1.

A one-word sentence is (ROOT (X (W w1))) with head 0 for every kind. Heads are 1-based, 0 = root,
as in :class:`~syntrans.syntax.parsed.ParsedSentence`.

The documented fallback for a sentence the real parser fails on (:func:`fallback_parse`) is the
right-branching tree with the chain dependency (each word's head is the next word, the last word is
the root), marked with the failure reason (``# parse_failed = REASON`` in CoNLL-U).

:func:`split_sentences` is the model-free sentence splitter behind ``syntrans-parse --split-sentences``.
"""
from __future__ import annotations

from collections.abc import Sequence

from stanza.models.constituency.parse_tree import Tree

from ..syntax.parsed import ParsedSentence
from .names import TRIVIAL_PARSERS

ROOT_LABEL = "ROOT"
PHRASE_LABEL = "X"
PRETERMINAL_LABEL = "W"


def _check(tokens: Sequence[str]) -> list[str]:
    toks = list(tokens)
    if not toks:
        raise ValueError("a sentence must have at least one token, found none")
    for i, t in enumerate(toks):
        if not isinstance(t, str) or not t or any(c.isspace() for c in t):
            raise ValueError(f"token {i + 1} must be a non-empty string without whitespace, found {t!r}")
    return toks


def _pre(word: str) -> Tree:
    return Tree(label=PRETERMINAL_LABEL, children=[Tree(label=word)])


def right_branching_tree(tokens: Sequence[str]) -> Tree:
    """(ROOT (X (W w1) (X (W w2) … (X (W wn-1) (W wn))))); built bottom-up, so any length works."""
    toks = _check(tokens)
    node = Tree(label=PHRASE_LABEL, children=[_pre(w) for w in toks[-2:]])
    for w in reversed(toks[:-2]):
        node = Tree(label=PHRASE_LABEL, children=[_pre(w), node])
    return Tree(label=ROOT_LABEL, children=[node])


def left_branching_tree(tokens: Sequence[str]) -> Tree:
    """(ROOT (X (X … (X (W w1) (W w2)) … (W wn-1)) (W wn))), the mirror of the right-branching tree."""
    toks = _check(tokens)
    node = Tree(label=PHRASE_LABEL, children=[_pre(w) for w in toks[:2]])
    for w in toks[2:]:
        node = Tree(label=PHRASE_LABEL, children=[node, _pre(w)])
    return Tree(label=ROOT_LABEL, children=[node])


def flat_tree(tokens: Sequence[str]) -> Tree:
    """(ROOT (X (W w1) … (W wn))): every preterminal under one node."""
    toks = _check(tokens)
    return Tree(label=ROOT_LABEL, children=[Tree(label=PHRASE_LABEL, children=[_pre(w) for w in toks])])


def trivial_heads(n: int, kind: str) -> list[int]:
    """Dependency heads (1-based, 0 = root) of the trivial parse ``kind`` of an n-word sentence."""
    _check_kind(kind)
    if n < 1:
        raise ValueError(f"a sentence must have at least one word, found {n}")
    if kind == "right-branching":
        return [i + 2 for i in range(n - 1)] + [0]
    if kind == "left-branching":
        return [0] + [i for i in range(1, n)]
    return [n] * (n - 1) + [0]


_BUILDERS = {"right-branching": right_branching_tree, "left-branching": left_branching_tree, "flat": flat_tree}


def _check_kind(kind: str) -> None:
    if kind not in _BUILDERS:
        raise ValueError(f"unknown trivial parser {kind!r}: expected one of {', '.join(TRIVIAL_PARSERS)}")


def trivial_parse(tokens: Sequence[str], kind: str, line: int | None = None,
                  failed: str | None = None) -> ParsedSentence:
    """The trivial parse ``kind`` (right-branching, left-branching or flat) of one sentence."""
    _check_kind(kind)
    toks = _check(tokens)
    return ParsedSentence(words=toks, heads=trivial_heads(len(toks), kind), deprels=None,
                          tree=_BUILDERS[kind](toks), line=line, failed=failed)


def fallback_parse(tokens: Sequence[str], reason: str, line: int | None = None) -> ParsedSentence:
    """The documented fallback for a failed parse: right-branching tree + chain heads, marked failed."""
    reason = " ".join(str(reason).split()) or "unknown"
    return trivial_parse(tokens, "right-branching", line=line, failed=reason[:300])


class TrivialParser:
    """A model-free parser with the interface the ``syntrans-parse`` driver uses (``parse_batch``)."""

    def __init__(self, kind: str):
        _check_kind(kind)
        self.kind = kind

    def parse_batch(self, sentences: Sequence[Sequence[str]]) -> list[ParsedSentence]:
        return [trivial_parse(s, self.kind) for s in sentences]


#: tokens that end a sentence for :func:`split_sentences`
SENTENCE_END = frozenset({".", "!", "?"})
#: closing quotes and brackets that stay with the sentence they follow (raw and Moses-escaped spellings)
CLOSERS = frozenset({'"', "''", "'", "”", "’", "»", ")", "]", "}", "-RRB-", "-RSB-", "-RCB-",
                     "&quot;", "&apos;", "&#93;"})


def split_sentences(tokens: Sequence[str]) -> list[list[str]]:
    """Split a line's tokens into sentences after the tokens ``.``, ``!`` and ``?``.

    A sentence ends after a run of such tokens (``? !`` ends one sentence, not two) together with the
    closing quotes and brackets right after it (:data:`CLOSERS`). Tokens are never changed, dropped or
    reordered: the concatenation of the result is ``tokens``; no sentence is empty.
    """
    out: list[list[str]] = []
    cur: list[str] = []
    i, n = 0, len(tokens)
    while i < n:
        cur.append(tokens[i])
        if tokens[i] in SENTENCE_END:
            i += 1
            while i < n and tokens[i] in SENTENCE_END:
                cur.append(tokens[i])
                i += 1
            while i < n and tokens[i] in CLOSERS:
                cur.append(tokens[i])
                i += 1
            out.append(cur)
            cur = []
            continue
        i += 1
    if cur:
        out.append(cur)
    return out
