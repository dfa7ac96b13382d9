"""Parsing tokenized text into parsed corpora (``syntrans-parse``): stanza, trivial parsers, shards.

``trivial_parse(tokens, kind)`` needs no model; ``align_to_tokens`` maps a stanza-like parse back to
the input tokens by position; ``StanzaParser`` wraps the stanza pipeline, built by the factory
``syntrans.parsing.stanza_parser.make_pipeline`` (patch it there to fake the pipeline); stanza's
models are loaded only when a stanza parser is built. :mod:`.driver` parses files with them (batches,
the failure fallback, shards): ``parse_lines``, ``make_parser``, ``parse_job``.
"""
from .driver import PARSERS, ParseJob, Stats, StrictParseError, make_parser, merge_finished, parse_job, parse_lines
from .shards import InputError, merge_shards, shard_path, shard_range
from .stanza_parser import (
    MissingModelsError,
    StanzaLikeSentence,
    StanzaParser,
    SyntacticWord,
    align_to_tokens,
    from_stanza,
    make_pipeline,
    moses_unescape,
)
from .trivial import (
    KINDS,
    TrivialParser,
    fallback_parse,
    flat_tree,
    left_branching_tree,
    right_branching_tree,
    split_sentences,
    trivial_heads,
    trivial_parse,
)

__all__ = [
    "KINDS",
    "PARSERS",
    "InputError",
    "MissingModelsError",
    "ParseJob",
    "StanzaLikeSentence",
    "StanzaParser",
    "Stats",
    "StrictParseError",
    "SyntacticWord",
    "TrivialParser",
    "align_to_tokens",
    "fallback_parse",
    "flat_tree",
    "from_stanza",
    "left_branching_tree",
    "make_parser",
    "make_pipeline",
    "merge_finished",
    "merge_shards",
    "moses_unescape",
    "parse_job",
    "parse_lines",
    "right_branching_tree",
    "shard_path",
    "shard_range",
    "split_sentences",
    "trivial_heads",
    "trivial_parse",
]
