"""The published tables and figures the reproduction scripts rebuild: datasets, systems (a config file each, with
extra flags and data overrides) and the numbers the papers report (paper, table, dataset, system): BLEU of the
table's split (and RIBES), training times and sizes, a figure's points where the paper gives them.

A :class:`Table` lists :class:`Row` groups, one per dataset; every row trains its systems with the same prepared
data and decodes with the decoding settings of the system's config file (its ``# decode:`` line).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Dict, Optional, Tuple


@dataclass(frozen=True)
class Dataset:
    key: str  # e.g. "iwslt14_de_en"
    corpus: str  # a corpus of syntrans.prep (iwslt14, nc11, wmt14, wmt16, wmt17, wmt18, aspec, ldc)
    src: str
    tgt: str
    title: str  # e.g. "IWSLT14 de→en"

    @property
    def licensed(self) -> bool:
        return self.corpus in LICENSED


#: corpora that are never downloaded: their rows run only with a local copy (--aspec-dir, --ldc-dir)
LICENSED = {"aspec": "--aspec-dir", "ldc": "--ldc-dir"}


@dataclass(frozen=True)
class System:
    name: str  # column label, e.g. "baseline", "distance-mask"
    config: str  # path under configs/
    published: Optional[float]  # the paper's number of the table's metric (Table.kind); None where it gives none
    extra: Tuple[str, ...] = ()  # flags after the config's (later flags win), e.g. an ablation
    #: the paper's other numbers for this cell, e.g. (("RIBES", 85.21),) or (("parameters", 36933680),)
    published_more: Tuple[Tuple[str, float], ...] = ()
    x: Optional[float] = None  # a figure's x value of this system (layer, τ, …); None: not on the x axis
    #: recipe overrides of this system's data (syntrans.prep.recipe.Recipe fields), e.g. (("langid", None),); a
    #: system with overrides trains on its own prepared copy of the dataset
    data: Tuple[Tuple[str, Any], ...] = ()
    #: a group of systems tested as one family against the row's first system (the cross-paper table: "" for the
    #: ten systems of the papers, "combination" for the combinations no paper tried)
    group: str = ""

    def more(self, name: str) -> Optional[float]:
        """The paper's number ``name`` of this cell (e.g. "RIBES"), or None."""
        return dict(self.published_more).get(name)


@dataclass(frozen=True)
class Row:
    dataset: Dataset
    systems: Tuple[System, ...]


@dataclass(frozen=True)
class Table:
    key: str  # file name of results/<key>.md and of scripts/reproduce/<key>.sh
    title: str
    paper: str
    rows: Tuple[Row, ...]
    notes: Tuple[str, ...] = field(default_factory=tuple)
    reference: str = "baseline"  # the first system of every row, which the Δ columns compare against
    #: what the table reports: "bleu" (BLEU of ``split``), "time" (training time and size, from the training logs),
    #: "curve" (a figure: BLEU against System.x), "gates" (a figure: gate values per layer and head),
    #: "length" (a figure: ΔBLEU against the reference by source length), "cross" (the cross-paper and Multi30k
    #: tables: BLEU and chrF++ with a multiple-comparison correction, epochs, training time and memory, and a figure)
    kind: str = "bleu"
    split: str = "test"  # the split decoded and scored: "test", or "valid" where the paper reports validation BLEU
    runs_of: Optional[str] = None  # the table whose trained runs (work dirs) this one reads instead of its own
    #: the paper's significance level for the paired bootstrap marker (Koehn 2004), with where it says so;
    #: (0.05, "ours: …") where the paper reports no test
    significance: Tuple[float, str] = (0.05, "not stated: ours (p < 0.05)")
    ribes: bool = False  # also score RIBES (where the paper reports it)
    x_label: str = ""  # a figure's x axis
    unit: str = ""  # a training-time table's unit of the published times: "seconds", "minutes", "hours" or "GPU-hours"
    #: the systems run when --systems is not given (empty: every system; ``--systems all`` runs every system anyway)
    default_systems: Tuple[str, ...] = ()
    #: views of the source (the target) every prepared folder of the table gets, whatever its systems read (besides
    #: theirs): one parse serves every selection of systems
    source_views: Tuple[str, ...] = ()
    target_views: Tuple[str, ...] = ()

    @property
    def chrf(self) -> bool:
        """Whether the table also reports chrF++ (sacreBLEU's CHRF, word_order=2) with its paired test: the cross
        kind (the cross-paper and Multi30k tables)."""
        return self.kind == "cross"


def _ds(key: str, corpus: str, title: str) -> Dataset:
    src, tgt = key.rsplit("_", 2)[-2:]
    return Dataset(key, corpus, src, tgt, title)


IWSLT_DE_EN = _ds("iwslt14_de_en", "iwslt14", "IWSLT14 de→en")
IWSLT_EN_DE = _ds("iwslt14_en_de", "iwslt14", "IWSLT14 en→de")
NC11_DE_EN = _ds("nc11_de_en", "nc11", "NC11 de→en")
NC11_EN_DE = _ds("nc11_en_de", "nc11", "NC11 en→de")
ASPEC_ZH_JA = _ds("aspec_zh_ja", "aspec", "ASPEC zh→ja")
ASPEC_JA_EN = _ds("aspec_ja_en", "aspec", "ASPEC ja→en")
ASPEC_EN_JA = _ds("aspec_en_ja", "aspec", "ASPEC en→ja")
LDC_EN_ZH = _ds("ldc_en_zh", "ldc", "LDC en→zh")
LDC_ZH_EN = _ds("ldc_zh_en", "ldc", "LDC zh→en")
WMT14_EN_DE = _ds("wmt14_en_de", "wmt14", "WMT14 en→de")
WMT16_EN_DE = _ds("wmt16_en_de", "wmt16", "WMT16 en→de")
WMT16_EN_RO = _ds("wmt16_en_ro", "wmt16", "WMT16 en→ro")
WMT17_EN_DE = _ds("wmt17_en_de", "wmt17", "WMT17 en→de")
WMT18_EN_TR = _ds("wmt18_en_tr", "wmt18", "WMT18 en→tr")
WAT_EN_JA = _ds("aspec_en_ja", "aspec", "WAT en→ja (ASPEC)")
MULTI30K_EN_DE = _ds("multi30k_en_de", "multi30k", "Multi30k en→de")


