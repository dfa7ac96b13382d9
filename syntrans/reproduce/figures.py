"""The papers' figures, drawn with our runs beside the published points (matplotlib, Agg canvas, no pyplot).

* ``curve``: BLEU against a system's x value (a layer, τ), ours as mean ± sd over seeds, the published points where the
  paper gives numbers, the row's reference system (no x) as a horizontal line;
* ``length``: ΔBLEU against the row's reference by source-sentence length, with the share of sentences per bucket
  (Bugliarello & Okazaki 2020, Figure 2);
* ``gates``: the gate heat maps of gated models (Hou et al., gated, Figure 3), from the last validation of each
  run's training log (:func:`syntrans.plots.gates.gate_history_from_log`).
"""
from __future__ import annotations

import math
import statistics
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from .results_tables import mean_sd
from .scoring import bleu

#: source-length buckets (words of the raw source sentence), ours: the figure's buckets are not given in the text
LENGTH_BUCKETS: Tuple[Tuple[int, Optional[int]], ...] = ((1, 10), (11, 20), (21, 30), (31, 40), (41, 50), (51, None))


def _figure(width: float, height: float):
    from matplotlib.backends.backend_agg import FigureCanvasAgg  # lazy: matplotlib is the plot extra
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height))
    FigureCanvasAgg(fig)
    return fig


def _mean(values: Sequence[float]) -> Optional[float]:
    return statistics.fmean(values) if values else None


def curve_points(table, outcomes: Dict[tuple, dict]):
    """Per row: (title, [(x, ours mean or None, ours sd or None, published or None)] sorted by x, the reference
    system's (ours mean, published) when it has no x)."""
    rows = []
    for row in table.rows:
        points, reference = [], None
        for s in row.systems:
            scores = outcomes.get((row.dataset.key, s.name), {}).get("scores") or []
            mean = _mean(scores)
            sd = statistics.stdev(scores) if len(scores) > 1 else None
            if s.x is None:
                reference = (s.name, mean, s.published)
            else:
                points.append((s.x, mean, sd, s.published))
        rows.append((row.dataset.title, sorted(points, key=lambda p: p[0]), reference))
    return rows


def curve_figure(table, outcomes: Dict[tuple, dict], png: Path) -> str:
    """Draw the curve figure into ``png``; the markdown lines that show it and say what is drawn."""
    fig = _figure(6.0, 4.0)
    ax = fig.add_subplot(1, 1, 1)
    for n, (title, points, reference) in enumerate(curve_points(table, outcomes)):
        color = f"C{n}"
        ours = [(x, m, sd) for x, m, sd, _ in points if m is not None]
        if ours:
            ax.errorbar([p[0] for p in ours], [p[1] for p in ours], yerr=[p[2] or 0.0 for p in ours], color=color,
                        marker="o", capsize=3, label=f"{title}: ours")
        published = [(x, p) for x, _, _, p in points if p is not None]
        if published:
            ax.plot([p[0] for p in published], [p[1] for p in published], color=color, marker="s", linestyle="--",
                    fillstyle="none", label=f"{title}: published")
        if reference is not None:
            name, mean, pub = reference
            if mean is not None:
                ax.axhline(mean, color=color, linestyle=":", label=f"{title}: {name} (ours)")
            if pub is not None:
                ax.axhline(pub, color=color, linestyle="-.", alpha=0.6, label=f"{title}: {name} (published)")
    ax.set_xlabel(table.x_label or "x")
    ax.set_ylabel(f"BLEU ({table.split})")
    ax.set_title(table.paper, fontsize=9)
    if ax.get_legend_handles_labels()[0]:  # nothing scored and nothing published: no legend (matplotlib would warn)
        ax.legend(fontsize=7)
    png.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png, dpi=150, bbox_inches="tight")
    return (f"\n![{table.title}]({png.name})\n\n- `{png.name}`: ours (circles, mean ± sd over seeds) and the published "
            "points (open squares, where the paper gives numbers) against the x axis; dotted: the reference system.\n")


