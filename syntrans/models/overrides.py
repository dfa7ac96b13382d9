"""``--model-overrides`` checked before they reach the model's config: every name is a group, a group's field or a field
of the config, spelt as the config spells it (case-sensitive), else an error naming the nearest name.

fairseq applies the overrides of fairseq-generate, fairseq-validate and syntrans-translate by name to whatever in the
checkpoint's config has that name, and ignores the others: a misspelt group (``{'lsia': {...}}``) changed nothing
and said nothing. Here (:func:`check_overrides`):

* a group (``'lisa'``) takes a dict of its fields; its fields are checked where the config is built;
* a flat name (``'lisa_gold_parents'``) is a group's field, checked there too;
* a name of the stored config or of fairseq's configs (``'dropout'``, ``'data'``) is kept;
* a field given without its group (``'gold_parents'``) goes into its group where one group has such a field, and is
  refused, with the grouped spellings, where several have it;
* the names the checkpoint decides (the architecture: ``arch``, ``_name``, ``preset``) are refused with the reason;
* any other name is refused, naming the nearest group or field.
"""
from __future__ import annotations

import dataclasses
import difflib
import functools
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Tuple

from ..tasks.checkpoint_match import CHECKPOINT_DECIDES, check_decided, decided_message  # the task checks them too


@functools.lru_cache(maxsize=1)
def fairseq_field_names() -> frozenset:
    """Every field name of fairseq's command configs (common, dataset, generation, …) and of the translation task's:
    names fairseq's own override mechanism may be given."""
    from fairseq.dataclass.configs import FairseqConfig
    from fairseq.models.transformer import TransformerConfig
    from fairseq.tasks.translation import TranslationConfig

    names = set()
    for group in dataclasses.fields(FairseqConfig):
        kind = group.type if isinstance(group.type, type) else None
        default = group.default_factory() if group.default_factory is not dataclasses.MISSING else None
        for cls in (kind, type(default)):
            if cls is not None and dataclasses.is_dataclass(cls):
                names.update(f.name for f in dataclasses.fields(cls))
    for cls in (TransformerConfig, TranslationConfig):
        names.update(f.name for f in dataclasses.fields(cls))
    return frozenset(names)


def _nearest(name: str, candidates: Iterable[str]) -> Optional[str]:
    """The candidate closest to ``name``, case ignored (``Lisa`` → ``lisa``), or None."""
    by_lower: Dict[str, str] = {}
    for c in candidates:
        by_lower.setdefault(c.lower(), c)
    near = difflib.get_close_matches(name.lower(), list(by_lower), n=1, cutoff=0.6)
    return by_lower[near[0]] if near else None


def check_overrides(overrides: Mapping[str, Any], groups: Mapping[str, type], known: Iterable[str],
                    flat_name: Callable[[str], Optional[Tuple[str, str]]], architecture: Optional[str] = None
                    ) -> Dict[str, Any]:
    """``overrides`` checked (module docs), a field given without its group moved into it; ValueError naming the
    override, what was expected and the nearest name. ``groups``: group → its dataclass; ``known``: the top-level
    names of the stored config; ``flat_name``: ``'<group>_<field>'`` → (group, field) or None; ``architecture``: the
    checkpoint's, for the message."""
    fields = {g: [f.name for f in dataclasses.fields(cls)] for g, cls in groups.items()}
    known = set(known) | fairseq_field_names()
    out: Dict[str, Any] = {}
    ungrouped: Dict[str, Dict[str, Any]] = {}  # group → its fields given without it
    for name, value in overrides.items():
        where = f"--model-overrides {name!r}"
        if not isinstance(name, str):
            raise ValueError(f"--model-overrides: names are strings, found {name!r}")
        if name in CHECKPOINT_DECIDES:
            raise ValueError(decided_message(name, architecture))
        if name in groups:
            if not isinstance(value, Mapping):
                raise ValueError(f"{where}: a group takes a dict of its fields, e.g. {{'{name}': "
                                 f"{{'{fields[name][0]}': …}}}}, found {value!r}")
            out[name] = value
        elif flat_name(name) or name in known:
            out[name] = value
        else:
            owners: List[str] = [g for g, names in fields.items() if name in names]
            if len(owners) == 1:
                ungrouped.setdefault(owners[0], {})[name] = value
            elif owners:
                spelt = ", ".join(f"{{'{g}': {{'{name}': …}}}}" for g in owners)
                raise ValueError(f"{where}: a field of {len(owners)} groups ({', '.join(owners)}): name its group, one "
                                 f"of {spelt}")
            else:
                raise ValueError(_unknown(name, value, groups, fields, known, where))
    for group, values in ungrouped.items():  # beside the group's own dict, whichever came first
        out[group] = {**dict(out.get(group) or {}), **values}
    return out


def _unknown(name: str, value: Any, groups: Mapping[str, type], fields: Mapping[str, List[str]], known: Iterable[str],
             where: str) -> str:
    """The message for a name that is no group, field or config name: the nearest group for a dict, else the nearest
    name of any kind."""
    if isinstance(value, Mapping):
        near = _nearest(name, groups)
        hint = (f"; did you mean the group {near!r}?" if near else f"; the groups: {', '.join(sorted(groups))}")
        return f"{where}: no group {name!r} in the model config (names are case-sensitive){hint}"
    grouped = {f"{g}_{f}": g for g, names in fields.items() for f in names}
    near = _nearest(name, [*known, *grouped, *(f for names in fields.values() for f in names)])
    hint = ""
    if near in grouped:
        group = grouped[near]
        field = near[len(group) + 1:]
        hint = f"; did you mean {{'{group}': {{'{field}': …}}}}?"
    elif near:
        hint = f"; did you mean {near!r}?"
    return f"{where}: no field or group {name!r} in the model config (names are case-sensitive){hint}"


__all__ = ["CHECKPOINT_DECIDES", "check_decided", "check_overrides", "decided_message", "fairseq_field_names"]
