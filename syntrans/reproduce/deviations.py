"""The "Deviations" block of a results file: every data, scoring and recipe label of the table's rows, where the reader
looks.

Two sources, both the records the run itself reads, so that a label cannot exist without reaching the results file:

* the data record (:func:`syntrans.reproduce.published_data.data_settings` of the table whose runs are written, the
  same call that gives the run its recipe, evaluation and references): for each dataset every setting of
  :data:`~syntrans.reproduce.published_data.SETTINGS` with its value and its source — what the paper states, "not
  stated: ours (…)" where it is silent, "deviates from …" where ours departs from it, "not applicable (…)" —, the
  paper's parser, and the entry's notes;
* the authors' released code: for each dataset, what their data and scoring scripts do, setting by setting
  (:mod:`syntrans.reproduce.released_data`), printed beside each setting above; for each system of each row, every
  training value their scripts set (:mod:`syntrans.reproduce.released_code`) with the paper's and ours
  (:func:`training_lines`);
* :data:`RELEASED`: the remaining places where the authors' code does something our options model differently
  (Bugliarello & Okazaki's +MULTI-TASK data, Li et al.'s syntax-aware local attention code), per system config or
  system name: what the paper says, what the released code does (the file named), what ours does, and why.

The rule every value follows: where the paper states it, ours is the paper's ([stated]) and the code's, where it
differs, stands beside it; where the paper is silent and the code sets it, ours is the code's ([authors' code], the
file named) unless a [deviates] note says why not; [ours] only where both are silent.

:func:`deviation_lines` gives the block as Markdown lines; :meth:`syntrans.reproduce.runner.Reproduction.write`
appends it to every results file.
"""
from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatch
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

from ..prep.recipe import OFF, apply_recipe
from .config_file import CONFIG_DIR, read_args_file
from .published import protocol, stated
from .published_data import SETTINGS, DataSettings, data_settings
from .released_code import released
from .released_data import STEPS, released_data


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
BO_CHOICE = (f"{BO}'s rows follow the authors' released scripts wherever the paper is silent (each value above, "
             "marked [authors' code]: the baselines' lr 0.001, every system's betas, eps 1e-09, shared embeddings, "
             "2,048 tokens per GPU, checkpoint_last.pt); the two +MULTI-TASK entries here are the exceptions, kept "
             "so that every row of a table reads one preparation of the source.")

#: the entries of Bugliarello & Okazaki's released scripts (their lines start with these)
BO_ENTRIES = ("- +MULTI-TASK data",)

RELEASED: Tuple[ReleasedCode, ...] = (
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
        "DBSA: the bi-affine U",
        "Deguchi et al. 2021, §3 (after Deguchi et al. 2019): A_h = softmax(Q_h U K_hᵀ/√d_k), its initialisation not "
        "stated",
        "Deguchi et al.'s released DBSA plugin (github.com/de9uch1/dbsa, dbsa/modules/dbsa.py): U is a linear layer "
        "with a bias, Xavier-uniform with gain 1/√2 and a zero bias; the bias adds a per-key term b·k_j to the DBSA "
        "head's scores",
        "U starts as the identity, no bias (syntrans/mechanisms/dbsa.py, BiaffineQueryProjection, marked ours)",
        "not followed yet: the key bias is a term our folded query projection does not have, and an option of its own "
        "(with its checkpoint keys) is left for later; the identity start also makes the DBSA heads start as the "
        "stock heads they take over",
        configs=("dbsa/*_??_??.args", "syncattn/*_??_??.args")),
    ReleasedCode(
        "SLA: punctuation",
        "not stated (Hou et al., gated self-attention, §5.2)",
        f"{LI_CODE}: punctuation tokens (its quote_idx) are put at distance 0 of every word, so every token sees "
        "them",
        "punctuation is a word of the dependency tree like any other, at its tree distance; the released code's "
        "form is not offered (docs/methods.md, SLA)",
        "the gated paper describes the window by tree distance alone; a visibility rule for punctuation would be an "
        "option of its own",
        configs=("gated/*.sla.args",), names=("SLA",), tables=("cross_paper", "multi30k")),
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
    """The mark of one source string: deviates, authors' code (the paper is silent, the released code sets it), ours
    (both are silent), n/a, or stated."""
    if source.startswith("deviates"):
        return "deviates"
    if source.startswith("authors' code"):
        return "authors' code"
    if source.startswith("not stated"):
        return "ours"
    if source.startswith("not applicable"):
        return "n/a"
    return "stated"


def _files(parts) -> str:
    """The file names of corpus parts (a split's or a recipe's), comma-separated."""
    return ", ".join(alts[0].rsplit("/", 1)[-1] for part in parts for _, alts in part.files)