def _distance_row(ds: Dataset, base: float, ours: float) -> Row:
    return Row(ds, (System("baseline", f"distance_mask/{ds.key}.baseline.args", base),
                    System("distance-mask", f"distance_mask/{ds.key}.args", ours)))


def _heads_row(ds: Dataset, base: float, by_heads: Tuple[float, float, float, float]) -> Row:
    """Hou et al. 2022, Table 2: the soft mask in 1-4 heads of encoder layer 1, the dataset's other settings kept."""
    return Row(ds, (System("baseline", f"distance_mask/{ds.key}.baseline.args", base),)
               + tuple(System(f"{n}-head", f"distance_mask/{ds.key}.args", bleu, ("--distance-heads", str(n)))
                       for n, bleu in zip((1, 2, 3, 4), by_heads)))


def _gated_row(ds: Dataset, base: float, gated: float, lisa: Optional[float], pascal: float, sla: float) -> Row:
    systems = [System("baseline", f"gated/{ds.key}.baseline.args", base)]
    if lisa is not None:
        systems.append(System("LISA", f"gated/{ds.key}.lisa.args", lisa))
    systems += [System("PASCAL", f"gated/{ds.key}.pascal.args", pascal), System("SLA", f"gated/{ds.key}.sla.args", sla),
                System("gated", f"gated/{ds.key}.args", gated)]
    return Row(ds, tuple(systems))


def _gate_modes_row(ds: Dataset, pure: float, avg: float, ours: float) -> Row:
    """Hou et al. (gated), Table 6: G = 1 (Pure), G = 0.5 (Avg) and the learned gate (Ours)."""
    cfg = f"gated/{ds.key}.args"
    return Row(ds, (System("Pure", cfg, pure, ("--gate-mode", "pure")), System("Avg", cfg, avg, ("--gate-mode", "avg")),
                    System("Ours", cfg, ours)))


def _pascal_row(ds: Dataset, base: float, pascal: float, lisa: float, multitask: float, sh: float,
                ribes: Optional[Tuple[float, float, float, float, float]] = None) -> Row:
    """Bugliarello & Okazaki 2020, Table 1: Transformer, +PASCAL, +LISA, +MULTI-TASK, +S&H (the paper's order);
    ``ribes`` (WAT en→ja only): the RIBES column of the same five, in the same order."""
    more = [(("RIBES", r),) for r in ribes] if ribes else [()] * 5
    return Row(ds, (System("baseline", f"pascal/{ds.key}.baseline.args", base, published_more=more[0]),
                    System("LISA", f"lisa/{ds.key}.args", lisa, published_more=more[2]),
                    System("PASCAL", f"pascal/{ds.key}.args", pascal, published_more=more[1]),
                    # Currey & Heafield 2019's multi-task data: (source → linearised parse) pairs added to training
                    System("MULTI-TASK", f"pascal/{ds.key}.multitask.args", multitask, published_more=more[3],
                           data=(("multitask", True),)),
                    System("S&H", f"pascal/{ds.key}.sh.args", sh, published_more=more[4])))


def _sync_row(ds: Dataset, base: float, dbsa: float, sync: float) -> Row:
    return Row(ds, (System("baseline", f"dbsa/{ds.key}.baseline.args", base), System("DBSA", f"dbsa/{ds.key}.args", dbsa),
                    System("SyncAttn", f"syncattn/{ds.key}.args", sync)))


#: Ma et al. 2019, Table 1: each row's label and its BLEU on En→Ja, Ja→En, En→Zh, Zh→En
NSD_TABLE1 = (
    ("baseline", (34.59, 26.43, 29.41, 31.60)),
    ("2: dS I(fWb)", (35.54, 24.57, 29.66, 28.77)),
    ("3: dG I(fWb)", (35.38, 24.71, 29.60, 28.82)),
    ("4: dR I(fWb)", (35.83, 26.88, 29.87, 31.82)),
    ("5: dD I(fWb)", (36.17, 27.21, 30.11, 32.08)),
    ("6: dD I(fWb) SPE 10⁴", (36.06, 27.18, 30.02, 32.03)),
    ("7: dD I(fWb) SPE 10²", (36.22, 27.47, 30.23, 32.19)),
    ("8: dD I(fWb) SPE 40", (36.44, 27.59, 30.59, 32.36)),
    ("9: dD I(f‖) SPE 40", (36.17, 27.21, 30.15, 32.11)),
    ("10: dD I(f+) SPE 40", (36.08, 27.32, 30.21, 32.29)),
    ("11: dD O SPE 40", (36.31, 27.42, 30.42, 32.32)),
    ("12: dD I(fWb)&O SPE 40", (36.69, 27.71, 30.56, 32.55)),
    ("13: dD O SPE 40, Eq. 18", (21.08, 10.22, 18.63, 15.61)),
    ("14: dD O SPE 40, Eq. 18+20", (33.70, 23.31, 27.43, 30.02)),
    ("15: dD O SPE 40, Eq. 18+19", (34.18, 25.19, 29.14, 31.74)),
)


def _nsd_row(ds: Dataset, column: int) -> Row:
    return Row(ds, tuple(System(label, f"nsd/{ds.key}.row{n:02d}.args", bleu[column])
                         for n, (label, bleu) in enumerate(NSD_TABLE1, 1)))


