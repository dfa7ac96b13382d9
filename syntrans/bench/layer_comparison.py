"""Every mechanism's layer on one device against the same layer on another (``python -m syntrans.cli.device_check``,
the first stage of ``scripts/gpu_check.sh``): CUDA, with the kernels the attention picks there (SDPA, flex attention
compiled by inductor, its block masks), against CPU, float32, where the same layer runs SDPA and the explicit path.

For every case of the benchmark by length (:func:`~syntrans.bench.by_length.cases`: the first encoder and decoder
layer with syntax heads of every preset) one whole layer (attention, residuals, FFN) takes one training step, forward
and backward (loss: the output weighed by fixed random weights, plus the layer's auxiliary losses), with every dropout at 0
(the two devices draw different random numbers; attention dropout would also keep flex attention out). The layer
under test runs in float32 and in float16 (a GPU's ``--fp16`` layers), the reference in float32 on CPU with the same
weights and batch. Compared: the output, the auxiliary losses and every parameter's gradient, each as
‖test − reference‖ / ‖reference‖ (so a tensor's error is relative to its own scale; a gradient's scale is at least 1%
of the layer's largest gradient, :data:`GRAD_FLOOR`). Tolerances (:data:`TOLERANCES`): float32 1e-4 (outputs, losses)
and 1e-3 (gradients: sums over the batch); a half dtype the larger of its own (float16 5e-3 and 1e-2) and twice the
error of fairseq's stock layer, same weights and batch, in that dtype on that device (:data:`STOCK_FACTOR`): half
precision's rounding, accumulated over a layer, is the stock layer's too (on CPU, float16: stock 4.8e-4 and 1.3e-2).

Without CUDA (``gpu_check.sh --plumbing``) the same comparison runs CPU against CPU: the kernels the attention picks
(``auto``) against every head's scores formed (``explicit``), float32 only, and the table says so.
"""
from __future__ import annotations

import copy
import time
from typing import Dict, List, Optional, Tuple

import torch

from ..modules.blocks import LayerMixer
from ..modules.compiled_kernels import failures
from .by_length import DTYPES, Case, build_pair, cases, causal_mask, make_batch, report_losses, run_layer
from .corpus import say

#: dtype → (outputs and losses, gradients): the largest ‖test − reference‖ / ‖reference‖ accepted; in a half dtype
#: also anything up to STOCK_FACTOR × the error of fairseq's stock layer in that dtype on that device
TOLERANCES = {"float32": (1e-4, 1e-3), "float16": (5e-3, 1e-2), "bfloat16": (3e-2, 6e-2)}
STOCK_FACTOR = 2.0
#: a gradient's scale is at least this fraction of the layer's largest gradient: some are 0 in exact arithmetic (the
#: key projection's bias: a softmax ignores a constant added to all of a query's scores) and only rounding is left
GRAD_FLOOR = 1e-2


def _no_dropout(case: Case) -> Case:
    """The case with every dropout rate of its layer at 0 (its mixers' too: see :func:`_quiet_mixers`)."""
    cfg = copy.deepcopy(case.cfg)
    for name in ("dropout", "attention_dropout", "activation_dropout", "relu_dropout"):
        if hasattr(cfg, name):
            setattr(cfg, name, 0.0)
    return Case(case.name, case.presets, case.side, case.plan, case.layer, cfg, case.features)


def _quiet_mixers(layer: torch.nn.Module) -> None:
    for m in layer.modules():
        if isinstance(m, LayerMixer):
            m.syntax_dropout_p = lambda: 0.0  # a mixer's dropout of its syntax probabilities: off


def _step(layer, case: Case, batch, backend: Optional[str]) -> Tuple[Dict[str, torch.Tensor], Dict[str, torch.Tensor]]:
    """One training step (``backend`` None: fairseq's stock layer): ({"output", "loss:<key>"…} float32 on CPU,
    {parameter: gradient} float32 on CPU)."""
    side = case.plan.sides[case.side]
    layer.zero_grad(set_to_none=True)
    causal = causal_mask(case, batch)
    kw = {} if backend is None else {
        "inputs": side.inputs(batch.pad.long(), batch.pad, batch.features, batch.x.dtype, True, (), backend)}
    y, report = run_layer(layer, case, batch, causal, kw)
    weights = torch.randn(y.shape, generator=torch.Generator().manual_seed(0)).to(y.device)  # the same on every device
    loss = (y.float() * weights).sum()
    got = {"output": y.detach().float().cpu()}
    for key, parent_loss in report_losses(report).items():
        loss = loss + parent_loss.float()
        got[f"loss:{key}"] = parent_loss.detach().float().cpu()
    loss.backward()
    grads = {n: p.grad.detach().float().cpu() for n, p in layer.named_parameters() if p.grad is not None}
    return got, grads


def _error(test: torch.Tensor, ref: torch.Tensor, floor: float = 0.0) -> float:
    """‖test − ref‖ / ‖ref‖ (2-norms over the whole tensor), the scale no smaller than ``floor``."""
    scale = max(ref.double().norm().item(), floor, 1e-30)
    return (test.double() - ref.double()).norm().item() / scale


def _errors(got, ref) -> Tuple[float, float, str]:
    """(worst error of the outputs and losses, worst error of the gradients, the parameter that has it)."""
    (out, grads), (ref_out, ref_grads) = got, ref
    out_err = max(_error(out[k], ref_out[k]) for k in out)
    floor = GRAD_FLOOR * max(g.double().norm().item() for g in ref_grads.values())
    worst = max(grads, key=lambda n: _error(grads[n], ref_grads[n], floor))
    return out_err, _error(grads[worst], ref_grads[worst], floor), worst


