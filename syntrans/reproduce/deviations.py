"""The "Deviations" block of a results file: every data, scoring and recipe label of the table's rows, where the reader
looks.

Two sources, both the records the run itself reads, so that a label cannot exist without reaching the results file:

* the data record (:func:`syntrans.reproduce.published_data.data_settings` of the table whose runs are written, the
  same call that gives the run its recipe, evaluation and references): for each dataset every setting of
  :data:`~syntrans.reproduce.published_data.SETTINGS` with its value and its source — what the paper states, "not
  stated: ours (…)" where it is silent, "deviates from …" where ours departs from it, "not applicable (…)" —, the
  paper's parser, and the entry's notes;
* :data:`RELEASED`: where the authors' released code does something else than ours (Bugliarello & Okazaki's
  training and data scripts, Li et al.'s syntax-aware local attention code), per system config or system name:
  what the paper says, what the released code does (the file named), what ours does, and why.

:func:`deviation_lines` gives the block as Markdown lines; :meth:`syntrans.reproduce.runner.Reproduction.write`
appends it to every results file.
"""
from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatch
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

from .published_data import SETTINGS, DataSettings, data_settings


@dataclass(frozen=True)
class ReleasedCode:
    """One place where the authors' released code differs from ours."""

    what: str  # the setting, e.g. "shared embeddings"
    paper: str  # what the paper says (with its section), or that it is silent
    released: str  # what the released code does, its file named
    ours: str  # what ours does
    why: str  # why ours differs
    configs: Tuple[str, ...] = ()  # systems whose config (path under configs/) matches one of these patterns
    names: Tuple[str, ...] = ()  # or whose name is one of these, in the tables ``tables``
    tables: Tuple[str, ...] = ()  # the tables (the key of the runs) where ``names`` apply; () every table
    datasets: Tuple[str, ...] = ()  # the dataset keys it applies to; () every dataset

    def applies(self, table: str, dataset: str, system) -> bool:
        if self.datasets and dataset not in self.datasets:
            return False
        if any(fnmatch(system.config, pattern) for pattern in self.configs):
            return True
        return system.name in self.names and (not self.tables or table in self.tables)


BO = "Bugliarello & Okazaki 2020"
BO_CODE = "Bugliarello & Okazaki's released code (github.com/e-bug/pascal)"
LI_CODE = "Li et al. 2021's released code (github.com/Neutralzz/syntax_aware_local_attention, src/dataset.py)"
NC11 = ("nc11_en_de", "nc11_de_en")
#: the choice for Bugliarello & Okazaki's rows: the scripts' values are printed beside ours, not followed (why: each
#: entry's ``why``; the choice is said once in the block)
BO_CHOICE = (f"{BO}'s rows keep the paper's stated values and our readings where it is silent (configs/pascal/, "
             "configs/lisa/); where the authors' released scripts use other values, both are listed here rather than "
             "followed: the paper's text (Table 7, App. A) is the published recipe, and following the scripts would "
             "give the baseline another learning rate than PASCAL's and every +MULTI-TASK row a preparation of its "
             "own (a BPE model relearned with the tags, another parser input), so the rows would no longer differ by "
             "the method alone.")

#: the entries of Bugliarello & Okazaki's released scripts (their lines start with these)
BO_ENTRIES = ("- shared embeddings", "- learning rate of the baseline", "- Adam betas of +MULTI-TASK",
              "- +MULTI-TASK data")

