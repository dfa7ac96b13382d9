"""Hypotheses from fairseq-generate output, Moses detokenization, and sacreBLEU on the detokenized text."""
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


def sacrebleu_tokenizer(lang: str) -> str:
    """sacreBLEU's tokenizer for a target language: ``zh`` for Chinese, ``ja-mecab`` for Japanese when its
    dependencies are installed (else ``char``), else the default ``13a``."""
    if lang == "zh":
        return "zh"
    if lang == "ja":
        try:
            import MeCab  # noqa: F401  (sacrebleu[ja])
            return "ja-mecab"
        except ImportError:
            return "char"
    return "13a"


def bleu(hyps: List[str], refs: List[str], lang: str, lowercase: bool,
         tokenize: Optional[str] = None) -> Tuple[float, str]:
    """Corpus sacreBLEU of detokenized hypotheses against the raw references: (score, signature).

    ``tokenize``: sacreBLEU's tokenizer (e.g. ``char`` for character-level BLEU, ``13a``); None: the target
    language's (:func:`sacrebleu_tokenizer`). ``lowercase`` True: case-insensitive BLEU."""
    from sacrebleu.metrics import BLEU

    if len(hyps) != len(refs):
        raise ValueError(f"{len(hyps)} hypotheses for {len(refs)} references")
    metric = BLEU(lowercase=lowercase, tokenize=sacrebleu_tokenizer(lang) if tokenize is None else tokenize)
    score = metric.corpus_score(hyps, [refs])
    return score.score, str(metric.get_signature())
