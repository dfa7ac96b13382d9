"""Which views of the parse (:mod:`syntrans.data.parse_views`) a model reads, from its fairseq-train flags.

Nothing here lists methods: the model is configured from the flags as fairseq-train would (the ``--arch`` preset's
defaults under the flags given), its mechanisms are built (the typed config's plan), and the batch
features they declare (required, optional and those their training losses need) are mapped to the sidecar kinds they
are built from (:data:`syntrans.data.features.FEATURES`), and those to views. A model of an architecture that is not a
``syntax_transformer`` (the baselines) reads no parse. Fields a model fills from its training data (a value range) get
a stand-in here: they change no feature.
"""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Dict, Optional, Sequence, Tuple

from .config_file import read_args_file, resolve_config


def _flag(flags: Sequence[str], name: str):
    values = [v for f, v in zip(flags, flags[1:]) if f == name]
    values += [f.split("=", 1)[1] for f in flags if f.startswith(name + "=")]
    return values[-1] if values else None


def features_of_flags(flags: Sequence[str]) -> set:
    """The batch features a model trained with ``flags`` reads (required, optional and its losses')."""
    from fairseq.models import ARCH_CONFIG_REGISTRY, ARCH_MODEL_REGISTRY

    import syntrans.models  # noqa: F401  (registers the architectures with fairseq)

    from ..mechanisms.registry import MECHANISMS
    from ..models.config import model_config
    from ..models.syntax_transformer import SyntaxTransformerModel

    arch = _flag(flags, "--arch")
    if arch is None:
        raise ValueError(f"the flags name no --arch: {' '.join(flags)}")
    if arch not in ARCH_MODEL_REGISTRY:
        raise ValueError(f"--arch {arch}: not a fairseq architecture known here")
    if not issubclass(ARCH_MODEL_REGISTRY[arch], SyntaxTransformerModel):
        return set()  # a stock model: no syntax mechanism, no feature
    parser = argparse.ArgumentParser(allow_abbrev=False, add_help=False)
    ARCH_MODEL_REGISTRY[arch].add_args(parser)
    given, _ = parser.parse_known_args(list(flags))
    args = argparse.Namespace(**{k: v for k, v in vars(given).items() if v is not None})  # unset: the preset's
    args.arch = arch
    ARCH_CONFIG_REGISTRY[arch](args)  # the preset's values where the flags give none
    cfg = model_config(args)
    for M in MECHANISMS:
        group = getattr(cfg, M.key)
        for name, value in M.data_fields(group, lambda side, feature: (-8, 8)).items():
            setattr(group, name, value)  # what a training split would give: no feature depends on it
    needs = cfg.plan.features()
    return set(needs.required) | set(needs.optional) | set(needs.training)


def views_of_flags(flags: Sequence[str], side: Optional[str] = None) -> Tuple[str, ...]:
    """The views of the parse a model trained with ``flags`` reads (empty: none), of one ``side`` (``source`` or
    ``target``) or of both (None)."""
    from ..data.parse_views import views_of_features

    return views_of_features(features_of_flags(flags), side)


def side_views_of_flags(flags: Sequence[str]) -> Dict[str, Tuple[str, ...]]:
    """{"source": views, "target": views} a model trained with ``flags`` reads."""
    from ..data.parse_views import SIDES, views_of_features

    names = features_of_flags(flags)
    return {side: views_of_features(names, side) for side in SIDES}


def _flags_of(path, extra: Sequence[str]) -> list:
    return list(read_args_file(resolve_config(Path(path))).flags) + list(extra)


def views_of_config(path, extra: Sequence[str] = (), side: Optional[str] = None) -> Tuple[str, ...]:
    """The views a configs/*.args file (plus ``extra`` flags after it) reads, of one ``side`` or of both."""
    return views_of_flags(_flags_of(path, extra), side)


def side_views_of_config(path, extra: Sequence[str] = ()) -> Dict[str, Tuple[str, ...]]:
    """{"source": views, "target": views} a configs/*.args file (plus ``extra``) reads."""
    return side_views_of_flags(_flags_of(path, extra))