RELEASED: Tuple[ReleasedCode, ...] = (
    ReleasedCode(
        "shared embeddings",
        f"not stated ({BO}, App. A: the base Transformer, its sizes not restated)",
        f"{BO_CODE}: experiments/nc11en2de/transformer/train.sh and experiments/nc11de2en/transformer_multitask/"
        "train.sh train with --share-all-embeddings on a joined dictionary (binarize_*.sh: --joined-dictionary)",
        "separate source and target embeddings (no --share-all-embeddings in configs/pascal/ and configs/lisa/)",
        "the paper does not state it; the configs keep fairseq's transformer_wmt_en_de default (separate "
        "embeddings), marked ours. Our NC11 data has one joined dictionary (joint BPE), so "
        "--train-args '--share-all-embeddings' follows the scripts",
        configs=("pascal/*", "lisa/*"), datasets=NC11),
    ReleasedCode(
        "learning rate of the baseline",
        f'{BO}, App. A: the baseline uses "the hyperparameters in the latest Tensor2Tensor version", not listed; '
        "Table 7 lists lr 0.0007 for the PASCAL models",
        f"{BO_CODE}: experiments/nc11en2de/transformer/train.sh: --lr 0.001 (betas (0.9, 0.997), --max-tokens 2048 "
        "per GPU)",
        "--lr 0.0007, Table 7's value (configs/pascal/*.baseline.args, marked ours)",
        "the paper lists no value for the baseline; Table 7's keeps the baseline and PASCAL on one schedule, so the "
        "rows differ by the mechanism alone",
        configs=("pascal/*.baseline.args",), datasets=NC11),
    ReleasedCode(
        "Adam betas of +MULTI-TASK",
        f"not stated for +MULTI-TASK ({BO}, Table 7 lists the PASCAL models: (0.9, 0.997))",
        f"{BO_CODE}: experiments/nc11de2en/transformer_multitask/train.sh: --adam-betas (0.9,0.98) (--lr 0.0007)",
        "(0.9, 0.997), Table 7's value as the baseline's (configs/pascal/*.multitask.args, marked ours)",
        "+MULTI-TASK is \"a standard Transformer\" (§3.1): ours trains it exactly as the baseline, so its row differs "
        "from the baseline by the multi-task data alone",
        configs=("pascal/*.multitask.args",), datasets=NC11),
    ReleasedCode(
        "+MULTI-TASK data: BPE and task tags",
        f'{BO}, App. A: "a special tag indicating the desired task is prepended and appended to each source '
        'sentence"; the BPE of the multi-task corpus is not stated',
        f"{BO_CODE}: experiments/nc11de2en/binarize_lin_parses.sh (and the other datasets' files of that name) adds "
        "the <TR>/<PA> tags to the tokenized text, then "
        "learns a new joint BPE (16,000 merges on NC11) on the combined translation and parsing corpus, shuffled, "
        "and binarizes it with one joined dictionary",
        "the corpus' own BPE (learned on the translation text) applied to both tasks, the tags added after BPE as "
        "whole tokens (syntrans-prepare --multitask, syntrans/prep/multitask.py)",
        "the translation side then has the same subwords as the baseline's data, so the two rows differ by the added "
        "parsing pairs alone; relearning the BPE would also change the translation pairs' segmentation",
        configs=("pascal/*.multitask.args",), names=("+MULTI-TASK",), tables=("cross_paper", "multi30k")),
    ReleasedCode(
        "+MULTI-TASK data: the parser's input",
        f"not stated ({BO}, §3.1: Stanford CoreNLP parses the source sentences)",
        f"{BO_CODE}: scripts/bpe_lin_parses.py parses the BPE-merged tokenized text after html.unescape, '\"' → '``', "
        "n't → not, &apos; → ', 'n' → and, and an apostrophe dropped before a clitic other than 'd and 's",
        "the tokenized source as it is, parsed by syntrans-prepare's --parser (stanza by default)",
        "the same parse feeds every system of the table (PASCAL, LISA, +S&H read it too); normalising the parser's "
        "input for one system alone would parse the source twice",
        configs=("pascal/*.multitask.args",), names=("+MULTI-TASK",), tables=("cross_paper", "multi30k")),
    ReleasedCode(
        "SLA: the neighbours of a word's window",
        "Hou et al. (gated self-attention), §5.2: the distance is the shortest path in the dependency tree, from the "
        "token's own word",
        f"{LI_CODE}: the window of word i is the union of the windows of words i−1, i and i+1 (the minimum "
        "distance over the three), i−1 and i+1 taken unconditionally, whatever sentence they belong to",
        "--sla-window word, the gated paper's description (the config's value); --sla-window neighbours is the "
        "union restricted to the word's own tree (ours), --sla-window neighbours-unrestricted the released code's",
        "the results of the gated paper's Table 3 come from its own re-implementation, which it describes as the "
        "distance from the word; the options give the released code's forms",
        configs=("gated/*.sla.args",), names=("SLA",), tables=("cross_paper", "multi30k")),
    ReleasedCode(
        "SLA: the sentence-boundary token",
        "not stated (Hou et al., gated self-attention, §5.2)",
        f"{LI_CODE}: [CLS] and [SEP] are at distance 0 of every token: every token sees them, and they see every "
        "token",
        "EOS sees only itself and is in no other token's window; --sla-boundary-visible gives the released code's "
        "visibility",
        "the gated paper says nothing of the boundary token; an encoder with a window only over words keeps EOS out",
        configs=("gated/*.sla.args",), names=("SLA",), tables=("cross_paper", "multi30k")),
    ReleasedCode(
        "SLA: the gate",
        "Hou et al. (gated self-attention), §5.2: \"a naive gating network controlling the combination of syntax and "
        "global attention at each attention head of each layer\", its form not stated",
        "Li et al. 2021's released code (github.com/Neutralzz/syntax_aware_local_attention, transformers/"
        "modeling_bert.py): one gate per token and layer, a linear layer of the layer input shared by the heads",
        "the gated paper's own gate network per sentence and head, without its regularisation (--gate-layers); "
        "--sla-token-gate gives the released code's gate",
        "the gated paper describes a gate per head; the configs mark this reading as ours",
        configs=("gated/*.sla.args",), names=("SLA",), tables=("cross_paper", "multi30k")),
)


