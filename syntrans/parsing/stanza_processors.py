"""The stanza processors that produce each view of a parse (:mod:`syntrans.data.parse_views`); no stanza import."""
from __future__ import annotations

from collections.abc import Iterable

from ..data.parse_views import parse_views

#: the stanza processors each view needs, besides ``tokenize`` (and ``mwt`` for languages that have it)
VIEW_PROCESSORS = {"deps": ("pos", "lemma", "depparse"), "trees": ("pos", "constituency")}
#: stanza's processors in pipeline order
PROCESSOR_ORDER = ("tokenize", "mwt", "pos", "lemma", "depparse", "constituency")


def processors(views: Iterable[str], mwt: bool = False) -> list[str]:
    """The stanza processors that produce ``views``, in pipeline order: tokenize, mwt (when ``mwt``), then those of
    each view (:data:`VIEW_PROCESSORS`)."""
    wanted = {"tokenize"} | ({"mwt"} if mwt else set())
    for v in parse_views(list(views)):
        wanted |= set(VIEW_PROCESSORS[v])
    return [p for p in PROCESSOR_ORDER if p in wanted]
