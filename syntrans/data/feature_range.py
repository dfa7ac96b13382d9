"""The range of a feature's values over a split: what a model whose sizes depend on the values (an embedding and a
classifier over them) must cover, read from the training split when the model is built."""
from __future__ import annotations

from typing import Dict, Tuple

import numpy as np

from .features import FEATURES
from .sidecars import Sidecar


def feature_range(side: Dict[str, Sidecar], name: str) -> Tuple[int, int]:
    """(smallest, largest) value of feature ``name`` over every sentence of one side of a split (its sidecars), its
    fillers (the values of tokens without one, e.g. EOS) left out."""
    f = FEATURES[name]
    lacking = [k for k in f.needs if k not in side]
    if lacking:
        raise FileNotFoundError(f"feature {name} needs the {f.side} sidecar(s) {', '.join(lacking)}, which this split "
                                "lacks; write them with syntrans-preprocess from parsed corpora")
    first = side[f.needs[0]]
    fillers = np.array(sorted({f.pad, *f.fillers}), dtype=np.int64)
    lo = hi = None
    for i in range(len(first)):
        try:
            values = f.build({k: side[k][i] for k in f.needs})
        except ValueError as e:  # bad sidecar values: name the file and the sentence, as the dataset does
            raise ValueError(f"{side[f.needs[-1]].prefix}: sentence {i} (line {i + 1} of the text): {e}") from None
        values = values[~np.isin(values, fillers)]
        if len(values):
            lo = int(values.min()) if lo is None else min(lo, int(values.min()))
            hi = int(values.max()) if hi is None else max(hi, int(values.max()))
    if lo is None:
        raise ValueError(f"{first.prefix}: no values of {name} (every line is empty)")
    return lo, hi
