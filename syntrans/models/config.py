"""The model's typed config: :data:`SyntaxTransformerConfig`, fairseq's ``TransformerConfig`` plus one nested group per
mechanism (under the mechanism's key, each the mechanism's own dataclass, built from the registry), and the one
function every stored or given form of it goes through, :func:`syntax_config`.

One schema for every way in:

* **flags**: each group's fields with the group as prefix (``<key>.layers`` ↔ ``--<key>-layers``); fairseq's
  argparse path keeps them flat in a Namespace (also in the checkpoints it writes), read here;
* **fairseq-hydra-train YAML**: ``model: {_name: syntax_transformer, <key>: {layers: [0], heads: 4}}`` (typed:
  fairseq merges it with this schema), or an architecture preset's name with flat keys;
* **checkpoints** of every version, flat or nested, with layer lists as strings (``"0,2"``, ``"all"``) before they
  were lists of ints: :func:`syntax_config` reads them all (the one upgrade of a stored config).

Layer lists are ``List[int]`` (negative numbers count from the last layer); the flags and flat forms also take
``all``, resolved against the model's layer count here.
"""
from __future__ import annotations

import argparse
import dataclasses
from typing import Any, Dict, List, Optional

from fairseq.models.transformer import TransformerConfig
from omegaconf import DictConfig, OmegaConf

from ..mechanisms.layer_lists import ALL, parse_layer_spec
from ..mechanisms.registry import MECHANISMS

#: the layer-list fields, (group, field) → the side whose layer count ``all`` means (``decoder_layers``: the decoder's)
LAYER_FIELDS = {(M.key, f.name): "decoder" if f.name.startswith("decoder") else "encoder" for M in MECHANISMS
                for f in dataclasses.fields(M.Config) if f.name == "layers" or f.name.endswith("_layers")}


#: the nested groups of TransformerConfig itself
TRANSFORMER_GROUPS = ("encoder", "decoder", "quant_noise")


#: every mechanism field's flat spelling, ``<group>_<field>`` → (group, field)
FLAT_NAMES = {f"{M.key}_{f.name}": (M.key, f.name) for M in MECHANISMS for f in dataclasses.fields(M.Config)
              if not f.name.startswith("_")}


def _groups() -> List[tuple]:
    """The fields added to TransformerConfig: one group per mechanism; the preset; and every mechanism field's flat
    spelling, None unless set: fairseq's ``--model-overrides`` and flat YAML keys land there and win over the group
    (the flags never write them: the command line's flat Namespace goes through the groups)."""
    flat = [(name, Any, dataclasses.field(default=None, metadata={
        "help": f"flat spelling of {group}.{field}: when set, it wins over the group's field"}))
            for name, (group, field) in FLAT_NAMES.items()]
    return [(M.key, M.Config, dataclasses.field(default_factory=M.Config)) for M in MECHANISMS] + [
        ("preset", Optional[str], dataclasses.field(default=None, metadata={
            "help": "the architecture preset whose settings this config holds (set when the preset is applied)"}))] + flat


def _from_namespace(cls, args):
    """``args`` (a flat argparse Namespace, a flat or nested DictConfig, or a config) → the typed config: fairseq's
    conversion of the Transformer part, then each mechanism group from its nested form or its flat
    ``<group>_<field>`` names (every field not given takes its declared default)."""
    if isinstance(args, cls):
        return args
    config = TransformerConfig.from_namespace.__func__(cls, args)
    flat_wins = is_nested(args)  # a nested config's flat names are overrides; a flat one's nested groups are
    for M in MECHANISMS:
        setattr(config, M.key, _group(M, args, config, flat_wins))
    for name in FLAT_NAMES:  # read into the groups
        setattr(config, name, None)
    return config


SyntaxTransformerConfig = dataclasses.make_dataclass(
    "SyntaxTransformerConfig", _groups(), bases=(TransformerConfig,),
    namespace={"from_namespace": classmethod(_from_namespace),
               "__doc__": "fairseq's TransformerConfig plus one nested config group per syntax mechanism."})
SyntaxTransformerConfig.__module__ = __name__


