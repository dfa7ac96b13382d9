"""Where each subword piece and each parse word lies in the characters of a line (pure, no fairseq).

A character span is a half-open ``(start, end)`` range of ``str`` indices into the line's text. Every
segmentation is brought to spans here, and :mod:`syntrans.syntax.char_align` maps spans to words:

* :func:`text_piece_spans` — pieces given as the text each one spells (a SentencePiece piece with ``▁``
  turned into a space, a subword-nmt piece with its marker removed and a space before each new word);
* :func:`byte_piece_spans` — pieces given as the UTF-8 bytes each one spells (byte-level BPE such as
  fairseq's ``--bpe gpt2``, whose pieces may split one character between two pieces);
* :func:`byte_offsets_to_spans` — pieces given by byte offsets into the line (SentencePiece's own
  ``begin``/``end``, which point into the text before its normalisation);
* :func:`marker_piece_texts` / :func:`pretokenized_spans` — the subword-nmt ``@@`` route: the text
  a tokenized line spells and the spans of its words, as stanza's ``tokenize_pretokenized`` rebuilds it
  (the tokens joined by single spaces);
* :func:`sequential_spans` — the spans of words that appear in order, verbatim, in a text.

Whitespace is where the segmentations differ (SentencePiece adds a space before the first word and
collapses runs of spaces; byte-level BPE keeps every byte), so :func:`text_piece_spans` compares the
non-space characters one by one and whitespace only as "some here" or "none here". Every mismatch is a
ValueError naming ``where`` (the file and line), the piece and what differs.
"""
from __future__ import annotations

from typing import List, Optional, Sequence, Tuple

Span = Tuple[int, int]


def context_at(text: str, at: int, width: int = 24) -> str:
    """The characters of ``text`` around index ``at``, for error messages."""
    lo, hi = max(0, at - width), min(len(text), at + width)
    return ("…" if lo else "") + text[lo:hi] + ("…" if hi < len(text) else "")


def text_piece_spans(text: str, piece_texts: Sequence[str], where: str = "line",
                     names: Optional[Sequence[str]] = None) -> List[Span]:
    """The character span of each piece in ``text``, the pieces given as the text each one spells.

    The non-space characters of the pieces, in order, must be those of ``text``. A run of whitespace in a
    piece matches a run of any length in the text (SentencePiece collapses runs), or nothing at the start
    of the line (its dummy-prefix space); a run of whitespace in the text must be matched by whitespace in
    the pieces, except at the very start or end of the line. A piece spans what it consumed: its leading
    space included. Raises ValueError naming ``where``, the piece (as ``names`` spells it, default its text)
    and the first difference.
    """
    spans: List[Span] = []
    i, n = 0, len(text)
    for k, piece in enumerate(piece_texts):
        shown = piece if names is None else names[k]
        start = i
        for c in piece:
            if c.isspace():
                if i < n and text[i].isspace():
                    while i < n and text[i].isspace():
                        i += 1
                elif i != 0:
                    got = repr(text[i]) if i < n else "its end"
                    raise ValueError(f"{where}: piece {k} {shown!r} has a space where the line has {got} "
                                     f"(character {i}: {context_at(text, i)!r})")
                continue
            if i < n and text[i].isspace() and i > 0:
                raise ValueError(f"{where}: the line has a space at character {i} before {c!r} where piece {k} "
                                 f"{shown!r} has none ({context_at(text, i)!r})")
            while i < n and text[i].isspace():  # leading whitespace of the line
                i += 1
            if i >= n:
                raise ValueError(f"{where}: piece {k} {shown!r} goes on with {c!r} after the line ends "
                                 f"({context_at(text, n)!r})")
            if text[i] != c:
                raise ValueError(f"{where}: piece {k} {shown!r} has {c!r} where the line has {text[i]!r} "
                                 f"(character {i}: {context_at(text, i)!r})")
            i += 1
        spans.append((start, i))
    rest = text[i:]
    if rest.strip():
        raise ValueError(f"{where}: the pieces end at character {i} but the line goes on with "
                         f"{rest.strip()[:24]!r} ({context_at(text, i)!r})")
    return spans


