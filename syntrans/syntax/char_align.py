"""Parse words aligned to any subword segmentation by characters (pure, no fairseq).

The parse of a line gives each word a character span in the line's text (stanza keeps offsets into the
raw text; with ``tokenize_pretokenized`` into the single-space-joined tokens it rebuilds; the words of a
multi-word token may have no offsets of their own and are given the token's span). A segmentation gives
each subword piece a character span of the same text (:mod:`syntrans.syntax.piece_spans`: subword-nmt
``@@`` pieces, SentencePiece pieces, byte-level BPE pieces). :func:`align_spans` gives each piece the index
of its word.

The rule for a piece (one rule for every segmentation):

* a piece belongs to the word holding its **first non-space character**;
* a piece with no non-space character (SentencePiece's lone ``▁``, a byte-level run of spaces, a piece
  that normalisation expanded out of one character and that spans nothing) belongs to the word of the
  next non-space character of the line: its space opens that word, as ``▁`` and ``Ġ`` mean.

Why the first character: it is how a reader of the pieces sees words, left to right (a piece belongs to
the word that is open where it starts, which is exactly what subword-nmt's ``@@`` marker encodes, so the
``@@`` route gives :func:`~syntrans.syntax.align.bpe_word_index`'s indices), it needs no tie-break (a
majority rule does, ``▁a.`` over ``a`` and ``.``), it keeps the indices nondecreasing, and a word whose
first character opens a piece keeps that piece. A piece whose non-space characters lie in two or more
words (SentencePiece's ``▁dog.`` where the parser splits ``dog`` and ``.``) is a **crossing** piece: it is
counted in :attr:`CharAlignment.crossing`, and a word all of whose characters lie inside pieces of earlier
words gets no piece and is listed in :attr:`CharAlignment.uncovered`, so that a caller can report both
and decide (a word-level sidecar needs every word to have a piece).

Errors (ValueError naming ``where``): word spans out of order, overlapping or outside the text; a
non-space character of a piece that lies in no word; a non-space character of the text in no piece; a
whitespace-only piece that no word follows; pieces whose indices would go backwards.

Multi-word tokens: consecutive words with the same span are the words of one token. When their texts
joined spell the token's text exactly (``don't`` = ``do`` + ``n't``) its characters are shared out in
that order; otherwise (``zum`` = ``zu`` + ``dem``) all of them belong to the token's first word and the
others are left uncovered.
"""
from __future__ import annotations

from typing import List, NamedTuple, Optional, Sequence

from .piece_spans import Span, byte_piece_spans, context_at, marker_piece_texts, pretokenized_spans, text_piece_spans


class CharAlignment(NamedTuple):
    """The alignment of one line's pieces to its parse words."""

    #: for each piece, the 0-based index of its word (nondecreasing)
    word_index: List[int]
    #: how many pieces hold non-space characters of two or more words
    crossing: int
    #: the words no piece belongs to (all their characters inside crossing pieces), ascending
    uncovered: List[int]


def char_owners(text: str, words: Sequence[str], spans: Sequence[Span], where: str = "line") -> List[int]:
    """For each character of ``text``, the index of the word it belongs to, or -1 (the multi-word-token
    rule of the module docstring). Raises ValueError naming ``where`` when the spans are bad."""
    if len(words) != len(spans):
        raise ValueError(f"{where}: {len(words)} words but {len(spans)} word spans")
    owner = [-1] * len(text)
    k, prev_end = 0, 0
    while k < len(spans):
        s, e = spans[k]
        if not 0 <= s <= e <= len(text):
            raise ValueError(f"{where}: word {k} {words[k]!r} has span ({s}, {e}) outside the line's {len(text)} "
                             "characters")
        if s < prev_end:
            raise ValueError(f"{where}: word {k} {words[k]!r} starts at character {s}, inside the previous word, "
                             f"which ends at {prev_end} ({context_at(text, s)!r})")
        group = k + 1
        while group < len(spans) and tuple(spans[group]) == (s, e):
            group += 1
        if group - k > 1 and "".join(words[k:group]) == text[s:e]:
            pos = s
            for w in range(k, group):
                owner[pos:pos + len(words[w])] = [w] * len(words[w])
                pos += len(words[w])
        else:
            owner[s:e] = [k] * (e - s)
        prev_end, k = e, group
    return owner


