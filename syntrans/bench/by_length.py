"""The benchmark by sentence length (``syntrans-benchmark --lengths 32,64,…``): one attention layer and one whole layer
of every mechanism against fairseq's stock ones, forward + backward, speed and peak memory, per length and device.

The cases come from the registered presets (:func:`~syntrans.bench.models.syntax_presets`): for each, the first
encoder layer and the first decoder layer its plan gives syntax heads to, with the preset's heads, mixer and dropout
rates; presets whose layers are the same are measured once. Every case is measured twice: with the kernels the
attention picks (``auto``: stock heads and blocks whose probabilities the step does not need in fused kernels) and
with every head on the explicit reference path (``explicit``), each against a stock layer of the same size, dropout
and weights, run right after it. A batch holds ``--layer-tokens`` tokens (B = tokens // T sentences), half of them
left-padded to a random length in [T/2, T]; the syntax features are those of random trees, built and padded by the
data layer's own feature functions. The loss of a step is the sum of the layer's output plus the layer's auxiliary
losses (a parse head's parent loss), so that their backward is timed too.
"""
from __future__ import annotations

import argparse
import statistics
import time
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Tuple

import numpy as np
import torch
from fairseq.data import data_utils
from fairseq.models import ARCH_CONFIG_REGISTRY
from fairseq.models.transformer import TransformerConfig
from fairseq.modules import MultiheadAttention
from fairseq.modules.transformer_layer import TransformerDecoderLayerBase, TransformerEncoderLayerBase

from ..data.features import FEATURES
from ..mechanisms.base import ParentReport
from ..mechanisms.plan import SyntaxPlan
from ..mechanisms.registry import MECHANISMS
from ..models.config import model_config
from ..models.layers import SyntaxDecoderLayer, SyntaxEncoderLayer
from ..modules.syntax_attention import SyntaxMultiheadAttention
from .corpus import say
from .measure import cpu_memory_events, running_peak

BACKENDS = ("auto", "explicit")
PARTS = ("attention", "layer")
DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


@dataclass
class Case:
    """One measured layer: a preset's syntax heads in one layer of one side."""

    name: str  # e.g. "pascal_transformer_wmt_en_de/encoder"
    presets: List[str]
    side: str
    plan: SyntaxPlan
    layer: int
    cfg: object  # the typed config (sizes and dropout)
    features: List[str] = field(default_factory=list)

    @property
    def heads(self) -> str:
        blocks = self.plan.heads[self.side, self.layer]
        mixer = next((m.key for m in self.plan.active if m.mixes(self.side, self.layer)), None)
        return " + ".join(f"{n} {m.key}" for m, n in blocks) + (f", {mixer}" if mixer else "")


def cases(presets: List[str], dim: int, heads: int, ffn: int) -> List[Case]:
    """The layers to measure (module docstring), at the given sizes (one encoder and one decoder layer)."""
    out: Dict[Tuple, Case] = {}
    for arch in presets:
        args = argparse.Namespace(encoder_layers=1, decoder_layers=2, encoder_embed_dim=dim, decoder_embed_dim=dim,
                                  encoder_attention_heads=heads, decoder_attention_heads=heads,
                                  encoder_ffn_embed_dim=ffn, decoder_ffn_embed_dim=ffn, arch=arch)
        ARCH_CONFIG_REGISTRY[arch](args)
        cfg = model_config(args)
        for M in MECHANISMS:
            group = getattr(cfg, M.key)
            if isinstance(getattr(group, "heads", None), int) and group.heads > heads:
                group.heads = heads  # a preset's heads per layer that do not fit --heads: all of them
            for name, value in M.data_fields(group, lambda side, feature: (-8, 8)).items():
                setattr(group, name, value)  # what would come from a training split: a value range
        plan = cfg.plan
        for side in ("encoder", "decoder"):
            if not plan.heads[side, 0]:
                continue
            key = (side, plan.block_keys(side, 0), tuple(n for _, n in plan.heads[side, 0]),
                   any(m.mixes(side, 0) for m in plan.active), float(cfg.dropout), float(cfg.attention_dropout),
                   repr(sorted((m.key, repr(m.cfg)) for m, _ in plan.heads[side, 0])),
                   tuple(sorted(plan.sides[side].keep)))
            if key in out:
                out[key].presets.append(arch)
                continue
            needs = plan.sides[side].features()
            out[key] = Case(f"{arch}/{side}", [arch], side, plan, 0, cfg,
                            sorted(needs.required | needs.optional))
    return list(out.values())


