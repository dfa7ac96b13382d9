"""Hypotheses from fairseq-generate output, Moses detokenization, and sacreBLEU (BLEU, chrF++) and RIBES on the
detokenized text."""
from __future__ import annotations

import re
from pathlib import Path
from typing import List, Optional, Tuple

_HYP = re.compile(r"^H-(\d+)\t[^\t]*\t(.*)$")


def generate_hypotheses(path: Path, expected: int) -> List[str]:
    """The best hypothesis per sentence of a fairseq-generate log (``H-<id>\\t<score>\\t<text>``), in sentence order.

    Every id 0 … expected−1 must be present exactly once (fairseq-generate prints them in batch order)."""
    found = {}
    for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        m = _HYP.match(line)
        if m:
            i = int(m.group(1))
            if i in found:
                raise ValueError(f"{path}, line {n}: a second hypothesis for sentence {i}")
            found[i] = m.group(2)
    missing = [i for i in range(expected) if i not in found]
    if missing or len(found) != expected:
        raise ValueError(f"{path}: expected hypotheses for sentences 0…{expected - 1}, found {len(found)}"
                         + (f" (first missing: {missing[0]})" if missing else ""))
    return [found[i] for i in range(expected)]


def detokenize(lines: List[str], lang: str) -> List[str]:
    """Moses detokenization (sacremoses), which also undoes the Moses escaping (``&amp;`` → ``&``)."""
    from sacremoses import MosesDetokenizer

    md = MosesDetokenizer(lang=lang)
    return [md.detokenize(line.split()) for line in lines]


#: what sacreBLEU's ja-mecab tokenizer needs (its extra ``sacrebleu[ja]``), pinned by syntrans' ``reproduce`` extra
JA_MECAB_PACKAGES = ("mecab-python3==1.0.12", "ipadic==1.0.0")


class TokenizerMissing(RuntimeError):
    """A sacreBLEU tokenizer the scoring needs cannot run here (its packages are missing): scoring stops rather than
    switch to another tokenizer, whose BLEU would not compare."""


def sacrebleu_tokenizer(lang: str) -> str:
    """sacreBLEU's tokenizer for a target language: ``zh`` for Chinese (built into sacreBLEU), ``ja-mecab`` for
    Japanese (MeCab with the IPA dictionary: :func:`check_tokenizer`), else the default ``13a``. The choice never
    depends on what is installed: the same output scores the same on every machine, or not at all."""
    if lang == "zh":
        return "zh"
    if lang == "ja":
        return "ja-mecab"
    return "13a"


def check_tokenizer(tokenize: str) -> None:
    """:class:`TokenizerMissing` naming the packages to install when sacreBLEU's ``tokenize`` cannot run here
    (ja-mecab: MeCab's Python binding and the IPA dictionary, as sacreBLEU's ``ja`` extra; both pinned by
    ``pip install 'syntrans[reproduce]'``)."""
    if tokenize != "ja-mecab":
        return
    missing = []
    for module, package in (("MeCab", JA_MECAB_PACKAGES[0]), ("ipadic", JA_MECAB_PACKAGES[1])):
        try:
            __import__(module)
        except ImportError as e:
            missing.append(f"{package} (import {module}: {e})")
    if missing:
        raise TokenizerMissing(
            "Japanese BLEU is scored with sacreBLEU's ja-mecab tokenizer (MeCab with the IPA dictionary), which needs "
            f"{' and '.join(missing)}. Install them with: pip install 'syntrans[reproduce]' (or pip install "
            f"{' '.join(JA_MECAB_PACKAGES)}). Scoring stops here instead of using another tokenizer, whose BLEU would "
            "not compare with runs scored elsewhere.")


def bleu_metric(lang: str, lowercase: bool, tokenize: Optional[str] = None):
    """sacreBLEU's BLEU metric as :func:`bleu` scores with it (also the metric of the paired bootstrap test).

    ``tokenize``: sacreBLEU's tokenizer (e.g. ``char`` for character-level BLEU, ``13a``); None: the target
    language's (:func:`sacrebleu_tokenizer`). ``lowercase`` True: case-insensitive BLEU. :class:`TokenizerMissing`
    when the tokenizer cannot run here (:func:`check_tokenizer`)."""
    from sacrebleu.metrics import BLEU

    tokenize = sacrebleu_tokenizer(lang) if tokenize is None else tokenize
    check_tokenizer(tokenize)
    return BLEU(lowercase=lowercase, tokenize=tokenize)


def reference_streams(refs: List[str], more_refs: Optional[List[List[str]]], n_hyps: int) -> List[List[str]]:
    """sacreBLEU's references: one stream per reference (the first, then ``more_refs``), each one line per
    hypothesis; ValueError naming the stream whose length differs."""
    streams = [refs] + list(more_refs or [])
    for k, stream in enumerate(streams, 1):
        if len(stream) != n_hyps:
            raise ValueError(f"{n_hyps} hypotheses but reference {k} has {len(stream)} lines; expected one line per "
                             "hypothesis in every reference")
    return streams


