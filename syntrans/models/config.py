"""The model's config, :data:`SyntaxTransformerConfig`: fairseq's ``TransformerConfig`` plus one nested group per
mechanism (under the mechanism's key, each the mechanism's own dataclass, from the registry). Inside the model it is
the only form.

Every other form goes through one adapter, :func:`model_config` (fairseq's ``from_namespace``), which is fairseq's own
alias mechanism of ``TransformerConfig`` (``encoder_embed_dim`` ↔ ``encoder.embed_dim``) extended to the registry's
keys (``<key>_<field>`` ↔ ``<key>.<field>``):

* the command line's flat Namespace (``--<key>-<field> v`` → ``<key>_<field>``), as fairseq keeps it for the model,
  and checkpoints that stored it (every checkpoint written from the command line, of every version);
* the nested form (``<key>: {<field>: v}``): fairseq-hydra-train YAML, ``--model-overrides`` and checkpoints that
  stored it; a nested value wins over a flat one (it is an override, or the YAML's own value over a preset's);
* layer lists given as strings (``"0,2"``, ``"all"``: every layer of the side), as the flags and older checkpoints
  give them.

The typed config's own attribute access takes the flat names too (:meth:`__getattr__`, :meth:`__setattr__`), as
fairseq's does for ``encoder_*``; a flat name whose group has no such field is an error naming the nearest one.
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import difflib
import functools
import re
from typing import Any, Dict, List, Mapping, Optional

from fairseq.models.transformer import TransformerConfig
from fairseq.models.transformer.transformer_config import DecoderConfig, EncDecBaseConfig, QuantNoiseConfig
from omegaconf import DictConfig, ListConfig, OmegaConf, open_dict

from ..mechanisms.base import ModelShape
from ..mechanisms.layer_lists import ALL, parse_layer_spec
from ..mechanisms.plan import SyntaxPlan
from ..mechanisms.registry import MECHANISMS

#: every nested group of the config, Transformer's first (a layer list's 'all' reads their layer counts): key → dataclass
GROUPS: Dict[str, type] = {"encoder": EncDecBaseConfig, "decoder": DecoderConfig, "quant_noise": QuantNoiseConfig,
                           **{M.key: M.Config for M in MECHANISMS}}

MECHANISM_KEYS = frozenset(M.key for M in MECHANISMS)

#: a flat name: ``<group>_<field>`` (longest group key first: ``quant_noise_pq``)
FLAT_NAME = re.compile(r"(%s)_(.+)" % "|".join(sorted(GROUPS, key=len, reverse=True)))


def _field_names(group: str) -> List[str]:
    return [f.name for f in dataclasses.fields(GROUPS[group])]


def _unknown(group: str, name: str, given_as: str) -> ValueError:
    """The error for a field its group does not have, naming the nearest one."""
    known = _field_names(group)
    near = difflib.get_close_matches(name, known, n=1)
    hint = f"; did you mean {near[0]!r} ({_spellings(group, near[0])})?" if near else f"; its fields: {', '.join(known)}"
    return ValueError(f"{given_as}: the model config's group {group!r} has no field {name!r}{hint}")


def _spellings(group: str, name: str) -> str:
    return f"--{group}-{name}".replace("_", "-") + f", {{'{group}': {{'{name}': …}}}}"


def layer_side(group: str, name: str) -> Optional[str]:
    """The side whose layer count a layer-list field's 'all' means, or None for other fields."""
    if group in MECHANISM_KEYS and (
            name == "layers" or name.endswith("_layers")):
        return "decoder" if name.startswith("decoder") else "encoder"
    return None


class _Config(TransformerConfig):
    """Attribute access by flat names (``<key>_<field>``), fairseq's alias mechanism over every group, and the plan."""

    def __getattr__(self, name):  # only called when the attribute is not found
        match = FLAT_NAME.fullmatch(name)
        if match is None or match[1] not in GROUPS:
            raise AttributeError(f"{type(self).__name__} has no attribute {name!r}")
        group, field = match[1], match[2]
        if field not in _field_names(group):
            raise AttributeError(str(_unknown(group, field, name)))
        return getattr(getattr(self, group), field)

    def __setattr__(self, name, value):
        match = FLAT_NAME.fullmatch(name)
        if match is None or name in self.__dataclass_fields__:
            object.__setattr__(self, name, value)
            return
        group, field = match[1], match[2]
        if group in MECHANISM_KEYS and field not in _field_names(group):
            raise _unknown(group, field, name)
        setattr(getattr(self, group), field, value)

    @functools.cached_property
    def plan(self) -> SyntaxPlan:
        """The model's :class:`~syntrans.mechanisms.plan.SyntaxPlan`, built (every option checked) the first time the
        build asks for it, after fairseq's own changes to the sizes (``--encoder-layers-to-keep``)."""
        return SyntaxPlan(self, model_shape(self))


SyntaxTransformerConfig = dataclasses.make_dataclass(
    "SyntaxTransformerConfig", [(M.key, M.Config, dataclasses.field(default_factory=M.Config)) for M in MECHANISMS] + [
        ("preset", Optional[str], dataclasses.field(default=None, metadata={
            "help": "the architecture preset whose settings this config holds (set when the preset is applied)"}))],
    bases=(_Config,),
    namespace={"from_namespace": classmethod(lambda cls, args: model_config(args)),
               "__doc__": "fairseq's TransformerConfig plus one nested config group per syntax mechanism."})