def kind_of(source: str) -> str:
    """The mark of one source string: deviates, ours (the paper is silent), n/a, or stated."""
    if source.startswith("deviates"):
        return "deviates"
    if source.startswith("not stated"):
        return "ours"
    if source.startswith("not applicable"):
        return "n/a"
    return "stated"


def _value(settings: DataSettings, name: str) -> str:
    """The value of one setting of ``settings``, as the run uses it."""
    if name in ("eval_tokenize", "eval_lowercase"):
        value = getattr(settings.evaluation, name.split("_", 1)[1])
    elif name in ("parser", "valid_split", "references"):
        value = getattr(settings, name)
    else:
        value = getattr(settings.recipe, name)
    if isinstance(value, tuple) and value and hasattr(value[0], "files"):  # corpus parts: their files' names
        return ", ".join(alts[0].rsplit("/", 1)[-1] for part in value for _, alts in part.files)
    if value is None:
        return "the corpus' setting" if name not in ("valid_split", "eval_tokenize") else (
            "the corpus' validation files" if name == "valid_split" else "the target language's tokenizer")
    return str(value)


def _group(rows: Sequence[Tuple[str, str]]) -> List[Tuple[str, List[str]]]:
    """[(text, [dataset titles])] with the datasets of equal text together, in first-seen order."""
    out: Dict[str, List[str]] = {}
    for title, text in rows:
        out.setdefault(text, []).append(title)
    return list(out.items())


def data_lines(table_key: str, datasets: Iterable) -> List[str]:
    """Every setting of the data record of ``table_key`` for ``datasets`` (:class:`~syntrans.reproduce.tables.Dataset`),
    one line per setting and distinct (value, source), the datasets that share it named."""
    records = [(ds.title, data_settings(table_key, ds.key)) for ds in datasets]
    if not records:
        return []
    lines = []
    for name in SETTINGS:
        rows = [(title, f"`{name}` = {_value(s, name)} [{kind_of(s.source(name))}]: {s.source(name)}")
                for title, s in records]
        lines += [f"- {', '.join(titles)}: {text}" for text, titles in _group(rows)]
    notes = [(title, f"note: {n}") for title, s in records for n in s.notes]
    lines += [f"- {', '.join(titles)}: {text}" for text, titles in _group(notes)]
    return lines


def released_lines(table_key: str, rows: Iterable) -> List[str]:
    """Every :data:`RELEASED` entry that applies to a system of ``rows`` (:class:`~syntrans.reproduce.tables.Row`),
    with the systems and datasets it applies to."""
    lines = []
    for entry in RELEASED:
        where: Dict[str, List[str]] = {}
        for row in rows:
            for s in row.systems:
                if entry.applies(table_key, row.dataset.key, s):
                    where.setdefault(row.dataset.title, []).append(s.name)
        if where:
            on = "; ".join(f"{title}: {', '.join(names)}" for title, names in where.items())
            lines.append(f"- {entry.what} ({on}). The paper: {entry.paper}. The authors' code: {entry.released}. "
                         f"Ours: {entry.ours}. Why: {entry.why}.")
    return lines


def deviation_lines(table, runs, datasets: Optional[Sequence[str]] = None, smoke: bool = False) -> List[str]:
    """The "Deviations" block of ``table``'s results file (``runs``: the table whose runs and data record it reads;
    ``datasets``: only these dataset keys, None all of the table's rows)."""
    rows = [r for r in table.rows if datasets is None or r.dataset.key in datasets]
    seen, ds = set(), []
    for r in rows:
        if r.dataset.key not in seen:
            seen.add(r.dataset.key)
            ds.append(r.dataset)
    lines = ["", "## Deviations", "",
             "Each setting of the data preparation, the parser and the scoring of this table's datasets, as the run "
             "reads it (syntrans.reproduce.published_data), with its mark: [stated] by the paper (where it says "
             "so), [ours] where the paper is silent, [deviates] where ours departs from the paper (the paper "
             "quoted, and why), [n/a] where another setting makes it moot. A value \"the corpus' setting\" is the "
             "corpus' own preparation (syntrans.prep.corpora)."]
    if smoke:
        lines.append("This is a smoke run: its stand-in corpus keeps its own preparation; the settings below are the "
                     "paper's recipe, which a full run applies.")
    lines.append("")
    lines += data_lines(runs.key, ds)
    released = released_lines(runs.key, rows)
    if released:
        lines += ["", "Where the authors' released code differs from ours (the paper, the code, ours, and why):", ""]
        if any(line.startswith(BO_ENTRIES) for line in released):
            lines.append(f"- {BO_CHOICE}")
        lines += released
    return lines


__all__ = ["BO_CHOICE", "RELEASED", "ReleasedCode", "data_lines", "deviation_lines", "kind_of", "released_lines"]
