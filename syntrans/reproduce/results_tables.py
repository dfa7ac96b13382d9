"""results/<table>.md: our mean ± sd over seeds next to the published test BLEU, per dataset and system, with the
paired bootstrap significance marker against the row's reference system and, where the paper reports it, RIBES.

Several seeds, one test: the papers test two systems (Bugliarello & Okazaki 2020, Table 1: p < 0.01, bootstrap
re-sampling, Koehn 2004); with n seeds we pair seed k of a system with seed k of the row's reference system (the
runner passes one p-value per pair, ``p_values[k]`` for ``scores[k]`` against the reference's ``scores[k]``). The
marker claims a result only when every pair agrees: "†" when every pair's p < the table's level and the system's BLEU
is above the reference's in every pair, "‡" when every p < the level and it is below in every pair, "mixed" when
every p < the level but the direction differs between pairs, else "n.s." (with how many pairs had p < the level).
The largest p of the pairs is printed with the marker: it is the one that decides.
"""
from __future__ import annotations

import statistics
from typing import Dict, List, Optional, Sequence, Tuple


def mean_sd(values: Sequence[float]) -> str:
    """``m ± sd (n=k)`` with the sample standard deviation; a single run has no sd."""
    if not values:
        return "—"
    m = statistics.fmean(values)
    if len(values) == 1:
        return f"{m:.2f} (n=1)"
    return f"{m:.2f} ± {statistics.stdev(values):.2f} (n={len(values)})"


def _delta(value: Optional[float], base: Optional[float]) -> str:
    if value is None or base is None:
        return "—"
    return f"{round(value - base, 2) + 0.0:+.2f}"  # + 0.0: no "-0.00"


def _p(p: float) -> str:
    return f"{p:.2g}"


def seed_pairs(got: dict, ref: dict) -> List[Tuple[float, float]]:
    """[(the system's score, the reference's score)] per seed pair k, in the order of the system's p-values: its
    seeds that the reference also ran (the runner's paired bootstrap tests seed k against seed k and skips the
    seeds the reference lacks). Outcomes without seeds pair the scores by position."""
    scores, base = got.get("scores") or [], ref.get("scores") or []
    if got.get("seeds") and ref.get("seeds"):
        by_seed = dict(zip(ref["seeds"], base))
        return [(s, by_seed[k]) for k, s in zip(got["seeds"], scores) if k in by_seed]
    return list(zip(scores, base))


def significance_marker(p_values: Sequence[float], scores: Sequence[float], reference_scores: Sequence[float],
                        level: float) -> str:
    """The cell of one system: ``p_values[k]`` is the paired bootstrap p of ``scores[k]`` against
    ``reference_scores[k]`` (same seed k); the rule is the module docstring's."""
    if not p_values:
        return "—"
    if len(p_values) > min(len(scores), len(reference_scores)):
        raise ValueError(f"{len(p_values)} p-values for {len(scores)} system and {len(reference_scores)} reference "
                         "scores: expected one p-value per seed pair k (scores[k] against the reference's scores[k])")
    worst = max(p_values)
    significant = sum(p < level for p in p_values)
    if significant < len(p_values):
        return f"n.s. (p = {_p(worst)}" + (f"; {significant}/{len(p_values)} seeds p < {level:g})" if significant else ")")
    higher = [scores[k] > reference_scores[k] for k in range(len(p_values))]
    lower = [scores[k] < reference_scores[k] for k in range(len(p_values))]
    mark = "†" if all(higher) else "‡" if all(lower) else "mixed"
    return f"{mark} (p ≤ {_p(worst)})"


def _distinct(outcomes: Dict[tuple, dict], key: str) -> List[str]:
    return sorted({o[key] for o in outcomes.values() if o.get(key)})


def results_markdown(table, outcomes: Dict[tuple, dict], header: List[str], footer: List[str]) -> str:
    """The table as Markdown. ``outcomes[(dataset_key, system_name)]`` = {"scores": [BLEU per seed], and optionally
    "p_values": [paired bootstrap p per seed against the row's reference system, same seed], "test": the test's
    description (:func:`~syntrans.reproduce.significance.paired_bootstrap`), "ribes": [RIBES per seed],
    "ribes_signature": str} for a run system, or {"skipped": reason}. Columns: published BLEU, ours (mean ± sd), both
    deltas against the row's reference (its first system), the significance marker (module docstring), and, where
    ``table.ribes``, the published RIBES (``System.more("RIBES")``) and ours."""
    level, where = table.significance
    with_ribes = table.ribes
    lines = [f"# {table.title}", "", f"Paper: {table.paper}.", ""] + header + [""]
    columns = ["dataset", "system", "published BLEU", "ours (sacreBLEU, mean ± sd)", "Δ published", "Δ ours",
               f"significance (p < {level:g})"]
    if with_ribes:
        columns += ["published RIBES", "ours (RIBES, mean ± sd)"]
    lines += ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for row in table.rows:
        base = row.systems[0]
        base_scores = outcomes.get((row.dataset.key, base.name), {}).get("scores") or []
        base_ours = sum(base_scores) / len(base_scores) if base_scores else None
        for system in row.systems:
            got = outcomes.get((row.dataset.key, system.name), {})
            scores = got.get("scores") or []
            ours_mean = sum(scores) / len(scores) if scores else None
            ours = mean_sd(scores) if scores else f"not run: {got.get('skipped', 'not requested')}"
            pub = "—" if system.published is None else f"{system.published:.2f}"
            d_pub = "" if system is base else _delta(system.published, base.published)
            d_ours = "" if system is base else _delta(ours_mean, base_ours)
            cells = [row.dataset.title, system.name, pub, ours, d_pub, d_ours]
            if system is base:
                cells.append("")
            else:
                pairs = seed_pairs(got, outcomes.get((row.dataset.key, base.name), {}))  # seed k against seed k
                try:
                    cells.append(significance_marker(got.get("p_values") or [], [a for a, _ in pairs],
                                                     [b for _, b in pairs], level))
                except ValueError as e:
                    raise ValueError(f"{table.key}, {row.dataset.key}, {system.name}: {e}") from None
            if with_ribes:
                pub_ribes = system.more("RIBES")
                cells += ["—" if pub_ribes is None else f"{pub_ribes:.2f}", mean_sd(got.get("ribes") or [])]
            lines.append("| " + " | ".join(cells) + " |")
    lines += [""] + _legend(table, outcomes, level, where)
    lines += [f"- {n}" for n in table.notes] + footer
    return "\n".join(lines) + "\n"


def _legend(table, outcomes: Dict[tuple, dict], level: float, where: str) -> List[str]:
    """What the significance column and the RIBES columns mean, under the table."""
    out: List[str] = []
    if any(o.get("p_values") for o in outcomes.values()):
        out.append(f"- Significance against each row's first system, level p < {level:g} ({where}): † = every seed "
                   f"pair k (the system's seed k against the first system's seed k) has p < {level:g} and higher "
                   f"BLEU; ‡ = every pair p < {level:g} and lower BLEU; mixed = every pair p < {level:g}, the "
                   "direction differs; n.s. = not every pair (how many did, if any). The p printed is the "
                   "largest of the pairs.")
        out += [f"- Test: {t}" for t in _distinct(outcomes, "test")]
    if table.ribes:
        out += [f"- RIBES: {s}" for s in _distinct(outcomes, "ribes_signature")]
    return out
