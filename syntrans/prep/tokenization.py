"""Tokenization of one line: sacremoses' Moses tokenizer, or whitespace fields for pre-segmented text.

* Moses: ``MosesTokenizer(lang).tokenize(line, escape=True)`` as ``tokenizer.perl -l LANG`` does by
  default: the XML-special characters become ``&amp; &#124; &lt; &gt; &apos; &quot; &#91; &#93;``.
  ``aggressive_dash_splits`` (``tokenizer.perl -a``: ``well-known`` → ``well @-@ known``) only where the
  corpus entry says so: fairseq's prepare-wmt14en2de.sh uses it for WMT en-de, its IWSLT script does not.
* Pre-segmented languages (ja and zh, segmented by the user with KyTea, MeCab, Jieba, …): the tokens
  are the whitespace fields, escaped like Moses escapes them, so every side follows one convention.
* Lowercasing (where the corpus says so) comes after tokenization, as ``lowercase.perl`` in fairseq's
  IWSLT script; the escapes are already lowercase.
* Before tokenization, where a recipe asks for them (fairseq's prepare-wmt14en2de.sh order):
  ``normalize_punctuation`` (sacremoses' port of Moses' normalize-punctuation.perl ``-l LANG``; not applied
  to pre-segmented languages, whose spacing is their segmentation), then ``remove_non_printing``
  (remove-non-printing-char.perl: every character of Unicode category C becomes a space).

* The raw-text route (``moses`` False, ``syntrans-prepare --bpe sentencepiece --no-moses``): no tokenization and no
  escaping; the line (after the recipe's normalisation and lowercasing as above) with its whitespace made single
  spaces, as the parser's character spans index it (:func:`syntrans.syntax.word_spans.spanned_line`).

Output: the tokens joined by single spaces (an empty or blank line gives an empty string).
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

import regex

#: Moses' XML escapes, in the order tokenizer.perl applies them (``&`` first)
MOSES_ESCAPES = (("&", "&amp;"), ("|", "&#124;"), ("<", "&lt;"), (">", "&gt;"), ("'", "&apos;"), ('"', "&quot;"),
                 ("[", "&#91;"), ("]", "&#93;"))
#: remove-non-printing-char.perl's ``s/\p{C}/ /g``
NON_PRINTING = regex.compile(r"\p{C}")


@dataclass(frozen=True)
class TokenizerSpec:
    """How one language is tokenized: Moses (or pre-segmented), lowercase, aggressive dash splits."""

    lang: str
    lowercase: bool = False
    aggressive_dashes: bool = False
    segmented: bool = False   # whitespace fields (already word-segmented text)
    passthrough: bool = False  # already tokenized (synthetic): the line, whitespace-normalised, unchanged
    normalize_punctuation: bool = False
    remove_non_printing: bool = False
    moses: bool = True  # False: the raw-text route (no tokenization, no escaping)


@lru_cache(maxsize=None)
def _moses(lang: str):
    from sacremoses import MosesTokenizer  # lazy: a slow import (about 0.8 s), needed only when tokenizing

    return MosesTokenizer(lang=lang)


@lru_cache(maxsize=None)
def _normalizer(lang: str):
    from sacremoses import MosesPunctNormalizer  # lazy, as _moses

    return MosesPunctNormalizer(lang=lang)


def escape_token(token: str) -> str:
    """Moses' XML escaping of one token (``&`` → ``&amp;``, …)."""
    for raw, escaped in MOSES_ESCAPES:
        token = token.replace(raw, escaped)
    return token


def tokenize_line(line: str, spec: TokenizerSpec) -> str:
    """One line tokenized per ``spec`` (module docs); tokens separated by single spaces."""
    if spec.passthrough:
        return " ".join(line.split())
    if spec.normalize_punctuation and not spec.segmented:
        line = _normalizer(spec.lang).normalize(line)
    if spec.remove_non_printing:
        line = NON_PRINTING.sub(" ", line)
    if not spec.moses:
        tokens = line.split()
    elif spec.segmented:
        tokens = [escape_token(t) for t in line.split()]
    elif not line.strip():
        tokens = []
    else:
        tokens = _moses(spec.lang).tokenize(line, escape=True, aggressive_dash_splits=spec.aggressive_dashes)
    text = " ".join(tokens)
    return text.lower() if spec.lowercase else text


def tokenize_lines(lines: Sequence[str], spec: TokenizerSpec) -> list[str]:
    """:func:`tokenize_line` over a batch (the unit of work of the worker pool)."""
    return [tokenize_line(x, spec) for x in lines]


def looks_unsegmented(lines: Iterable[str], min_chars: int = 12) -> bool:
    """Whether most non-empty lines are one long whitespace field (ja/zh text nobody segmented)."""
    long_single = total = 0
    for line in lines:
        fields = line.split()
        if not fields:
            continue
        total += 1
        long_single += len(fields) == 1 and len(fields[0]) >= min_chars
    return total > 0 and long_single * 2 > total
