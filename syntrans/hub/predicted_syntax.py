"""The word-level parses a model's LISA and DBSA heads predict while it translates (:class:`PredictedParse`), and one
translated line with them (:class:`Translation`).

The generator (:class:`~syntrans.generation.recording.ParseRecordingGenerator`) hands back, per hypothesis, the
predicted parent of every source subword (encoder LISA/DBSA heads) and of every hypothesis subword (decoder DBSA
heads, as computed while decoding). They are collapsed to words with the convention each head was trained on
(:func:`syntrans.syntax.heads.word_heads`: chain for DBSA, Deguchi et al. 2019; first piece for LISA, Bugliarello &
Okazaki 2020). With several parse layers on one side, the last one is read (:func:`last_parses`).
"""
from __future__ import annotations

from typing import Dict, List, NamedTuple, Optional, Sequence

from ..modules.parse_heads import ParseLayer, parse_layers
from ..sides import MODEL_SIDE
from ..syntax.align import bpe_words
from ..syntax.heads import hypothesis_word_index, hypothesis_words, predicted_sentence, word_heads
from ..syntax.parsed import ParsedSentence

#: the sides a translator can report parses of, and what each needs
SIDES = {"source": "LISA or DBSA heads in its encoder (--lisa-layers, --dbsa-encoder-layers)",
         "target": "DBSA heads in its decoder (--dbsa-decoder-layers)"}


class NoParseHeads(ValueError):
    """A parse was asked for on a side where the model has no LISA or DBSA heads."""


class PredictedParse(NamedTuple):
    """One line's predicted word-level parse: ``heads`` as :func:`~syntrans.syntax.heads.word_heads` gives them
    (1-based, 0 = root, SELF_WORD/OUTSIDE for a word whose head is inside itself / at EOS or BOS)."""

    tag: str  # the parse layer, e.g. "dbsa@1"
    words: List[str]
    heads: List[int]

    def sentence(self, line: Optional[int] = None) -> ParsedSentence:
        """As a CoNLL-U sentence (:func:`~syntrans.syntax.heads.predicted_sentence`), ``# line`` = ``line``."""
        return predicted_sentence(self.words, self.heads, line)


class Translation(NamedTuple):
    """One translated line: the output text, and where asked for, the predicted parses and the given source parse."""

    text: str
    source: Optional[PredictedParse] = None  # None: an empty line, or no source parse asked for
    target: Optional[PredictedParse] = None  # None: an empty line, or no target parse asked for
    gold: Optional[List[int]] = None  # the line-level heads of the source parse given to translate_parsed


def last_parses(model, sides: Sequence[str]) -> Dict[str, ParseLayer]:
    """side ("source"/"target") → the last parse layer of that side (the deepest layer; within one layer DBSA after
    LISA). :class:`NoParseHeads` naming the side when the model predicts no parse there (the decoder has only DBSA
    parses)."""
    layers = parse_layers(model)
    out: Dict[str, ParseLayer] = {}
    for side in sides:
        if side not in SIDES:
            raise ValueError(f"unknown syntax side {side!r}, expected source or target")
        mine = [x for x in layers if x.side == MODEL_SIDE[side]]
        if not mine:
            raise NoParseHeads(f"a {side} parse was asked for, but the model has no {SIDES[side]}: it predicts no "
                             f"{'source' if side == 'source' else 'hypothesis'} parse")
        out[side] = mine[-1]
    return out


def source_parse(layer: ParseLayer, record: Dict, pieces: Sequence[str], word_index: Sequence[int],
                 marker: str, where: str) -> PredictedParse:
    """The source parse of ``layer`` from a hypothesis's ``hypo["syntax"].source`` record (per source subword, EOS
    excluded), over the words the BPE ``pieces`` spell."""
    parents = _parents(record, layer, len(pieces), "source subwords", where)
    return PredictedParse(layer.tag, bpe_words(pieces, marker), word_heads(parents, word_index, layer.mode))


def target_parse(layer: ParseLayer, record: Dict, pieces: Sequence[str], marker: str, where: str) -> PredictedParse:
    """The hypothesis parse of ``layer`` from ``hypo["syntax"].target`` (per hypothesis subword, EOS excluded; BOS
    = −1), over the words of the hypothesis ``pieces`` (a final piece with the marker closes its word)."""
    parents = _parents(record, layer, len(pieces), "hypothesis subwords", where)
    return PredictedParse(layer.tag, hypothesis_words(pieces, marker),
                          word_heads(parents, hypothesis_word_index(pieces, marker), layer.mode))


def _parents(record: Dict, layer: ParseLayer, n: int, what: str, where: str) -> List[int]:
    if layer.tag not in record:
        raise RuntimeError(f"{where}: the generator recorded no {layer.tag} parse of the {what} (it recorded "
                           f"{sorted(record) or 'none'})")
    parents = record[layer.tag].tolist()
    if len(parents) != n:
        raise RuntimeError(f"{where}: the {layer.tag} parse has {len(parents)} heads for {n} {what}")
    return parents
