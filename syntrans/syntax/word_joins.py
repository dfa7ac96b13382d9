"""Words without a subword piece of their own, joined to the word whose piece holds them (pure, no fairseq).

When pieces are aligned to parse words by characters (:mod:`.char_align`), a word all of whose characters lie inside a
piece that begins in an earlier word gets no piece (SentencePiece's ``▁Lieferwagen`` over a parse that split
``Liefer`` ``wagen``; ``▁a.`` over ``a`` ``.``). A word-level sidecar needs a row per word and a piece per row, so such
a word is **joined** to its *owner*, the nearest earlier word that has a piece: the piece that holds the word's first
character begins in that word, and every word in between lies inside the same piece, so it has no piece either.

The owner and the words joined to it become one word, contracted by the rules of multi-word tokens
(:mod:`.word_groups`): its head is the group's external word's head (its dependents and its head move to the owner),
its relation that word's, its tree leaf the owner's (the joined words' leaves dropped). The joined word's text is the
words' texts concatenated, its character span from the owner's start to the last joined word's end.

A word that opens a sentence and is joined to the last word of the sentence before (``dogs.The`` parsed as two
sentences under one piece) first merges the two sentences into one: the second sentence's heads are offset, its root
is headed by the first sentence's root with the relation ``parataxis`` (UD's relation for sentences side by side), and
its tree's children are put under the first tree's root. Both are counted (:class:`LineJoins`).
"""
from __future__ import annotations

from typing import List, NamedTuple, Optional, Sequence

from .parsed import ParsedSentence
from .trees import as_tree, stanza_tree_classes
from .word_groups import group_heads, group_tree

#: the relation given to the root of a sentence merged into the one before it
MERGED_ROOT_RELATION = "parataxis"


class LineJoins(NamedTuple):
    """A line's parse after joining: ``sentences``, and for each word of the line before joining (0-based, across its
    sentences) the 0-based word it became (``word_map``: nondecreasing); ``words`` joined into an earlier word,
    ``sentences`` merged into the sentence before them."""

    sentences: List[ParsedSentence]
    word_map: List[int]
    words: int
    merged_sentences: int


def owners(uncovered: Sequence[int], n_words: int, where: str = "line") -> List[int]:
    """For each word of the line (0-based), the word it is joined to: itself when it has a piece, else the nearest
    earlier word with one (module docstring). ValueError naming ``where`` when the first word has no piece (no earlier
    word can hold it) or an index lies outside the line."""
    missing = set(uncovered)
    bad = [j for j in missing if not 0 <= j < n_words]
    if bad:
        raise ValueError(f"{where}: word {bad[0]} has no piece but the line has {n_words} words")
    out, last = [], None
    for j in range(n_words):
        if j not in missing:
            last = j
        elif last is None:
            raise ValueError(f"{where}: the first word has no subword piece of its own, and no earlier word can hold it")
        out.append(last)
    return out


def _merge_two(a: ParsedSentence, b: ParsedSentence, where: str) -> ParsedSentence:
    """``b`` appended to ``a`` as one sentence (module docstring)."""
    n = len(a.words)
    heads = deprels = tree = spans = None
    if a.heads is not None and b.heads is not None:
        root = next(k for k, h in enumerate(a.heads, 1) if h == 0) if 0 in a.heads else 1
        heads = list(a.heads) + [h + n if h else root for h in b.heads]
        if a.deprels is not None and b.deprels is not None:
            deprels = list(a.deprels) + [MERGED_ROOT_RELATION if h == 0 else r for h, r in zip(b.heads, b.deprels)]
    if a.tree is not None and b.tree is not None:
        ta, tb = as_tree(a.tree), as_tree(b.tree)
        tree = stanza_tree_classes()[0](label=ta.label, children=list(ta.children) + list(tb.children))
    if a.spans is not None and b.spans is not None:
        spans = list(a.spans) + list(b.spans)
    failed = "; ".join(r for r in (a.failed, b.failed) if r) or None
    out = ParsedSentence(list(a.words) + list(b.words), heads, deprels, tree, a.line, failed, spans)
    out.validate(where)
    return out


def join_uncovered(sentences: Sequence[ParsedSentence], uncovered: Sequence[int],
                   where: str = "line") -> LineJoins:
    """The line's ``sentences`` with each word of ``uncovered`` (0-based over the line's words) joined to its owner
    (module docstring). The sentences are not changed in place."""
    n_words = sum(len(s.words) for s in sentences)
    owner = owners(uncovered, n_words, where)
    # 1. sentences merged where a sentence's first word is joined into the sentence before
    merged: List[ParsedSentence] = []
    starts: List[int] = []  # the line position of each merged sentence's first word
    pos = n_merged = 0
    for s in sentences:
        if merged and owner[pos] != pos:
            merged[-1] = _merge_two(merged[-1], s, f"{where} (sentences merged)")
            n_merged += 1
        else:
            merged.append(s)
            starts.append(pos)
        pos += len(s.words)
    # 2. each sentence's words contracted onto their owners
    word_map: List[int] = []
    out: List[ParsedSentence] = []
    for s, start in zip(merged, starts):
        local = [owner[start + j] - start for j in range(len(s.words))]  # each word's owner within the sentence
        group, g = [], -1
        for j, o in enumerate(local):
            g += o == j
            group.append(g)
        base = (word_map[-1] + 1) if word_map else 0
        word_map.extend(base + x for x in group)
        if g + 1 == len(s.words):
            out.append(s)
            continue
        texts = [""] * (g + 1)
        for j, x in enumerate(group):
            texts[x] += s.words[j]
        heads = deprels = None
        if s.heads is not None:
            heads, deprels = group_heads(s.heads, s.deprels, group)
        tree = None if s.tree is None else group_tree(s.tree, group, texts)
        spans: Optional[List] = None
        if s.spans is not None:
            spans = [None] * (g + 1)
            for j, x in enumerate(group):
                a, b = s.spans[j]
                spans[x] = (a, b) if spans[x] is None else (spans[x][0], max(spans[x][1], b))
        joined = ParsedSentence(texts, heads, deprels, tree, s.line, s.failed, spans)
        joined.validate(f"{where} (words joined)")
        out.append(joined)
    return LineJoins(out, word_map, len(set(uncovered)), n_merged)
