"""The source syntax of sentences translated on the fly: parsing them, and their sidecar arrays held in memory.

What ``syntrans-preprocess`` writes to disk for a corpus line (:mod:`syntrans.data.build_sidecars`) is built
here for one input line by the same builder (:func:`~syntrans.data.sidecar_format.line_items`), and held by
:class:`MemorySidecar`, which reads like a :class:`~syntrans.data.sidecars.Sidecar` (int64 items, as it returns them), so that
:class:`~syntrans.data.syntax_dataset.SyntaxPairDataset` builds and pads the features exactly as at generation
from binarized data.
"""
from __future__ import annotations

from typing import Dict, List, Sequence, Set, Tuple, Union

import numpy as np

from ..data.features import FEATURES
from ..data.piece_routes import SPACE_MARK, PieceRoute
from ..data.sidecar_format import KIND_TITLES, KINDS, PARSE_KINDS, LineItems, bpe_subword_words, line_items
from ..parsing import driver  # its functions looked up at call time, so that tests can patch them there
from ..parsing.names import PARSERS
from ..parsing.stanza_parser import MissingModelsError
from ..syntax.parsed import ParsedSentence
from ..syntax.word_spans import line_spans, whitespace_spans

LineParse = Union[ParsedSentence, Sequence[ParsedSentence], None]


class MemorySidecar:
    """One sidecar kind of a batch of sentences in memory: ``prefix`` (for messages), ``sizes``, int64 items."""

    def __init__(self, prefix: str, items: Sequence[Sequence[int]]):
        self.prefix = prefix
        self.items = [np.asarray(x, dtype=np.int64) for x in items]
        self.sizes = np.array([len(x) for x in self.items], dtype=np.int64)

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, i: int) -> np.ndarray:
        return self.items[i]


def needed_kinds(features: Set[str]) -> Set[str]:
    """The source sidecar kinds the features ``features`` are built from (e.g. {"src_gaps"} → {"word", "dist"})."""
    return {k for name in features if FEATURES[name].side == "source" for k in FEATURES[name].needs}


def needs_parse(features: Set[str]) -> bool:
    """Whether building ``features`` needs a source parse (heads or a constituency tree), not only the BPE text."""
    return bool(needed_kinds(features) & set(PARSE_KINDS))


def as_sentences(parse: LineParse) -> List[ParsedSentence]:
    """A line's parse as a list of sentences (one ParsedSentence, several, or none)."""
    if parse is None:
        return []
    if isinstance(parse, ParsedSentence):
        return [parse]
    return list(parse)


def line_arrays(pieces: Sequence[str], sentences: Sequence[ParsedSentence], where: str, marker: str = "@@",
                binarize: bool = False, route: PieceRoute | None = None) -> LineItems:
    """The sidecar items of one line: ``word`` (per subword its word), and ``head``/``dist``/``label`` where the parse
    has them, as ``syntrans-preprocess`` writes them. ``sentences`` may be empty (no parse: ``word`` only).

    Raises ValueError naming ``where`` when the BPE text and the parse disagree on the number of words.
    """
    route = route or PieceRoute(marker=marker)
    if route.by_chars and sentences:  # a word without a piece of its own joined as syntrans-preprocess joins it
        subwords, sentences = route.line_words(pieces, sentences, where, line_spans(sentences, where))[:2]
    elif route.by_chars:  # SentencePiece without a parse: the words are the text's whitespace-separated fields
        words, spans = whitespace_spans("".join(pieces).replace(SPACE_MARK, " "))
        subwords = route.subword_words(pieces, words, where, spans if route.char_spans else None)[0]
    else:
        subwords = bpe_subword_words(pieces, marker, where)
    if not sentences:
        return {"word": subwords.index}
    return line_items(subwords, sentences, where, binarize=binarize)


def memory_side(items: Sequence[LineItems], wheres: Sequence[str], required: Set[str],
                name: str = "input") -> Dict[str, MemorySidecar]:
    """The in-memory sidecars of a batch: every kind in ``required`` (an error naming the first line lacking it),
    and every other kind that all lines have."""
    out: Dict[str, MemorySidecar] = {}
    for kind in KINDS:
        lacking = [w for it, w in zip(items, wheres) if kind not in it]
        if kind in required and lacking:
            raise ValueError(f"{lacking[0]}: the model needs {KIND_TITLES.get(kind, kind)} of the source sentence, "
                             f"which its parse lacks ({len(lacking)} line{'s' if len(lacking) > 1 else ''} of this batch)")
        if items and not lacking:
            out[kind] = MemorySidecar(f"{name} ({kind})", [it[kind] for it in items])
    return out


class SourceParser:
    """Parses token lists with a ``syntrans-parse`` parser and its failure convention: a sentence the parser fails on
    gets the right-branching fallback parse and is reported with its line number (:func:`syntrans.parsing.driver.parse_lines`).

    ``name``: ``auto`` or ``stanza`` (stanza's models for ``lang``; :class:`MissingModelsError` at once when they are
    not installed), ``right-branching``, ``left-branching`` or ``flat``. ``char_spans``: the raw-text route: each
    line's token list is its raw text's whitespace fields, which the parser tokenizes itself, keeping each word's
    character span.
    """

    def __init__(self, name: str, lang: str, batch_size: int = 32, char_spans: bool = False):
        if name == "auto":
            name = "stanza"
        if name not in PARSERS:
            raise ValueError(f"unknown parser {name!r}: expected auto or one of {', '.join(PARSERS)}")
        self.name, self.lang, self.batch_size, self.char_spans = name, lang, batch_size, char_spans
        try:
            # the tokens are Moses-escaped: unescaped for stanza (raw text with char_spans: nothing to unescape)
            self.parser = driver.make_parser(name, lang, batch_size, raw=False, char_spans=char_spans)
        except MissingModelsError as e:
            raise MissingModelsError(stanza_message(e)) from e

    def parse(self, numbered: Sequence[Tuple[int, List[str]]], where: str = "input"
              ) -> Tuple[Dict[int, List[ParsedSentence]], List[Tuple[int, str]]]:
        """Parse (line number, tokens) pairs: (line number → its sentences, [(line number, failure reason)])."""
        stats = driver.Stats()
        by_line: Dict[int, List[ParsedSentence]] = {}
        for sentences in driver.parse_lines(numbered, self.parser, self.batch_size, stats=stats, where=where,
                                            char_spans=self.char_spans):
            for s in sentences:
                by_line.setdefault(s.line, []).append(s)
        return by_line, list(stats.failures)


def stanza_message(error: BaseException) -> str:
    """A :class:`MissingModelsError`'s message without syntrans-parse's name, plus the ways out of parsing here."""
    text = str(error)
    if text.startswith("syntrans-parse: "):
        text = text[len("syntrans-parse: "):]
    return text + ("\n  or give the parses of the input lines: syntrans-translate --parse FILE (the input is then taken as "
                   "tokenized), Translator.translate_parsed in Python.")

