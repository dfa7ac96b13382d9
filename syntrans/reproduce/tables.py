"""The published tables the reproduction scripts rebuild: datasets, systems (a config file each) and the published
test BLEU the papers report (paper, table, dataset, system).

A :class:`Table` lists :class:`Row` groups, one per dataset; every row trains its systems with the same prepared
data and decodes with the decoding settings of the system's config file (its ``# decode:`` line).
"""
from __future__ import annotations

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
    #: "length" (a figure: ΔBLEU against the reference by source length)
    kind: str = "bleu"
    split: str = "test"  # the split decoded and scored: "test", or "valid" where the paper reports validation BLEU
    runs_of: Optional[str] = None  # the table whose trained runs (work dirs) this one reads instead of its own
    #: the paper's significance level for the paired bootstrap marker (Koehn 2004), with where it says so;
    #: (0.05, "ours: …") where the paper reports no test
    significance: Tuple[float, str] = (0.05, "not stated: ours (p < 0.05)")
    ribes: bool = False  # also score RIBES (where the paper reports it)
    x_label: str = ""  # a figure's x axis


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


def _distance_row(ds: Dataset, base: float, ours: float) -> Row:
    return Row(ds, (System("baseline", f"distance_mask/{ds.key}.baseline.args", base),
                    System("distance-mask", f"distance_mask/{ds.key}.args", ours)))


def _heads_row(ds: Dataset, base: float, by_heads: Tuple[float, float, float, float]) -> Row:
    """Hou et al. 2022, Table 2: the soft mask in 1-4 heads of encoder layer 1, the dataset's other settings kept."""
    return Row(ds, (System("baseline", f"distance_mask/{ds.key}.baseline.args", base),)
               + tuple(System(f"{n}-head", f"distance_mask/{ds.key}.args", bleu, ("--distance-heads", str(n)))
                       for n, bleu in zip((1, 2, 3, 4), by_heads)))


def _gated_row(ds: Dataset, base: float, gated: float, lisa: Optional[float], pascal: float) -> Row:
    systems = [System("baseline", f"gated/{ds.key}.baseline.args", base)]
    if lisa is not None:
        systems.append(System("LISA", f"gated/{ds.key}.lisa.args", lisa))
    systems += [System("PASCAL", f"gated/{ds.key}.pascal.args", pascal), System("gated", f"gated/{ds.key}.args", gated)]
    return Row(ds, tuple(systems))


def _gate_modes_row(ds: Dataset, pure: float, avg: float, ours: float) -> Row:
    """Hou et al. (gated), Table 6: G = 1 (Pure), G = 0.5 (Avg) and the learned gate (Ours)."""
    cfg = f"gated/{ds.key}.args"
    return Row(ds, (System("Pure", cfg, pure, ("--gate-mode", "pure")), System("Avg", cfg, avg, ("--gate-mode", "avg")),
                    System("Ours", cfg, ours)))


def _pascal_row(ds: Dataset, base: float, pascal: float, lisa: float) -> Row:
    return Row(ds, (System("baseline", f"pascal/{ds.key}.baseline.args", base),
                    System("LISA", f"lisa/{ds.key}.args", lisa), System("PASCAL", f"pascal/{ds.key}.args", pascal)))


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


TABLES: Dict[str, Table] = {t.key: t for t in [
    Table("distance_table1", "Syntax-guided localized self-attention: test BLEU, baseline vs distance-mask",
          "Hou et al. 2022, Table 1",
          (_distance_row(IWSLT_DE_EN, 34.56, 35.74), _distance_row(IWSLT_EN_DE, 28.17, 29.28),
           _distance_row(NC11_DE_EN, 26.83, 27.67), _distance_row(NC11_EN_DE, 25.26, 26.19),
           _distance_row(ASPEC_ZH_JA, 47.77, 48.34), _distance_row(WMT14_EN_DE, 27.3, 28.48))),
    Table("distance_table2", "Syntax-guided localized self-attention: the soft mask in 1, 2, 3 or 4 heads of encoder layer 1",
          "Hou et al. 2022, Table 2 (head-wise ablation)",
          (_heads_row(IWSLT_DE_EN, 34.56, (35.65, 35.68, 35.71, 35.74)),
           _heads_row(IWSLT_EN_DE, 28.17, (29.20, 29.21, 29.28, 29.23)),
           _heads_row(NC11_DE_EN, 26.83, (27.58, 27.67, 27.56, 27.67)),
           _heads_row(NC11_EN_DE, 25.26, (25.87, 25.99, 26.19, 26.08)))),
    Table("gated_table3", "Gated self-attention: test BLEU (baseline, the paper's LISA and PASCAL, gated)",
          "Hou et al. (gated self-attention), Table 3",
          (_gated_row(IWSLT_DE_EN, 34.58, 35.58, 34.97, 34.84), _gated_row(IWSLT_EN_DE, 28.23, 29.33, 29.06, 29.10),
           _gated_row(NC11_DE_EN, 27.06, 28.40, 27.51, 27.65), _gated_row(NC11_EN_DE, 25.08, 26.43, 25.65, 25.52),
           _gated_row(WMT18_EN_TR, 17.86, 18.65, None, 18.57)),
          ("The paper's LISA baseline is an L2 loss on a 0/1 parent mask (§2.2, §5.2): configs/gated/*.lisa.args; "
           "it has no WMT18 LISA run.",)),
    Table("gated_table6", "Gated self-attention: the gate ablation, G = 1 (Pure), G = 0.5 (Avg) or learned (Ours)",
          "Hou et al. (gated self-attention), Table 6 (one seed, the last 10 epochs)",
          (_gate_modes_row(IWSLT_DE_EN, 35.48, 35.65, 35.66), _gate_modes_row(IWSLT_EN_DE, 29.44, 29.42, 29.51),
           _gate_modes_row(NC11_DE_EN, 27.89, 27.77, 28.40), _gate_modes_row(NC11_EN_DE, 25.02, 26.20, 26.56),
           _gate_modes_row(WMT18_EN_TR, 18.49, 18.52, 18.75)),
          ("Δ columns are against Pure (the table has no Transformer column).",), reference="Pure"),
    Table("pascal_table1", "PASCAL: test BLEU (baseline, LISA, PASCAL)", "Bugliarello & Okazaki 2020, Table 1",
          (_pascal_row(NC11_EN_DE, 25.0, 25.9, 25.3), _pascal_row(NC11_DE_EN, 26.6, 27.4, 27.1),
           _pascal_row(WMT18_EN_TR, 13.1, 14.0, 13.6), _pascal_row(WMT16_EN_DE, 33.0, 33.9, 33.6),
           _pascal_row(WMT17_EN_DE, 25.5, 26.1, 25.7), _pascal_row(WAT_EN_JA, 43.1, 44.0, 43.2)),
          ("WAT en→ja is ASPEC (licensed): pass --aspec-dir; the paper scores it after KyTea tokenization.",)),
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
]}
