"""The benchmark's report: the targets, and the Markdown and JSON renderings of the results.

Every number is given as a ratio to its reference row and to the stock ``transformer``. Targets (from
the issues, per method) are printed next to the ratios with ✓/✗; a miss never
changes the exit status: speed is reported, never asserted.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Dict, Optional, Tuple

from .models import VANILLA

#: Targets of the issues for each method's presets, keyed by arch-name prefix:
#: (minimum train ratio, minimum generation ratio, maximum memory ratio); the first prefix a name starts
#: with applies. Sidecars: ≤ SIDECAR_TARGET.
TARGETS: Dict[str, Tuple[float, float, float]] = {"distance_": (0.97, 0.97, 1.05), "pascal_": (0.97, 0.97, 1.05),
                                                  "lisa_": (0.95, 0.95, 1.05), "gated_": (0.93, 0.93, 1.10),
                                                  "dbsa_": (0.95, 0.95, 1.10), "syncattn_": (0.90, 0.95, 1.10),
                                                  # "nsd_transformer" covers nsd_transformer and nsd_transformer_base
                                                  "nsd_src_": (0.97, 0.93, 1.10), "nsd_tgt_": (0.93, 0.93, 1.10),
                                                  "nsd_transformer": (0.93, 0.93, 1.10)}
SIDECAR_TARGET = 1.0


def targets_for(name: str) -> Optional[Dict[str, float]]:
    for prefix, (tr, ge, mem) in TARGETS.items():
        if name.startswith(prefix):
            return {"train_min": tr, "gen_min": ge, "mem_max": mem}
    return None


def _mark(ok: bool) -> str:
    return "✓" if ok else "✗"


def _ratio(value: float, target: Optional[float], lower_bound: bool) -> str:
    s = f"{value:.3f}"
    if target is None:
        return s
    ok = value >= target if lower_bound else value <= target
    return f"{s} {_mark(ok)} ({'≥' if lower_bound else '≤'} {target:g})"


def render(result: dict) -> str:
    s = result["settings"]
    out = ["# syntrans-benchmark: syntax presets vs the vanilla Transformer", ""]
    out.append(f"- corpus: {result['corpus']['description']}")
    out.append(f"- torch {result['torch']}, fairseq {result['fairseq']}, Python {result['python']}")
    out.append(f"- every model: {s['layers']}+{s['layers']} layers, dim {s['dim']}, {s['heads']} heads, FFN {s['ffn']}; "
               f"its own dropout rates; seed {s['seed']}; Adam lr {s['lr']:g}, label smoothing 0.1")
    out.append(f"- training: {s['batches']} timed batches (≤ {s['max_tokens']} tokens each) after {s['warmup']} warm-up "
               f"batch(es), per repetition; generation: {s['gen_batches']} test batch(es) of ≤ {s['gen_batch_size']} "
               f"sentences, beam {s['beam']}, max length {s['max_len_a']:g}·src+{s['max_len_b']}, untrained weights; "
               f"{s['reps']} repetitions with the models interleaved (order rotated each repetition), median kept")
    if not s.get("no_matched_vanilla"):
        out.append(f"- ×vanilla: against the row named in the last column: the stock `{VANILLA}` run at the same "
                   f"dropout rates as the model (a stock `{VANILLA}` has attention dropout 0, the presets do not, and "
                   f"attention dropout alone costs memory and time), so that only the syntax mechanism differs; "
                   f"the ratios against the stock `{VANILLA}` are listed below the table")
    for dev in result["devices"]:
        out.append("")
        where = dev.get("gpu") or f"{dev.get('threads')} torch thread(s)"
        out.append(f"## {dev['device']} ({where}; {dev['train_tokens_per_rep']:,} target tokens / "
                   f"{dev['train_sentences_per_rep']} sentences trained and {dev['gen_sentences_per_rep']} sentences "
                   f"decoded per repetition)")
        out.append("")
        out.append("| model | train tok/s | ×vanilla | gen tok/s | ×vanilla | peak mem MB | ×vanilla | vanilla |")
        out.append("|---|---:|---:|---:|---:|---:|---:|---|")
        for r in dev["rows"]:
            t = r["targets"] or {}
            ref = "(itself)" if r["reference"] == r["model"] else r["reference"]
            out.append(f"| {r['model']} | {r['train_tok_s']:,.0f} | {_ratio(r['train_ratio'], t.get('train_min'), True)} "
                       f"| {r['gen_tok_s']:,.0f} | {_ratio(r['gen_ratio'], t.get('gen_min'), True)} "
                       f"| {r['peak_mem_mb']:,.1f} | {_ratio(r['mem_ratio'], t.get('mem_max'), False)} | {ref} |")
        out.append("")
        stock = dev["rows"][0]["model"]
        for r in dev["rows"]:
            reps = ", ".join(f"{x:,.0f}" for x in r["train_tok_s_reps"])
            greps = ", ".join(f"{x:,.0f}" for x in r["gen_tok_s_reps"])
            resid = r.get("mem_residual_bytes")
            check = "" if not resid else f" (memory accounting residual {resid:,} bytes: not exact)"
            vs = r["ratios_vs_stock"]
            vs_stock = "" if r["model"] == stock else (
                f"; vs stock {stock}: train {vs['train']:.3f}, gen {vs['gen']:.3f}, mem {vs['mem']:.3f}")
            out.append(f"- {r['model']}: features {', '.join(r['features']) or 'none'}; {r['params']:,} parameters; "
                       f"{'; '.join(r['notes'])}{vs_stock}; train tok/s per rep [{reps}]; gen tok/s per rep [{greps}], "
                       f"mean hypothesis {r['gen_mean_len']:.1f} tokens; held before the step "
                       f"{r['held_mem_mb']:.1f} MB{check}")
        out.append(f"- peak memory: {dev['memory_method']}")
    sc = result.get("sidecars")
    out.append("")
    if sc:
        ok = sc["ratio"] <= SIDECAR_TARGET
        out.append(f"**Sidecars** ({'+'.join(sc['splits'])} × {'/'.join(sc['sides'])}, {sc['lines_per_side']:,} lines "
                   f"per side; one process each; median of {sc['reps']}): fairseq binarization {sc['fairseq_s']:.2f}s "
                   f"(fairseq_cli.preprocess.main, --workers 1), syntax sidecars {sc['sidecars_s']:.2f}s (build_side, "
                   f"both sides) → sidecars/fairseq {sc['ratio']:.3f} {_mark(ok)} (≤ {SIDECAR_TARGET:g})")
    else:
        out.append("**Sidecars**: not timed (--no-sidecars)")
    out.append("")
    out.append("Targets (the issues, per method) are reported, never enforced; CPU timings are sensitive to "
               "other load on the machine.")
    return "\n".join(out) + "\n"


def _finite_json(obj):
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: _finite_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite_json(v) for v in obj]
    if isinstance(obj, Path):
        return str(obj)
    return obj
