"""The forms a model config comes in (a command line's Namespace, a mapping, a DictConfig, a dataclass) read as one:
a plain dict of a group's top-level items (:func:`syntrans.models.config.model_config` reads every form through it)."""
from __future__ import annotations

import argparse
import dataclasses
from typing import Any, Dict, Mapping

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException


def config_items(value, where: str) -> Dict[str, Any]:
    """A Namespace, mapping, DictConfig or dataclass → a plain dict of its top-level items."""
    if value is None:
        return {}
    if isinstance(value, argparse.Namespace):
        return dict(vars(value))
    if dataclasses.is_dataclass(value):
        return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    if isinstance(value, DictConfig):
        try:
            return OmegaConf.to_container(value, resolve=True)
        except OmegaConfBaseException:  # an interpolation into a root this node was taken from
            return OmegaConf.to_container(value, resolve=False)
    if isinstance(value, Mapping):
        return dict(value)
    raise ValueError(f"{where}: expected a group of fields ({{field: value}}), found {type(value).__name__} {value!r}")
