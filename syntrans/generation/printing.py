"""What the ``syntax_translation`` task does under ``--print-syntax`` (fairseq-generate): the recording generator
or scorer in place of fairseq's, and the printer of its lines (:mod:`.syntax_lines`).

Where the lines go: fairseq-generate's stream when that is stdout (the same object, so the order of the lines is
kept); with ``--results-path DIR``, ``DIR/syntax-<subset>.txt`` next to fairseq's ``generate-<subset>.txt``, whose
handle no task method can reach (reopening that file would overwrite it).
"""
from __future__ import annotations

import os
import sys
from typing import Callable, Optional, Tuple

from .recording import ParseRecordingGenerator, ParseRecordingScorer, model_parses
from .syntax_lines import SyntaxPrinter


def syntax_generator(task, models, args, build: Callable, seq_gen_cls=None) -> Tuple[object, SyntaxPrinter]:
    """(generator, printer) for ``--print-syntax``: ``build(seq_gen_cls)`` is fairseq's ``build_generator`` of the
    task with the other arguments bound; under ``--score-reference`` a :class:`ParseRecordingScorer`."""
    if getattr(args, "print_alignment", None):
        raise ValueError("--print-syntax cannot be combined with --print-alignment: fairseq's alignment generator "
                         "wraps the model in its own ensemble; print them in separate runs")
    parses = model_parses(models)
    teacher_forced = bool(getattr(args, "score_reference", False))
    if teacher_forced:
        generator = ParseRecordingScorer(task.target_dictionary)
    else:
        if seq_gen_cls is not None and not issubclass(seq_gen_cls, ParseRecordingGenerator):
            raise ValueError(f"--print-syntax records the parses with ParseRecordingGenerator; "
                             f"{seq_gen_cls.__name__} was asked for")
        generator = build(seq_gen_cls or ParseRecordingGenerator)
    subset = getattr(task.cfg, "gen_subset", None) or "test"
    results = getattr(task.cfg, "results_path", None)
    stream, close = sys.stdout, False
    if results:
        os.makedirs(results, exist_ok=True)
        stream, close = open(os.path.join(results, f"syntax-{subset}.txt"), "w", buffering=1, encoding="utf-8"), True
    printer = SyntaxPrinter(parses, task.datasets.get(subset), stream, subset, teacher_forced,
                            nbest=getattr(args, "nbest", 1), close=close)
    return generator, printer


def gen_subset_of(task, dataset) -> Optional[str]:
    """The generation split's name when ``dataset`` is that split (``--gen-subset``), else None."""
    subset = getattr(task.cfg, "gen_subset", None)
    return subset if subset is not None and task.datasets.get(subset) is dataset else None
