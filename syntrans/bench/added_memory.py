"""What a method adds to a large model (``python -m syntrans.bench.added_memory DATA_BIN``): parameters and the
training memory they take, and an estimate of the activations it adds, at a released model's shape.

Every registered ``syntax_transformer`` preset is built by the ``syntax_translation`` task on ``DATA_BIN`` (a
``syntrans-preprocess`` data-bin with a joined dictionary: its training split gives the value ranges some
mechanisms size their tables by) at the shape of ``--shape`` (an NLLB-200 name, :data:`~syntrans.models.nllb_archs.
NLLB_SHAPES`: layers, dimension, FFN and heads; pre-norm, shared embeddings), and so is fairseq's stock
``transformer``; a preset's heads per layer that do not fit the shape's heads get all of them. Per preset:

- the parameters it adds (its parameter count less the stock Transformer's), and that count as a share of the
  released model, whose embedding has ``--vocab`` rows instead of the data-bin's dictionary (the embedding is the
  same in every model, so the parameters a method adds do not depend on it);
- the training memory of those parameters with Adam in float32 (weight, gradient, two moments: 16 bytes each);
- the layers that carry its syntax heads, per side;
- with ``--by-length JSON …`` (``syntrans-benchmark --lengths … --json JSON`` at the same dimension, heads and FFN;
  several runs' rows together):
  the activation memory one such layer adds in one training step (its peak less the stock layer's, ``auto``
  kernels) at each measured length, times the layers that carry syntax heads: an estimate, which assumes every
  syntax layer of a side costs what its first does and leaves out what a method computes outside its layers.

Nothing is asserted: the figures are printed as Markdown (and written as JSON with ``--json``).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Dict, List, Optional

ADAM_FLOAT32_BYTES = 16  # weight, gradient and Adam's two moments, float32
#: the keys of a ``syntrans-benchmark --lengths`` JSON that must agree between runs read together, with their flags
SIZE_FLAGS = {"tokens": "--layer-tokens", "dim": "--dim", "heads": "--heads", "ffn": "--ffn"}
VANILLA = "transformer"


def shape_flags(shape: str) -> List[str]:
    """The flags of an NLLB-200 shape, both sides (pre-norm, shared embeddings)."""
    from ..models.nllb_archs import NLLB_SHAPES

    layers, dim, ffn, heads = NLLB_SHAPES[shape]
    flags = []
    for side in ("encoder", "decoder"):
        flags += [f"--{side}-layers", str(layers), f"--{side}-embed-dim", str(dim), f"--{side}-ffn-embed-dim", str(ffn),
                  f"--{side}-attention-heads", str(heads), f"--{side}-normalize-before"]
    return flags + ["--share-all-embeddings"]


def _namespace(data_bin: str, src: str, tgt: str, arch: str, flags: List[str]):
    from fairseq import options

    argv = [data_bin, "--task", "syntax_translation", "-s", src, "-t", tgt, "--arch", arch, *flags]
    return options.parse_args_and_arch(options.get_training_parser(), argv)


def count(data_bin: str, src: str, tgt: str, flags: List[str], heads: int, archs: List[str]) -> List[dict]:
    """One row per model (the stock Transformer first) built with ``flags`` (e.g. :func:`shape_flags`), a preset's
    syntax heads capped at ``heads``: its parameters and the layers carrying syntax heads."""
    import torch
    from fairseq import tasks
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf

    from .. import plugin  # noqa: F401  (registers the task and the presets)
    from .models import capped_heads

    task = None
    rows = []
    for arch in [VANILLA, *archs]:
        notes, extra = capped_heads(_namespace(data_bin, src, tgt, arch, flags), heads)
        cfg = convert_namespace_to_omegaconf(_namespace(data_bin, src, tgt, arch, flags + extra))
        task = task or tasks.setup_task(cfg.task)
        torch.manual_seed(1)
        model = task.build_model(cfg.model)
        plan = getattr(model, "plan", None)
        layers = {side: sum(1 for i in range(len(getattr(model, side).layers)) if plan.heads[side, i])
                  for side in ("encoder", "decoder")} if plan is not None else {"encoder": 0, "decoder": 0}
        rows.append({"arch": arch, "params": sum(p.numel() for p in model.parameters()),
                     "embedding": model.encoder.embed_tokens.weight.numel(), "syntax_layers": layers, "notes": notes,
                     "names": {k: v.numel() for k, v in model.named_parameters()}})
        del model
    return rows


def layer_activations(by_length: dict) -> Dict[str, Dict[str, Dict[int, float]]]:
    """preset → side → length → MiB one whole layer adds in a training step (``auto`` kernels), from the JSON of
    ``syntrans-benchmark --lengths``."""
    out: Dict[str, Dict[str, Dict[int, float]]] = {}
    for device in by_length.get("devices", []):
        if device.get("device") != "cpu":
            continue
        for row in device.get("rows", []):
            cell = row.get("layer_auto")
            if not cell:
                continue
            for preset in row["presets"]:
                out.setdefault(preset, {}).setdefault(row["side"], {})[int(row["T"])] = \
                    cell["peak_mb"] - cell["stock_peak_mb"]
    return out


def merged(runs: List[dict]) -> dict:
    """The rows of several ``syntrans-benchmark --lengths`` results as one (each device's rows together); the runs
    must have the same batch size in tokens and the same layer sizes (ValueError naming the flag)."""
    out = {"devices": []}
    for key, flag in SIZE_FLAGS.items():
        values = {run.get(key) for run in runs}
        if len(values) > 1:
            raise ValueError(f"--by-length: the runs have different {flag} ({sorted(values, key=str)}): their "
                             "figures cannot be read together")
        out[key] = values.pop()
    for run in runs:
        for device in run.get("devices", []):
            into = next((d for d in out["devices"] if d["device"] == device["device"]), None)
            if into is None:
                out["devices"].append({"device": device["device"], "rows": list(device.get("rows", []))})
            else:
                into["rows"] += device.get("rows", [])
    return out


def report(rows: List[dict], shape: str, vocab: int, dim: int, by_length: Optional[dict], tokens: int) -> dict:
    """The figures of every preset against the stock Transformer (first row)."""
    base = rows[0]
    full = base["params"] - base["embedding"] + vocab * dim  # the released model's parameters
    acts = layer_activations(by_length) if by_length else {}
    out = {"shape": shape, "vocab": vocab, "model_params": full, "layer_tokens": tokens, "presets": []}
    for row in rows[1:]:
        added = row["params"] - base["params"]
        item = {"arch": row["arch"], "added_params": added, "share": added / full,
                "adam_mib": added * ADAM_FLOAT32_BYTES / 2 ** 20, "syntax_layers": row["syntax_layers"],
                "notes": row["notes"], "activation_mib": {}}
        for side, per_length in acts.get(row["arch"], {}).items():
            for T, mib in per_length.items():
                n = row["syntax_layers"][side]
                item["activation_mib"][T] = item["activation_mib"].get(T, 0.0) + n * mib
        out["presets"].append(item)
    return out


def render(result: dict) -> str:
    lengths = sorted({T for p in result["presets"] for T in p["activation_mib"]})
    head = ["preset", "parameters added", "share of the model", "Adam float32 memory (MiB)",
            "layers with syntax heads (enc + dec)"]
    head += [f"activations added, T={T} (MiB, estimate)" for T in lengths]
    lines = [f"Shape {result['shape']} with a {result['vocab']:,}-entry embedding: {result['model_params']:,} "
             f"parameters. Activations: per training step of {result['layer_tokens']:,} tokens.", "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for p in result["presets"]:
        cells = [p["arch"], f"{p['added_params']:,}", f"{100 * p['share']:.3f}%", f"{p['adam_mib']:.1f}",
                 f"{p['syntax_layers']['encoder']} + {p['syntax_layers']['decoder']}"]
        cells += [f"{p['activation_mib'][T]:.1f}" if T in p["activation_mib"] else "" for T in lengths]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: Optional[List[str]] = None) -> None:
    from ..models.nllb_archs import NLLB_SHAPES
    from .models import syntax_presets

    parser = argparse.ArgumentParser(prog="python -m syntrans.bench.added_memory", description=__doc__.split("\n")[0])
    parser.add_argument("data_bin", help="a syntrans-preprocess data-bin with a joined dictionary")
    parser.add_argument("-s", "--source-lang", default="en")
    parser.add_argument("-t", "--target-lang", default="de")
    parser.add_argument("--shape", default="transformer_12_12", choices=sorted(NLLB_SHAPES))
    parser.add_argument("--vocab", type=int, default=256_000, help="the released model's embedding rows "
                        "(default 256,000: NLLB-200's SentencePiece dictionary, special symbols aside)")
    parser.add_argument("--archs", help="comma-separated presets (default: every registered one)")
    parser.add_argument("--by-length", nargs="+", metavar="JSON", help="the JSON of syntrans-benchmark --lengths at "
                        "the same dim/heads/FFN (several: runs over different --archs, their rows together)")
    parser.add_argument("--json", help="also write the figures as JSON here")
    args = parser.parse_args(argv)
    if not (Path(args.data_bin) / f"dict.{args.source_lang}.txt").exists():
        parser.error(f"{args.data_bin}: no dict.{args.source_lang}.txt (expected a syntrans-preprocess data-bin)")
    if args.vocab < 1:
        parser.error(f"--vocab: expected the released model's embedding rows (at least 1), found {args.vocab}")
    archs = args.archs.split(",") if args.archs else syntax_presets()
    _, dim, ffn, heads = NLLB_SHAPES[args.shape]
    by_length = None
    if args.by_length:
        try:
            by_length = merged([json.loads(Path(f).read_text()) for f in args.by_length])
        except ValueError as e:  # json's errors are ValueErrors too
            parser.error(str(e))
        found = {"--dim": (by_length.get("dim"), dim), "--heads": (by_length.get("heads"), heads),
                 "--ffn": (by_length.get("ffn"), ffn)}
        for flag, (got, want) in found.items():
            if got != want:
                parser.error(f"--by-length: the benchmark ran at {flag} {got}, the shape {args.shape} has {want}: "
                             f"run syntrans-benchmark --lengths … --dim {dim} --heads {heads} --ffn {ffn}")
    tokens = int(by_length.get("tokens", 0)) if by_length else 0
    rows = count(args.data_bin, args.source_lang, args.target_lang, shape_flags(args.shape), heads, archs)
    result = report(rows, args.shape, args.vocab, dim, by_length, tokens)
    print(render(result))
    if args.json:
        from ..atomic_write import write_text

        write_text(args.json, json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    sys.exit(main())
