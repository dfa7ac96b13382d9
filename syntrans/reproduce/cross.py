"""The results file and figure of a cross-kind table: results/cross_paper.md (the five papers' systems side by side)
and results/multi30k.md (the same systems on Multi30k with a small recipe); ours, no paper reports either.

Per dataset, every system's test BLEU and chrF++ (mean ± sd over the seeds), beside the published numbers of every
paper that reports the dataset (a column left out where none does), its difference from the Transformer, the paired
bootstrap against the Transformer corrected for multiple comparisons (per metric), the epochs each seed trained, its
training time and peak memory; then the combinations no paper tried; then each system's settings with their marks
(:mod:`syntrans.reproduce.cross_systems`; :mod:`syntrans.reproduce.multi30k_systems`); then the figure (BLEU ± sd per
system, ΔBLEU against the Transformer by source length).

The test: each seed pair k (the system's seed k against the Transformer's seed k) has sacreBLEU's paired bootstrap
p-value (:func:`~syntrans.reproduce.significance.paired_bootstrap`), of BLEU and, apart, of chrF++. A system's claim is
that it differs in every pair, so its p is the largest of its pairs (an intersection-union test: all pairs must
reject, and the largest p decides). Over a family (the papers' systems run; the combinations apart), Holm's step-down
correction (:func:`~syntrans.reproduce.significance.holm`) adjusts these p, each metric on its own; † marks an
adjusted p below the table's level with the higher score in every pair, ‡ with the lower score in every pair, "mixed"
below the level with the direction changing, "n.s." otherwise. The direction compares the scores of the same seed pairs
as the p-values (seed k against the Transformer's seed k: :func:`~syntrans.reproduce.results_tables.seed_pairs`). A
family-wise error rate at the level then holds for each family, dataset and metric.
"""
from __future__ import annotations

import statistics
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from .cross_systems import BY_NAME, method_settings
from .figures import LENGTH_BUCKETS, _figure, _lines, _sources, bucket_label, length_deltas
from .results_tables import mean_sd, seed_pairs
from .significance import holm
from .timing import read_training_log


def _p(p: float) -> str:
    return f"{p:.2g}"


def decisive_p(got: dict) -> Optional[float]:
    """The largest p over a system's seed pairs (None: no pair tested)."""
    ps = got.get("p_values") or []
    return max(ps) if ps else None


def family_markers(row, outcomes: Dict[tuple, dict], level: float) -> Dict[str, Tuple[float, float, str]]:
    """{system: (decisive p, Holm-adjusted p, marker)} of every tested system of ``row``, each group its own family."""
    ref = outcomes.get((row.dataset.key, row.systems[0].name), {})
    out = {}
    for group in dict.fromkeys(s.group for s in row.systems[1:]):
        members = [s for s in row.systems[1:] if s.group == group]
        ps = {s.name: decisive_p(outcomes.get((row.dataset.key, s.name), {})) for s in members}
        ps = {k: v for k, v in ps.items() if v is not None}
        for name, adjusted in holm(ps).items():
            got = outcomes[(row.dataset.key, name)]
            pairs = seed_pairs(got, ref)  # (system, Transformer) per seed pair k, as the p-values pair them
            n = len(got["p_values"])
            if n != len(pairs):
                raise ValueError(f"{row.dataset.key}, {name}: {n} p-values for {len(pairs)} seed pairs with the "
                                 "Transformer: expected one per seed pair")
            higher = all(a > b for a, b in pairs)
            lower = all(a < b for a, b in pairs)
            mark = ("n.s." if adjusted >= level else "†" if higher else "‡" if lower else "mixed")
            out[name] = (ps[name], adjusted, mark)
    return out


def _mean(values) -> Optional[float]:
    return statistics.fmean(values) if values else None


def _published(system, dataset: str) -> str:
    cs = BY_NAME.get(system.name)
    cells = [f"{v:.2f} ({where})" for v, where in (cs.published.get(dataset, ()) if cs else ())]
    return "; ".join(cells) or "—"


