"""The range of NSD values of a split (Ma et al. 2019): what a model's NSD embedding and classifier cover."""
from __future__ import annotations

from typing import Dict, Tuple

from ..syntax.nsd import line_nsd
from .sidecars import Sidecar


def nsd_value_range(side: Dict[str, Sidecar], kind: str) -> Tuple[int, int]:
    """(smallest, largest) word-level NSD ``kind`` over every line of one side of a split."""
    source = "head" if kind == "dD" else "dist"
    if source not in side:
        raise FileNotFoundError(f"NSD {kind} needs the {source} sidecar, which this split lacks; "
                                "write it with syntrans-preprocess from parsed corpora")
    car, words = side[source], side.get("word")
    lo, hi = None, None
    for i in range(len(car)):
        n_words = None if words is None else (int(words[i][-1]) + 1 if len(words[i]) else 0)
        values = line_nsd(kind, **{"heads" if kind == "dD" else "dists": car[i]}, n_words=n_words)
        if len(values):
            lo = int(values.min()) if lo is None else min(lo, int(values.min()))
            hi = int(values.max()) if hi is None else max(hi, int(values.max()))
    if lo is None:
        raise ValueError(f"{car.prefix}: no NSD values (every line is empty)")
    return lo, hi
