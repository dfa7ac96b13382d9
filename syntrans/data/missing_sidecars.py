"""What to say when a split lacks sidecars: the view of the parse they are built from and the one command that adds
them (``syntrans-prepare --again`` for a folder syntrans-prepare made, else syntrans-parse and syntrans-preprocess).

It reads a prepared folder's ``prepared.json`` (its key ``again``: the folder can be prepared again; ``views``: what it
holds) because the error is raised where the data is loaded (the task, the dataset), which stand below
:mod:`syntrans.prep` and cannot ask it.
"""
from __future__ import annotations

import json
import os
from typing import Optional

from .parse_views import VIEW_TITLES, format_views, views_of_kinds
from .sidecars import exists

#: how to get a sidecar that data binarized by an earlier version lacks (kinds added since the first release)
ADDED_LATER = {
    "label": "it holds the dependency labels (the DEPREL column of the CoNLL-U parses), which data binarized before "
             "syntrans stored them lacks: re-run syntrans-preprocess with the same parses (--sidecars-only keeps the "
             "binarized tokens), or syntrans-prepare on its output folder (it redoes its binarize step)",
}


class LackingKinds(list):
    """The sidecar kinds a split's side lacks (a list), with the path prefix of that side's files
    (``{data}/{split}.{src}-{tgt}.{lang}``, or None when unknown), so that :func:`how_to_write` can name the command
    that adds them."""

    def __init__(self, kinds=(), prefix: Optional[str] = None):
        super().__init__(kinds)
        self.prefix = prefix


def how_to_write(kinds, prefix: Optional[str] = None) -> str:
    """How to get the sidecars ``kinds`` that a split lacks (for error messages): the view of the parse they are built
    from and the one command that adds it (:func:`add_view_command`); for the labels of data binarized before
    syntrans stored them, how to write them. ``prefix``: the side's files (default: ``kinds.prefix``)."""
    if prefix is None and isinstance(kinds, LackingKinds):
        prefix = kinds.prefix
    views = views_of_kinds(kinds)
    binarized_before = list(kinds) == ["label"] and prefix is not None and exists(f"{prefix}.head")
    if binarized_before or not views:
        later = [ADDED_LATER[k] for k in kinds if k in ADDED_LATER]
        return "; ".join(later) if later else "write it with syntrans-preprocess from parsed corpora"
    what = " and ".join(f"{VIEW_TITLES[v]} (view '{v}')" for v in views)
    return f"it is built from the {what} of the parse, which this data was prepared without: {add_view_command(views, prefix)}"


def add_view_command(views, prefix: Optional[str]) -> str:
    """The command that adds ``views`` to the data of the side ``prefix``: ``syntrans-prepare --again OUT --views …``
    for a folder syntrans-prepare made (``OUT/data-bin``, ``OUT/prepared.json``), else syntrans-parse on the split's
    parsed corpus followed by syntrans-preprocess --sidecars-only."""
    if prefix is not None:
        out = os.path.dirname(os.path.dirname(os.path.abspath(prefix)))
        summary = os.path.join(out, "prepared.json")
        try:
            with open(summary, encoding="utf-8") as f:
                prepared = json.load(f)
        except (OSError, ValueError):
            prepared = None
        if isinstance(prepared, dict) and "again" in prepared:
            have = prepared.get("views") or []
            if isinstance(have, dict):  # {lang: views}
                have = [v for views_of_side in have.values() for v in views_of_side]
            return (f"add it with `syntrans-prepare --again {out} --views {format_views(set(have) | set(views))}` (it "
                    f"parses {format_views(views)} alone, merges it into {os.path.join(out, 'parse')} and binarizes "
                    "again; the rest is kept)")
    return (f"add it to the parsed corpus of each split and side with `syntrans-parse TEXT -o PARSE.conllu "
            f"--views {format_views(views)}` (it parses that view alone and merges it into PARSE.conllu made before from "
            "the same TEXT), then write the sidecars again with `syntrans-preprocess … --sidecars-only` and the same "
            "--trainparse/--validparse/--testparse")
