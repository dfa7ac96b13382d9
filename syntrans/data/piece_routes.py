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
  characters inside a piece that begins in an earlier word) is **refused**: the build stops with a
  ValueError naming the file, the line and the word (no sidecar can give a word without a piece a row).

Pure: :mod:`syntrans.syntax` (:mod:`~syntrans.syntax.byte_bpe` for gpt2's bytes), no fairseq, torch or stanza.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Optional, Sequence, Tuple

from ..syntax.byte_bpe import ByteLevelBPE
from ..syntax.char_align import CharAlignment, align_piece_bytes, align_piece_texts
from ..syntax.piece_spans import sequential_spans
from .sidecar_format import SubwordWords, bpe_subword_words

#: the segmentations (fairseq's ``--bpe`` names); subword_nmt first: the default
SEGMENTATIONS = ("subword_nmt", "sentencepiece", "gpt2")
SPACE_MARK = "\u2581"  # SentencePiece's ▁

_BYTE_TABLES: Dict[Tuple[str, str], object] = {}  # (encoder.json, vocab.bpe) → ByteLevelBPE, loaded once per process


@dataclass(frozen=True)
class PieceRoute:
    """How the pieces of a text file map to parse words (picklable: sent to the sidecar builder's processes)."""

    bpe: str = "subword_nmt"
    marker: str = "@@"
    gpt2_encoder_json: Optional[str] = None
    gpt2_vocab_bpe: Optional[str] = None

    def __post_init__(self):
        if self.bpe not in SEGMENTATIONS:
            raise ValueError(f"--bpe {self.bpe}: expected one of {', '.join(SEGMENTATIONS)}")
        if self.bpe == "gpt2" and not (self.gpt2_encoder_json and self.gpt2_vocab_bpe):
            raise ValueError("--bpe gpt2 needs --gpt2-encoder-json and --gpt2-vocab-bpe (local files) to read the "
                             "pieces' bytes")

    @property
    def by_chars(self) -> bool:
        """Whether pieces are aligned to words by characters (every segmentation but subword_nmt's ``@@``)."""
        return self.bpe != "subword_nmt"

    def describe(self) -> str:
        return f"{self.marker} marker" if not self.by_chars else f"{self.bpe}, aligned by characters"

    def subword_words(self, pieces: Sequence[str], parse_words: Sequence[str],
                      where: str) -> Tuple[SubwordWords, Optional[CharAlignment]]:
        """The word of each piece, and the character alignment (None on the ``@@`` route). ValueError naming
        ``where`` when the pieces do not spell the parse words' text, or a word has no piece (the rule above)."""
        if not self.by_chars:
            return bpe_subword_words(pieces, self.marker, where), None
        if self.bpe == "sentencepiece":
            texts = [p.replace(SPACE_MARK, " ") for p in pieces]
            text = "".join(texts)
            spans = sequential_spans(text, parse_words, where)
            alignment = align_piece_texts(text, parse_words, spans, texts, where, pieces)
        else:
            data = self._piece_bytes(pieces, where)
            try:
                text = b"".join(data).decode("utf-8")
            except UnicodeDecodeError as e:
                raise ValueError(f"{where}: the gpt2 pieces' bytes are not UTF-8 text ({e})") from None
            spans = sequential_spans(text, parse_words, where)
            alignment = align_piece_bytes(text, parse_words, spans, data, where)
        if alignment.uncovered:
            j = alignment.uncovered[0]
            before = max((k for k in alignment.word_index if k < j), default=None)
            raise ValueError(f"{where}: parse word {j + 1} {parse_words[j]!r} has no subword piece of its own (its "
                             f"characters lie in a piece that begins in word {'?' if before is None else before + 1} "
                             f"{'' if before is None else repr(parse_words[before])}; {len(alignment.uncovered)} such "
                             "word(s) in the line): such a line is refused (docs/commands.md, SentencePiece and "
                             "byte-level BPE): segment so that every word starts a piece (a model trained on the "
                             "parse's tokens) or parse the text so that the words follow the pieces")
        return SubwordWords(alignment.word_index, list(parse_words)), alignment

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
