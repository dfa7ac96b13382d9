"""Which parse word each subword piece of a text file belongs to, per segmentation (fairseq's ``--bpe``).

* ``subword_nmt`` (the default): the ``@@`` route of :func:`~.sidecar_format.bpe_subword_words` (a piece ending
  in the marker continues its word; the words the pieces spell must be the parse's words);
* ``sentencepiece``: pieces such as ``▁dog s`` (``▁`` a space); ``gpt2``: encoder.json ids of byte-level pieces.
  Both are aligned by characters (:mod:`syntrans.syntax.char_align`): the line's text is what the pieces spell
  (``▁`` as a space; the ids' bytes), the parse words are found in it in order
  (:func:`~syntrans.syntax.piece_spans.sequential_spans`: for a parse of pretokenized text, the tokens joined by
  spaces, :func:`~syntrans.syntax.piece_spans.pretokenized_spans`), and a piece belongs to the word holding its
  first non-space character. Pieces holding characters of two or more words are **crossing** pieces: counted
  (the report says how many, on which lines), never silent. A word left with no piece of its own (all its
  characters inside a piece that begins in an earlier word) is **joined** to the word whose piece holds it
  (:meth:`PieceRoute.line_words`, :mod:`syntrans.syntax.word_joins`: its dependents and head moved to that word, the
  tree contracted as for a multi-word token), counted by the caller; under ``strict`` it is refused with a
  ValueError naming the file, the line and the word.

The raw-text route (``char_spans``: ``syntrans-preprocess --char-spans``): the parse words carry their character spans
in the line they were parsed from (:mod:`syntrans.syntax.word_spans`), and those spans, checked against the text the
pieces spell, place the words instead of finding them in order (the words of a multi-word token share their token's
characters). A parse with spans on a route without ``char_spans``, or one without spans on a route with it, is
refused, naming the line: the route and the parse must agree.

Pure: :mod:`syntrans.syntax` (:mod:`~syntrans.syntax.byte_bpe` for gpt2's bytes), no fairseq, torch or stanza.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, NamedTuple, Optional, Sequence, Tuple

from ..syntax.byte_bpe import ByteLevelBPE
from ..syntax.char_align import CharAlignment, align_piece_bytes, align_piece_texts
from ..syntax.parsed import ParsedSentence
from ..syntax.piece_spans import Span, sequential_spans
from ..syntax.word_joins import LineJoins, join_uncovered
from ..syntax.word_spans import check_word_spans, spanned_line, spans_in_text
from .sidecar_format import SubwordWords, bpe_subword_words

#: the segmentations (fairseq's ``--bpe`` names); subword_nmt first: the default
SEGMENTATIONS = ("subword_nmt", "sentencepiece", "gpt2")
SPACE_MARK = "\u2581"  # SentencePiece's ▁

_BYTE_TABLES: Dict[Tuple[str, str], object] = {}  # (encoder.json, vocab.bpe) → ByteLevelBPE, loaded once per process


class LineWords(NamedTuple):
    """One line's pieces mapped to its parse (:meth:`PieceRoute.line_words`): ``subwords`` (each piece's word),
    ``sentences`` (the parse, with words joined where some had no piece), ``alignment`` (by characters; None on the
    ``@@`` route), ``joins`` (what was joined; None when nothing was)."""

    subwords: SubwordWords
    sentences: List[ParsedSentence]
    alignment: Optional[CharAlignment]
    joins: Optional[LineJoins]


@dataclass(frozen=True)
class PieceRoute:
    """How the pieces of a text file map to parse words (picklable: sent to the sidecar builder's processes)."""

    bpe: str = "subword_nmt"
    marker: str = "@@"
    gpt2_encoder_json: Optional[str] = None
    gpt2_vocab_bpe: Optional[str] = None
    char_spans: bool = False  # the raw-text route: the parse words' character spans place them

    def __post_init__(self):
        if self.bpe not in SEGMENTATIONS:
            raise ValueError(f"--bpe {self.bpe}: expected one of {', '.join(SEGMENTATIONS)}")
        if self.bpe == "gpt2" and not (self.gpt2_encoder_json and self.gpt2_vocab_bpe):
            raise ValueError("--bpe gpt2 needs --gpt2-encoder-json and --gpt2-vocab-bpe (local files) to read the "
                             "pieces' bytes")
        if self.char_spans and self.bpe == "subword_nmt":
            raise ValueError("--char-spans aligns pieces to words by characters: expected --bpe sentencepiece or gpt2, "
                             "found --bpe subword_nmt")

    @property
    def by_chars(self) -> bool:
        """Whether pieces are aligned to words by characters (every segmentation but subword_nmt's ``@@``)."""
        return self.bpe != "subword_nmt"

    def describe(self) -> str:
        if not self.by_chars:
            return f"{self.marker} marker"
        return f"{self.bpe}, aligned by characters" + (" (the parse's character spans)" if self.char_spans else "")

    def line_words(self, pieces: Sequence[str], sentences: Sequence[ParsedSentence], where: str,
                   word_spans: Optional[Sequence[Span]] = None, strict: bool = False) -> LineWords:
        """The word of each piece of a line whose parse is ``sentences``; a word without a piece of its own joined to
        the word whose piece holds it (module docstring), or refused under ``strict`` (ValueError naming ``where``,
        the word and the piece's word). Other ValueErrors: :meth:`subword_words`."""
        words = [w for s in sentences for w in s.words]
        subwords, alignment = self.subword_words(pieces, words, where, word_spans, refuse_uncovered=strict)
        if alignment is None or not alignment.uncovered:
            return LineWords(subwords, list(sentences), alignment, None)
        joins = join_uncovered(sentences, alignment.uncovered, where)
        index = [joins.word_map[w] for w in alignment.word_index]  # (n_pieces,) over the joined words
        joined = SubwordWords(index, [w for s in joins.sentences for w in s.words])
        return LineWords(joined, joins.sentences, alignment, joins)

    def subword_words(self, pieces: Sequence[str], parse_words: Sequence[str], where: str,
                      word_spans: Optional[Sequence[Span]] = None,
                      refuse_uncovered: bool = True) -> Tuple[SubwordWords, Optional[CharAlignment]]:
        """The word of each piece, and the character alignment (None on the ``@@`` route). ``word_spans``: the parse
        words' spans in the spanned line (the raw-text route; required there, refused elsewhere). ValueError naming
        ``where`` when the pieces do not spell the parse words' text, or (``refuse_uncovered``) a word has no piece;
        without ``refuse_uncovered`` such words are in ``alignment.uncovered`` and no piece's index names them (the
        caller joins them: :meth:`line_words`)."""
        if word_spans is not None and not self.char_spans:
            raise ValueError(f"{where}: the parse gives its words character spans (start_char/end_char: the raw-text "
                             f"route, syntrans-parse --char-spans) but the pieces are aligned as {self.describe()}: "
                             "expected --char-spans with such a parse (or a parse of the tokenized text)")
        if self.char_spans and word_spans is None and parse_words:
            raise ValueError(f"{where}: expected the parse words' character spans (start_char/end_char in MISC, the "
                             "raw-text route: --char-spans), found a parse without them (a parse of tokenized text?)")
        if not self.by_chars:
            return bpe_subword_words(pieces, self.marker, where), None
        if self.bpe == "sentencepiece":
            texts = [p.replace(SPACE_MARK, " ") for p in pieces]
            text = "".join(texts)
            spans = self._spans(text, parse_words, word_spans, where)
            alignment = align_piece_texts(text, parse_words, spans, texts, where, pieces)
        else:
            data = self._piece_bytes(pieces, where)
            try:
                text = b"".join(data).decode("utf-8")
            except UnicodeDecodeError as e:
                raise ValueError(f"{where}: the gpt2 pieces' bytes are not UTF-8 text ({e})") from None
            spans = self._spans(text, parse_words, word_spans, where)
            alignment = align_piece_bytes(text, parse_words, spans, data, where)
        if alignment.uncovered and refuse_uncovered:
            j = alignment.uncovered[0]
            before = max((k for k in alignment.word_index if k < j), default=None)
            raise ValueError(f"{where}: parse word {j + 1} {parse_words[j]!r} has no subword piece of its own (its "
                             f"characters lie in a piece that begins in word {'?' if before is None else before + 1} "
                             f"{'' if before is None else repr(parse_words[before])}; {len(alignment.uncovered)} such "
                             "word(s) in the line): --strict refuses such a line (without it the word is joined to "
                             "the word whose piece holds it, and counted): segment so that every word starts a piece "
                             "(a model trained on the parse's tokens) or parse the text so that the words follow the "
                             "pieces")
        return SubwordWords(alignment.word_index, list(parse_words)), alignment

    @staticmethod
    def _spans(text: str, parse_words: Sequence[str], word_spans: Optional[Sequence[Span]], where: str):
        """The parse words' spans in ``text`` (what the pieces spell): found in order, or (the raw-text route) the
        parse's own, checked against the spanned line and moved into ``text``."""
        if word_spans is None:
            return sequential_spans(text, parse_words, where)
        check_word_spans(spanned_line(text), parse_words, word_spans, where)
        return spans_in_text(text, word_spans, where)

    def _piece_bytes(self, pieces: Sequence[str], where: str):
        key = (self.gpt2_encoder_json, self.gpt2_vocab_bpe)
        table = _BYTE_TABLES.get(key)
        if table is None:
            table = _BYTE_TABLES[key] = ByteLevelBPE.load(*key)
        out = []
        for k, p in enumerate(pieces):
            if not p.isdigit():
                raise ValueError(f"{where}: gpt2 piece {k + 1} {p!r} is not an encoder.json id")
            out.append(table.piece_bytes(int(p)))
        return out