def compare_case(case: Case, device: str, dtype: str, T: int, tokens: int, seed: int, backend: str,
                 ref_backend: str) -> Dict:
    """One case: the layer on ``device`` in ``dtype`` with ``backend`` against it on CPU in float32 with
    ``ref_backend``; and fairseq's stock layer (same weights) the same way, whose error is the yardstick of a half
    dtype's."""
    case = _no_dropout(case)
    stock_ref, ref_layer = build_pair(case, "layer", "cpu", seed)
    layer = copy.deepcopy(ref_layer).to(device, DTYPES[dtype])
    stock = copy.deepcopy(stock_ref).to(device, DTYPES[dtype])
    _quiet_mixers(ref_layer)
    _quiet_mixers(layer)
    ref_batch, batch = make_batch(case, T, tokens, "cpu", seed), make_batch(case, T, tokens, device, seed, DTYPES[dtype])
    ref = _step(ref_layer, case, ref_batch, ref_backend)
    failed = set(failures())
    t0 = time.perf_counter()
    got = _step(layer, case, batch, backend)
    seconds = time.perf_counter() - t0
    if set(got[0]) != set(ref[0]) or set(got[1]) != set(ref[1]):
        raise RuntimeError(f"{case.name}: the two layers report different things: {sorted(got[0])} {sorted(got[1])} "
                           f"against {sorted(ref[0])} {sorted(ref[1])}")
    out_err, grad_err, worst = _errors(got, ref)
    stock_out, stock_grad, _ = _errors(_step(stock, case, batch, None), _step(stock_ref, case, ref_batch, None))
    tol_out, tol_grad = TOLERANCES[dtype]
    if dtype != "float32":  # a half dtype: as close as fairseq's own layer gets, give or take STOCK_FACTOR
        tol_out, tol_grad = max(tol_out, STOCK_FACTOR * stock_out), max(tol_grad, STOCK_FACTOR * stock_grad)
    given_up = sorted(f"{k} ({c})" for k, c, _ in set(failures()) - failed)
    ok = out_err <= tol_out and grad_err <= tol_grad and not given_up
    return {"case": case.name, "heads": case.heads, "dtype": dtype, "T": T, "output_error": out_err,
            "grad_error": grad_err, "worst_grad": worst, "stock_errors": [stock_out, stock_grad],
            "tolerance": [tol_out, tol_grad], "kernels_given_up": given_up, "seconds": seconds, "ok": ok}


def run_device_check(presets: List[str], device: str, dtypes: List[str], T: int = 150, tokens: int = 600,
                     dim: int = 128, heads: int = 8, ffn: int = 256, seed: int = 1) -> Dict:
    """Every case of ``presets`` (module docstring). ``device`` "cuda": CUDA (auto) against CPU (auto); "cpu": CPU
    (auto) against CPU (explicit), the plumbing test."""
    backend, ref_backend = "auto", ("auto" if device == "cuda" else "explicit")
    rows = []
    for case in cases(presets, dim, heads, ffn):
        for dtype in dtypes:
            say(f"device check {device} {dtype}: {case.name} ({case.heads})")
            rows.append(compare_case(case, device, dtype, T, tokens, seed, backend, ref_backend))
    what = ("CUDA (kernels the attention picks) against CPU (float32)" if device == "cuda" else
            "plumbing: CPU against CPU (no CUDA): the kernels the attention picks against every head's scores formed")
    return {"what": what, "device": device, "T": T, "tokens": tokens, "dim": dim, "heads": heads, "ffn": ffn,
            "torch": torch.__version__, "gpu": torch.cuda.get_device_name(0) if device == "cuda" else None,
            "rows": rows, "ok": all(r["ok"] for r in rows)}


def render_device_check(result: Dict) -> str:
    out = [f"## Layers: {result['what']}", "",
           f"One whole layer per case, one training step (forward + backward), dropout 0, T = {result['T']} "
           f"({-(-result['T'] // 128)} of flex attention's 128-token blocks), {result['tokens']} tokens per batch, "
           f"dim {result['dim']}, "
           f"{result['heads']} heads; torch {result['torch']}" + (f", {result['gpu']}" if result["gpu"] else "") + ".",
           "Errors: ‖test − reference‖ / ‖reference‖, the worst over the output and losses, and over the parameters' "
           "gradients (a gradient's scale at least 1% of the layer's largest); fairseq's stock layer, same weights and "
           "batch, for comparison. Tolerance: float32 1e-4 / 1e-3; a half dtype the larger of its own "
           f"({', '.join(f'{d} {t[0]:.0e} / {t[1]:.0e}' for d, t in TOLERANCES.items() if d != 'float32')}) and "
           f"{STOCK_FACTOR:g}× the stock layer's error.", "",
           "| case | heads | dtype | output error | gradient error (worst parameter) | stock layer's errors | tolerance "
           "| kernels given up | ok |", "|---|---|---|---:|---:|---:|---:|---|---|"]
    for r in result["rows"]:
        out.append(f"| {r['case']} | {r['heads']} | {r['dtype']} | {r['output_error']:.1e} | {r['grad_error']:.1e} "
                   f"({r['worst_grad']}) | {r['stock_errors'][0]:.1e} / {r['stock_errors'][1]:.1e} "
                   f"| {r['tolerance'][0]:.0e} / {r['tolerance'][1]:.0e} "
                   f"| {', '.join(r['kernels_given_up']) or 'none'} | {'yes' if r['ok'] else 'NO'} |")
    return "\n".join(out) + "\n"


def presets_or_all(names: Optional[List[str]]) -> List[str]:
    from .models import syntax_presets

    every = syntax_presets()
    if not names:
        return every
    unknown = [n for n in names if n not in every]
    if unknown:
        raise ValueError(f"not syntax presets: {', '.join(unknown)} (registered: {', '.join(every)})")
    return names