def bucket_of(length: int) -> int:
    for i, (lo, hi) in enumerate(LENGTH_BUCKETS):
        if length >= lo and (hi is None or length <= hi):
            return i
    raise ValueError(f"no length bucket for a sentence of {length} words (empty source sentence?)")


def bucket_label(i: int) -> str:
    lo, hi = LENGTH_BUCKETS[i]
    return f"{lo}–{hi}" if hi is not None else f"≥{lo}"


def length_deltas(sources: List[str], refs: List[str], base_hyps: List[str], hyps: List[str], lang: str, lowercase: bool,
                  tokenize: Optional[str]) -> Dict[int, Tuple[int, float]]:
    """{bucket: (sentences, BLEU of ``hyps`` − BLEU of ``base_hyps`` on that bucket's sentences)} by the length of
    the raw source sentence in whitespace words; corpus BLEU per bucket."""
    if not (len(sources) == len(refs) == len(base_hyps) == len(hyps)):
        raise ValueError(f"sources {len(sources)}, references {len(refs)}, hypotheses {len(base_hyps)} and {len(hyps)}: "
                         "expected one of each per sentence")
    members: Dict[int, List[int]] = {}
    for i, src in enumerate(sources):
        members.setdefault(bucket_of(len(src.split())), []).append(i)
    out = {}
    for b, idx in sorted(members.items()):
        r = [refs[i] for i in idx]
        ours = bleu([hyps[i] for i in idx], r, lang, lowercase, tokenize)[0]
        base = bleu([base_hyps[i] for i in idx], r, lang, lowercase, tokenize)[0]
        out[b] = (len(idx), ours - base)
    return out


def _lines(path: str) -> List[str]:
    return Path(path).read_text(encoding="utf-8").splitlines()


def _sources(result: dict, prepared) -> List[str]:
    split = result.get("split", "test")
    path = prepared.src_test_raw if split == "test" else Path(prepared.out_dir) / "ref" / f"{split}.{prepared.src}"
    return _lines(str(path))


def length_markdown(table, outcomes: Dict[tuple, dict], header: List[str], footer: List[str], png: Path) -> str:
    lines = [f"# {table.title}", "", f"Paper: {table.paper}.", ""] + header + [""]
    lines += ["| dataset | system | source length (words) | sentences (share) | ΔBLEU vs the reference, ours (mean ± sd) |",
              "|---|---|---|---|---|"]
    curves = []
    for row in table.rows:
        ref = outcomes.get((row.dataset.key, row.systems[0].name), {})
        by_seed = dict(zip(ref.get("seeds", []), ref.get("results", [])))
        for s in row.systems[1:]:
            got = outcomes.get((row.dataset.key, s.name), {})
            if not got.get("results") or not by_seed:
                why = got.get("skipped") or ref.get("skipped") or "not requested"
                lines.append(f"| {row.dataset.title} | {s.name} | not run: {why} | | |")
                continue
            deltas: Dict[int, List[float]] = {}
            counts: Dict[int, int] = {}
            for seed, result in zip(got["seeds"], got["results"]):
                if seed not in by_seed:
                    continue
                base = by_seed[seed]
                per = length_deltas(_sources(result, got["prepared"]), _lines(result["refs"]), _lines(base["hyps"]),
                                    _lines(result["hyps"]), got["prepared"].tgt, result.get("lowercase", False),
                                    result.get("tokenize"))
                for b, (n, d) in per.items():
                    deltas.setdefault(b, []).append(d)
                    counts[b] = n
            total = sum(counts.values())
            for b in sorted(deltas):
                lines.append(f"| {row.dataset.title} | {s.name} | {bucket_label(b)} | {counts[b]} "
                             f"({100.0 * counts[b] / total:.1f}%) | {mean_sd(deltas[b])} |")
            order = sorted(deltas)
            curves.append((f"{row.dataset.title}: {s.name}", order, [statistics.fmean(deltas[b]) for b in order],
                           [100.0 * counts[b] / total for b in order]))
    fig = _figure(6.0, 5.0)
    top, bottom = fig.add_subplot(2, 1, 1), fig.add_subplot(2, 1, 2)
    for n, (label, buckets, delta, share) in enumerate(curves):
        top.plot(buckets, delta, marker="o", color=f"C{n}", label=label)
        bottom.plot(buckets, share, marker="o", color=f"C{n}", label=label)
    for ax in (top, bottom):
        ax.set_xticks(range(len(LENGTH_BUCKETS)))
        ax.set_xticklabels([bucket_label(i) for i in range(len(LENGTH_BUCKETS))])
    top.axhline(0.0, color="grey", linewidth=0.8)
    top.set_ylabel("ΔBLEU (ours)")
    bottom.set_ylabel("sentences (%)")
    bottom.set_xlabel("source length (words)")
    if curves:
        top.legend(fontsize=7)
    top.set_title(table.paper, fontsize=9)
    png.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png, dpi=150, bbox_inches="tight")
    lines += ["", f"![{table.title}]({png.name})", "",
              "- buckets by the raw source sentence's whitespace words: "
              f"{', '.join(bucket_label(i) for i in range(len(LENGTH_BUCKETS)))} "
              "(ours: the paper's buckets are not stated in its text); ΔBLEU = corpus BLEU of the system minus the "
              "reference's on the bucket's sentences, seed k against seed k."]
    lines += [f"- {n}" for n in table.notes] + footer
    return "\n".join(lines) + "\n"