SyntaxTransformerConfig.__module__ = __name__


def model_shape(cfg) -> ModelShape:
    """The sizes the mechanisms are built into, from the typed config."""
    return ModelShape(int(cfg.encoder.layers), int(cfg.decoder.layers), int(cfg.encoder.attention_heads),
                      int(cfg.decoder.attention_heads), int(cfg.encoder.embed_dim), int(cfg.decoder.embed_dim))


def _as_dict(value, where: str) -> Dict[str, Any]:
    """A Namespace, dict, DictConfig or dataclass → a plain dict of its top-level items (nested values as given)."""
    if value is None:
        return {}
    if isinstance(value, argparse.Namespace):
        return dict(vars(value))
    if dataclasses.is_dataclass(value):
        return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    if isinstance(value, DictConfig):
        try:
            return OmegaConf.to_container(value, resolve=True)
        except Exception:  # an interpolation into a root this node was taken from (the decoder's input_dim)
            return OmegaConf.to_container(value, resolve=False)
    if isinstance(value, Mapping):
        return dict(value)
    raise ValueError(f"{where}: expected a group of fields ({{field: value}}), found {type(value).__name__} {value!r}")


def _plain(value):
    """OmegaConf lists and tuples as lists (the typed config holds plain values)."""
    if isinstance(value, (ListConfig, tuple)):
        return list(value)
    return value


def _layers(value, config, side: str, flag: str) -> List[int]:
    """A layer list as given (a string, 'all', a list) → a list of ints; 'all' → every layer of ``side``."""
    try:
        if isinstance(value, str):
            value = parse_layer_spec(value)
            if value == ALL:
                return list(range(int(getattr(config, side).layers)))
        return [int(x) for x in value]
    except (TypeError, ValueError) as e:
        raise ValueError(f"{flag}: {e}") from None


def model_config(cfg, overrides: Optional[Mapping[str, Any]] = None) -> "SyntaxTransformerConfig":
    """Any form of a model config (module docstring) → a new :data:`SyntaxTransformerConfig`, then ``overrides``
    (nested or flat names, as ``--model-overrides`` gives them) on top; the caller's object is not changed. This is the
    one upgrade of a stored config of any version. A group's field takes its nested value, else its flat one, else
    its declared default; other keys are kept as fairseq's ``TransformerConfig.from_namespace`` keeps them."""
    if isinstance(cfg, SyntaxTransformerConfig) and not overrides:
        return cfg
    given = _as_dict(cfg, "the model config")
    for name, value in (overrides or {}).items():  # an override wins: nested over nested, flat over everything
        if name in GROUPS and value is not None:
            given[name] = {**_as_dict(given.get(name), name), **_as_dict(value, f"--model-overrides {name!r}")}
        elif FLAT_NAME.fullmatch(name) and FLAT_NAME.fullmatch(name)[1] in GROUPS:
            group, field = FLAT_NAME.fullmatch(name).groups()
            given[group] = {**_as_dict(given.get(group), group), field: value}
        else:
            given[name] = value
    config = SyntaxTransformerConfig()
    for group, Group in GROUPS.items():
        nested = {k: v for k, v in _as_dict(given.pop(group, None), group).items() if not str(k).startswith("_")}
        values = {}
        for name in _field_names(group):
            flat = given.pop(f"{group}_{name}", None)
            value = nested.pop(name, None)
            value = flat if value is None else value
            if value is None:
                continue
            side = layer_side(group, name)
            values[name] = _layers(value, config, side, f"--{group}-{name}".replace("_", "-")) if side else _plain(value)
        if nested:
            raise _unknown(group, next(iter(nested)), f"the model config's {group!r} group")
        object.__setattr__(config, group, Group(**values))
    for name, value in given.items():
        match = FLAT_NAME.fullmatch(name)
        if match is not None and match[1] in MECHANISM_KEYS:  # a mechanism's prefix with a field it does not have
            raise _unknown(match[1], match[2], name)
        object.__setattr__(config, name, _plain(value))
    return config


def store(config: "SyntaxTransformerConfig", cfg) -> None:
    """Write the resolved groups of ``config`` back into ``cfg``, the form fairseq keeps for the model and writes into
    checkpoints, so that a checkpoint holds the whole configuration (data-derived fields included): a flat Namespace
    (the command line's) takes each mechanism field by its flat name, any other form each group nested."""
    if isinstance(cfg, argparse.Namespace):
        for M in MECHANISMS:
            for name, value in dataclasses.asdict(getattr(config, M.key)).items():
                setattr(cfg, f"{M.key}_{name}", value)
        return
    with open_dict(cfg) if isinstance(cfg, DictConfig) else contextlib.nullcontext():
        for name in [k for k in cfg.keys() if FLAT_NAME.fullmatch(str(k)) and FLAT_NAME.fullmatch(str(k))[1] in GROUPS]:
            del cfg[name]  # read into the groups
        for group in GROUPS:  # a DictConfig takes the group typed (its schema may type it); a dict, plain
            value = getattr(config, group)
            cfg[group] = value if isinstance(cfg, DictConfig) else dataclasses.asdict(value)


__all__ = ["FLAT_NAME", "GROUPS", "SyntaxTransformerConfig", "layer_side", "model_config", "model_shape", "store"]
