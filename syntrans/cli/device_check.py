"""``python -m syntrans.cli.device_check``: every mechanism's layer on CUDA against CPU, forward and backward, in float32
and float16, with stated tolerances (the first stage of ``scripts/gpu_check.sh``; see
:mod:`syntrans.bench.layer_comparison`). Without CUDA, ``--device cpu`` compares the kernels the attention picks on CPU
with every head's scores formed (the plumbing test). Writes a Markdown table (``--out``) and JSON (``--json``); exit
status 0 when every row is within its tolerance, 1 otherwise, 2 for a refused setting.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import List, Optional

from .clean_exit import clean_main

PROG = "python -m syntrans.cli.device_check"


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROG, description="Every mechanism's layer on CUDA against the same layer on CPU "
                                                       "(forward, backward), float32 and float16.")
    p.add_argument("--device", choices=("cuda", "cpu"), default="cuda",
                   help="cuda: CUDA against CPU (default); cpu: CPU's kernels against the explicit path (no GPU)")
    p.add_argument("--dtypes", default=None, help="comma-separated, of float32, float16, bfloat16 (default: float32,"
                                                  "float16 on CUDA, float32 on CPU)")
    p.add_argument("--archs", default=None, help="comma-separated syntax presets (default: every registered preset)")
    p.add_argument("--length", type=int, default=150, help="sentence length T (default 150: two 128-token blocks)")
    p.add_argument("--tokens", type=int, default=600, help="tokens per batch (default 600)")
    p.add_argument("--out", default=None, help="write the Markdown table here")
    p.add_argument("--json", default=None, help="write every row as JSON here")
    return p


@clean_main(PROG)
def main(argv: Optional[List[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    import torch

    from ..bench.layer_comparison import TOLERANCES, presets_or_all, render_device_check, run_device_check

    if args.device == "cuda" and not torch.cuda.is_available():
        print(f"{PROG}: error: --device cuda but torch {torch.__version__} sees no CUDA device", file=sys.stderr)
        return 2
    default = "float32,float16" if args.device == "cuda" else "float32"
    dtypes = [d.strip() for d in (args.dtypes or default).split(",") if d.strip()]
    bad = [d for d in dtypes if d not in TOLERANCES]
    if bad or args.length < 2 or args.tokens < args.length:
        print(f"{PROG}: error: dtypes must be of {', '.join(TOLERANCES)} (found {', '.join(bad) or 'them'}), --length "
              f"≥ 2 and --tokens ≥ --length (found {args.length}, {args.tokens})", file=sys.stderr)
        return 2
    try:
        presets = presets_or_all([a.strip() for a in args.archs.split(",") if a.strip()] if args.archs else None)
    except ValueError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    result = run_device_check(presets, args.device, dtypes, T=args.length, tokens=args.tokens)
    text = render_device_check(result)
    sys.stdout.write(text)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
