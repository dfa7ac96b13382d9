"""The fields of a model config stored in a checkpoint, read as the model reads them: what makes two checkpoints
checkpoints of one model (:func:`syntrans.checkpoints.average.average_checkpoints` compares them)."""
from __future__ import annotations

import dataclasses
from typing import Any, Dict

from .config import model_config

#: model config fields that change how a model is computed, not what it computes (or only name it)
NOT_COMPARED = frozenset({"_name", "preset", "checkpoint_activations", "offload_activations", "min_params_to_wrap",
                          "export"})


def model_fields(stored) -> Dict[str, Any]:
    """Dotted name → value of every field of a stored model config read as the model reads it (the config's one
    adapter, :func:`syntrans.models.config.model_config`: a flat Namespace, which also holds the training options,
    gives the model's fields alone), but :data:`NOT_COMPARED`."""
    typed = model_config(stored)
    out: Dict[str, Any] = {}
    for f in dataclasses.fields(typed):
        if f.name in NOT_COMPARED:
            continue
        value = getattr(typed, f.name)
        if dataclasses.is_dataclass(value):
            out.update((f"{f.name}.{k}", v) for k, v in dataclasses.asdict(value).items())
        else:
            out[f.name] = value
    return out