def _lookup(args, name: str):
    """``args.name`` of a Namespace, dict, DictConfig or dataclass; missing → a sentinel."""
    if isinstance(args, (dict, DictConfig)):
        return args.get(name, _MISSING) if name in args else _MISSING
    return getattr(args, name, _MISSING)


_MISSING = object()


def _group(M, args, config, flat_wins: bool) -> Any:
    """One mechanism's config group from ``args``: the nested group (``args.<key>``) and the flat names
    (``args.<key>_<field>``). Where a field is given both ways, the form that is not the config's own wins: it is an
    override (fairseq's ``--model-overrides`` puts a nested group beside an old checkpoint's flat names, and a flat
    name into today's nested config). Layer lists given as strings become lists, ``all`` every layer of the side
    (from the Transformer part of ``config``)."""
    nested = _lookup(args, M.key)
    if nested is _MISSING or nested is None:
        nested = {}
    elif dataclasses.is_dataclass(nested):
        nested = dataclasses.asdict(nested)
    elif isinstance(nested, DictConfig):
        nested = OmegaConf.to_container(nested, resolve=True)
    elif isinstance(nested, argparse.Namespace):
        nested = vars(nested)
    values: Dict[str, Any] = {}
    for f in dataclasses.fields(M.Config):
        flag = f"--{M.key}-{f.name.replace('_', '-')}"
        inner = nested.get(f.name, _MISSING) if isinstance(nested, dict) else _MISSING
        flat = _lookup(args, f"{M.key}_{f.name}")
        given = [v for v in ((flat, inner) if flat_wins else (inner, flat)) if v is not _MISSING and v is not None]
        value = given[0] if given else None
        if value is not None:
            values[f.name] = _resolved(M, f.name, value, config, flag)
    return M.Config(**values)


def _resolved(M, name: str, value, config, flag: str):
    """A field's value as the typed config holds it: a layer list as a list of ints (``all``: every layer)."""
    if (M.key, name) not in LAYER_FIELDS:
        return list(value) if OmegaConf.is_list(value) or isinstance(value, tuple) else value
    try:
        return _layers(value, config, LAYER_FIELDS[M.key, name])
    except (ValueError, TypeError) as e:
        raise ValueError(f"{flag}: {e}") from None


def _layers(value, config, side: str) -> List[int]:
    """A layer list as given (a string, ``all``, a list) → a list of ints; ``all`` → every layer of ``side``."""
    if isinstance(value, str):
        value = parse_layer_spec(value)
        if value == ALL:
            part = config.encoder if side == "encoder" else config.decoder
            return list(range(int(part.layers)))
    return [int(x) for x in value]


def syntax_config(cfg) -> "SyntaxTransformerConfig":
    """Any form of a model config (module docstring) → a :data:`SyntaxTransformerConfig` instance; the caller's object
    is not changed. A flat form first gets fairseq's Transformer defaults for what it lacks (as fairseq's legacy
    Transformer does); a nested one (``encoder: {…}``) has the schema's."""
    if isinstance(cfg, SyntaxTransformerConfig):
        return cfg
    if isinstance(cfg, DictConfig):
        try:
            cfg = argparse.Namespace(**OmegaConf.to_container(cfg, resolve=True))
        except Exception:  # an interpolation into a root this node was taken from (the decoder's input_dim)
            cfg = argparse.Namespace(**OmegaConf.to_container(cfg, resolve=False))
    if isinstance(cfg, argparse.Namespace):
        from fairseq.models.transformer.transformer_legacy import base_architecture

        cfg = argparse.Namespace(**{k: v.value if isinstance(v, HydraValue) else v for k, v in vars(cfg).items()})
        if not isinstance(getattr(cfg, "encoder", None), dict):
            base_architecture(cfg)
    return SyntaxTransformerConfig.from_namespace(cfg)


def is_nested(cfg) -> bool:
    """Whether ``cfg`` has the schema's nested form (``encoder: {…}``), as hydra YAML and checkpoints do, rather than
    the command line's flat one (``encoder_embed_dim``)."""
    encoder = _lookup(cfg, "encoder")
    return encoder is not _MISSING and isinstance(encoder, (dict, DictConfig))


