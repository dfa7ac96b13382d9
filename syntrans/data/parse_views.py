"""The views of a parse: what a parsed corpus holds, and which sidecar kinds and batch features each is read by.

A parsed corpus holds one or both **views** of every sentence:

* ``deps``: dependencies (each word's head and relation: the CoNLL-U HEAD and DEPREL columns), from stanza's
  ``pos``, ``lemma`` and ``depparse`` processors; they make the ``head`` and ``label`` sidecars;
* ``trees``: constituency trees (the ``# constituency`` comment), from stanza's ``pos`` and ``constituency``
  processors; they make the ``dist`` sidecar.

(Which stanza processors produce each view is the parser's business: :mod:`syntrans.parsing.stanza_processors`.)
It sits with the sidecars, below the parsers, so that the sidecars' messages and the parsers share one vocabulary; it
imports neither stanza nor, until :func:`views_of_features` is called, torch.

The ``word`` sidecar (each subword's word) needs no parse. Which views a model reads follows from the batch features
its mechanisms declare (:func:`views_of_features`: each feature's sidecar kinds, whose views
:data:`syntrans.data.sidecar_format.KIND_VIEW` gives).
"""
from __future__ import annotations

from collections.abc import Iterable

from ..sides import TEXT_SIDES
from .sidecar_format import KIND_VIEW

VIEWS = ("deps", "trees")
#: what each view is, for messages
VIEW_TITLES = {"deps": "dependencies (heads and relations)", "trees": "constituency trees"}


class ViewError(ValueError):
    """A bad ``--views`` value."""


def parse_views(text: str | Iterable[str]) -> tuple[str, ...]:
    """``"deps,trees"`` (or ``"all"``, or an iterable of names) → the views in canonical order; ViewError naming a bad
    name or an empty list."""
    names = [x.strip() for x in (text.split(",") if isinstance(text, str) else text) if x.strip()]
    if names == ["all"]:
        return VIEWS
    bad = [x for x in names if x not in VIEWS]
    if bad or not names:
        raise ViewError(f"expected views from {', '.join(VIEWS)} (comma-separated) or 'all', "
                        f"found {','.join(names) if names else 'nothing'}")
    return tuple(v for v in VIEWS if v in names)


def format_views(views: Iterable[str]) -> str:
    """The ``--views`` spelling of some views (``deps,trees``); ``none`` for none."""
    views = [v for v in VIEWS if v in set(views)]
    return ",".join(views) if views else "none"


def views_of_kinds(kinds: Iterable[str]) -> tuple[str, ...]:
    """The views the sidecar ``kinds`` are built from, in canonical order."""
    got = {KIND_VIEW[k] for k in kinds if k in KIND_VIEW}
    return tuple(v for v in VIEWS if v in got)


SIDES = TEXT_SIDES  # source, target (syntrans/sides.py)


def views_of_features(names: Iterable[str], side: str | None = None) -> tuple[str, ...]:
    """The views the batch features ``names`` (:data:`syntrans.data.features.FEATURES`) are built from: those of one
    ``side`` (``source`` or ``target``), or of both (None)."""
    from .features import FEATURES  # lazy: imports torch

    unknown = sorted(set(names) - set(FEATURES))
    if unknown:
        raise ValueError(f"unknown batch features {unknown}; known: {', '.join(sorted(FEATURES))}")
    return views_of_kinds(k for n in names if side in (None, FEATURES[n].side) for k in FEATURES[n].needs)


def side_views(views) -> dict[str, tuple[str, ...]]:
    """``views`` for each side: None → both views on both sides; a list or a ``--views`` string → those on both sides;
    a dict ``{"source": …, "target": …}`` → each side's (a missing side: none). ViewError for a bad name."""
    if views is None:
        return dict.fromkeys(SIDES, VIEWS)
    if isinstance(views, dict):
        bad = sorted(set(views) - set(SIDES))
        if bad:
            raise ViewError(f"expected views per side (source, target), found {bad}")
        return {side: (parse_views(list(views[side])) if views.get(side) else ()) for side in SIDES}
    names = [views] if isinstance(views, str) else list(views)
    return dict.fromkeys(SIDES, parse_views(names) if names and names != [""] else ())


def format_side_views(views: dict) -> str:
    """``source deps, target none`` (or ``deps`` when both sides have the same)."""
    if len({tuple(views[s]) for s in SIDES}) == 1:
        return format_views(views[SIDES[0]])
    return ", ".join(f"{s} {format_views(views[s])}" for s in SIDES)