# ------------------------------------------------------------------------------------------------ the batch

def random_tree(n: int, rng: np.random.Generator) -> np.ndarray:
    """1-based heads of a random dependency tree of n words (0 = root), each word attached to an earlier one."""
    heads = np.zeros(n, dtype=np.int64)
    order = rng.permutation(n) + 1  # a random word order of attachment
    for k, w in enumerate(order[1:], start=1):
        heads[w - 1] = order[rng.integers(0, k)]
    return heads


def batch_features(names: List[str], lengths: List[int], T: int, side: str, seed: int) -> Dict[str, torch.Tensor]:
    """The batch features ``names`` of sentences of ``lengths`` tokens (EOS included), each its own random tree and
    random constituency gaps, built by the data layer's feature functions and padded to T like the tokens (the source
    left-padded, the target right-padded)."""
    rng = np.random.default_rng(seed)
    left = side == "encoder"
    out = {}
    arrays = []
    for n in lengths:
        words = n - 1  # one word per subword
        arrays.append({"word": np.arange(words, dtype=np.int64), "head": random_tree(words, rng),
                       "dist": rng.integers(1, 8, size=max(words - 1, 0)).astype(np.int64)})
    for name in names:
        f = FEATURES[name]
        values = [torch.from_numpy(f.build({k: a[k] for k in f.needs})) for a in arrays]
        padded = data_utils.collate_tokens(values, f.pad, left_pad=left, pad_to_length=T)
        if f.positions and left:
            shift = torch.tensor([T - len(v) for v in values], dtype=padded.dtype).unsqueeze(1)
            padded = torch.where(padded >= 0, padded + shift, padded)
        out[name] = f.finish(padded)
    return out


@dataclass
class Batch:
    x: torch.Tensor  # (T, B, C)
    pad: torch.Tensor  # (B, T)
    features: Dict[str, torch.Tensor]
    enc: Optional[torch.Tensor] = None  # (S, B, C) an encoder output for decoder layers


