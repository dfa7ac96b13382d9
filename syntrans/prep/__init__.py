"""Data preparation per corpus (``syntrans-prepare``): download, extract, tokenize, clean, BPE, parse, binarize.

``prepare_corpus(corpus, src, tgt, out_dir, ...)`` runs the resumable pipeline of
:mod:`syntrans.prep.pipeline` and returns a :class:`Prepared`; :data:`CORPORA` is the registry
(:mod:`syntrans.prep.corpora`); every user-fixable problem is a :class:`PrepError`. Pieces:
:mod:`.download` and :mod:`.checksums` (fetch), :mod:`.extract`, :mod:`.tokenization` and :mod:`.clean`
(pure functions) with :mod:`.prepare_text`, :mod:`.bpe`, :mod:`.parse_step`, :mod:`.binarize` (the only step
that imports fairseq), :mod:`.markers` (done-markers); :mod:`.recipe` (a paper's settings over a corpus') with
:mod:`.langid_filter` (its language filter).
"""
from .corpora import CORPORA, Clean, Corpus, Download, PairData, Part
from .errors import PrepError
from .pipeline import STEPS, Prepared, prepare_corpus
from .recipe import OFF, Recipe

__all__ = ["CORPORA", "OFF", "STEPS", "Clean", "Corpus", "Download", "PairData", "Part", "PrepError", "Prepared",
           "Recipe", "prepare_corpus"]
