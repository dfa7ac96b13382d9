"""Layer lists of the mechanisms' configs: ``List[int]`` in the typed config; on the command line and in checkpoints
written before the typed config, also a string (``"0,2"``, ``"[0, 2]"``, ``"3"``, ``""``) or ``"all"``, read by
:func:`parse_layer_spec` (the flags' type and the config's adapter). Negative numbers count from the last layer, as
Python's indices do (``-1``: the last one)."""
from __future__ import annotations

import ast
from typing import Iterable, List, Union

ALL = "all"


def parse_layer_spec(text: str) -> Union[str, List[int]]:
    """The command line's layer list: ``"all"`` stays ``"all"`` (resolved when the model's layer count is known),
    anything else becomes a list of ints (``""``: none). An argparse ``type``."""
    text = text.strip()
    if text == ALL:
        return ALL
    if not text:
        return []
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        raise ValueError(f"a layer list is comma-separated 0-based layer numbers or 'all', found {text!r}") from None
    items = value if isinstance(value, (list, tuple)) else [value]
    if not all(isinstance(x, int) and not isinstance(x, bool) for x in items):
        raise ValueError(f"a layer list is comma-separated 0-based layer numbers or 'all', found {text!r}")
    return list(items)


def resolve_layers(layers: Iterable[int], num_layers: int, flag: str) -> List[int]:
    """``layers`` (the typed config's list of ints; negative numbers count from the last layer) → the sorted 0-based
    layers among ``num_layers``; ``flag`` names the option in errors. A layer named twice is an error."""
    out: List[int] = []
    for x in layers:
        if isinstance(x, bool) or not isinstance(x, int):
            raise ValueError(f"{flag}: layer numbers are integers, found {x!r}")
        if not -num_layers <= x < num_layers:
            raise ValueError(f"{flag}: layers must lie in 0..{num_layers - 1} (or -{num_layers}..-1 from the last), "
                             f"found {x}")
        if x % num_layers in out:
            raise ValueError(f"{flag}: layer {x % num_layers} is named twice in {list(layers)}")
        out.append(x % num_layers)
    return sorted(out)
