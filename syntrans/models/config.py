"""The model's config, :data:`SyntaxTransformerConfig`: fairseq's ``TransformerConfig`` plus one nested group per
mechanism (the mechanism's dataclass under its registry key). Inside the model it is the only form.

Every other form goes through one adapter, :func:`model_config`, which is fairseq's own alias mechanism of
``TransformerConfig`` (``encoder_embed_dim`` ↔ ``encoder.embed_dim``) extended to the registry's keys
(``<key>_<field>`` ↔ ``<key>.<field>``): the command line's flat Namespace, which fairseq keeps for the model and
writes into checkpoints (as for its own Transformer); the nested form of fairseq-hydra-train YAML,
``--model-overrides`` and earlier checkpoints, where a nested value wins over a flat one (an override, or the YAML's
own value over a preset's); layer lists as strings (``"0,2"``, ``"all"``: every layer of the side). It is the one
upgrade of a stored config of any version. A flat name whose group has no such field is an error naming the nearest;
the overrides' names are checked first (:mod:`.overrides`).
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import difflib
import functools
import re
from typing import Any, Dict, List, Mapping, Optional, Tuple

from fairseq.models.transformer import TransformerConfig
from fairseq.models.transformer.transformer_config import DecoderConfig, EncDecBaseConfig, QuantNoiseConfig
from omegaconf import DictConfig, ListConfig, open_dict

from ..mechanisms.base import ModelShape
from ..mechanisms.layer_lists import ALL, parse_layer_spec
from ..mechanisms.plan import SyntaxPlan
from ..mechanisms.registry import MECHANISMS
from .config_items import config_items
from .overrides import check_overrides

#: every nested group, key → dataclass; Transformer's first (a layer list's 'all' reads their layer counts)
GROUPS: Dict[str, type] = {"encoder": EncDecBaseConfig, "decoder": DecoderConfig, "quant_noise": QuantNoiseConfig,
                           **{M.key: M.Config for M in MECHANISMS}}
MECHANISM_KEYS = frozenset(M.key for M in MECHANISMS)
#: ``--syntax-start`` (:data:`~syntrans.mechanisms.base.STARTS`)
START_HELP = ("how the methods' new tensors start: paper (their papers' initialisation, for training from scratch) or "
              "pretrained (closed blends and neutral starts: at the first step the model computes exactly what the "
              "Transformer it is warm-started from computes; docs/methods.md)")
_FLAT = re.compile(r"(%s)_(.+)" % "|".join(sorted(GROUPS, key=len, reverse=True)))  # longest key first: quant_noise


def flat_name(name: str) -> Optional[Tuple[str, str]]:
    """``<group>_<field>`` → (group, field), else None."""
    match = _FLAT.fullmatch(str(name))
    return (match[1], match[2]) if match else None


def _fields(group: str) -> List[str]:
    return [f.name for f in dataclasses.fields(GROUPS[group])]


def _unknown(group: str, name: str, given_as: str) -> ValueError:
    """The error for a field its group does not have, naming the nearest one."""
    near = difflib.get_close_matches(name, _fields(group), n=1)
    flag = f"--{group}-{near[0]}".replace("_", "-") if near else ""
    hint = (f"; did you mean {near[0]!r} ({flag}, {{'{group}': {{'{near[0]}': …}}}})?" if near
            else f"; its fields: {', '.join(_fields(group))}")
    return ValueError(f"{given_as}: the model config's group {group!r} has no field {name!r}{hint}")


def layer_side(group: str, name: str) -> Optional[str]:
    """The side whose layer count a mechanism's layer-list field's 'all' means, or None for other fields."""
    if group in MECHANISM_KEYS and (name == "layers" or name.endswith("_layers")):
        return "decoder" if name.startswith("decoder") else "encoder"
    return None


class _Config(TransformerConfig):
    """Attribute access by flat names (``<key>_<field>``), fairseq's alias mechanism over every group, and the plan."""

    def __getattr__(self, name):  # only called when the attribute is not found
        group, field = flat_name(name) or (None, None)
        if group is None:
            raise AttributeError(f"{type(self).__name__} has no attribute {name!r}")
        if field not in _fields(group):
            raise AttributeError(str(_unknown(group, field, name)))
        return getattr(getattr(self, group), field)

    def __setattr__(self, name, value):
        group, field = flat_name(name) or (None, None)
        if group is None or name in self.__dataclass_fields__:
            object.__setattr__(self, name, value)
        elif group in MECHANISM_KEYS and field not in _fields(group):
            raise _unknown(group, field, name)
        else:
            setattr(getattr(self, group), field, value)

    @functools.cached_property
    def plan(self) -> SyntaxPlan:
        """The model's :class:`~syntrans.mechanisms.plan.SyntaxPlan`, built (every option checked) the first time the
        build asks for it, after fairseq's own changes to the sizes (``--encoder-layers-to-keep``); an option of a
        mechanism that is off, other than its preset's, is refused (:mod:`syntrans.mechanisms.idle_options`)."""
        plan = SyntaxPlan(self, model_shape(self))
        preset = preset_values(self.preset)
        for m in plan.mechanisms:  # an option of a mechanism that is off cannot act
            m.check_idle_options({k[len(m.key) + 1:]: v for k, v in preset.items() if k.startswith(f"{m.key}_")})
        return plan


