"""Translate with a trained syntrans (or plain fairseq) model from Python: :class:`Translator`.

    from syntrans.hub import Translator
    t = Translator.from_checkpoint("ckpt/checkpoint_best.pt", data="data-bin", bpe_codes="codes", parser="auto")
    t.translate(["Ein Mann fährt Fahrrad ."])

Files: ``translator.py`` (the pipeline), ``text.py`` (Moses and BPE), ``source_syntax.py`` (parsing and in-memory
sidecars), ``batch.py`` (collating like fairseq-generate), ``predicted_syntax.py`` (the parses the model's LISA/DBSA
heads predict, ``Translator(syntax=…).translate_syntax``); the checkpoint and its task load with
:func:`syntrans.checkpoints.loading.load_checkpoint`.
``syntrans-translate`` (:mod:`syntrans.cli.translate`) is the command line around it.
"""
from .predicted_syntax import PredictedParse, Translation
from .source_syntax import MemorySidecar, SourceParser
from .text import SourceText, TargetText
from .translator import PARSER_CHOICES, LineTooLong, Translator

__all__ = ["PARSER_CHOICES", "LineTooLong", "MemorySidecar", "PredictedParse", "SourceParser", "SourceText", "TargetText",
           "Translation", "Translator"]