def _zero_based(layers) -> str:
    """The papers' 1-based layer numbers → a 0-based ``--*-layers`` value ((1, 2) → "0,1")."""
    return ",".join(str(k - 1) for k in layers)


# ---------------------------------------------------------------- Hou et al. 2022: Figure 2, Table 4

def _distance_layer_row() -> Row:
    """Hou et al. 2022, Figure 2 (§4.3): "x-layer" means "only 3 attention heads of x-th encoder layer use syntactic
    information", IWSLT14 de→en; the dataset's other settings kept."""
    cfg = "distance_mask/iwslt14_de_en.args"
    return Row(IWSLT_DE_EN, (System("baseline", "distance_mask/iwslt14_de_en.baseline.args", None),)
               + tuple(System(f"layer {k}", cfg, None, ("--distance-layers", _zero_based([k]), "--distance-heads", "3"),
                              x=k) for k in range(1, 7)))


DISTANCE_DATASETS = (IWSLT_DE_EN, IWSLT_EN_DE, NC11_DE_EN, NC11_EN_DE, ASPEC_ZH_JA, WMT14_EN_DE)  # Table 1's
#: Hou et al. 2022, Table 4 (App. A): training time in minutes, (Transformer, ours) per dataset ("12h" = 720 min)
HOU_TRAINING_MINUTES = {"iwslt14_de_en": (70, 80), "iwslt14_en_de": (80, 80), "nc11_de_en": (80, 80),
                        "nc11_en_de": (80, 80), "aspec_zh_ja": (720, 720), "wmt14_en_de": (510, 540)}

# ---------------------------------------------------------------- Hou et al. (gated): Tables 4, 5, 7, 8, Figures 2, 3
GATED_IWSLT = "gated/iwslt14_de_en.args"
#: Table 4 (= Table 5's single layers, = Figure 2a): the first two heads of one encoder layer, layers 1..6
GATED_CONSTITUENCY = (35.63, 35.58, 35.41, 35.16, 35.01, 34.43)
GATED_DEPENDENCY = (34.74, 34.56, 34.66, 34.75, 34.68, 34.54)  # Table 4: PASCAL in one encoder layer, layers 1..6
GATED_CUMULATIVE = (35.65, 35.60, 35.63, 35.51, 35.52)  # Table 5: layers 1-2, 1-3, …, 1-6


def _constituency(name: str, layers, bleu: Optional[float], x: Optional[float] = None) -> System:
    """Hou et al. (gated), §5.3 and Table 5: the soft distance mask in "the first two heads" of the given (1-based)
    encoder layers "without any gating" (no gate: --gate-layers empty), the paper's other settings kept."""
    return System(name, GATED_IWSLT, bleu,
                  ("--distance-layers", _zero_based(layers), "--distance-heads", "2", "--gate-layers", ""), x=x)


def _dependency(k: int, bleu: float) -> System:
    """Hou et al. (gated), Table 4's dependency column: the paper's PASCAL baseline in encoder layer k (1-based)."""
    return System(f"dependency {k}", "gated/iwslt14_de_en.pascal.args", bleu, ("--pascal-layers", _zero_based([k])))


#: Table 7: the regularisation tricks dropped step by step (§5.4): syntax ignoring, then pre-warm-up, then BatchNorm
GATE_REGULARISATION = (
    ("All", 35.66, ()),
    ("BatchNorm + Pre-warmup", 35.64, ("--gate-syntax-dropout", "0")),
    ("BatchNorm", 35.50, ("--gate-syntax-dropout", "0", "--gate-warmup-epochs", "0")),
    ("Nothing", 35.53, ("--gate-syntax-dropout", "0", "--gate-warmup-epochs", "0", "--gate-no-batchnorm")),
)


def _regularisation_row(published: bool) -> Row:
    return Row(IWSLT_DE_EN, tuple(System(name, GATED_IWSLT, bleu if published else None, extra)
                                  for name, bleu, extra in GATE_REGULARISATION))


#: Figure 2b's τ values: ours (the figure gives no numbers; §5.3 names τ = 1 and the best, τ = 10)
GATED_TAUS = (1, 2, 5, 10, 20, 50)

#: Table 8: (parameters, GPU-hours) of the gated model per dataset
GATED_SIZE_TIME = {"iwslt14_de_en": (36933680, 1.8), "iwslt14_en_de": (36931632, 1.8), "nc11_de_en": (40060976, 2.5),
                   "nc11_en_de": (40060976, 2.5), "wmt18_en_tr": (39991344, 2.3)}
GATED_DATASETS = (IWSLT_DE_EN, IWSLT_EN_DE, NC11_DE_EN, NC11_EN_DE, WMT18_EN_TR)

# ---------------------------------------------------------------- Bugliarello & Okazaki 2020: Tables 3, 5, 6, Fig. 2, App. B
PASCAL_DATASETS = (NC11_EN_DE, NC11_DE_EN, WMT18_EN_TR, WMT16_EN_DE, WMT17_EN_DE, WAT_EN_JA)
#: Table 3a: validation BLEU with the PASCAL heads in encoder layer 1..6
PASCAL_LAYERS = {"nc11_en_de": (23.2, 22.5, 22.5, 22.6, 22.9, 22.4), "nc11_de_en": (24.6, 20.1, 23.8, 23.8, 23.8, 23.9)}
#: Table 3b: validation BLEU by the Gaussian's variance σ² (None: "parent-only")
PASCAL_VARIANCES = (1, None, 4, 9, 16, 25)
PASCAL_VARIANCE_BLEU = {"nc11_en_de": (23.2, 22.5, 22.7, 22.8, 22.7, 22.8),
                        "nc11_de_en": (24.6, 22.4, 24.3, 24.3, 24.4, 24.1)}