def align_spans(text: str, words: Sequence[str], word_spans: Sequence[Span], piece_spans: Sequence[Span],
                where: str = "line") -> CharAlignment:
    """Each piece's word by the first-non-space-character rule (module docstring)."""
    owner = char_owners(text, words, word_spans, where)
    n = len(text)
    next_char = [n] * (n + 1)  # the first non-space character at or after each index
    for j in range(n - 1, -1, -1):
        next_char[j] = j if not text[j].isspace() else next_char[j + 1]
    covered = [False] * n
    index: List[int] = []
    crossing = 0
    for k, (a, b) in enumerate(piece_spans):
        chars = [j for j in range(a, b) if not text[j].isspace()]
        for j in chars:
            covered[j] = True
            if owner[j] < 0:
                raise ValueError(f"{where}: piece {k} holds {text[j]!r} (character {j}), which lies in no parse "
                                 f"word ({context_at(text, j)!r})")
        if chars:
            w = owner[chars[0]]
            crossing += any(owner[j] != w for j in chars)
        else:
            j = next_char[min(a, n)]
            if j >= n:
                raise ValueError(f"{where}: piece {k} holds only whitespace (or nothing) and no word follows it "
                                 f"(character {a}: {context_at(text, a)!r})")
            if owner[j] < 0:
                raise ValueError(f"{where}: piece {k} opens {text[j]!r} (character {j}), which lies in no parse "
                                 f"word ({context_at(text, j)!r})")
            w = owner[j]
        if index and w < index[-1]:
            raise ValueError(f"{where}: piece {k} belongs to word {w}, before the previous piece's word "
                             f"{index[-1]}: the pieces are out of order")
        index.append(w)
    missed = next((j for j in range(n) if not covered[j] and not text[j].isspace()), None)
    if missed is not None:
        raise ValueError(f"{where}: character {missed} {text[missed]!r} lies in no piece ({context_at(text, missed)!r})")
    seen = set(index)
    return CharAlignment(index, crossing, [w for w in range(len(words)) if w not in seen])


def align_piece_texts(text: str, words: Sequence[str], word_spans: Sequence[Span], piece_texts: Sequence[str],
                      where: str = "line", names: Optional[Sequence[str]] = None) -> CharAlignment:
    """:func:`align_spans` for pieces given as the text each spells (:func:`~.piece_spans.text_piece_spans`;
    ``names``: the pieces as errors show them)."""
    return align_spans(text, words, word_spans, text_piece_spans(text, piece_texts, where, names), where)


def align_piece_bytes(text: str, words: Sequence[str], word_spans: Sequence[Span], piece_bytes: Sequence[bytes],
                      where: str = "line") -> CharAlignment:
    """:func:`align_spans` for pieces given as the bytes each spells (:func:`~.piece_spans.byte_piece_spans`)."""
    return align_spans(text, words, word_spans, byte_piece_spans(text, piece_bytes, where), where)


def align_marker_pieces(pieces: Sequence[str], words: Sequence[str], marker: str = "@@", open_end: bool = False,
                        where: str = "line") -> CharAlignment:
    """The ``@@`` route: subword-nmt pieces of a tokenized line aligned to its parse ``words`` (the tokens
    the parse was given pretokenized). Gives :func:`~syntrans.syntax.align.bpe_word_index`'s indices whenever
    the pieces spell the words; raises ValueError naming ``where`` where they do not."""
    text, spans = pretokenized_spans(words)
    return align_piece_texts(text, words, spans, marker_piece_texts(pieces, marker, open_end), where, pieces)
