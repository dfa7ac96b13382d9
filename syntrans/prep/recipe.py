"""A :class:`Recipe`: one paper's preparation settings for a corpus, applied on top of the registry's :class:`PairData`.

The registry (:mod:`syntrans.prep.corpora`) holds one set of settings per corpus, but each paper prepares the same
corpus its own way: other length and ratio filters, lowercased or not, other BPE sizes, a language filter, only the
first N training pairs. A Recipe holds those settings; :func:`apply_recipe` returns the corpus' PairData with them
(``dataclasses.replace``), and ``prepare_corpus(..., recipe=...)`` prepares with the result and records the recipe
in ``OUT/prepared.json``.

Every field left ``None`` keeps the corpus' setting. The two training filters take :data:`OFF` (``"off"``) to turn
the filter off (no length limit, no ratio limit); the other filters of :mod:`syntrans.prep.clean` (an empty side,
fewer than ``min_len`` tokens) stay. The fields:

* ``max_len``, ``ratio``: the training filters (tokens after tokenization, Moses clean-corpus-n semantics).
* ``lowercase``, ``aggressive_dashes`` (Moses ``-a``), ``normalize_punctuation`` (Moses normalize-punctuation.perl,
  not applied to pre-segmented languages), ``remove_non_printing`` (Moses remove-non-printing-char.perl): see
  :mod:`syntrans.prep.tokenization`.
* ``langid``: drop training pairs whose source or target is not identified as its language
  (:mod:`syntrans.prep.langid_filter`), counted under ``language``.
* ``train_limit``: only the first N pairs of the training text (before any filter).
* ``train_parts``: other training files (e.g. :func:`syntrans.prep.corpora.aspec_je_train` for more than ASPEC's
  first million pairs), for both directions.
* ``bpe_ops``: BPE merges (per side when separate); ``bpe_ops_by_lang``: merges per language (separate BPE; a dict
  or ``((lang, n), ...)``); ``joint``: one BPE model and dictionary for both sides, or one each.
* ``word_vocab``: no BPE at all: the tokens are words, and each language's dictionary keeps its N most frequent
  ones (fairseq-preprocess ``--nwordssrc``/``--nwordstgt``; the rest become ``<unk>``).
* ``multitask``: the data of the +MULTI-TASK baseline (Bugliarello & Okazaki 2020, App. A, after Currey & Heafield
  2019): every training source also paired with its linearised parse, each source wrapped in a task tag, the two
  tasks shuffled together; binarized without sidecars (:mod:`syntrans.prep.multitask`). ``multitask_target``:
  its parse target, ``constituency`` (None: the default, the authors' unlexicalized constituency skeleton) or
  ``dependency`` (our bracketed dependency parse over the BPE pieces); set only with ``multitask``.

A recipe that cannot apply to a pair (merges for a language the pair lacks, a filter on a corpus whose gold parses
must stay line-aligned, …) raises :class:`PrepError` naming the setting, what was expected and what was found.
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields, replace

from .corpora import ONE_LANGUAGE_FORMATS, Clean, PairData, Part
from .errors import PrepError

#: the value of ``max_len`` or ``ratio`` that turns that filter off
OFF = "off"
#: the +MULTI-TASK parse targets (syntrans.syntax.linearize.TARGETS; named here so that the recipe imports no parser)
_MULTITASK_TARGETS = ("constituency", "dependency")

#: the settings that change the text itself: refused for a corpus that comes tokenized (and parsed) already
_TEXT_SETTINGS = ("lowercase", "aggressive_dashes", "normalize_punctuation", "remove_non_printing")
#: the settings that drop training pairs: refused for a corpus whose gold parses must stay line-aligned
_DROPPING_SETTINGS = ("max_len", "ratio", "langid")
_BOOLS = ("lowercase", "aggressive_dashes", "normalize_punctuation", "remove_non_printing", "langid", "joint",
          "multitask")


def refused_for(pair: PairData, settings: dict) -> list:
    """The names among ``settings`` (recipe field → value) that :func:`apply_recipe` refuses for ``pair``: text
    settings for a corpus that comes tokenized, filters for one with a gold parse per line."""
    bad = []
    for name, value in settings.items():
        if not pair.tokenize and name in _TEXT_SETTINGS and value:
            bad.append(name)
        elif pair.gold_parses and name in _DROPPING_SETTINGS and value not in (None, False):
            bad.append(name)
    return bad


def _whole(name: str, value, allow_off: bool = False) -> None:
    if value is None or (allow_off and value == OFF):
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        also = f" or {OFF!r}" if allow_off else ""
        raise PrepError(f"recipe {name}: expected a whole number >= 1{also}, found {value!r}")


@dataclass(frozen=True)
class Recipe:
    """Preparation settings that override a corpus' (module docs); ``None`` keeps the corpus' setting."""

    max_len: int | str | None = None
    ratio: float | str | None = None
    lowercase: bool | None = None
    aggressive_dashes: bool | None = None
    normalize_punctuation: bool | None = None
    remove_non_printing: bool | None = None
    langid: bool | None = None
    train_limit: int | None = None
    train_parts: tuple[Part, ...] | None = None
    bpe_ops: int | None = None
    bpe_ops_by_lang: tuple[tuple[str, int], ...] | None = None
    joint: bool | None = None
    word_vocab: int | None = None
    multitask: bool | None = None
    multitask_target: str | None = None

    def __post_init__(self):
        _whole("max_len", self.max_len, allow_off=True)
        if self.ratio is not None and self.ratio != OFF:
            if isinstance(self.ratio, bool) or not isinstance(self.ratio, (int, float)) or not self.ratio >= 1:
                raise PrepError(f"recipe ratio: expected a number >= 1 or {OFF!r}, found {self.ratio!r}")
            object.__setattr__(self, "ratio", float(self.ratio))  # 2 and 2.0 are one recipe
        for name in _BOOLS:
            value = getattr(self, name)
            if value is not None and not isinstance(value, bool):
                raise PrepError(f"recipe {name}: expected True, False or None, found {value!r}")
        for name in ("train_limit", "bpe_ops", "word_vocab"):
            _whole(name, getattr(self, name))
        if self.train_parts is not None:
            parts = tuple(self.train_parts)
            if not parts or not all(isinstance(p, Part) for p in parts):
                raise PrepError(f"recipe train_parts: expected one or more Part objects, found {self.train_parts!r}")
            object.__setattr__(self, "train_parts", parts)
        if self.bpe_ops_by_lang is not None:
            items = self.bpe_ops_by_lang.items() if isinstance(self.bpe_ops_by_lang, Mapping) else self.bpe_ops_by_lang
            try:
                by_lang = tuple(sorted((str(lang), ops) for lang, ops in items))
            except (TypeError, ValueError):
                raise PrepError(f"recipe bpe_ops_by_lang: expected {{language: merges}}, found {self.bpe_ops_by_lang!r}") \
                    from None
            for lang, ops in by_lang:
                _whole(f"bpe_ops_by_lang[{lang!r}]", ops)
            if len({lang for lang, _ in by_lang}) != len(by_lang):
                raise PrepError(f"recipe bpe_ops_by_lang: a language appears twice in {self.bpe_ops_by_lang!r}")
            if self.joint:
                raise PrepError("recipe bpe_ops_by_lang: merges per language need separate BPE (joint=False), "
                                "found joint=True; give bpe_ops for joint BPE")
            if self.bpe_ops is not None:
                raise PrepError(f"recipe: give bpe_ops ({self.bpe_ops}) or bpe_ops_by_lang, not both")
            object.__setattr__(self, "bpe_ops_by_lang", by_lang)
        if self.multitask_target is not None:
            if self.multitask_target not in _MULTITASK_TARGETS:
                raise PrepError(f"recipe multitask_target: expected one of {', '.join(_MULTITASK_TARGETS)} or None, "
                                f"found {self.multitask_target!r}")
            if not self.multitask:
                raise PrepError(f"recipe multitask_target {self.multitask_target!r}: the parse target of the "
                                "+MULTI-TASK data; expected it with multitask=True, found multitask "
                                f"{self.multitask!r}")
        if self.word_vocab is not None and (self.bpe_ops is not None or self.bpe_ops_by_lang is not None):
            raise PrepError(f"recipe word_vocab ({self.word_vocab}) means no BPE: found BPE merges as well "
                            f"(bpe_ops {self.bpe_ops}, bpe_ops_by_lang {self.bpe_ops_by_lang})")

    def settings(self) -> dict:
        """{field: value} of the fields that are set (JSON-ready: Parts as dicts, pairs as lists)."""
        out = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if value is None:
                continue
            if f.name == "train_parts":
                value = [asdict(p) for p in value]
            elif f.name == "bpe_ops_by_lang":
                value = dict(value)
            out[f.name] = value
        return out

    def is_empty(self) -> bool:
        return not self.settings()

    def digest(self) -> str:
        """A short name of the settings (8 hex digits of their sha256; ``"corpus"`` for an empty recipe): equal
        recipes give equal digests, e.g. to name one prepared folder per recipe."""
        if self.is_empty():
            return "corpus"
        text = json.dumps(self.settings(), sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:8]

    def describe(self) -> str:
        """One line naming the set fields (:func:`describe_settings`)."""
        return describe_settings(self.settings())


def describe_settings(settings: dict | None) -> str:
    """One line naming the fields of :meth:`Recipe.settings`, e.g. ``max_len 80, ratio off, langid, no joint``."""
    parts = []
    for name, value in (settings or {}).items():
        if value is True:
            parts.append(name)
        elif value is False:
            parts.append(f"no {name}")
        elif name == "train_parts":
            parts.append(f"train_parts ({len(value)} files)")
        elif name == "bpe_ops_by_lang":
            parts.append("bpe_ops_by_lang " + ", ".join(f"{k} {v}" for k, v in value.items()))
        else:
            parts.append(f"{name} {value}")
    return ", ".join(parts) or "none"


def recipe_settings(recipe: Recipe | None) -> dict | None:
    """What prepared.json records: the set fields of ``recipe``, or None for no recipe (or one that sets nothing)."""
    if recipe is None or recipe.is_empty():
        return None
    return recipe.settings()


def _check_train_parts(parts: tuple[Part, ...], langs: tuple[str, str]) -> None:
    for part in parts:
        for lang in langs:
            try:
                part.candidates(lang)
            except KeyError:
                raise PrepError(f"recipe train_parts: expected a file of {lang} in every part, found none in {part}") \
                    from None
        if part.fmt not in ONE_LANGUAGE_FORMATS and not set(langs) <= set(part.columns):
            raise PrepError(f"recipe train_parts: expected columns for {' and '.join(langs)} in the {part.fmt} part "
                            f"{part.files}, found columns {part.columns}")


def apply_recipe(pair: PairData, recipe: Recipe | None) -> PairData:
    """``pair`` with the settings ``recipe`` sets (module docs); ``pair`` itself when there is nothing to apply."""
    if recipe is None or recipe.is_empty():
        return pair
    langs = "-".join(pair.langs)
    refused = refused_for(pair, {n: getattr(recipe, n) for n in _TEXT_SETTINGS + _DROPPING_SETTINGS})
    bad = [n for n in refused if n in _TEXT_SETTINGS]
    if bad:
        raise PrepError(f"recipe {', '.join(bad)}: the {langs} text comes tokenized (and parsed) already, so it "
                        f"cannot be changed; expected these settings unset or False for it")
    if refused:
        raise PrepError(f"recipe {', '.join(refused)}: the {langs} corpus has a gold parse for every line, which a "
                        f"filter would misalign; expected no filter for it")
    changes = {}
    for name in ("lowercase", "aggressive_dashes", "normalize_punctuation", "remove_non_printing", "langid",
                 "train_limit", "bpe_ops", "joint", "word_vocab", "multitask", "multitask_target"):
        value = getattr(recipe, name)
        if value is not None:
            changes[name] = value
    if recipe.max_len is not None or recipe.ratio is not None:
        base = pair.clean or Clean()
        max_len = base.max_len if recipe.max_len is None else (None if recipe.max_len == OFF else recipe.max_len)
        ratio = base.ratio if recipe.ratio is None else (None if recipe.ratio == OFF else recipe.ratio)
        changes["clean"] = replace(base, max_len=max_len, ratio=ratio)
    if recipe.bpe_ops is not None:
        changes["bpe_ops_by_lang"] = ()  # one merge count for every side
    if recipe.bpe_ops_by_lang is not None:
        have = {lang for lang, _ in recipe.bpe_ops_by_lang}
        if have != set(pair.langs):
            raise PrepError(f"recipe bpe_ops_by_lang: expected merges for {' and '.join(pair.langs)} (the pair {langs}), "
                            f"found {', '.join(sorted(have))}")
        changes["bpe_ops_by_lang"] = recipe.bpe_ops_by_lang
        changes["joint"] = False
    if recipe.train_parts is not None:
        _check_train_parts(recipe.train_parts, pair.langs)
        changes["splits"] = {d: {**splits, "train": recipe.train_parts} for d, splits in pair.splits.items()}
    return replace(pair, **changes)