def _value(ds, settings: DataSettings, name: str) -> str:
    """The value of one setting of ``settings`` for the dataset ``ds``, as the run uses it: a setting the record
    leaves to the corpus (None) shows the corpus' value, never a bare "the corpus' setting"."""
    if name in ("eval_tokenize", "eval_lowercase"):
        value = getattr(settings.evaluation, name.split("_", 1)[1])
        if value is None:  # the target language's sacreBLEU tokenizer
            from .scoring import sacrebleu_tokenizer

            return f"{sacrebleu_tokenizer(ds.tgt)} (sacreBLEU's tokenizer for {ds.tgt})"
        return str(value)
    if name in ("parser", "references"):
        return str(getattr(settings, name))
    try:
        from ..prep import CORPORA

        pair = apply_recipe(CORPORA[ds.corpus].find_pair(ds.src, ds.tgt), settings.recipe)
    except Exception:  # a corpus this install does not know: the record's own value
        pair = None
    if name == "valid_split":
        if settings.valid_split is not None:
            return settings.valid_split
        if pair is None:
            return "the corpus' validation files"
        splits = pair.splits.get(f"{ds.src}-{ds.tgt}") or next(iter(pair.splits.values()))
        return f"the corpus' validation files ({_files(splits['valid'])})"
    value = getattr(settings.recipe, name)
    if isinstance(value, tuple) and value and hasattr(value[0], "files"):  # corpus parts: their files' names
        return _files(value)
    if value is not None or pair is None:
        return "off" if value == OFF else str(value) if value is not None else "the corpus' setting"
    # left to the corpus: its value, after the recipe's other settings
    if name in ("max_len", "ratio"):
        v = getattr(pair.clean, name) if pair.clean else None
        return f"{'off' if v is None else v} (the corpus' setting)"
    if name in ("bpe_ops", "bpe_ops_by_lang"):
        if pair.word_vocab:
            return "none (word-level)"
        merges = pair.merges()
        one = set(merges.values())
        return (f"{one.pop()} (the corpus' setting{', joint' if pair.joint else ', per side'})" if len(one) == 1
                else f"{merges} (the corpus' setting)")
    if name == "train_limit":
        return "all (the corpus' setting)"
    if name == "train_parts":
        splits = pair.splits.get(f"{ds.src}-{ds.tgt}") or next(iter(pair.splits.values()))
        return f"{_files(splits['train'])} (the corpus' training files)"
    if name == "word_vocab":
        return "none: BPE (the corpus' setting)"
    return f"{getattr(pair, name)} (the corpus' setting)"


def _group(rows: Sequence[Tuple[str, str]]) -> List[Tuple[str, List[str]]]:
    """[(text, [dataset titles])] with the datasets of equal text together, in first-seen order."""
    out: Dict[str, List[str]] = {}
    for title, text in rows:
        out.setdefault(text, []).append(title)
    return list(out.items())


def data_lines(table_key: str, datasets: Iterable) -> List[str]:
    """Every setting of the data record of ``table_key`` for ``datasets`` (:class:`~syntrans.reproduce.tables.Dataset`),
    one line per setting and distinct (value, source), the datasets that share it named."""
    records = [(ds, data_settings(table_key, ds.key), released_data(table_key, ds.key)) for ds in datasets]
    if not records:
        return []
    lines = []
    for name in SETTINGS:
        rows = []
        for ds, s, code in records:
            text = f"`{name}` = {_value(ds, s, name)} [{kind_of(s.source(name))}]: {s.source(name)}"
            if name in code and not s.source(name).startswith("authors' code"):
                text += f". The authors' code: {code[name]}"
            rows.append((ds.title, text))
        lines += [f"- {', '.join(titles)}: {text}" for text, titles in _group(rows)]
    steps = [(ds.title, f"the authors' preparation: {code[STEPS]}") for ds, _, code in records if STEPS in code]
    lines += [f"- {', '.join(titles)}: {text}" for text, titles in _group(steps)]
    notes = [(ds.title, f"note: {n}") for ds, s, _ in records for n in s.notes]
    lines += [f"- {', '.join(titles)}: {text}" for text, titles in _group(notes)]
    return lines


def _record_name(config: str) -> str:
    """The paper's record a config is read against: +MULTI-TASK is the baseline on other data (its record is the
    baseline's; :mod:`syntrans.reproduce.published`)."""
    return config.replace(".multitask.args", ".baseline.args") if config.startswith("pascal/") else config


def _mark(note: str, stated_here: bool) -> str:
    """A config line's mark from its note."""
    if note.startswith("deviates"):
        return "deviates"
    if stated_here:
        return "stated"
    if note.startswith("authors' code"):
        return "authors' code"
    return "ours"


def _config_value(cfg, key: str, table_key: str, dataset: str) -> str:
    """Ours for one key of the released record: a flag's value, the batch, the decoding, or the checkpoint."""
    if key == "checkpoint":
        p = protocol(table_key, dataset)
        return {"best": "checkpoint_best.pt", "last": "checkpoint_last.pt"}.get(
            p.checkpoint, f"the average of the {p.checkpoint} epoch checkpoints")
    if key == "tokens-per-update":
        return str(cfg.tokens_per_update)
    if key.startswith("decode "):
        flag = key.split(" ", 1)[1]
        return cfg.decode[cfg.decode.index(flag) + 1] if flag in cfg.decode else "absent"
    value = cfg.value(key)
    return "absent" if value is None else "on" if value == "" else value


