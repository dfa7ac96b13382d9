"""The source syntax of sentences translated on the fly: parsing them, and their sidecar arrays held in memory.

What ``syntrans-preprocess`` writes to disk for a corpus line (:mod:`syntrans.data.build_sidecars`) is built
here for one input line with the same functions (:func:`~syntrans.syntax.align.bpe_word_index`,
:func:`~syntrans.syntax.align.check_line_words`, :func:`~syntrans.syntax.align.line_facts`), and held by
:class:`MemorySidecar`, which reads like a :class:`~syntrans.data.sidecars.Sidecar` (int64 items, as it returns them), so that
:class:`~syntrans.data.syntax_dataset.SyntaxPairDataset` builds and pads the features exactly as at generation
from binarized data.
"""
from __future__ import annotations

from typing import Dict, List, Sequence, Set, Tuple, Union

import numpy as np

from ..data.features import FEATURES
from ..parsing import driver  # its functions looked up at call time, so that tests can patch them there
from ..parsing.names import PARSERS
from ..parsing.stanza_parser import MissingModelsError
from ..syntax.align import bpe_word_index, bpe_words, check_line_words, line_facts
from ..syntax.deprels import line_labels
from ..syntax.parsed import ParsedSentence

#: sidecar kinds that need a parse (``word`` needs only the BPE text)
PARSE_KINDS = ("head", "dist", "label")

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
                binarize: bool = False) -> Dict[str, List[int]]:
    """The sidecar items of one line: ``word`` (per subword its word), and ``head``/``dist``/``label`` where the parse
    has them, as ``syntrans-preprocess`` writes them. ``sentences`` may be empty (no parse: ``word`` only).

    Raises ValueError naming ``where`` when the BPE text and the parse disagree on the number of words.
    """
    try:
        out: Dict[str, List[int]] = {"word": bpe_word_index(pieces, marker)}
    except ValueError as e:
        raise ValueError(f"{where}: {e}") from None
    if not sentences:
        return out
    check_line_words(bpe_words(pieces, marker), [w for s in sentences for w in s.words], where)
    heads, dists = line_facts(sentences, binarize=binarize, need_tree=True, need_heads=True)
    if heads is not None:
        out["head"] = heads
    if dists is not None:
        out["dist"] = dists
    labels = line_labels(sentences)
    if labels is not None:
        out["label"] = labels
    return out


def memory_side(items: Sequence[Dict[str, List[int]]], wheres: Sequence[str], required: Set[str],
                name: str = "input") -> Dict[str, MemorySidecar]:
    """The in-memory sidecars of a batch: every kind in ``required`` (an error naming the first line lacking it),
    and every other kind that all lines have."""
    out: Dict[str, MemorySidecar] = {}
    for kind in ("word",) + PARSE_KINDS:
        lacking = [w for it, w in zip(items, wheres) if kind not in it]
        if kind in required and lacking:
            what = {"head": "dependency heads", "dist": "a constituency tree",
                    "label": "dependency labels (DEPREL)"}.get(kind, kind)
            raise ValueError(f"{lacking[0]}: the model needs {what} of the source sentence, which its parse lacks "
                             f"({len(lacking)} line{'s' if len(lacking) > 1 else ''} of this batch)")
        if items and not lacking:
            out[kind] = MemorySidecar(f"{name} ({kind})", [it[kind] for it in items])
    return out


class SourceParser:
    """Parses token lists with a ``syntrans-parse`` parser and its failure convention: a sentence the parser fails on
    gets the right-branching fallback parse and is reported with its line number (:func:`syntrans.parsing.driver.parse_lines`).

    ``name``: ``auto`` or ``stanza`` (stanza's models for ``lang``; :class:`MissingModelsError` at once when they are
    not installed), ``right-branching``, ``left-branching`` or ``flat``.
    """

    def __init__(self, name: str, lang: str, batch_size: int = 32):
        if name == "auto":
            name = "stanza"
        if name not in PARSERS:
            raise ValueError(f"unknown parser {name!r}: expected auto or one of {', '.join(PARSERS)}")
        self.name, self.lang, self.batch_size = name, lang, batch_size
        try:
            # the tokens are Moses-escaped: unescaped for stanza
            self.parser = driver.make_parser(name, lang, batch_size, raw=False)
        except MissingModelsError as e:
            raise MissingModelsError(stanza_message(e)) from e

    def parse(self, numbered: Sequence[Tuple[int, List[str]]], where: str = "input"
              ) -> Tuple[Dict[int, List[ParsedSentence]], List[Tuple[int, str]]]:
        """Parse (line number, tokens) pairs: (line number → its sentences, [(line number, failure reason)])."""
        stats = driver.Stats()
        by_line: Dict[int, List[ParsedSentence]] = {}
        for sentences in driver.parse_lines(numbered, self.parser, self.batch_size, stats=stats, where=where):
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