#: Table 5: validation BLEU, Transformer, + data filtering, + PASCAL, + parent ignoring (None: a blank cell)
PASCAL_COMPONENTS = {"nc11_en_de": (22.6, 22.8, 23.0, 23.2), "nc11_de_en": (23.8, 24.0, 24.6, None),
                     "wmt18_en_tr": (12.6, None, 13.6, 13.7), "wmt16_en_de": (29.0, 28.7, 29.2, None),
                     "wmt17_en_de": (31.5, None, 31.6, 32.1), "aspec_en_ja": (42.2, None, 43.5, None)}
#: Table 6: training time in seconds, (Transformer, +PASCAL)
PASCAL_SECONDS = {"nc11_en_de": (4134.1, 4188.8), "nc11_de_en": (4276.6, 4177.4), "wmt18_en_tr": (3559.7, 3621.1),
                  "wmt16_en_de": (23186.3, 23358.8), "wmt17_en_de": (23604.1, 24083.6),
                  "aspec_en_ja": (23005.8, 23073.0)}
#: Table 1's Transformer and +PASCAL test BLEU, the reference points of Appendix B
PASCAL_T1 = {"nc11_en_de": (25.0, 25.9), "nc11_de_en": (26.6, 27.4)}


def _pascal_layer_row(ds: Dataset) -> Row:
    """Table 3a: the dataset's PASCAL model (Table 7's heads and q) with its heads in encoder layer k."""
    return Row(ds, tuple(System(f"layer {k}", f"pascal/{ds.key}.args", bleu, ("--pascal-layers", _zero_based([k])))
                         for k, bleu in enumerate(PASCAL_LAYERS[ds.key], 1)))


def _pascal_variance_row(ds: Dataset) -> Row:
    """Table 3b: the Gaussian's variance σ² (--pascal-sigma is σ = √σ²), or weights on the parent only."""
    systems = []
    for var, bleu in zip(PASCAL_VARIANCES, PASCAL_VARIANCE_BLEU[ds.key]):
        if var is None:
            systems.append(System("parent-only", f"pascal/{ds.key}.args", bleu, ("--pascal-weights", "parent-only")))
        else:
            systems.append(System(f"variance {var}", f"pascal/{ds.key}.args", bleu,
                                  ("--pascal-sigma", str(float(math.sqrt(var))))))
    return Row(ds, tuple(systems))


def _pascal_components_row(ds: Dataset) -> Row:
    """Table 5: each component "whenever they were used by the models reported in Table 1" (App. B): a blank cell is a
    component the dataset's model does not use, left out here. The language filter is the data's (System.data);
    "+ PASCAL" is the model without parent ignoring (q = 0), "+ parent ignoring" the model of Table 7."""
    base, filtered, pascal, ignoring = PASCAL_COMPONENTS[ds.key]
    filtering = filtered is not None
    systems = [System("Transformer", f"pascal/{ds.key}.baseline.args", base,
                      data=(("langid", False),) if filtering else ())]
    if filtering:
        systems.append(System("+ data filtering", f"pascal/{ds.key}.baseline.args", filtered, data=(("langid", True),)))
    systems.append(System("+ PASCAL", f"pascal/{ds.key}.args", pascal,
                          ("--pascal-ignore", "0.0") if ignoring is not None else ()))
    if ignoring is not None:
        systems.append(System("+ parent ignoring", f"pascal/{ds.key}.args", ignoring))
    return Row(ds, tuple(systems))


def _pascal_pair_row(ds: Dataset, base: Optional[float], pascal: Optional[float]) -> Row:
    """Table 1's Transformer and +PASCAL of one dataset (the systems of pascal_table1, other published numbers)."""
    return Row(ds, (System("baseline", f"pascal/{ds.key}.baseline.args", base),
                    System("PASCAL", f"pascal/{ds.key}.args", pascal)))


def _pascal_op_row(ds: Dataset) -> Row:
    """Appendix B: the best NC11 models with the scores and weights added instead of multiplied (Eq. 2)."""
    base, pascal = PASCAL_T1[ds.key]
    return Row(ds, _pascal_pair_row(ds, base, pascal).systems
               + (System("PASCAL (addition)", f"pascal/{ds.key}.args", None, ("--pascal-op", "add")),))


# ---------------------------------------------------------------- the cross-paper table (ours: no paper reports it)

def _cross_row(ds: Dataset) -> Row:
    """Every system of :mod:`syntrans.reproduce.cross_systems` on ``ds``: the recipe's config, then
    ``--arch syntax_transformer`` and the system's method flags; the method's own paper's number first."""
    from .cross_systems import BASE_CONFIG, SYSTEMS, system_flags

    out = []
    for cs in SYSTEMS:
        published = cs.published.get(ds.key, ())
        out.append(System(cs.name, BASE_CONFIG, published[0][0] if published else None, system_flags(cs, ds.key),
                          published_more=tuple((where, value) for value, where in published[1:]), data=cs.data,
                          group=cs.group))
    return Row(ds, tuple(out))


CROSS_NOTES = (
    "No paper reports this table: the papers compare at most five systems each, on other data and recipes. Here every "
    "system trains on one preparation of each corpus (Hou et al. 2022's recipe; +MULTI-TASK on a copy with the "
    "parsing pairs added), each prepared folder parsed into the views its systems read (per side, from their "
    "configs: syntrans.reproduce.config_views), with one model size "
    "and one training budget: Hou et al. 2022's IWSLT14 de→en Transformer "
    "(configs/distance_mask/iwslt14_de_en.baseline.args: 6+6 layers, 512, FFN 1024, 4 heads, Adam, lr 1e-3, 16,384 "
    "tokens per update, 100 epochs) for both datasets, as a syntax_transformer.",
    "Each system keeps its own method settings (heads, layers, weights) where its paper gives them for that data, "
    "else ours; every flag and its mark are listed under 'Settings'. Published numbers come from other recipes "
    "(sizes, learning rates, batches, parsers, tokenization): they show where a paper reports the dataset, they are "
    "not comparable with ours cell by cell.",
    "The combinations are ours (docs/reproduce.md, The cross-paper table).",
)