def _shown(value) -> str:
    return "absent" if value is None else "on" if value == "" else value


def training_lines(table_key: str, rows: Iterable) -> List[str]:
    """For every system of ``rows`` whose paper released code: each value the authors' scripts set
    (:func:`syntrans.reproduce.released_code.released`) with ours, its mark and the paper's, one line per distinct
    text with the rows it holds for; then the scripts themselves, per row and system."""
    lines: List[Tuple[Tuple[str, str], str]] = []
    files: List[Tuple[str, str]] = []
    every: List[Tuple[str, str]] = []
    for row in rows:
        for s in row.systems:
            code = released(s.config)
            if code is None:
                continue
            cell = (row.dataset.title, s.name)
            every.append(cell)
            where = f"{row.dataset.title}: {s.name}"
            if code.none:
                files.append((where, f"no released script ({code.none})"))
                continue
            cfg = read_args_file(CONFIG_DIR / s.config)
            record = stated(_record_name(s.config))
            paths = list(dict.fromkeys(f.split(" (", 1)[0] for f in code.files()))
            files.append((where, f"{code.repo}: {', '.join(paths)}" + (f" ({code.note})" if code.note else "")))
            for key, (value, source) in code.values.items():
                st = record.get(key)
                note = cfg.notes.get("decode" if key.startswith("decode ") else key, "")
                if key == "checkpoint":
                    where_p = protocol(table_key, row.dataset.key).where
                    mark = ("stated" if not where_p.startswith(("not stated", "authors' code", "seeds not stated"))
                            else "authors' code" if "authors' code" in where_p else "ours")
                else:
                    mark = _mark(note, st is not None)
                ours = _config_value(cfg, key, table_key, row.dataset.key)
                if mark == "ours" and not note and _same(ours, value):  # a flag left out, as the code leaves it
                    mark = "authors' code"
                paper = f"{_shown(st.value)} ({st.where})" if st is not None else "not stated"
                agrees = "agrees" if _same(ours, value) else f"{_shown(value)}"
                name = source.split(" (", 1)[0].rsplit("/", 1)[-1]
                lines.append((cell, f"`{key}` = {ours} [{mark}]; the paper: {paper}; the authors' code: {agrees} "
                                    f"({name})"))
    if not lines and not files:
        return []
    out = [f"- {_cells(cells, every)}: {text}" for text, cells in _group(lines)]
    out.append("- The authors' files, per row and system: " + "; ".join(f"{w}: {f}" for w, f in files) + ".")
    return out


def _cells(cells: Sequence[Tuple[str, str]], every: Sequence[Tuple[str, str]]) -> str:
    """(dataset title, system) cells as a reader scans them: "every row and system", or per dataset its systems."""
    if len(cells) == len(every) and len(every) > 1:
        return "every row and system"
    by: Dict[str, List[str]] = {}
    for title, system in cells:
        by.setdefault(title, []).append(system)
    return "; ".join(f"{title}: {', '.join(systems)}" for title, systems in by.items())


def _same(a: str, b) -> bool:
    """Two config values equal (numbers compared as numbers, "on" as a switch that is on)."""
    b = _shown(b)
    try:
        return float(a) == float(b)
    except (TypeError, ValueError):
        return a.replace(" ", "") == b.replace(" ", "")


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
             "so), [authors' code] where the paper is silent and the authors' released code sets it (the file "
             "named), [ours] where both are silent, [deviates] where ours departs from the paper or the code (quoted, "
             "and why), [n/a] where another setting makes it moot; beside it, what the authors' released code does "
             "(the file named). A value marked \"(the corpus' setting)\" is the corpus' own preparation "
             "(syntrans.prep.corpora), shown with its value."]
    if smoke:
        lines.append("This is a smoke run: its stand-in corpus keeps its own preparation; the settings below are the "
                     "paper's recipe, which a full run applies.")
    lines.append("")
    lines += data_lines(runs.key, ds)
    training = training_lines(runs.key, rows)
    if training:
        lines += ["", "The training and decoding values the authors' released code sets, per row and system: ours, its "
                      "mark, the paper's value (where stated) and the code's (\"agrees\" where it is ours; the file "
                      "named, listed in full at the end):", ""]
        lines += training
    released = released_lines(runs.key, rows)
    if released:
        lines += ["", "Where the authors' released code differs from ours (the paper, the code, ours, and why):", ""]
        if any(line.startswith(BO_ENTRIES) for line in released):
            lines.append(f"- {BO_CHOICE}")
        lines += released
    return lines


__all__ = ["BO_CHOICE", "RELEASED", "ReleasedCode", "data_lines", "deviation_lines", "kind_of", "released_lines",
           "training_lines"]
