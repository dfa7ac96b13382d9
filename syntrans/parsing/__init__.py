"""Parsing tokenized text into parsed corpora (``syntrans-parse``): stanza, trivial parsers, shards.

``trivial_parse(tokens, kind)`` needs no model; ``align_to_tokens`` maps a stanza-like parse back to
the input tokens by position; ``StanzaParser`` wraps the stanza pipeline, built by the factory
``syntrans.parsing.stanza_parser.make_pipeline`` (patch it there to fake the pipeline); stanza's
models are loaded only when a stanza parser is built. :mod:`.driver` parses files with them (batches,
the failure fallback, shards): ``parse_lines``, ``make_parser``, ``parse_job``.
"""
from ..lazy_exports import lazy_exports

__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "names": ("TRIVIAL_PARSERS", "PARSERS"),
    "driver": ("ParseJob", "Stats", "StrictParseError", "make_parser", "merge_finished", "parse_job", "parse_lines"),
    "shards": ("InputError", "merge_shards", "shard_path", "shard_range"),
    "stanza_parser": ("MissingModelsError", "StanzaLikeSentence", "StanzaParser", "SyntacticWord", "align_to_tokens",
                      "from_stanza", "make_pipeline", "moses_unescape"),
    "trivial": ("TrivialParser", "fallback_parse", "flat_tree", "left_branching_tree", "right_branching_tree",
                "split_sentences", "trivial_heads", "trivial_parse"),
})