def _cost(got: dict) -> Tuple[str, str, str, str]:
    """(epochs per seed, training seconds mean ± sd, seconds per update, peak memory) over a system's seeds."""
    results = got.get("results") or []
    if not results:
        return "", "", "", ""
    seconds = [r["train"]["seconds"] for r in results]
    per_update, epochs = [], []
    for r in results:
        run = Path(r["run_dir"])
        try:
            log = read_training_log(run / "train.log", run / "train.resumed.log")
        except ValueError:
            epochs.append("—")
            continue
        epochs.append(str(log.epochs))
        if log.per_update is not None:
            per_update.append(log.per_update)
    gpu = [r["train"].get("peak_gpu_mb") for r in results if r["train"].get("peak_gpu_mb") is not None]
    rss = [r["train"].get("peak_rss_mb") for r in results if r["train"].get("peak_rss_mb") is not None]
    memory = (f"GPU {max(gpu):,.0f} MB" if gpu else "") + ("; " if gpu and rss else "") + \
        (f"RSS {max(rss):,.0f} MB" if rss else "")
    sd = f" ± {statistics.stdev(seconds):.0f}" if len(seconds) > 1 else ""
    return (", ".join(epochs), f"{statistics.fmean(seconds):.0f}{sd}",
            f"{statistics.fmean(per_update):.3f}" if per_update else "—", memory or "—")


#: the metrics of the cross kind: (name, the outcome's scores key, its p-values key); chrF++ where the table has it
METRICS = (("BLEU", "scores", "p_values"), ("chrF++", "chrf", "chrf_p_values"))


def _metric_outcomes(outcomes: Dict[tuple, dict], scores: str, p_values: str) -> Dict[tuple, dict]:
    """The outcomes as :func:`family_markers` reads them ("scores", "p_values"), of one metric."""
    out = {}
    for key, got in outcomes.items():
        view = {"seeds": got.get("seeds"), "scores": got.get(scores)}
        if got.get(p_values) is not None:
            view["p_values"] = got[p_values]
        out[key] = view
    return out


def _recipe(table):
    """(settings of a system on a dataset, its one-line description, the Settings section's lead) of a cross-kind
    table: the Multi30k table's (:mod:`syntrans.reproduce.multi30k_systems`) or the cross-paper table's."""
    if table.key == "multi30k":
        from . import multi30k_systems as m30k

        return (lambda cs, dataset: m30k.method_settings(cs)), m30k.describe, (
            "Each system's method flags after the recipe's (`--arch syntax_transformer` for all), with their marks: "
            "ours, as the cross-paper table's IWSLT14 de→en setting (its mark there quoted), or deviating from it "
            "where the value does not fit this model or budget.")
    return method_settings, (lambda cs: cs.what), (
        "Each system's method flags after the recipe's (`--arch syntax_transformer` for all), with their marks: stated "
        "by the method's paper for this data, ours, or deviating from it.")