def byte_offsets_to_spans(text: str, offsets: Sequence[Span], where: str = "line") -> List[Span]:
    """Character spans from byte offsets into ``text``'s UTF-8 encoding: a piece covers every character
    one of its bytes belongs to (a piece that holds part of a character covers that character); an empty
    piece is the empty span at the character its offset points into."""
    data = text.encode("utf-8")
    char_of = []  # the character each byte belongs to, and len(text) for the end
    for j, ch in enumerate(text):
        char_of.extend([j] * len(ch.encode("utf-8")))
    char_of.append(len(text))
    spans: List[Span] = []
    for k, (b0, b1) in enumerate(offsets):
        if not 0 <= b0 <= b1 <= len(data):
            raise ValueError(f"{where}: piece {k} has byte offsets ({b0}, {b1}) outside the line's "
                             f"{len(data)} bytes")
        start = char_of[b0]
        spans.append((start, char_of[b1 - 1] + 1 if b1 > b0 else start))
    return spans


def byte_piece_spans(text: str, piece_bytes: Sequence[bytes], where: str = "line") -> List[Span]:
    """The character span of each piece in ``text``, the pieces given as the bytes each one spells
    (byte-level BPE: the pieces' bytes joined must be ``text``'s UTF-8 encoding exactly). A character
    split between two pieces belongs to both spans. Raises ValueError naming ``where`` and the first
    differing byte."""
    data = text.encode("utf-8")
    joined = b"".join(piece_bytes)
    if joined != data:
        at = next((j for j, (a, b) in enumerate(zip(joined, data)) if a != b), min(len(joined), len(data)))
        k, pos = 0, 0
        while k < len(piece_bytes) and pos + len(piece_bytes[k]) <= at:
            pos += len(piece_bytes[k])
            k += 1
        which = f"piece {k} {piece_bytes[k]!r}" if k < len(piece_bytes) else "the end of the pieces"
        raise ValueError(f"{where}: the pieces' bytes differ from the line's at byte {at} ({which}): the pieces "
                         f"spell {joined[max(0, at - 12):at + 12]!r}, the line {data[max(0, at - 12):at + 12]!r}")
    offsets, pos = [], 0
    for b in piece_bytes:
        offsets.append((pos, pos + len(b)))
        pos += len(b)
    return byte_offsets_to_spans(text, offsets, where)


def marker_piece_texts(pieces: Sequence[str], marker: str = "@@", open_end: bool = False) -> List[str]:
    """The text each subword-nmt piece spells in the line :func:`pretokenized_spans` rebuilds: the marker
    removed, and a space before each piece that opens a new word (not before the first). A last piece
    ending in the marker is an error unless ``open_end``, as in :func:`syntrans.syntax.align.bpe_word_index`."""
    out: List[str] = []
    opens = False
    for k, p in enumerate(pieces):
        ends = p.endswith(marker)
        if ends and k == len(pieces) - 1 and not open_end:
            raise ValueError(f"the last piece {p!r} ends in the continuation marker {marker!r}: the word never ends")
        out.append((" " if opens else "") + (p[: -len(marker)] if ends else p))
        opens = not ends
    return out


def pretokenized_spans(words: Sequence[str]) -> Tuple[str, List[Span]]:
    """(text, spans) of words joined by single spaces, as stanza rebuilds the text of pretokenized input."""
    spans: List[Span] = []
    pos = 0
    for w in words:
        spans.append((pos, pos + len(w)))
        pos += len(w) + 1
    return " ".join(words), spans


def sequential_spans(text: str, words: Sequence[str], where: str = "line") -> List[Span]:
    """The spans of ``words`` in ``text`` where each word starts at the first non-space character after the
    previous one (words written verbatim, in order, separated by optional whitespace). Raises ValueError
    naming ``where`` and the first word not found there."""
    spans: List[Span] = []
    i, n = 0, len(text)
    for k, w in enumerate(words):
        while i < n and text[i].isspace():
            i += 1
        if not text.startswith(w, i):
            raise ValueError(f"{where}: word {k} {w!r} is not at character {i} of the line, which reads "
                             f"{text[i:i + len(w) + 8]!r} there ({context_at(text, i)!r})")
        spans.append((i, i + len(w)))
        i += len(w)
    if text[i:].strip():
        raise ValueError(f"{where}: the words end at character {i} but the line goes on with {text[i:].strip()[:24]!r}")
    return spans
