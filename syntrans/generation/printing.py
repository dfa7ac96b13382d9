"""What the ``syntax_translation`` task does under ``--print-syntax`` (fairseq-generate): the recording generator
or scorer in place of fairseq's, and the printer of its lines (:mod:`.syntax_lines`).

Where the lines go: fairseq-generate's stream when that is stdout (the same object, so the order of the lines is
kept); with ``--results-path DIR``, ``DIR/syntax-<subset>.txt`` next to fairseq's ``generate-<subset>.txt``, whose
handle no task method can reach (reopening that file would overwrite it).
"""
from __future__ import annotations

import os
import sys
from typing import Callable, Optional, Set, Tuple

from .recording import ParseRecordingGenerator, ParseRecordingScorer, model_parses
from .syntax_lines import SyntaxPrinter


#: the help of the tasks' ``--print-syntax``
PRINT_SYNTAX_HELP = ("fairseq-generate: print the parse every parse-predicting layer predicts, per source subword (SH- "
                     "lines) and hypothesis subword (TH- lines, decoder layers), as 0-based subword positions (-1: "
                     "EOS/BOS or a language token), and after the split the word-level UAS against the split's gold "
                     "parses (the target's with --score-reference); with --results-path into syntax-<subset>.txt")

#: ``gold`` of :func:`syntax_generator` where no dataset's sidecars are indexed by the sample ids: parses printed, no UAS
NO_GOLD = object()


def syntax_generator(task, models, args, build: Callable, seq_gen_cls=None, gold=None,
                     skip_tokens: Set[int] = frozenset()) -> Tuple[object, SyntaxPrinter]:
    """(generator, printer) for ``--print-syntax``: ``build(seq_gen_cls)`` is fairseq's ``build_generator`` of the
    task with the other arguments bound; under ``--score-reference`` a :class:`ParseRecordingScorer`. ``gold``: the
    dataset whose ``src_side``/``tgt_side`` sidecars the sample ids index (default: the generation split itself;
    :data:`NO_GOLD`: none, no UAS); ``skip_tokens``: tokens that are no subword of either side (a task's language
    tokens), left out of the printed parses."""
    if getattr(args, "print_alignment", None):
        raise ValueError("--print-syntax cannot be combined with --print-alignment: fairseq's alignment generator "
                         "wraps the model in its own ensemble; print them in separate runs")
    parses = model_parses(models)
    teacher_forced = bool(getattr(args, "score_reference", False))
    if teacher_forced:
        generator = ParseRecordingScorer(task.target_dictionary)
        generator.skip_tokens = set(skip_tokens)
    else:
        if seq_gen_cls is not None and not issubclass(seq_gen_cls, ParseRecordingGenerator):
            raise ValueError(f"--print-syntax records the parses with ParseRecordingGenerator; "
                             f"{seq_gen_cls.__name__} was asked for")
        generator = build(seq_gen_cls or ParseRecordingGenerator)
        generator.model.skip_tokens = set(skip_tokens)
    subset = getattr(_flags(task), "gen_subset", None) or "test"
    results = getattr(_flags(task), "results_path", None)
    stream, close = sys.stdout, False
    if results:
        os.makedirs(results, exist_ok=True)
        stream, close = open(os.path.join(results, f"syntax-{subset}.txt"), "w", buffering=1, encoding="utf-8"), True
    dataset = task.datasets.get(subset) if gold is None else gold
    printer = SyntaxPrinter(parses, dataset, stream, subset, teacher_forced,
                            nbest=getattr(args, "nbest", 1), close=close)
    return generator, printer


def gen_subset_of(task, dataset) -> Optional[str]:
    """The generation split's name when ``dataset`` is that split (``--gen-subset``), else None."""
    subset = getattr(_flags(task), "gen_subset", None)
    return subset if subset is not None and task.datasets.get(subset) is dataset else None


def _flags(task):
    """Where a task keeps fairseq-generate's flags: its config, or a legacy task's ``args``
    (``translation_multi_simple_epoch``)."""
    return task.cfg if getattr(task, "cfg", None) is not None else task.args