def gates_markdown(table, outcomes: Dict[tuple, dict], header: List[str], footer: List[str], png: Path) -> str:
    """One heat map per system (``<key>.<system>.png``, and its TSV): the mean gate per encoder layer and head at the
    last validation of each seed's training, averaged over the seeds."""
    import numpy as np

    from ..plots.gates import gate_history_from_log, plot_gate_heatmap

    lines = [f"# {table.title}", "", f"Paper: {table.paper}.", ""] + header + [""]
    for row in table.rows:
        for s in row.systems:
            got = outcomes.get((row.dataset.key, s.name), {})
            lines.append(f"## {row.dataset.title}: {s.name}")
            if not got.get("results"):
                lines += ["", f"not run: {got.get('skipped', 'not requested')}", ""]
                continue
            matrices = [gate_history_from_log(Path(r["run_dir"]) / "train.log", subset="valid")[-1][2]
                        for r in got["results"]]
            shape = {m.shape for m in matrices}
            if len(shape) != 1:
                raise ValueError(f"{s.name}: the seeds' gate matrices differ in shape: {sorted(shape)}")
            m = np.mean(np.stack(matrices), axis=0)
            name = png.with_name(f"{png.stem}.{row.dataset.key}.{_file_slug(s.name)}.png")
            plot_gate_heatmap(m, name, title=f"{row.dataset.title}, {s.name}: mean gate G (last validation)")
            heads = " | ".join(f"head {h}" for h in range(m.shape[1]))
            lines += ["", f"![{s.name}]({name.name})", "", f"| layer | {heads} |", "|---|" + "---|" * m.shape[1]]
            for i, r in enumerate(m):
                lines.append(f"| {i} | " + " | ".join("" if not math.isfinite(v) else f"{v:.2f}" for v in r) + " |")
            lines.append("")
    lines += ["- each map: the gate G (1 = syntax attention) per encoder layer and head, the mean over the validation "
              "sentences logged at the last validation of each run (gate_l{L}h{H}), averaged over the seeds."]
    lines += [f"- {n}" for n in table.notes] + footer
    return "\n".join(lines) + "\n"


def _file_slug(name: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in name).strip("_").lower()
