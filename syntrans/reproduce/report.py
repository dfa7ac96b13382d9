"""results/<table>.md: our mean ± sd over seeds next to the published test BLEU, per dataset and system."""
from __future__ import annotations

import statistics
from typing import Dict, List, Optional, Sequence


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


def results_markdown(table, outcomes: Dict[tuple, dict], header: List[str], footer: List[str]) -> str:
    """The table as Markdown. ``outcomes[(dataset_key, system_name)]`` = {"scores": [...]} for a run system, or
    {"skipped": reason}. Columns: published BLEU, ours (mean ± sd), and both deltas against the row's baseline."""
    lines = [f"# {table.title}", "", f"Paper: {table.paper}.", ""] + header + [""]
    lines += ["| dataset | system | published BLEU | ours (sacreBLEU, mean ± sd) | Δ published | Δ ours |",
              "|---|---|---|---|---|---|"]
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
            lines.append(f"| {row.dataset.title} | {system.name} | {pub} | {ours} | {d_pub} | {d_ours} |")
    lines += [""] + [f"- {n}" for n in table.notes] + footer
    return "\n".join(lines) + "\n"