def make_batch(case: Case, T: int, tokens: int, device: str, seed: int, dtype: torch.dtype = torch.float32) -> Batch:
    g = torch.Generator().manual_seed(seed)
    B = max(1, tokens // T)
    lengths = [T if b % 2 == 0 else int(torch.randint(max(2, T // 2), T + 1, (1,), generator=g)) for b in range(B)]
    left = case.side == "encoder"
    pad = torch.tensor([[(t < T - n) if left else (t >= n) for t in range(T)] for n in lengths])
    C = int(case.cfg.encoder.embed_dim)
    x = torch.randn(T, B, C, generator=g)
    features = batch_features(case.features, lengths, T, case.side, seed)
    enc = torch.randn(T, B, C, generator=g) if case.side == "decoder" else None
    move = (lambda t: t.to(device)) if device != "cpu" else (lambda t: t)
    x, enc = x.to(dtype), (None if enc is None else enc.to(dtype))
    return Batch(move(x), move(pad), {k: move(v) for k, v in features.items()}, None if enc is None else move(enc))


# ---------------------------------------------------------------------------------------------- the modules

def build_pair(case: Case, part: str, device: str, seed: int, dtype: torch.dtype = torch.float32):
    """(stock module, syntax module) of ``part`` with the same weights (the syntax one's extra parameters aside)."""
    cfg = case.cfg
    side = case.side
    torch.manual_seed(seed)
    C, H = int(cfg.encoder.embed_dim), int(cfg.encoder.attention_heads)
    layer = case.plan.sides[side].layer(case.layer)
    if part == "attention":
        stock = MultiheadAttention(C, H, dropout=float(cfg.attention_dropout), self_attention=True)
        ours = SyntaxMultiheadAttention(C, H, dropout=float(cfg.attention_dropout), self_attention=True, layer=layer)
    else:
        tcfg = TransformerConfig.from_namespace(cfg)
        if side == "encoder":
            stock, ours = TransformerEncoderLayerBase(tcfg), SyntaxEncoderLayer(tcfg, layer)
        else:
            stock, ours = TransformerDecoderLayerBase(tcfg), SyntaxDecoderLayer(tcfg, layer)
    _, unexpected = ours.load_state_dict(stock.state_dict(), strict=False)  # ours may add parameters, never lack any
    if unexpected:
        raise RuntimeError(f"{case.name}: the syntax {part} lacks the stock parameters {unexpected}")
    return stock.to(device, dtype).train(), ours.to(device, dtype).train()


def causal_mask(case: Case, batch: Batch) -> Optional[torch.Tensor]:
    """The decoder's causal self-attention mask (T, T) (−inf above the diagonal); None on the encoder side."""
    T = batch.x.size(0)
    return torch.triu(torch.full((T, T), float("-inf"), device=batch.x.device), 1) if case.side == "decoder" else None


def report_losses(reports: Dict) -> Dict[str, torch.Tensor]:
    """The parent losses among a layer's mechanism reports ({key: report}): {key: loss ()}."""
    return {k: r.loss for k, r in reports.items() if isinstance(r, ParentReport) and r.loss is not None}


def parent_losses(reports: Dict) -> torch.Tensor:
    """:func:`report_losses` summed (0.0 without one): what a benchmark adds to its loss, so that their backward is
    measured too."""
    return sum(report_losses(reports).values(), 0.0)


def run_layer(layer, case: Case, batch: Batch, causal: Optional[torch.Tensor], kw: Dict) -> Tuple[torch.Tensor, Dict]:
    """(output (T, B, C), its mechanisms' reports by key) of an encoder or decoder layer on ``batch``; ``kw``:
    ``{"inputs": inputs}`` for a syntax layer, empty for fairseq's stock layer (which reports nothing)."""
    if case.side == "encoder":
        out = layer(batch.x, batch.pad, **kw)
        return (out[0], out[2].mechanisms) if kw else ((out[0] if isinstance(out, tuple) else out), {})
    out = layer(batch.x, batch.enc, None, self_attn_mask=causal, self_attn_padding_mask=batch.pad, **kw)
    return out[0], (out[3].mechanisms if kw else {})


def step_fn(module, syntax: bool, case: Case, batch: Batch, part: str, backend: str) -> Callable[[], None]:
    """One forward + backward of ``module`` on ``batch`` (its aux losses added to the loss)."""
    side = case.plan.sides[case.side]
    causal = causal_mask(case, batch)

    def run():
        module.zero_grad(set_to_none=True)
        tokens = batch.pad.long()  # only the shape and device are read
        inputs = side.inputs(tokens, batch.pad, batch.features, batch.x.dtype, True, (), backend) if syntax else None
        kw = {"inputs": inputs} if syntax else {}
        if part == "attention":
            out = module(batch.x, batch.x, batch.x, key_padding_mask=batch.pad, need_weights=False, attn_mask=causal,
                         **kw)
            y, report = out[0], (out[2].mechanisms if syntax else {})
        else:
            y, report = run_layer(module, case, batch, causal, kw)
        (y.float().sum() + parent_losses(report)).backward()

    return run


# ------------------------------------------------------------------------------------------- measurements

def _sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def peak_bytes(run: Callable[[], None], device: str) -> int:
    """The highest net amount of memory allocated during one ``run`` (forward + backward), above what was held
    before it: on CUDA from the allocator's peak statistics, on CPU summed in time order from the allocation and free
    events torch's profiler records (a first recorded run makes the blocks kept between runs recorded ones)."""
    if device == "cuda":
        run()
        _sync(device)
        before = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        run()
        _sync(device)
        return torch.cuda.max_memory_allocated() - before
    for _ in range(2):  # the first recorded run makes the blocks kept between runs recorded ones
        events = cpu_memory_events(run)
    return running_peak(events)[0]


def measure(case: Case, T: int, opts, device: str) -> dict:
    """Speed (median of ``opts.reps`` timed steps, stock and syntax interleaved) and peak memory of both parts and
    backends at length T."""
    dtype = DTYPES[opts.layer_dtype]
    batch = make_batch(case, T, opts.layer_tokens, device, opts.seed, dtype)
    row = {"case": case.name, "presets": case.presets, "side": case.side, "heads": case.heads, "T": T,
           "B": batch.x.size(1)}
    for part in PARTS:
        stock, ours = build_pair(case, part, device, opts.seed, dtype)
        stock_run = step_fn(stock, False, case, batch, part, "auto")
        for backend in BACKENDS:
            ours_run = step_fn(ours, True, case, batch, part, backend)
            times = {"stock": [], "ours": []}
            for rep in range(opts.warmup + opts.reps):
                for who, fn in (("stock", stock_run), ("ours", ours_run)) if rep % 2 == 0 else \
                        (("ours", ours_run), ("stock", stock_run)):
                    torch.manual_seed(opts.seed + rep)
                    _sync(device)
                    t0 = time.perf_counter()
                    fn()
                    _sync(device)
                    if rep >= opts.warmup:
                        times[who].append(time.perf_counter() - t0)
            s, o = statistics.median(times["stock"]), statistics.median(times["ours"])
            ms, mo = peak_bytes(stock_run, device), peak_bytes(ours_run, device)
            row[f"{part}_{backend}"] = {"stock_ms": 1e3 * s, "ms": 1e3 * o, "speed": s / o,
                                        "stock_peak_mb": ms / 2 ** 20, "peak_mb": mo / 2 ** 20, "mem": mo / max(ms, 1)}
    return row


def run_by_length(opts, presets: List[str], devices: List[str]) -> dict:
    """Every case at every length on every device (see the module docstring)."""
    found = cases(presets, opts.dim, opts.heads, opts.ffn)
    result = {"lengths": list(opts.lengths), "tokens": opts.layer_tokens, "dim": opts.dim, "heads": opts.heads,
              "ffn": opts.ffn, "reps": opts.reps, "dtype": opts.layer_dtype,
              "recompile_batches": opts.recompile_batches, "devices": []}
    for device in devices:
        rows = []
        for case in found:
            for T in opts.lengths:
                say(f"{device} T={T} {case.name} ({case.heads})")
                rows.append(measure(case, T, opts, device))
        info = {"device": device, "rows": rows}
        info["gpu" if device == "cuda" else "threads"] = (torch.cuda.get_device_name(0) if device == "cuda"
                                                          else torch.get_num_threads())
        result["devices"].append(info)
    return result


def render_by_length(result: dict, device_lines: Optional[Callable[[dict, dict], List[str]]] = None) -> str:
    """The Markdown report: per device, per case and length, time and peak memory of the stock and the syntax layer
    (auto and explicit kernels), as ratios stock/ours for speed (>1: faster than stock) and ours/stock for memory;
    ``device_lines(device info, result)``: more lines at the end of each device's section."""
    out = ["# syntrans-benchmark --lengths: one layer per mechanism against fairseq's stock layer", "",
           f"- dim {result['dim']}, {result['heads']} heads, FFN {result['ffn']}, {result['dtype']}; batches of "
           f"{result['tokens']:,} tokens "
           f"(B = tokens // T), half of them padded; forward + backward (loss: output sum + the layer's auxiliary "
           f"losses); median of {result['reps']} steps, stock and syntax interleaved",
           "- speed = stock time / syntax time (≥ 1: as fast as stock); mem = syntax peak / stock peak; "
           "auto: the kernels the attention picks; explicit: every head's scores formed (the reference path)"]
    for dev in result["devices"]:
        where = dev.get("gpu") or f"{dev.get('threads')} torch thread(s)"
        out += ["", f"## {dev['device']} ({where})", "",
                "| case | heads | T | B | attention speed auto / explicit | attention mem auto / explicit "
                "| layer speed auto / explicit | layer mem auto / explicit | layer peak MB stock / auto |",
                "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
        for r in dev["rows"]:
            a, ae, la, le = r["attention_auto"], r["attention_explicit"], r["layer_auto"], r["layer_explicit"]
            out.append(f"| {r['case']} | {r['heads']} | {r['T']} | {r['B']} | {a['speed']:.3f} / {ae['speed']:.3f} "
                       f"| {a['mem']:.3f} / {ae['mem']:.3f} | {la['speed']:.3f} / {le['speed']:.3f} "
                       f"| {la['mem']:.3f} / {le['mem']:.3f} | {la['stock_peak_mb']:,.1f} / {la['peak_mb']:,.1f} |")
        out.append("")
        out.append("- cases: " + "; ".join(sorted({f"{r['case']} = {', '.join(r['presets'])}" for r in dev["rows"]})))
        if device_lines is not None:
            out += device_lines(dev, result)
    out += ["", "Ratios are reported, never enforced; CPU timings are sensitive to other load on the machine."]
    return "\n".join(out) + "\n"