class HydraValue:
    """A value handed to fairseq's conversion of a flat Namespace into the typed config: fairseq writes it as a Hydra
    override ``model.<group>=<str(value)>``, so its ``str`` is Hydra's override syntax."""

    def __init__(self, value):
        self.value = value

    def __str__(self) -> str:
        return hydra_syntax(self.value)


def hydra_syntax(value) -> str:
    """``value`` (None, bool, int, float, str, list, dict) in Hydra's override grammar; dict keys starting with ``_``
    (a dataclass's private ``_name``) are left out."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(hydra_syntax(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(f"{k}:{hydra_syntax(v)}" for k, v in value.items() if not str(k).startswith("_")) + "}"
    raise TypeError(f"no Hydra syntax for {type(value).__name__} {value!r}")


def hand_to_fairseq(args: argparse.Namespace, preset: str) -> None:
    """After a preset ran on the command line's flat Namespace: give ``args`` each nested group of the typed config
    (the Transformer's and the mechanisms') as a :class:`HydraValue`, which fairseq's conversion turns into the
    typed model config (it cannot read a nested group's flags from their prefixed names itself), and the preset's
    name."""
    typed = syntax_config(args)
    for group in TRANSFORMER_GROUPS + tuple(M.key for M in MECHANISMS):
        setattr(args, group, HydraValue(dataclasses.asdict(getattr(typed, group))))
    for name in FLAT_NAMES:  # read into the groups (fairseq would copy them into the flat spellings)
        setattr(args, name, None)
    args.preset = preset


def apply_to_typed(fn, preset: str, cfg: DictConfig) -> None:
    """Preset ``fn`` on a nested config: nothing when it holds the preset already (``cfg.preset``); else the preset runs
    on the flat view of the fields ``cfg`` sets (those not at the schema's defaults) and ``cfg`` takes the result."""
    if _lookup(cfg, "preset") == preset:
        return
    view = _flat_view(cfg)
    fn(view)
    typed = syntax_config(view)
    typed.preset = preset
    from omegaconf import open_dict

    with open_dict(cfg):
        for f in dataclasses.fields(SyntaxTransformerConfig):
            if not f.name.startswith("_"):
                cfg[f.name] = getattr(typed, f.name)


def _flat_view(cfg) -> argparse.Namespace:
    """The fields a nested config sets, flat (``encoder_embed_dim``, ``<key>_layers``): those whose value differs
    from the schema's default."""
    given = OmegaConf.to_container(cfg, resolve=False) if isinstance(cfg, DictConfig) else dict(vars(cfg))
    defaults = OmegaConf.to_container(OmegaConf.structured(SyntaxTransformerConfig), resolve=False)
    flat: Dict[str, Any] = {}
    for key, value in given.items():
        default = defaults.get(key, _MISSING)
        if isinstance(value, dict) and isinstance(default, dict):
            for name, v in value.items():
                if not name.startswith("_") and v != default.get(name, _MISSING):
                    flat[f"{key}_{name}"] = v
        elif value != default:
            flat[key] = value
    return argparse.Namespace(**flat)


def flat_items(cfg: "SyntaxTransformerConfig") -> Dict[str, Any]:
    """The mechanism groups of a typed config as flat ``<group>_<field>`` names (an argparse Namespace's form)."""
    return {f"{M.key}_{f.name}": getattr(getattr(cfg, M.key), f.name) for M in MECHANISMS
            for f in dataclasses.fields(M.Config)}


def set_field(cfg, group: str, name: str, value) -> None:
    """Write one field of a mechanism group into a config of any form: nested where the config has the group
    nested, else under its flat name."""
    nested = _lookup(cfg, group)
    if nested is not _MISSING and nested is not None and not isinstance(nested, (str, int, float, bool)):
        if isinstance(nested, (dict, DictConfig)):
            nested[name] = value
        else:
            setattr(nested, name, value)
        return
    if isinstance(cfg, DictConfig):
        with _open(cfg):
            cfg[f"{group}_{name}"] = value
    else:
        setattr(cfg, f"{group}_{name}", value)


def _open(cfg: DictConfig):
    from omegaconf import open_dict

    return open_dict(cfg)


__all__ = ["HydraValue", "SyntaxTransformerConfig", "apply_to_typed", "flat_items", "hand_to_fairseq", "is_nested",
           "set_field", "syntax_config"]