# ---------------------------------------------------------------- the Multi30k table (ours: no paper reports it)

def _multi30k_row() -> Row:
    """Every system of :mod:`syntrans.reproduce.cross_systems` on Multi30k en→de: the small recipe's config, then
    ``--arch syntax_transformer`` and the method flags of :mod:`syntrans.reproduce.multi30k_systems`."""
    from .cross_systems import SYSTEMS
    from .multi30k_systems import BASE_CONFIG, system_flags

    return Row(MULTI30K_EN_DE, tuple(System(cs.name, BASE_CONFIG, None, system_flags(cs), data=cs.data, group=cs.group)
                                     for cs in SYSTEMS))


def _first_comparison() -> Tuple[str, ...]:
    from .multi30k_systems import FIRST_COMPARISON

    return FIRST_COMPARISON


MULTI30K_NOTES = (
    "No paper reports this table. Every system trains on one preparation of Multi30k en→de (the 29,000 / 1,014 / "
    "1,000 captions of train, val and test_2016_flickr, no length or ratio filter, Moses tokenization, a joint BPE of "
    "4,000 merges: syntrans-prepare multi30k --pair en-de --bpe-ops 4000 --ratio off --max-len off), parsed into the "
    "views its systems read (the English source always into dependencies and constituency trees), with one small "
    "recipe: configs/multi30k/en_de.baseline.args (syntax_transformer, 2+2 layers, 128 dimensions, FFN 512, 4 heads, "
    "dropout 0.1, shared embeddings, Adam (0.9, 0.98), lr 2e-3, inverse_sqrt with 400 warm-up updates, label "
    "smoothing 0.1, 2,048 tokens per batch, at most 8 epochs, early stopping after 2 epochs without a lower "
    "validation loss), the checkpoint with the smallest validation loss decoded with beam 5.",
    "Nothing is tuned for the syntax systems: their method settings are the cross-paper table's IWSLT14 de→en ones, "
    "changed only where they do not fit this model or budget (marked 'deviates' under Settings). The numbers are "
    "what they are.",
    "By default the first comparison runs (Transformer, distance-mask, PASCAL, LISA, DBSA); --systems all runs the "
    "fourteen systems, --systems NAMES any of them. Holm's correction is over the systems run.",
)