def cross_markdown(table, outcomes: Dict[tuple, dict], header: List[str], footer: List[str], png: Path,
                   below: List[str] = ()) -> str:
    """The results file of a cross-kind table (module docs); ``below``: lines right under the tables (the parsers'
    scores)."""
    level, where = table.significance
    metrics = METRICS if table.chrf else METRICS[:1]
    settings_of, describe, lead = _recipe(table)
    lines = [f"# {table.title}", "", f"Paper: {table.paper}.", ""] + header + [""]
    figure_rows = []
    for row in table.rows:
        ds = row.dataset
        marks = {name: family_markers(row, _metric_outcomes(outcomes, key, p_key), level)
                 for name, key, p_key in metrics}
        with_published = any(_published(s, ds.key) != "—" for s in row.systems)
        means: Dict[str, Dict[str, Optional[float]]] = {name: {} for name, _, _ in metrics}
        for group, title in (("", f"## {ds.title}"), ("combination", f"### {ds.title}: combinations no paper tried")):
            systems = [s for s in row.systems if s.group == group or (group == "" and s is row.systems[0])]
            if group and not systems:
                continue
            lines += [title, ""]
            columns = ["system"] + (["published BLEU (paper, table)"] if with_published else [])
            columns += ["ours (sacreBLEU, mean ± sd)", "Δ ours vs Transformer"]
            if group:
                columns.append("Δ ours vs its best component")
            columns += ["p (largest over seed pairs)", "Holm-adjusted p", f"significance (family-wise α = {level:g})"]
            if table.chrf:
                columns += ["chrF++ (mean ± sd)", "Δ chrF++ vs Transformer", "chrF++ p", "chrF++ Holm-adjusted p",
                            "chrF++ significance"]
            columns += ["epochs (per seed)", "training s (mean ± sd)", "s/update", "peak memory"]
            lines += ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
            for s in systems:
                got = outcomes.get((ds.key, s.name), {})
                cells = [s.name] + ([_published(s, ds.key)] if with_published else [])
                for k, (metric, key, _) in enumerate(metrics):
                    scores = got.get(key) or []
                    mean = _mean(scores)
                    base = _mean(outcomes.get((ds.key, row.systems[0].name), {}).get(key) or [])
                    means[metric][s.name] = mean
                    if scores:
                        ours = mean_sd(scores)
                    elif k == 0:
                        ours = f"not run: {got.get('skipped', 'not requested')}"
                    else:
                        ours = "—" if got.get("results") else ""
                    delta = "" if s is row.systems[0] or mean is None or base is None else f"{mean - base:+.2f}"
                    cells += [ours, delta]
                    if group and k == 0:
                        comp = [means[metric].get(c) for c in BY_NAME[s.name].components]
                        comp = [c for c in comp if c is not None]
                        cells.append(f"{mean - max(comp):+.2f}" if comp and mean is not None else "—")
                    if s.name in marks[metric]:
                        p, adjusted, mark = marks[metric][s.name]
                        cells += [_p(p), _p(adjusted), mark]
                    else:
                        cells += ["", "", "" if s is row.systems[0] else "—"]
                cells += list(_cost(got))
                lines.append("| " + " | ".join(cells) + " |")
            lines.append("")
        figure_rows.append((ds, [(s.name, outcomes.get((ds.key, s.name), {}).get("scores") or []) for s in row.systems],
                            _length_curves(row, outcomes)))
    lines += list(below)
    lines += ["- Significance: each system against the Transformer, seed k against seed k, sacreBLEU's paired "
              "bootstrap; a system's p is the largest over its seed pairs (every pair must differ); Holm's step-down "
              "correction over the family (the papers' systems run, and the combinations apart) per dataset"
              + (" and metric" if table.chrf else "") + f"; {where}. † = adjusted p < {level:g} and higher "
              + ("BLEU (chrF++)" if table.chrf else "BLEU") + " in every pair, ‡ = lower in every pair, mixed = the "
              "direction changes, n.s. = adjusted p ≥ the level."]
    if table.chrf:
        lines += ["- chrF++: sacreBLEU's CHRF with word_order=2 (character 6-grams and word bigrams, β = 2; Popović "
                  "2017) of the same detokenized output against the same raw references; its paired bootstrap and Holm "
                  "correction are BLEU's, on chrF++."]
    lines += [f"- Test: {t}" for t in sorted({o["test"] for o in outcomes.values() if o.get("test")})]
    lines += ["- epochs: the epochs each seed's training ran (fairseq's end-of-epoch lines; early stopping can end a "
              "run before the config's cap); training s: the whole fairseq-train process (validation and checkpoints "
              "included); s/update: fairseq's train_wall over the updates; peak memory: GPU, the largest "
              "torch.cuda.max_memory_allocated of the training's processes over the whole training; RSS, the peak "
              "resident memory of the fairseq-train process (os.wait4). Times compare only on one device and batch.",
              ""]
    lines += ["## Settings", "", lead, ""]
    for row in table.rows:
        for s in row.systems[1:]:
            cs = BY_NAME[s.name]
            settings = settings_of(cs, row.dataset.key)
            data = ", ".join(f"{k} {v}" for k, v in cs.data)
            flags = "; ".join(f"`{x.flag}{'' if x.value == '' else ' ' + x.value}` ({x.mark})" for x in settings)
            lines.append(f"- {row.dataset.title}, {s.name}: {describe(cs)}. " + (flags or "no method flags")
                         + (f"; data: {data}" if data else "") + ".")
    lines += ["", f"![{table.title}]({png.name})", "",
              f"- `{png.name}`: per dataset, ours (mean ± sd over the seeds) per system with the published numbers "
              "(open squares) where a paper reports the dataset; below, ΔBLEU against the Transformer by the source "
              f"sentence's length in words ({', '.join(bucket_label(i) for i in range(len(LENGTH_BUCKETS)))}; ours), "
              "seed k against seed k, mean over the seeds.", ""]
    _draw(table, figure_rows, png)
    lines += [f"- {n}" for n in table.notes] + footer
    return "\n".join(lines) + "\n"


