"""The language filter of training pairs: a side not identified as its language drops the pair.

Identification uses the model of the ``langid`` package (langid.py, Lui & Baldwin 2012) over all its 97 languages,
on the raw (untokenized) text. Deguchi et al. 2021 (App. A) used langid; Bugliarello & Okazaki 2020 (§3.1, App. A)
used langdetect, and Hou et al. 2022 (App. A) name no tool: we use langid for all of them.

:func:`classify` gives the same label as ``langid.classify(text)[0]``; it takes the dot product over the features
the text has instead of all 7,480 (langid converts its whole model matrix to float64 on every call): about twenty
times faster, the sums in float64 as langid's. The model is loaded once per process, on first use (about 2 s).
"""
from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from .errors import PrepError

_MODEL = None


def _identifier():
    """langid's LanguageIdentifier with its bundled model (loaded once); PrepError naming the install when missing."""
    global _MODEL
    if _MODEL is None:
        try:
            from langid.langid import LanguageIdentifier, model
        except ImportError:
            raise PrepError("the language filter (recipe langid, --langid) needs the langid package, which is not "
                            "installed: pip install langid") from None
        ident = LanguageIdentifier.from_modelstring(model)
        _MODEL = (ident, ident.nb_ptc.astype("float64"), ident.nb_pc.astype("float64"))
    return _MODEL


def load() -> None:
    """Load the model now (before worker processes fork, so they share it)."""
    _identifier()


def languages() -> tuple[str, ...]:
    """The language codes langid can answer (ISO 639-1, e.g. ``de``, ``ja``, ``zh``)."""
    return tuple(_identifier()[0].nb_classes)


def classify(text: str) -> str:
    """The language langid identifies ``text`` as (its most probable of 97 languages)."""
    ident, ptc, pc = _identifier()
    fv = ident.instance2fv(text)
    present = np.flatnonzero(fv)
    scores = fv[present] @ ptc[present] + pc
    return ident.nb_classes[int(np.argmax(scores))]


def check_languages(langs: Iterable[str]) -> None:
    """PrepError when langid cannot identify one of ``langs`` (a pair of made-up languages, say)."""
    known = set(languages())
    bad = [lang for lang in langs if lang not in known]
    if bad:
        raise PrepError(f"the language filter (recipe langid, --langid): langid does not know {', '.join(map(repr, bad))}; "
                        f"expected languages among its {len(known)}: {', '.join(sorted(known))}")
