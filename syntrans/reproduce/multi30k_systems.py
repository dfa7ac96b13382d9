"""The multi30k table's systems (ours: no paper reports it): the fourteen systems of the cross-paper table
(:mod:`syntrans.reproduce.cross_systems`) on Multi30k en→de, all trained with one small recipe,
``configs/multi30k/en_de.baseline.args`` (2+2 layers, 128 dimensions, 4 heads, early stopping on the validation loss).

A system's method flags are the cross-paper table's IWSLT14 de→en ones, each marked ``ours: as the cross-paper
table's IWSLT14 de→en setting (there: <its mark there>)``: nothing is tuned for Multi30k. A value that does not fit
this recipe is changed and marked ``deviates from the cross-paper table's IWSLT14 de→en value <v> (there: <mark>):
<why>``:

- a layer index beyond this model's layers (a ``--*-layers`` list, ``--sync-layer``): the model's last layer (its first
  for a negative index that reaches before the first);
- more heads than this model's layers have: all of them (as :mod:`~syntrans.reproduce.cross_systems` does for its own
  recipe);
- ``--nsd-embed-dim`` equal to the cross-paper recipe's model dimension (e ∈ ℝ^d, Ma et al. 2019, Eq. 10): this
  model's dimension;
- ``--gate-warmup-epochs K`` > 0 (the gated paper's pre-warm-up, Table 2): scaled by the two recipes' epoch caps
  (K × this recipe's ``--max-epoch`` / the cross-paper recipe's), since K epochs of a 100-epoch budget would freeze the
  gates for the whole of an 8-epoch one.

The table runs the first comparison (:data:`FIRST_COMPARISON`) unless ``--systems`` asks for others (``--systems all``:
every system).
"""
from __future__ import annotations

from typing import Dict, List, Tuple

from .config_file import CONFIG_DIR, read_args_file
from .cross_systems import ARCH, CrossSystem, Setting
from .cross_systems import BASE_CONFIG as CROSS_CONFIG
from .cross_systems import method_settings as cross_settings

#: the one recipe of every system (ours)
BASE_CONFIG = "multi30k/en_de.baseline.args"
#: the cross-paper table's dataset whose method settings are taken
FROM_DATASET = "iwslt14_de_en"
FROM_TITLE = "the cross-paper table's IWSLT14 de→en"
#: the systems the table runs unless --systems says otherwise: the Transformer and the four methods of the first
#: comparison (constituency: distance-mask; dependencies: PASCAL, LISA; both sides: DBSA)
FIRST_COMPARISON = ("Transformer", "distance-mask", "PASCAL", "LISA", "DBSA")

#: what a system is on Multi30k where the cross-paper table's one line would say otherwise (its data is de→en)
WHAT: Dict[str, str] = {
    "Transformer": f"the Transformer of the Multi30k recipe (configs/{BASE_CONFIG}), no syntax",
    "NSD": "Ma et al. 2019's Table 1 row 12 (dD as input, syntactic PE and output) on the target side, as in the "
           "cross-paper table: the target is German here, and Ma et al. parse English only (§4.1)",
    "DBSA + NSD (source)": "DBSA with NSD (Ma et al. 2019's row 12) on the source side, as in the cross-paper table: the "
                           "source is English here, the language Ma et al. parse (§4.1); the marks quote the "
                           "cross-paper table's reading of German",
}


def _shape(config: str) -> Dict[str, int]:
    cfg = read_args_file(CONFIG_DIR / config)
    return {"encoder": int(cfg.value("--encoder-layers")), "decoder": int(cfg.value("--decoder-layers")),
            "heads": int(cfg.value("--encoder-attention-heads")), "dim": int(cfg.value("--encoder-embed-dim")),
            "epochs": int(cfg.value("--max-epoch"))}


#: this recipe's model and budget, and the cross-paper recipe's, read from the two configs
MODEL = _shape(BASE_CONFIG)
CROSS_MODEL = _shape(CROSS_CONFIG)


def _fit_layer(k: int, layers: int) -> int:
    if k >= layers:
        return layers - 1
    if k < -layers:
        return 0
    return k


def _adapt(flag: str, value: str) -> Tuple[str, str]:
    """(the value for this recipe's model, why it changed; "" when it did not)."""
    side = "decoder" if ("decoder" in flag or flag == "--sync-layer") else "encoder"
    layers = MODEL[side]
    if (flag.endswith("-layers") or flag == "--sync-layer") and value not in ("", "all"):
        parts = [p.strip() for p in value.split(",") if p.strip()]
        if all(p.lstrip("-").isdigit() for p in parts):
            fitted = list(dict.fromkeys(_fit_layer(int(p), layers) for p in parts))
            if fitted != [int(p) for p in parts]:
                return (",".join(map(str, fitted)),
                        f"this model's {side} has {layers} layers (0-based 0…{layers - 1}): a layer beyond them "
                        "becomes its last (its first for a negative index before the first)")
    if flag.endswith("-heads") and value.isdigit() and int(value) > MODEL["heads"]:
        return str(MODEL["heads"]), f"this model's layers have {MODEL['heads']} heads: all of them"
    if flag == "--nsd-embed-dim" and value == str(CROSS_MODEL["dim"]) and MODEL["dim"] != CROSS_MODEL["dim"]:
        return (str(MODEL["dim"]), f"e ∈ ℝ^d of Ma et al. 2019's Eq. 10 is the model's dimension: {CROSS_MODEL['dim']} "
                                   f"in the cross-paper recipe, {MODEL['dim']} here")
    if flag == "--gate-warmup-epochs" and value.isdigit() and int(value) > 0 and MODEL["epochs"] != CROSS_MODEL["epochs"]:
        scaled = max(1, round(int(value) * MODEL["epochs"] / CROSS_MODEL["epochs"]))
        return (str(scaled), f"the pre-warm-up scaled to this recipe's budget, {value} × {MODEL['epochs']}/"
                             f"{CROSS_MODEL['epochs']} epochs (the two recipes' --max-epoch); early stopping may still "
                             "end a run before the gates unfreeze")
    return value, ""


def adapt(setting: Setting) -> Setting:
    """One setting of the cross-paper table's IWSLT14 de→en system, for this recipe, with its mark (module docs)."""
    value, why = _adapt(setting.flag, setting.value)
    if not why:
        return Setting(setting.flag, setting.value, f"ours: as {FROM_TITLE} setting (there: {setting.mark})")
    return Setting(setting.flag, value,
                   f"deviates from {FROM_TITLE} value {setting.value} (there: {setting.mark}): {why}")


def method_settings(system: CrossSystem) -> List[Setting]:
    """The method flags of ``system`` on Multi30k en→de with their marks (module docs)."""
    return [adapt(s) for s in cross_settings(system, FROM_DATASET)]


def system_flags(system: CrossSystem) -> Tuple[str, ...]:
    """``--arch syntax_transformer`` and the method flags, after the recipe's (later flags win)."""
    return ARCH + tuple(a for s in method_settings(system) for a in s.args())


def describe(system: CrossSystem) -> str:
    """One line: what ``system`` is on Multi30k en→de."""
    return WHAT.get(system.name, system.what)


__all__ = ["BASE_CONFIG", "CROSS_MODEL", "FIRST_COMPARISON", "FROM_DATASET", "MODEL", "adapt", "describe",
           "method_settings", "system_flags"]