def _length_curves(row, outcomes) -> List[Tuple[str, List[int], List[float]]]:
    """[(system, buckets, mean ΔBLEU vs the Transformer per bucket)] of every run system."""
    ref = outcomes.get((row.dataset.key, row.systems[0].name), {})
    by_seed = dict(zip(ref.get("seeds", []), ref.get("results", [])))
    curves = []
    for s in row.systems[1:]:
        got = outcomes.get((row.dataset.key, s.name), {})
        if not got.get("results") or not by_seed:
            continue
        deltas: Dict[int, List[float]] = {}
        for seed, result in zip(got["seeds"], got["results"]):
            if seed not in by_seed:
                continue
            more = [_lines(x) for x in result.get("more_refs", [])]
            if more:  # multi-reference data: the buckets' BLEU would need every reference; not drawn
                continue
            per = length_deltas(_sources(result, got["prepared"]), _lines(result["refs"]), _lines(by_seed[seed]["hyps"]),
                                _lines(result["hyps"]), got["prepared"].tgt, result.get("lowercase", False),
                                result.get("tokenize"))
            for b, (_, d) in per.items():
                deltas.setdefault(b, []).append(d)
        order = sorted(deltas)
        curves.append((s.name, order, [statistics.fmean(deltas[b]) for b in order]))
    return curves


def _draw(table, rows, png: Path) -> None:
    fig = _figure(6.0 * max(1, len(rows)), 8.0)
    for n, (ds, scores, curves) in enumerate(rows):
        top = fig.add_subplot(2, len(rows), n + 1)
        bottom = fig.add_subplot(2, len(rows), len(rows) + n + 1)
        names = [name for name, _ in scores]
        xs = range(len(names))
        means = [statistics.fmean(v) if v else float("nan") for _, v in scores]
        sds = [statistics.stdev(v) if len(v) > 1 else 0.0 for _, v in scores]
        top.bar(xs, means, yerr=sds, capsize=3, color=["grey" if BY_NAME[x].group else "C0" for x in names],
                label="ours (mean ± sd)")
        published = [(i, v) for i, name in enumerate(names) for v, _ in BY_NAME[name].published.get(ds.key, ())]
        if published:
            top.plot([i for i, _ in published], [v for _, v in published], "s", fillstyle="none", color="C3",
                     label="published (other recipes)")
        top.set_xticks(list(xs))
        top.set_xticklabels(names, rotation=60, ha="right", fontsize=7)
        finite = [m for m in means if m == m] + [v for _, v in published]
        if finite:
            top.set_ylim(max(0.0, min(finite) - 3), max(finite) + 2)
        top.set_ylabel("test BLEU")
        top.set_title(ds.title, fontsize=9)
        top.legend(fontsize=7)
        for k, (name, buckets, delta) in enumerate(curves):
            bottom.plot(buckets, delta, marker="o", color=f"C{k % 10}", linestyle="--" if BY_NAME[name].group else "-",
                        label=name)
        bottom.axhline(0.0, color="grey", linewidth=0.8)
        bottom.set_xticks(range(len(LENGTH_BUCKETS)))
        bottom.set_xticklabels([bucket_label(i) for i in range(len(LENGTH_BUCKETS))])
        bottom.set_xlabel("source length (words)")
        bottom.set_ylabel("ΔBLEU vs the Transformer")
        if curves:
            bottom.legend(fontsize=6, ncol=2)
    png.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png, dpi=120, bbox_inches="tight")