TABLES: Dict[str, Table] = {t.key: t for t in [
    Table("distance_table1", "Syntax-guided localized self-attention: test BLEU, baseline vs distance-mask",
          "Hou et al. 2022, Table 1",
          (_distance_row(IWSLT_DE_EN, 34.56, 35.74), _distance_row(IWSLT_EN_DE, 28.17, 29.28),
           _distance_row(NC11_DE_EN, 26.83, 27.67), _distance_row(NC11_EN_DE, 25.26, 26.19),
           _distance_row(ASPEC_ZH_JA, 47.77, 48.34), _distance_row(WMT14_EN_DE, 27.3, 28.48)),
          significance=(0.01, "§4.2: the improvements have statistical significance (p < 0.01)")),
    Table("distance_table2", "Syntax-guided localized self-attention: the soft mask in 1, 2, 3 or 4 heads of encoder layer 1",
          "Hou et al. 2022, Table 2 (head-wise ablation)",
          (_heads_row(IWSLT_DE_EN, 34.56, (35.65, 35.68, 35.71, 35.74)),
           _heads_row(IWSLT_EN_DE, 28.17, (29.20, 29.21, 29.28, 29.23)),
           _heads_row(NC11_DE_EN, 26.83, (27.58, 27.67, 27.56, 27.67)),
           _heads_row(NC11_EN_DE, 25.26, (25.87, 25.99, 26.19, 26.08)))),
    Table("gated_table3", "Gated self-attention: test BLEU (baseline, the paper's LISA and PASCAL, gated)",
          "Hou et al. (gated self-attention), Table 3",
          (_gated_row(IWSLT_DE_EN, 34.58, 35.58, 34.97, 34.84, 34.59),
           _gated_row(IWSLT_EN_DE, 28.23, 29.33, 29.06, 29.10, 28.71),
           _gated_row(NC11_DE_EN, 27.06, 28.40, 27.51, 27.65, 27.29),
           _gated_row(NC11_EN_DE, 25.08, 26.43, 25.65, 25.52, 25.03),
           _gated_row(WMT18_EN_TR, 17.86, 18.65, None, 18.57, 17.94)),
          ("The paper's LISA baseline is an L2 loss on a 0/1 parent mask (§2.2, §5.2): configs/gated/*.lisa.args; "
           "it has no WMT18 LISA run.",
           "SLA (Li et al. 2021) as the paper re-implements it (§5.2): dependency-distance local attention mixed with "
           "stock attention by an unregularised per-head gate; its distance threshold is not stated (ours: "
           "configs/gated/*.sla.args).",
           "The rows marked * in the paper (LISA*, PASCAL*, Transformer*) are copied from Bugliarello & Okazaki 2020 "
           "(pascal_table1), not runs of this paper: not repeated here."),
          significance=(0.01, "Table 3 caption and §5.1: the improvements have statistical significance (p < 0.01)")),
    Table("gated_table6", "Gated self-attention: the gate ablation, G = 1 (Pure), G = 0.5 (Avg) or learned (Ours)",
          "Hou et al. (gated self-attention), Table 6 (one seed, the last 10 epochs)",
          (_gate_modes_row(IWSLT_DE_EN, 35.48, 35.65, 35.66), _gate_modes_row(IWSLT_EN_DE, 29.44, 29.42, 29.51),
           _gate_modes_row(NC11_DE_EN, 27.89, 27.77, 28.40), _gate_modes_row(NC11_EN_DE, 25.02, 26.20, 26.56),
           _gate_modes_row(WMT18_EN_TR, 18.49, 18.52, 18.75)),
          ("Δ columns are against Pure (the table has no Transformer column).",), reference="Pure"),
    Table("pascal_table1", "PASCAL: test BLEU (baseline, LISA, PASCAL, +MULTI-TASK, +S&H; RIBES for WAT en→ja)",
          "Bugliarello & Okazaki 2020, Table 1",
          (_pascal_row(NC11_EN_DE, 25.0, 25.9, 25.3, 24.8, 25.5), _pascal_row(NC11_DE_EN, 26.6, 27.4, 27.1, 26.7, 26.8),
           _pascal_row(WMT18_EN_TR, 13.1, 14.0, 13.6, 14.0, 13.0), _pascal_row(WMT16_EN_DE, 33.0, 33.9, 33.6, 32.4, 31.9),
           _pascal_row(WMT17_EN_DE, 25.5, 26.1, 25.7, 24.6, 25.1),
           _pascal_row(WAT_EN_JA, 43.1, 44.0, 43.2, 42.7, 42.8, ribes=(83.46, 85.21, 83.51, 84.18, 83.88))),
          ("WAT en→ja is ASPEC (licensed): pass --aspec-dir; the paper reports RIBES for it only (Table 1, En-Ja [R]). "
           "It scores after KyTea tokenization (App. A), which sacreBLEU lacks: ours tokenizes with sacreBLEU's "
           "ja-mecab (MeCab, IPA dictionary; pip install 'syntrans[reproduce]'), so BLEU and RIBES also differ by the "
           "tokenizer.",
           "MULTI-TASK (Currey & Heafield 2019, as the paper implements it, App. A) trains on its own prepared copy of "
           "each dataset: the translation pairs plus (source → linearised source parse) pairs, the parse an "
           "unlexicalized constituency skeleton (words and part-of-speech tags removed, e.g. (ROOT (S (NP ) (VP ) ) )) "
           "as the authors' released scripts/bpe_lin_parses.py makes it from CoreNLP constituency parses; our "
           "dependency bracketing is the data option multitask_target dependency.",
           "The paper's rows of earlier work (Eriguchi et al. 2016, …, Mixed Enc.) are other papers' numbers: not "
           "repeated here."),
          ribes=True,
          significance=(0.01, "Table 1 caption: bootstrap re-sampling (Koehn, 2004), p < 0.01 against the "
                              "Transformer")),
    Table("syncattn_table1", "Synchronous syntactic attention: test BLEU (baseline, DBSA, SyncAttn)",
          "Deguchi et al. 2021, Table 1",
          (_sync_row(WMT14_EN_DE, 27.23, 27.31, 27.69), _sync_row(WMT16_EN_RO, 23.83, 24.13, 24.33),
           _sync_row(ASPEC_JA_EN, 28.94, 29.57, 29.84))),
    Table("nsd_table1", "Neural syntactic distance: test BLEU of Table 1's 15 rows",
          "Ma et al. 2019, Table 1",
          (_nsd_row(ASPEC_EN_JA, 0), _nsd_row(ASPEC_JA_EN, 1), _nsd_row(LDC_EN_ZH, 2), _nsd_row(LDC_ZH_EN, 3)),
          ("Every dataset of this table is licensed (ASPEC, LDC): pass --aspec-dir / --ldc-dir.",
           "NSD is applied to English only (§4.1): the source side for en→ja and en→zh, the target side for ja→en "
           "and zh→en.")),
    # ------------------------------------------------------------ Hou et al. 2022: the other table and figure
    Table("distance_figure2", "Syntax-guided localized self-attention: the soft mask in 3 heads of one encoder layer "
          "(layer-wise, IWSLT14 de→en)", "Hou et al. 2022, Figure 2 (§4.3)",
          (_distance_layer_row(),),
          ('"x-layer" means "only 3 attention heads of x-th encoder layer use syntactic information" (§4.3): '
           "--distance-layers x−1 (0-based), --distance-heads 3, every other setting the IWSLT14 de→en model's.",
           "The figure gives no numbers (published: none). The text: \"The model performs best with syntactic distance "
           "used in the first layer. Moreover, the deeper layer we add syntactic distance, the worse performance the "
           "model has\" (§4.3).",
           "The baseline is the Transformer of Table 1 (published there: 34.56); whether the figure draws it is not "
           "known from the text: ours, drawn as the reference line."),
          kind="curve", x_label="encoder layer x (3 syntax heads in layer x only)"),
    Table("distance_table4", "Syntax-guided localized self-attention: training time in minutes, Transformer vs "
          "distance-mask", "Hou et al. 2022, Table 4 (App. A)",
          tuple(_distance_row(ds, *map(float, HOU_TRAINING_MINUTES[ds.key])) for ds in DISTANCE_DATASETS),
          ("Published times are the paper's minutes (\"80min\"; \"12h\" = 720, \"9h\" = 540, \"8.5h\" = 510): wall "
           "time on 2 A100-40G GPUs, WMT14 on 8 A100-80G (App. A); whether it is one run or a mean over the 5 seeds "
           "is not stated.",
           "Read from the training logs of distance_table1's runs."),
          kind="time", runs_of="distance_table1", unit="minutes"),
    # ------------------------------------------------------------ Hou et al. (gated): the other tables and figures
    Table("gated_table4", "Gated self-attention: constituency (soft distance mask) vs dependency (PASCAL) syntax in "
          "one encoder layer, IWSLT14 de→en", "Hou et al. (gated self-attention), Table 4 (§5.3)",
          (Row(IWSLT_DE_EN, tuple(_constituency(f"constituency {k}", [k], b) for k, b in enumerate(GATED_CONSTITUENCY, 1))
               + tuple(_dependency(k, b) for k, b in enumerate(GATED_DEPENDENCY, 1))),),
          ("Constituency: the soft distance mask in the first two heads of layer k, no gate — \"we incorporate "
           "syntactic structures into the first two heads of each layer without any gating\" (§5.3, Table 5's text); "
           "Table 4's constituency column equals Table 5's single layers. Ours: configs/gated/iwslt14_de_en.args with "
           "--distance-layers k−1 --distance-heads 2 --gate-layers '' (no gate, hence no pre-warm-up or syntax "
           "ignoring).",
           "Dependency: the paper's PASCAL baseline (configs/gated/iwslt14_de_en.pascal.args: its heads, σ and q are "
           "not stated, ours) with --pascal-layers k−1.",
           "Δ columns are against constituency in layer 1 (the table has no Transformer row)."),
          reference="constituency 1"),
    Table("gated_table5", "Gated self-attention: the distance mask in the first two heads of one layer or of layers "
          "1..k, no gate, IWSLT14 de→en", "Hou et al. (gated self-attention), Table 5 (§5.3)",
          (Row(IWSLT_DE_EN, tuple(_constituency(f"layer {k}", [k], b) for k, b in enumerate(GATED_CONSTITUENCY, 1))
               + tuple(_constituency(f"layers 1-{k}", range(1, k + 1), b)
                       for k, b in enumerate(GATED_CUMULATIVE, 2))),),
          ("Table 5's cumulative column starts with layer 1 alone (35.63), the same model as the single layer 1: "
           "run once here.",
           "The single layers are the same models as gated_table4's constituency column; each table trains its own "
           "runs.",
           "Δ columns are against layer 1 (the table has no Transformer row)."),
          reference="layer 1"),
    Table("gated_table7", "Gated self-attention: the gate's regularisation tricks dropped step by step, IWSLT14 de→en",
          "Hou et al. (gated self-attention), Table 7 (§5.4)",
          (_regularisation_row(True),),
          ("All: the full model (BatchNorm, pre-warm-up K = 80, syntax ignoring p = 0.4; Table 2). BatchNorm + "
           "Pre-warmup: p = 0. BatchNorm: p = 0, K = 0. Nothing: p = 0, K = 0, no BatchNorm (§5.4: \"We drop our three "
           "regularization tricks: batch normalization, pre-warmup training, and syntax ignoring step by step\").",
           "All (35.66) equals Table 6's IWSLT de→en Ours (35.66, one seed, the last 10 epochs): the same protocol "
           "here.",
           "Δ columns are against All."),
          reference="All"),
    Table("gated_figure3", "Gated self-attention: the gate values per layer and head under each regularisation",
          "Hou et al. (gated self-attention), Figure 3 (§5.4)",
          (_regularisation_row(False),),
          ("Panels: (a) Nothing, (b) only BatchNorm, (c) BatchNorm + pre-warmup, (d) All; IWSLT de→en. The figure's "
           "values are not in the text (published: none). The text: \"When none of the regularization is added, "
           "nearly all gating values converge to 0 or 1 finally. As our training tricks are gradually introduced, the "
           "gating values tend to become smoother and stand out on two attention heads in the first 2 layers\" (§5.4).",
           "Drawn from gated_table7's runs: the gate values of the last validation of each run's training log."),
          kind="gates", runs_of="gated_table7", reference="All"),
    Table("gated_figure2a", "Gated self-attention: BLEU by the layer of the constituency syntax (two heads, no gate), "
          "IWSLT14 de→en", "Hou et al. (gated self-attention), Figure 2a (§5.3)",
          (Row(IWSLT_DE_EN, tuple(_constituency(f"constituency {k}", [k], b, x=k)
                                  for k, b in enumerate(GATED_CONSTITUENCY, 1))),),
          ("The figure's points are Table 4's constituency column: §5.3 quotes its ends, \"rapidly dropping from 35.63 "
           "to 34.43 from shallow to deep layers\".",
           "Drawn from gated_table4's constituency runs."),
          kind="curve", runs_of="gated_table4", reference="constituency 1", x_label="encoder layer"),
    Table("gated_figure2b", "Gated self-attention: BLEU by the soft mask's τ, IWSLT14 de→en",
          "Hou et al. (gated self-attention), Figure 2b (§5.3)",
          (Row(IWSLT_DE_EN, (System("hard mask", GATED_IWSLT, None, ("--distance-hard",)),)
               + tuple(System(f"tau {t}", GATED_IWSLT, None, ("--distance-tau", str(t)), x=t) for t in GATED_TAUS)),),
          ("The figure gives no numbers (published: none). The text: \"the performance rises with a smoother attention "
           "mask while dropping again when it's too smooth. The model performs best when τ = 10\" and \"τ = 1 "
           "corresponds to the original hard margin attention mask\" (§5.3).",
           f"The τ values are ours ({', '.join(map(str, GATED_TAUS))}): the figure's are not in the text. Every other "
           "setting is the full gated model's (configs/gated/iwslt14_de_en.args, τ = 10 there).",
           "With Eq. 3's tanh, τ = 1 is still a soft mask; the reference line is Algorithm 2's hard 0/1 mask "
           "(--distance-hard), ours."),
          kind="curve", reference="hard mask", x_label="τ"),
    Table("gated_table8", "Gated self-attention: parameters and training GPU-hours of the gated model",
          "Hou et al. (gated self-attention), Table 8 (§5.5)",
          tuple(Row(ds, (System("gated", f"gated/{ds.key}.args", GATED_SIZE_TIME[ds.key][1],
                                published_more=(("parameters", GATED_SIZE_TIME[ds.key][0]),)),))
                for ds in GATED_DATASETS),
          ("Published: GPU-hours on NVIDIA GeForce RTX 3090 (§5.5: \"in the unit of hours\"); the number of GPUs and "
           "whether a run or a mean over the seeds is timed are not stated.",
           "Read from the training logs of gated_table3's gated runs."),
          kind="time", runs_of="gated_table3", reference="gated", unit="GPU-hours"),
    # ------------------------------------------------------------ Bugliarello & Okazaki 2020: the other tables and figure
    Table("pascal_table3a", "PASCAL: validation BLEU by the PASCAL heads' encoder layer, NC11",
          "Bugliarello & Okazaki 2020, Table 3a (§3.2)",
          tuple(_pascal_layer_row(ds) for ds in (NC11_EN_DE, NC11_DE_EN)),
          ("Each dataset's PASCAL model of Table 1 (Table 7's heads and q; σ² = 1) with --pascal-layers k−1: layer 1 "
           "gives the same validation BLEU as Table 5's full NC11 models (23.2, 24.6).",
           "Δ columns are against layer 1 (the table has no Transformer row)."),
          reference="layer 1", split="valid"),
    Table("pascal_table3b", "PASCAL: validation BLEU by the Gaussian's variance σ², NC11",
          "Bugliarello & Okazaki 2020, Table 3b (§3.2)",
          tuple(_pascal_variance_row(ds) for ds in (NC11_EN_DE, NC11_DE_EN)),
          ("σ² = 1, 4, 9, 16, 25 as --pascal-sigma σ = 1, 2, 3, 4, 5; \"parent-only\" is \"the case where weights are "
           "only placed to the middle token (i.e. the parent)\" (§3.2): --pascal-weights parent-only.",
           "Δ columns are against σ² = 1, the paper's choice (listed first here; the paper lists parent-only first)."),
          reference="variance 1", split="valid"),
    Table("pascal_table5", "PASCAL: validation BLEU adding each component of the best models",
          "Bugliarello & Okazaki 2020, Table 5 (App. B)",
          tuple(_pascal_components_row(ds) for ds in PASCAL_DATASETS),
          ("Components are added \"whenever they were used by the models reported in Table 1\" (App. B): a blank cell "
           "of the paper is a component the dataset's model does not use, and is left out here (no system).",
           "Transformer: the baseline trained without the language filter where the next row adds it (NC11, WMT16: "
           "System data langid off), else on the dataset's data. + data filtering: the same with the language filter "
           "(langid; the paper's tool is langdetect). + PASCAL: Table 7's model without parent ignoring "
           "(--pascal-ignore 0.0 where Table 7's q > 0). + parent ignoring: Table 7's model.",
           "Δ columns are against the Transformer row."),
          reference="Transformer", split="valid"),
    Table("pascal_table6", "PASCAL: training time in seconds, Transformer vs +PASCAL",
          "Bugliarello & Okazaki 2020, Table 6 (App. A)",
          tuple(_pascal_pair_row(ds, *PASCAL_SECONDS[ds.key]) for ds in PASCAL_DATASETS),
          ("Published: seconds on 4 machines of 4 Nvidia P100 GPUs each (App. A); whether that is wall time or the "
           "sum over GPUs is not stated.",
           "Read from the training logs of pascal_table1's runs."),
          kind="time", runs_of="pascal_table1", unit="seconds"),
    Table("pascal_figure2", "PASCAL: ΔBLEU against the Transformer by source sentence length",
          "Bugliarello & Okazaki 2020, Figure 2 (§3.2)",
          tuple(_pascal_pair_row(ds, None, None) for ds in PASCAL_DATASETS),
          ("The figure gives no numbers (published: none). The text: \"our model is particularly useful when "
           "translating long sentences, obtaining more than +2 BLEU points when translating long sentences in all "
           "low-resource experiments, and +3.5 BLEU points on the distant En-Ja pair. However, only a few sentences "
           "(1%) in the evaluation datasets are long\" (§3.2).",
           "The figure's length buckets are not in the text: ours (syntrans.reproduce.figures.LENGTH_BUCKETS).",
           "Drawn from pascal_table1's test outputs."),
          kind="length", runs_of="pascal_table1"),
    Table("pascal_appendixb", "PASCAL: the weights multiplied (Eq. 2) or added to the scores, NC11",
          "Bugliarello & Okazaki 2020, Appendix B",
          tuple(_pascal_op_row(ds) for ds in (NC11_EN_DE, NC11_DE_EN)),
          ("\"we trained our best NC11 models replacing multiplication by addition. We find that BLEU scores still "
           "improve upon the baseline … but find them to be slightly lower (−0.2) than with multiplication\" (App. B): "
           "no number per dataset (published: none for addition).",
           "Baseline and PASCAL: Table 1's test BLEU; PASCAL (addition): --pascal-op add, the model otherwise Table 1's.")),
    # ------------------------------------------------------------ ours: the systems of the five papers side by side
    Table("cross_paper", "The five papers' systems side by side: test BLEU, significance with Holm's correction, "
          "training time and memory, IWSLT14 and NC11 de→en",
          "Hou et al. 2022's IWSLT14 recipe for every system of the five papers (ours: no paper reports this table)",
          (_cross_row(IWSLT_DE_EN), _cross_row(NC11_DE_EN)), CROSS_NOTES, reference="Transformer", kind="cross",
          significance=(0.05, "ours: a family-wise error rate of 0.05, Holm's (1979) step-down correction over the "
                              "ten comparisons with the Transformer per dataset, and over the combinations apart")),
    # ------------------------------------------------------------ ours: the systems on Multi30k with a small recipe
    Table("multi30k", "Syntax on Multi30k en→de: a small Transformer with early stopping, at most 8 epochs",
          "Ours: no paper reports this table (a small Transformer recipe for the five papers' systems on Multi30k en→de)",
          (_multi30k_row(),), MULTI30K_NOTES, reference="Transformer", kind="cross",
          significance=(0.05, "ours: a family-wise error rate of 0.05, Holm's (1979) step-down correction over the "
                              "comparisons with the Transformer of the systems run, the combinations apart"),
          default_systems=_first_comparison(), source_views=("deps", "trees"),
          target_views=("deps", "trees")),
]}