SyntaxTransformerConfig = dataclasses.make_dataclass(
    "SyntaxTransformerConfig", [(M.key, M.Config, dataclasses.field(default_factory=M.Config)) for M in MECHANISMS] + [
        ("preset", Optional[str], dataclasses.field(default=None, metadata={
            "help": "the architecture preset whose settings this config holds (set when the preset is applied)"})),
        ("syntax_start", str, dataclasses.field(default="paper", metadata={"help": START_HELP}))],
    bases=(_Config,),
    namespace={"from_namespace": classmethod(lambda cls, args: model_config(args)),
               "__doc__": "fairseq's TransformerConfig plus one nested config group per syntax mechanism."})
SyntaxTransformerConfig.__module__ = __name__


@functools.lru_cache(maxsize=None)
def _preset_items(name: Optional[str]) -> Tuple[Tuple[str, Any], ...]:
    from fairseq.models import ARCH_CONFIG_REGISTRY

    if not name or name not in ARCH_CONFIG_REGISTRY:
        return ()
    args = argparse.Namespace()
    ARCH_CONFIG_REGISTRY[name](args)
    return tuple((k, v) for k, v in vars(args).items() if flat_name(k))


def preset_values(name: Optional[str]) -> Dict[str, Any]:
    """The mechanisms' fields the architecture preset ``name`` sets, by flat name (``<key>_<field>``: value), as it
    sets them on an empty command line; {} for no preset or an unknown one."""
    return dict(_preset_items(name))


def model_shape(cfg) -> ModelShape:
    """The sizes the mechanisms are built into, from the typed config."""
    return ModelShape(int(cfg.encoder.layers), int(cfg.decoder.layers), int(cfg.encoder.attention_heads),
                      int(cfg.decoder.attention_heads), int(cfg.encoder.embed_dim), int(cfg.decoder.embed_dim))


def _value(group: str, name: str, value, config):
    """A field's value as the typed config holds it: plain lists; a layer list as ints ('all': every layer)."""
    side = layer_side(group, name)
    if side is None:
        return list(value) if isinstance(value, (ListConfig, tuple)) else value
    try:
        if isinstance(value, str) and parse_layer_spec(value) == ALL:
            return list(range(int(getattr(config, side).layers)))
        return [int(x) for x in (parse_layer_spec(value) if isinstance(value, str) else value)]
    except (TypeError, ValueError) as e:
        raise ValueError(f"--{group}-{name}".replace("_", "-") + f": {e}") from None


def model_config(cfg, overrides: Optional[Mapping[str, Any]] = None) -> "SyntaxTransformerConfig":
    """Any form of a model config (module docstring) → a new :data:`SyntaxTransformerConfig`, with ``overrides``
    (nested or flat names, as ``--model-overrides`` gives them) on top; the caller's object is not changed. A group's
    field takes its nested value, else its flat one, else its declared default; other keys are kept, as fairseq's
    ``TransformerConfig.from_namespace`` keeps them."""
    if isinstance(cfg, SyntaxTransformerConfig) and not overrides:
        return cfg
    given = config_items(cfg, "the model config")
    if overrides:
        overrides = check_overrides(overrides, GROUPS, stored_names(cfg, given, overrides), flat_name,
                                    given.get("_name") or given.get("arch"))
    for name, value in (overrides or {}).items():  # an override wins over both forms
        group, field = (name, None) if name in GROUPS else flat_name(name) or (None, None)
        if group is None:
            given[name] = value
        elif value is not None:
            given[group] = {**config_items(given.get(group), group),
                            **(config_items(value, f"--model-overrides {name!r}") if field is None else {field: value})}
    config = SyntaxTransformerConfig()
    for group, Group in GROUPS.items():
        nested = {k: v for k, v in config_items(given.pop(group, None), group).items() if not str(k).startswith("_")}
        values = {}
        for name in _fields(group):
            flat, value = given.pop(f"{group}_{name}", None), nested.pop(name, None)
            if value is not None or flat is not None:
                values[name] = _value(group, name, flat if value is None else value, config)
        if nested:
            raise _unknown(group, next(iter(nested)), f"the model config's {group!r} group")
        object.__setattr__(config, group, Group(**values))
    for name, value in given.items():
        group, field = flat_name(name) or (None, None)
        if group in MECHANISM_KEYS:  # a mechanism's prefix with a field it does not have
            raise _unknown(group, field, name)
        object.__setattr__(config, name, list(value) if isinstance(value, ListConfig) else value)
    return config


def stored_names(cfg, given: Mapping[str, Any], overrides: Mapping[str, Any]) -> List[str]:
    """The top-level names the stored config ``cfg`` (read as ``given``) held before ``overrides`` reached it. A
    checkpoint written by ``fairseq-train --arch <preset>`` keeps the model's config as the command line's
    ``argparse.Namespace``, and fairseq's loader sets every override's name on it (``setattr``), whatever the name,
    before the model is built: there, a name that is also an override's proves nothing (``{'dbas': …}`` would be
    found among the "stored" ones), and only fairseq's and the groups' own names make it known. A DictConfig or a
    dataclass takes no new name from fairseq's loader: its names are all stored ones."""
    if isinstance(cfg, argparse.Namespace):
        return [name for name in given if name not in overrides]
    return list(given)


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
        for name in [k for k in cfg.keys() if flat_name(k)]:
            del cfg[name]  # read into the groups
        for group in GROUPS:  # a DictConfig takes the group typed (its schema may type it); a dict, plain
            value = getattr(config, group)
            cfg[group] = value if isinstance(cfg, DictConfig) else dataclasses.asdict(value)


__all__ = ["GROUPS", "START_HELP", "SyntaxTransformerConfig", "flat_name", "layer_side", "model_config", "model_shape",
           "store", "stored_names"]
