"""Options of a mechanism that is off: they cannot act, so they are refused.

A mechanism is switched on by some of its fields (:attr:`Mechanism.switches`, e.g. ``--sla-layers``); its other
fields only tune it. ``--sla-heads 2`` without ``--sla-layers`` built no SLA head and said nothing: the user believed
the model had some. :func:`idle_option_fault` names the first tuning field that differs from its declared default in a
mechanism that is off, and what would switch it on. A value the model's architecture preset gives is no user's
choice (a preset with one of its methods switched off keeps that method's preset settings) and is let be. A
stored config that holds every field at its default or its preset's value has none.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Iterable, Mapping, Optional


def flag(key: str, field: str) -> str:
    """The command-line flag of a mechanism's field: ``--sla-boundary-visible``."""
    return f"--{key}-{field}".replace("_", "-")


def _default(f: dataclasses.Field) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
        return f.default_factory()  # type: ignore[misc]
    return dataclasses.MISSING


def idle_option_fault(key: str, title: str, config_class: type, cfg, switches: Iterable[str],
                      preset: Optional[Mapping[str, Any]] = None) -> Optional[str]:
    """The message for the first field of ``cfg`` (a mechanism's config group, the mechanism off) that is not a switch
    and differs from its default and from the architecture preset's value (``preset``: field → value), or None.
    ``title`` names the mechanism, ``switches`` its switch fields."""
    switches, preset = tuple(switches), preset or {}
    for f in dataclasses.fields(config_class):
        if f.name.startswith("_") or f.name in switches:
            continue
        default, value = _default(f), getattr(cfg, f.name, None)
        if default is dataclasses.MISSING or value == default or (f.name in preset and value == preset[f.name]):
            continue
        on = " or ".join(flag(key, s) for s in switches)
        return (f"{flag(key, f.name)} {value!r}: {title} is off in this model (no {on}), so this option cannot act: "
                f"expected {on} to switch it on, or the option left out (its default is {default!r})")
    return None


__all__ = ["flag", "idle_option_fault"]
