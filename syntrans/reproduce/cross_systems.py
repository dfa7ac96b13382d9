"""The cross-paper table's systems: the Transformer, the seven methods and the three baselines of the five papers,
and combinations no paper tried, all on one preparation, one model size and one training budget (Hou et al. 2022's
IWSLT14 recipe: ``configs/distance_mask/iwslt14_de_en.baseline.args``), each with its own method settings.

A system's method flags come from its paper's own config for the dataset (``configs/<folder>/<dataset>….args``),
with the config's marks: ``stated: <paper>, <where>`` where the paper states the value for that data, ``ours: …``
where it does not. Where the paper has no run on the dataset, the flags of its nearest config (its other dataset of
this table, else its first dataset) are taken, each marked ``ours: as <paper>'s <dataset> setting``. A value that
cannot be taken as it is (PASCAL's 8 heads on NC11 de→en, all heads of layer 1 of the paper's 8-head model, in this
4-head model) is changed and marked ``deviates: …``. The combinations' settings are ours, marked so.

:func:`method_settings` gives, per system and dataset, the flags and their marks; :mod:`syntrans.reproduce.tables`
builds the table's systems from them; :mod:`syntrans.reproduce.cross` writes the marks into the results file.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

from .config_file import CONFIG_DIR, read_args_file

#: the one recipe of every system: Hou et al. 2022's IWSLT14 de→en Transformer (model size, optimiser, batch, length)
BASE_CONFIG = "distance_mask/iwslt14_de_en.baseline.args"
#: every system is a syntax_transformer (the recipe's model with no mechanism is exactly fairseq's Transformer)
ARCH = ("--arch", "syntax_transformer")
#: the attention heads per layer of the recipe's model (Hou et al. 2022, App. A: 4)
MODEL_HEADS = 4
DATASETS = ("iwslt14_de_en", "nc11_de_en")

HOU = "Hou et al. 2022"
GATED = "Hou et al. (gated)"
BO = "Bugliarello & Okazaki 2020"
DEGUCHI = "Deguchi et al. 2021"
MA = "Ma et al. 2019"


@dataclass(frozen=True)
class Setting:
    flag: str
    value: Optional[str]  # "" a switch
    mark: str  # "stated: <paper>, <where>", "ours: …" or "deviates: …"

    def args(self) -> Tuple[str, ...]:
        return (self.flag,) if self.value == "" else (self.flag, self.value)


@dataclass(frozen=True)
class Take:
    """The flags starting with one of ``prefixes`` of ``paper``'s config for a dataset (``configs``: dataset → path;
    ``fallback``: the config read for a dataset the paper has none for)."""

    paper: str
    configs: Dict[str, str]
    prefixes: Tuple[str, ...]
    fallback: Optional[str] = None


@dataclass(frozen=True)
class CrossSystem:
    name: str
    what: str  # one line: the method and its paper
    takes: Tuple[Take, ...] = ()
    group: str = ""  # "" (the ten compared with the Transformer) or "combination"
    components: Tuple[str, ...] = ()  # a combination's systems
    data: Tuple[Tuple[str, object], ...] = ()  # recipe overrides (+MULTI-TASK's data)
    #: ours, per dataset: flag → value replacing the taken one (a combination sharing the heads), with why
    changes: Tuple[Tuple[str, str, str], ...] = ()
    #: published BLEU per dataset: ((value, "paper, table"), ...), the method's own paper first
    published: Dict[str, Tuple[Tuple[float, str], ...]] = field(default_factory=dict)


def _both(pattern: str) -> Dict[str, str]:
    return {ds: pattern.format(ds=ds) for ds in DATASETS}


_DISTANCE = Take(HOU, _both("distance_mask/{ds}.args"), ("--distance-",))
_GATED = Take(GATED, _both("gated/{ds}.args"), ("--distance-", "--gate-"))
_PASCAL = Take(BO, {"nc11_de_en": "pascal/nc11_de_en.args"}, ("--pascal-",))
_LISA = Take(BO, {"nc11_de_en": "lisa/nc11_de_en.args"}, ("--lisa-",))
_DBSA = Take(DEGUCHI, {}, ("--dbsa-",), fallback="dbsa/wmt14_en_de.args")
_SYNC = Take(DEGUCHI, {}, ("--dbsa-", "--sync-"), fallback="syncattn/wmt14_en_de.args")
_NSD = Take(MA, {}, ("--nsd-",), fallback="nsd/aspec_ja_en.row12.args")  # row 12, English the target (X→en)
_SLA = Take(GATED, _both("gated/{ds}.sla.args"), ("--sla-", "--gate-"))
_SH = Take(BO, {"nc11_de_en": "pascal/nc11_de_en.sh.args"}, ("--labels-",))

_T1, _G3, _BT1 = f"{HOU}, Table 1", f"{GATED}, Table 3", f"{BO}, Table 1"

SYSTEMS: Tuple[CrossSystem, ...] = (
    CrossSystem("Transformer", f"the Transformer of {HOU}'s IWSLT14 recipe, no syntax",
                published={"iwslt14_de_en": ((34.56, _T1), (34.58, _G3)),
                           "nc11_de_en": ((26.83, _T1), (27.06, _G3), (26.6, _BT1))}),
    CrossSystem("distance-mask", f"{HOU}: the soft syntactic-distance mask in heads of encoder layer 1", (_DISTANCE,),
                published={"iwslt14_de_en": ((35.74, _T1),), "nc11_de_en": ((27.67, _T1),)}),
    CrossSystem("gated", f"{GATED}: every head of every layer a distance-mask head, gated", (_GATED,),
                published={"iwslt14_de_en": ((35.58, _G3),), "nc11_de_en": ((28.40, _G3),)}),
    CrossSystem("PASCAL", f"{BO}: parent-scaled heads in encoder layer 1", (_PASCAL,),
                published={"iwslt14_de_en": ((34.84, f"{_G3} (the gated paper's PASCAL)"),),
                           "nc11_de_en": ((27.4, _BT1), (27.65, f"{_G3} (the gated paper's PASCAL)"))}),
    CrossSystem("LISA", f"Strubell et al. 2018 as {BO} adapt it: one bi-affine parent head, its loss", (_LISA,),
                published={"iwslt14_de_en": ((34.97, f"{_G3} (the gated paper's LISA, an L2 loss)"),),
                           "nc11_de_en": ((27.1, _BT1), (27.51, f"{_G3} (the gated paper's LISA, an L2 loss)"))}),
    CrossSystem("DBSA", f"Deguchi et al. 2019, as {DEGUCHI} run it: parent heads in the encoder and decoder", (_DBSA,)),
    CrossSystem("SyncAttn", f"{DEGUCHI}: DBSA plus the synchronous loss", (_SYNC,)),
    CrossSystem("NSD", f"{MA}: dD of English (the target) as input, syntactic PE and output (Table 1, row 12)", (_NSD,)),
    CrossSystem("SLA", f"Li et al. 2021 as {GATED} re-implement it: dependency-window heads, gated", (_SLA,),
                published={"iwslt14_de_en": ((34.59, _G3),), "nc11_de_en": ((27.29, _G3),)}),
    CrossSystem("+MULTI-TASK", f"Currey & Heafield 2019 as {BO} implement it: the Transformer on translation and "
                "source-parse pairs", data=(("multitask", True),), published={"nc11_de_en": ((26.7, _BT1),)}),
    CrossSystem("+S&H", f"Sennrich & Haddow 2016 as {BO} adapt it: source dependency labels in the embeddings", (_SH,),
                published={"nc11_de_en": ((26.8, _BT1),)}),
    # ---------------------------------------------------------------- combinations no paper tried
    CrossSystem("distance-mask + PASCAL", "constituency and dependency in one layer: 2 distance-mask heads and 2 PASCAL "
                "heads of encoder layer 1", (_DISTANCE, _PASCAL), group="combination",
                components=("distance-mask", "PASCAL"),
                changes=(("--distance-heads", "2", "ours: the layer's 4 heads shared, 2 each"),
                         ("--pascal-heads", "2", "ours: the layer's 4 heads shared, 2 each"),
                         ("--pascal-layers", "0", "ours: the distance-mask's layer 1"))),
    CrossSystem("DBSA + NSD (source)", "DBSA with NSD of the source (German) as input, syntactic PE and output: Ma et "
                "al. parse English only", (_DBSA, _NSD), group="combination", components=("DBSA", "NSD")),
    CrossSystem("gated + LISA", "the gated distance-mask model with a LISA head in encoder layer 1: 3 gated "
                "distance-mask heads per layer, the LISA head gated too in layer 1", (_GATED, _LISA),
                group="combination", components=("gated", "LISA"),
                changes=(("--distance-heads", "3", "ours: one head of layer 1 left for LISA"),
                         ("--lisa-layers", "0", "ours: layer 1, as the LISA system"))),
)

BY_NAME = {s.name: s for s in SYSTEMS}


def _config_for(take: Take, dataset: str) -> Tuple[str, bool]:
    """(the config to read, whether it is the paper's own for ``dataset``)."""
    if dataset in take.configs:
        return take.configs[dataset], True
    others = [take.configs[d] for d in DATASETS if d in take.configs]
    if others:
        return others[0], False
    if take.fallback is None:
        raise ValueError(f"{take.paper}: no config for {dataset} and no fallback")
    return take.fallback, False


def method_settings(system: CrossSystem, dataset: str) -> List[Setting]:
    """The method flags of ``system`` on ``dataset`` with their marks (module docs)."""
    out: List[Setting] = []
    for take in system.takes:
        path, own = _config_for(take, dataset)
        cfg = read_args_file(CONFIG_DIR / path)
        origin = path.split("/", 1)[1].split(".")[0]
        flags = cfg.flags
        for i, flag in enumerate(flags):
            if not flag.startswith(take.prefixes):
                continue
            value = flags[i + 1] if i + 1 < len(flags) and not flags[i + 1].startswith("--") else ""
            note = cfg.notes.get(flag, "")
            if system.name.startswith("DBSA + NSD") and flag.startswith("--nsd-tgt-"):
                flag = "--nsd-src-" + flag[len("--nsd-tgt-"):]
                mark = f"ours: {MA}'s row 12 on the source side (German), which the paper does not parse"
            elif own and note.startswith("stated: "):
                mark = f"stated: {take.paper}, {note[len('stated: '):]}"
            elif own:
                mark = f"{note} ({take.paper}'s {dataset} config)" if note else f"ours ({take.paper}'s {dataset} config)"
            else:
                mark = f"ours: as {take.paper}'s {origin} setting ({note or 'unmarked'})"
            if flag.endswith("-heads") and value.isdigit() and int(value) > MODEL_HEADS:
                why = (f"{value} heads ({note or 'unmarked'}), every head of layer 1 of their {value}-head model; this "
                       f"model's layers have {MODEL_HEADS}: all of them")
                mark = (f"deviates: {take.paper} give {why}" if own
                        else f"ours: as {take.paper}'s {origin} setting, {why}")
                value = str(MODEL_HEADS)
            out.append(Setting(flag, value, mark))
    for flag, value, why in system.changes:
        out = [s for s in out if s.flag != flag] + [Setting(flag, value, why)]
    return out


def system_flags(system: CrossSystem, dataset: str) -> Tuple[str, ...]:
    """``--arch syntax_transformer`` and the method flags, after the recipe's (later flags win)."""
    return ARCH + tuple(a for s in method_settings(system, dataset) for a in s.args())


__all__ = ["ARCH", "BASE_CONFIG", "BY_NAME", "CrossSystem", "DATASETS", "MODEL_HEADS", "SYSTEMS", "Setting", "Take",
           "method_settings", "system_flags"]
