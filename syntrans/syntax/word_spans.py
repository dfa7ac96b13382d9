"""Parse words with their character spans in a raw line (pure, no fairseq): the raw-text route.

On the raw-text route (``syntrans-parse --char-spans``, ``syntrans-prepare --bpe sentencepiece --no-moses``) the
parser tokenizes each line itself and keeps where each word lies in it. The line it is given is the **spanned
line**, :func:`spanned_line`: the text's whitespace-separated fields joined by single spaces (what SentencePiece
makes of a line's whitespace too, so that the pieces of a line and its parse index the same characters). A word's
span is a half-open ``(start_char, end_char)`` range of that line; the words of a multi-word token (stanza's
``zum`` = ``zu dem``, a CoNLL-U range line ``N-M``) have no span of their own and take their token's.

In CoNLL-U the spans are the MISC field's ``start_char=S|end_char=E``, as stanza writes them
(:func:`span_misc`, :func:`misc_span`). :func:`check_word_spans` checks that spans are those of the line's words
before the pieces are aligned to them (:mod:`syntrans.syntax.char_align`); :func:`spans_in_text` moves spans of the
spanned line into a text whose whitespace differs (the text the pieces spell).

Errors are ValueErrors naming ``where`` (the file and line), the word and what differs.
"""
from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Tuple

from .piece_spans import Span, context_at

START, END = "start_char", "end_char"


def spanned_line(text: str) -> str:
    """The line the spans of the raw-text route index: ``text``'s whitespace-separated fields joined by single
    spaces (no space at either end)."""
    return " ".join(text.split())


def span_misc(span: Span) -> str:
    """The MISC field of a word with ``span``, as stanza writes it."""
    return f"{START}={span[0]}|{END}={span[1]}"


def misc_span(misc: str, where: str = "word") -> Optional[Span]:
    """The span in a CoNLL-U MISC field (``start_char=S|end_char=E`` among its other ``|``-separated items), or
    None when it has neither; a ValueError naming ``where`` when it has one without the other, or values that are
    not integers with S <= E."""
    if misc == "_" or START not in misc:
        if END in misc and misc != "_":
            raise ValueError(f"{where}: MISC {misc!r} has {END} but no {START}")
        return None
    items: Dict[str, str] = {}
    for item in misc.split("|"):
        key, _, value = item.partition("=")
        items[key] = value
    if START not in items or END not in items:
        raise ValueError(f"{where}: MISC {misc!r}: expected both {START}= and {END}=, found only "
                         f"{START if START in items else END}=")
    try:
        s, e = int(items[START]), int(items[END])
    except ValueError:
        raise ValueError(f"{where}: MISC {misc!r}: expected integer {START} and {END}, found "
                         f"{items[START]!r} and {items[END]!r}") from None
    if not 0 <= s <= e:
        raise ValueError(f"{where}: MISC {misc!r}: expected 0 <= {START} <= {END}, found {s} and {e}")
    return s, e


def check_word_spans(text: str, words: Sequence[str], spans: Sequence[Span], where: str = "line") -> None:
    """Check that ``spans`` are the characters of ``words`` in ``text``: in order and within it, each word's span
    spelling the word, except for consecutive words sharing one span (a multi-word token), which may spell anything.
    ValueError naming ``where`` and the first word that differs."""
    if len(words) != len(spans):
        raise ValueError(f"{where}: {len(words)} words but {len(spans)} character spans")
    prev_end = 0
    for k, (w, (s, e)) in enumerate(zip(words, spans)):
        shared = (k > 0 and tuple(spans[k - 1]) == (s, e)) or (k + 1 < len(spans) and tuple(spans[k + 1]) == (s, e))
        if not 0 <= s <= e <= len(text):
            raise ValueError(f"{where}: word {k + 1} {w!r} has the span {s}-{e}, outside the line's {len(text)} "
                             f"characters: the parse's spans are not of this line")
        if s < prev_end and not (shared and (s, e) == tuple(spans[k - 1])):
            raise ValueError(f"{where}: word {k + 1} {w!r} starts at character {s}, inside the word before it: the "
                             "spans are out of order")
        if not shared and text[s:e] != w:
            raise ValueError(f"{where}: word {k + 1} {w!r} has the span {s}-{e}, which reads {text[s:e]!r} in the line "
                             f"({context_at(text, s)!r}): the parse's spans are not of this line")
        prev_end = e


def spans_in_text(text: str, spans: Sequence[Span], where: str = "line") -> List[Span]:
    """``spans`` of ``spanned_line(text)`` moved into ``text`` itself (whose whitespace may differ: a leading
    space, runs of spaces, tabs). A ValueError naming ``where`` for a span outside the spanned line."""
    at: List[int] = []  # for each character of the spanned line, its index in text
    i, n = 0, len(text)
    while i < n and text[i].isspace():
        i += 1
    while i < n:
        if text[i].isspace():
            at.append(i)  # the single space stands for the run's first character
            while i < n and text[i].isspace():
                i += 1
            if i == n:
                at.pop()  # trailing whitespace is no character of the spanned line
            continue
        at.append(i)
        i += 1
    out: List[Span] = []
    for k, (s, e) in enumerate(spans):
        if not 0 <= s <= e <= len(at):
            raise ValueError(f"{where}: word {k + 1} has the span {s}-{e}, outside the line's {len(at)} characters "
                             "(whitespace runs as one space): the parse's spans are not of this line")
        start = at[s] if s < len(at) else n
        out.append((start, at[e - 1] + 1 if e > s else start))
    return out


def line_spans(sentences: Sequence, where: str = "line") -> Optional[List[Span]]:
    """The spans of a line's words, its sentences' one after another (they all index the same line), or None when
    no sentence has spans; a ValueError naming ``where`` when some have and some have not."""
    have = [s.spans is not None for s in sentences]
    if not any(have):
        return None
    if not all(have):
        k = have.index(False)
        raise ValueError(f"{where}: sentence {k + 1} of the line has no character spans (start_char/end_char) but "
                         "another has: all or none must")
    return [span for s in sentences for span in s.spans]


def whitespace_spans(text: str) -> Tuple[List[str], List[Span]]:
    """(words, spans) of the whitespace-separated fields of ``spanned_line(text)``: what a parser that does not
    tokenize (the fallback parse, the trivial parsers) gives on the raw-text route."""
    line = spanned_line(text)
    words, spans, pos = line.split(" ") if line else [], [], 0
    for w in words:
        spans.append((pos, pos + len(w)))
        pos += len(w) + 1
    return words, spans
