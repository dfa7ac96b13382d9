"""How often the compiled kernels compile over a stream of batches of different lengths (``syntrans-benchmark
--lengths … --recompile-batches 50``): the count that decides whether a training runs its compiled kernels or keeps
compiling them.

For every case of the benchmark by length (:mod:`~syntrans.bench.by_length`), its syntax attention layer runs
``--recompile-batches`` batches whose length T is drawn uniformly from [8, the longest of ``--lengths``] (B = the
layer tokens // T sentences, half of them padded, as the benchmark's batches), with the kernels the attention picks,
and counts the graphs torch's compiler compiles at each batch (dynamo's ``unique_graphs`` counter,
:func:`~syntrans.modules.compiled_kernels.compiled_graphs`): in the first :data:`WARMUP` batches, and after them
(the goal: at most 2). A kernel that failed and left its heads on the explicit path is reported too.

* On CUDA: training steps (forward and backward), the kernels compiled by inductor as a training compiles them
  (flex attention, the block mask's creation).
* Off CUDA the layers take no compiled kernel by themselves, and inductor's CPU kernel is not CUDA's: the layer runs
  with ``backend="compiled"``, forward only (torch has no flex attention backward on CPU), compiled with
  torch.compile's ``eager`` backend: dynamo's guards and recompiles, which decide the count, without inductor's
  kernels. An estimate of CUDA's count, labelled as such.

A case with no compiled kernel (no block with a score modification or a loss from the log-sum-exp, or attention
dropout, which flex attention does not have) compiles nothing: its row says so after its first batch.
"""
from __future__ import annotations

import contextlib
from typing import Dict, List

import numpy as np
import torch

from ..modules.compiled_kernels import compile_options, compiled_graphs, failures
from .by_length import DTYPES, Case, build_pair, make_batch, parent_losses
from .corpus import say

WARMUP = 5  # batches counted as warm-up
SHORTEST = 8  # the shortest length drawn


def count_recompiles(case: Case, opts, device: str) -> Dict:
    """The compiles of ``case``'s attention layer over ``opts.recompile_batches`` batches on ``device`` (module
    docstring) → {"mode", "batches", "lengths", "per_batch", "warmup", "after", "fallbacks"}, or "mode": "none"
    when the layer compiled nothing at its first batch."""
    cuda = device == "cuda"
    dtype = DTYPES[opts.layer_dtype]
    _, layer = build_pair(case, "attention", device, opts.seed, dtype)
    side = case.plan.sides[case.side]
    rng = np.random.default_rng(opts.seed)
    longest = max(max(opts.lengths), SHORTEST)
    lengths = [int(t) for t in rng.integers(SHORTEST, longest + 1, size=opts.recompile_batches)]
    backend = "auto" if cuda else "compiled"
    mode = "cuda: inductor, training steps" if cuda else "cpu: dynamo's guards (backend eager), forward only"
    failed_before = set(failures())
    per_batch: List[int] = []
    options = contextlib.nullcontext() if cuda else compile_options(backend="eager")
    with options, torch.set_grad_enabled(cuda):
        for i, T in enumerate(lengths):
            batch = make_batch(case, T, opts.layer_tokens, device, opts.seed + i, dtype)
            causal = (torch.triu(torch.full((T, T), float("-inf"), device=batch.x.device), 1)
                      if case.side == "decoder" else None)
            before = compiled_graphs()
            inputs = side.inputs(batch.pad.long(), batch.pad, batch.features, batch.x.dtype, True, (), backend)
            out, _, report = layer(batch.x, batch.x, batch.x, key_padding_mask=batch.pad, need_weights=False,
                                   attn_mask=causal, inputs=inputs)
            if cuda:
                loss = out.float().sum() + parent_losses(report.mechanisms)
                loss.backward()
                torch.cuda.synchronize()
            per_batch.append(compiled_graphs() - before)
            if i == 0 and per_batch[0] == 0 and set(failures()) == failed_before:
                return {"mode": "none", "batches": 1, "lengths": lengths[:1], "per_batch": per_batch, "warmup": 0,
                        "after": 0, "fallbacks": []}
    fallbacks = [f"{kernel} ({caller}, {dev})" for kernel, caller, dev in set(failures()) - failed_before]
    return {"mode": mode, "batches": len(lengths), "lengths": lengths, "per_batch": per_batch,
            "warmup": sum(per_batch[:WARMUP]), "after": sum(per_batch[WARMUP:]), "fallbacks": sorted(fallbacks)}


def run_recompiles(opts, cases: List[Case], device: str) -> List[Dict]:
    """:func:`count_recompiles` for every case, each with its own freshly compiled kernels."""
    from ..modules import compiled_kernels

    rows = []
    for case in cases:
        say(f"{device} recompiles over {opts.recompile_batches} batches: {case.name} ({case.heads})")
        compiled_kernels.reset()
        rows.append({"case": case.name, "heads": case.heads, **count_recompiles(case, opts, device)})
    compiled_kernels.reset()
    return rows


def render_recompiles(rows: List[Dict], batches: int) -> List[str]:
    """The Markdown lines of the recompile count of one device."""
    out = ["", f"Compiles of the compiled kernels over {batches} batches of random lengths (dynamo's graph counter; "
                f"warm-up: the first {WARMUP} batches; goal: at most 2 after it):", "",
           "| case | heads | how | compiles in warm-up | compiles after | kernels given up |", "|---|---|---|---:|---:|---|"]
    for r in rows:
        if r["mode"] == "none":
            out.append(f"| {r['case']} | {r['heads']} | no compiled kernel (its first batch compiled nothing) | 0 | – | |")
            continue
        out.append(f"| {r['case']} | {r['heads']} | {r['mode']} | {r['warmup']} | {r['after']} "
                   f"| {', '.join(r['fallbacks']) or 'none'} |")
    return out


def recompile_lines(dev: Dict, result: Dict) -> List[str]:
    """The recompile count's lines of one device of the benchmark by length (none where it was not measured)."""
    return render_recompiles(dev["recompiles"], result["recompile_batches"]) if dev.get("recompiles") else []
