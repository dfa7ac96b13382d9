"""The sidecar format: which kinds there are, the value type of each, the view of the parse each is built from, and
the items of one corpus line (the one builder of both ``syntrans-preprocess``, to disk, and translation, in memory).

A line's sidecar items (docs/commands.md, data layout; files: :mod:`syntrans.data.sidecars`):

* ``word``: per subword token (EOS excluded) the 0-based index of its word in the line;
* ``head``: per word its head, 1-based within the line, 0 = root (sentence offsets applied);
* ``dist``: per gap between consecutive words the syntactic distance, ``SENTENCE_BREAK`` (−1) between two sentences
  of one line;
* ``label``: per word the id of its dependency relation (CoNLL-U DEPREL) in the fixed inventory of
  :mod:`syntrans.syntax.deprels`; written with ``head``.

The builder takes the word of each subword piece as an input (:class:`SubwordWords`); how a tokenizer's pieces map
to words is a separate step: :func:`bpe_subword_words` for subword-nmt BPE (a piece ending in ``@@`` continues its
word). Pure: numpy and :mod:`syntrans.syntax`, no fairseq, torch or stanza.
"""
from __future__ import annotations

from typing import Dict, List, NamedTuple, Sequence, Tuple

import numpy as np

from ..syntax.align import bpe_word_index, bpe_words, check_line_words, line_facts
from ..syntax.deprels import line_labels

KINDS = ("word", "head", "dist", "label")
#: the kinds that need a parse (``word`` needs only the subword text)
PARSE_KINDS = ("head", "dist", "label")
#: the view of the parse (:mod:`syntrans.data.parse_views`) each kind is built from (``word`` needs none)
KIND_VIEW = {"head": "deps", "label": "deps", "dist": "trees"}
#: what each parse kind holds, for messages
KIND_TITLES = {"head": "dependency heads", "dist": "a constituency tree", "label": "dependency labels (DEPREL)"}

#: the value type each kind is written in: the smallest that holds its values (word and head: a word position within a
#: line, up to 65535 words; label: 38 ids; dist: a distance, or -1 between sentences). The index records it; readers
#: get int64 whatever it is. Data written by earlier versions (int32) reads the same.
KIND_DTYPES = {"word": np.uint16, "head": np.uint16, "label": np.uint8, "dist": np.int16}

LineItems = Dict[str, List[int]]


def kinds_of_views(views: Sequence[str]) -> Tuple[str, ...]:
    """The kinds written for a parse holding ``views`` (``word``, and those of each view), in :data:`KINDS` order."""
    return tuple(k for k in KINDS if k == "word" or KIND_VIEW[k] in views)


class SubwordWords(NamedTuple):
    """A line's subword pieces mapped to words: ``index`` (n_pieces,) the 0-based word of each piece, ``words``
    (n_words,) the words they spell (checked against the parse's words)."""

    index: List[int]
    words: List[str]


def bpe_subword_words(pieces: Sequence[str], marker: str, where: str) -> SubwordWords:
    """subword-nmt BPE → words: a piece ending in ``marker`` continues into the next; no marker (or none in the line):
    a piece per word. ValueError naming ``where`` for a line whose last piece ends in the marker."""
    if not (marker and any(p.endswith(marker) for p in pieces)):
        return SubwordWords(list(range(len(pieces))), list(pieces))
    try:
        return SubwordWords(bpe_word_index(pieces, marker), bpe_words(pieces, marker))
    except ValueError as e:
        raise ValueError(f"{where}: {e}") from None


def line_items(subwords: SubwordWords, sentences: Sequence, where: str, parse_name: str | None = None,
               binarize: bool = False, need_heads: bool = True, need_tree: bool = True) -> LineItems:
    """The sidecar items of one line whose pieces are ``subwords`` and whose parse is ``sentences`` (ParsedSentence
    objects, in order; none for an empty line): ``word``, plus ``head`` and ``label`` when ``need_heads`` and every
    sentence has heads, ``dist`` when ``need_tree`` and every sentence has a constituency tree.

    ValueError naming ``where`` (and ``parse_name``) when the text and the parse disagree on the number of words."""
    check_line_words(subwords.words, [w for s in sentences for w in s.words], where, parse_name)
    heads, dists = line_facts(sentences, binarize=binarize, need_tree=need_tree, need_heads=need_heads)
    out: LineItems = {"word": list(subwords.index)}
    if heads is not None:
        out["head"] = heads
    if dists is not None:
        out["dist"] = dists
    if heads is not None:
        out["label"] = line_labels(sentences)
    return out