def bleu(hyps: List[str], refs: List[str], lang: str, lowercase: bool,
         tokenize: Optional[str] = None, more_refs: Optional[List[List[str]]] = None) -> Tuple[float, str]:
    """Corpus sacreBLEU of detokenized hypotheses against the raw references: (score, signature).

    ``more_refs``: further references of the same segments (e.g. NIST's second to fourth), scored with sacreBLEU's
    multi-reference BLEU (clipped n-gram counts over all references, the closest reference length); the signature
    says ``nrefs:N``. ``tokenize``, ``lowercase``: as :func:`bleu_metric`."""
    streams = reference_streams(refs, more_refs, len(hyps))
    metric = bleu_metric(lang, lowercase, tokenize)
    score = metric.corpus_score(hyps, streams)
    return score.score, str(metric.get_signature())


#: chrF++ (Popović 2017, "chrF++: words helping character n-grams"): sacreBLEU's CHRF with word bigrams added to its
#: character 6-grams (its defaults: char_order 6, beta 2)
CHRF_WORD_ORDER = 2


def chrf_metric(lowercase: bool):
    """sacreBLEU's chrF++ metric, CHRF(word_order=2), as :func:`chrf` scores with it (also the metric of the paired
    bootstrap test). ``lowercase`` True: case-insensitive. chrF has no tokenizer: characters and whitespace-split
    words of the detokenized text."""
    from sacrebleu.metrics import CHRF

    return CHRF(word_order=CHRF_WORD_ORDER, lowercase=lowercase)


def chrf(hyps: List[str], refs: List[str], lowercase: bool,
         more_refs: Optional[List[List[str]]] = None) -> Tuple[float, str]:
    """Corpus chrF++ of detokenized hypotheses against the raw references: (score, signature); ``more_refs`` as
    :func:`bleu`'s (sacreBLEU's chrF keeps the best-matching reference per segment)."""
    streams = reference_streams(refs, more_refs, len(hyps))
    metric = chrf_metric(lowercase)
    return metric.corpus_score(hyps, streams).score, str(metric.get_signature())


#: nltk's corpus_ribes defaults (its docstring: the RIBES of shared tasks such as WAT)
RIBES_ALPHA, RIBES_BETA = 0.25, 0.10


def ribes(hyps: List[str], refs: List[str], lang: str, tokenize: Optional[str] = None) -> Tuple[float, str]:
    """Corpus RIBES ×100 of detokenized hypotheses against the raw references: (score, signature).

    RIBES (Isozaki et al. 2010), as nltk.translate.ribes_score defines it: per sentence NKT × P^α × BP^β, NKT the
    normalized Kendall's τ ((τ + 1)/2) of the reference positions of the hypothesis' aligned words, P = aligned
    words / |hyp|, BP = min(1, exp(1 − |ref|/|hyp|)), α = 0.25, β = 0.10 (nltk's defaults); the corpus score is the
    mean over sentences (corpus_ribes). nltk ≥ 3.10.4 counts every increasing pair in τ, as the official RIBES
    script does (older nltk counted only pairs inside runs of consecutive ranks); nltk notes that its word alignment
    may still differ in details from the official script. ×100 as Bugliarello & Okazaki 2020, Table 1 report it
    (83.46). Both sides are tokenized as sacreBLEU tokenizes them for BLEU (``tokenize``; None:
    :func:`sacrebleu_tokenizer` of ``lang``: ja-mecab for Japanese, where the paper used KyTea, App. A),
    case-sensitively; the signature names the tokenizer.

    Degenerate sentences (nltk 3.10): an empty hypothesis scores 0 (nltk returns 0 before dividing by its length),
    and fewer than two aligned words give NKT = 0 (nltk's kendall_tau guards the 0 pairs), so such a sentence counts
    0 in the mean rather than failing. nltk refuses sentences longer than its MAX_ALIGNMENT_LEN tokens (its
    alignment search is super-linear): that is an error here naming the sentence."""
    import nltk
    from nltk.translate import ribes_score

    if len(hyps) != len(refs):
        raise ValueError(f"RIBES: {len(hyps)} hypotheses for {len(refs)} references")
    metric = bleu_metric(lang, lowercase=False, tokenize=tokenize)  # its tokenizer: sacreBLEU's for BLEU
    hyp_tokens = [metric.tokenizer(h.rstrip()).split() for h in hyps]
    ref_tokens = [metric.tokenizer(r.rstrip()).split() for r in refs]
    limit = getattr(ribes_score, "MAX_ALIGNMENT_LEN", None)
    for n, (h, r) in enumerate(zip(hyp_tokens, ref_tokens), 1):
        if limit is not None and max(len(h), len(r)) > limit:
            raise ValueError(f"RIBES: sentence {n} has {len(h)} hypothesis and {len(r)} reference tokens; "
                             f"nltk's RIBES aligns at most {limit} (nltk.translate.ribes_score.MAX_ALIGNMENT_LEN)")
    score = 100 * ribes_score.corpus_ribes([[r] for r in ref_tokens], hyp_tokens, alpha=RIBES_ALPHA, beta=RIBES_BETA)
    signature = (f"RIBES|nltk {nltk.__version__}|corpus_ribes alpha={RIBES_ALPHA:.2f} beta={RIBES_BETA:.2f}"
                 f"|tok:{metric.tokenizer_signature}|case:mixed|x100")
    return score, signature
