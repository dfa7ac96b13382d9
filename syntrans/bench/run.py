"""One benchmark run: the corpus, the sidecar timing, the models, the measurements on every device and the report.

:func:`run_benchmark` wires together :mod:`~syntrans.bench.corpus` (preparation, binarization, sidecar timing),
:mod:`~syntrans.bench.models` (which models, built how, on which batches), :mod:`~syntrans.bench.measure` (speed
and memory) and :mod:`~syntrans.bench.bench_report` (targets, Markdown and JSON), with the settings of a
:class:`~syntrans.bench.options.BenchOptions`.
"""
from __future__ import annotations

import json
import logging
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import List

import fairseq
import torch

from .by_length import cases, render_by_length, run_by_length
from .corpus import bench_corpus, ensure_data_bin, say, time_preprocessing
from .measure import measure_device
from .models import build_models, make_batches, syntax_presets
from .options import BenchError, BenchOptions
from .recompiles import recompile_lines, run_recompiles
from .bench_report import SIDECAR_TARGET, _finite_json, render, targets_for


@dataclass
class BenchRun:
    """A finished run: ``result`` holds every measurement (what ``--json`` writes), ``report`` its Markdown."""

    result: dict
    report: str


def run_benchmark(opts: BenchOptions) -> BenchRun:
    """Run the benchmark with ``opts``; writes ``opts.out`` (Markdown) and ``opts.json`` when given.

    Progress goes to stderr. Unless ``opts.verbose``, fairseq's INFO logging and library warnings are silenced
    during the run. Raises :class:`~syntrans.bench.options.BenchError` for presets that do not exist or cannot
    be built at the chosen size, a CUDA device without CUDA, a missing Multi30k folder.
    """
    if opts.verbose:
        return _with_threads(opts)
    levels = {}
    for name in ("fairseq", "fairseq_cli", "hydra", "syntrans"):
        levels[name] = logging.getLogger(name).level
        logging.getLogger(name).setLevel(logging.WARNING)
    try:
        with warnings.catch_warnings():  # hydra's deprecation notes and the like: not the benchmark's business
            warnings.simplefilter("ignore", UserWarning)
            warnings.simplefilter("ignore", DeprecationWarning)
            warnings.simplefilter("ignore", FutureWarning)
            return _with_threads(opts)
    finally:
        for name, level in levels.items():
            logging.getLogger(name).setLevel(level)


def _with_threads(opts: BenchOptions) -> BenchRun:
    threads = torch.get_num_threads()
    if opts.threads:
        torch.set_num_threads(opts.threads)
    try:
        return _run(opts)
    finally:
        torch.set_num_threads(threads)


def _presets(opts: BenchOptions) -> List[str]:
    presets = syntax_presets()
    if opts.archs is None:
        return presets
    unknown = [a for a in opts.archs if a not in presets]
    if unknown:
        raise BenchError(f"not syntax presets: {', '.join(unknown)} (registered: {', '.join(presets)})")
    return list(opts.archs)


def _devices(opts: BenchOptions) -> List[str]:
    if opts.device in (None, "all"):
        return ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    if opts.device == "cuda" and not torch.cuda.is_available():
        raise BenchError("--device cuda but torch.cuda.is_available() is False")
    return [opts.device]


def _run(opts: BenchOptions) -> BenchRun:
    presets = _presets(opts)
    devices = _devices(opts)
    if opts.lengths:
        return _run_by_length(opts, presets, devices)

    t_start = time.perf_counter()
    corpus = bench_corpus(opts)
    say(f"corpus: {corpus.description}")
    timing = None
    if not opts.no_sidecars:
        say("timing fairseq binarization vs syntax sidecars")
        timing = time_preprocessing(corpus, opts.sidecar_reps)
    ensure_data_bin(corpus, timing)

    torch.manual_seed(opts.seed)
    task, benches = build_models(opts, corpus, presets)
    train, test = make_batches(task, benches, opts)
    results = []
    for dev in devices:
        results.append(measure_device(opts, task, benches, train, test, dev))

    settings = {k: getattr(opts, k) for k in ("layers", "dim", "heads", "ffn", "batches", "warmup", "reps",
                                               "max_tokens", "gen_batches", "gen_batch_size", "beam", "max_len_a",
                                               "max_len_b", "lr", "seed", "quick", "no_matched_vanilla",
                                               "sidecar_reps")}
    settings["threads"] = torch.get_num_threads()
    result = {
        "corpus": {"name": corpus.name, "description": corpus.description, "data_bin": str(corpus.data_bin)},
        "torch": torch.__version__, "fairseq": fairseq.__version__, "python": sys.version.split()[0],
        "settings": settings, "models": [b.name for b in benches], "presets": presets, "devices": results,
        "sidecars": None if timing is None else {k: v for k, v in timing.items() if k != "dest"},
        "targets": {"models": {p: targets_for(p) for p in presets}, "sidecars_max": SIDECAR_TARGET},
        "seconds": time.perf_counter() - t_start,
    }
    text = render(result)
    _write(opts, result, text)
    return BenchRun(result, text)


def _write(opts: BenchOptions, result: dict, text: str) -> None:
    """The report to ``--out`` (markdown) and the result to ``--json``, where given."""
    if opts.out:
        Path(opts.out).write_text(text, encoding="utf-8")
    if opts.json:
        Path(opts.json).write_text(json.dumps(_finite_json(result), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def _run_by_length(opts: BenchOptions, presets: List[str], devices: List[str]) -> BenchRun:
    """One layer per mechanism at every length of ``opts.lengths`` (:mod:`syntrans.bench.by_length`)."""
    t_start = time.perf_counter()
    torch.manual_seed(opts.seed)
    result = run_by_length(opts, presets, devices)
    if opts.recompile_batches:  # each device's compile count, with freshly compiled kernels per case
        found = cases(presets, opts.dim, opts.heads, opts.ffn)
        for info in result["devices"]:
            info["recompiles"] = run_recompiles(opts, found, info["device"])
    result.update({"torch": torch.__version__, "fairseq": fairseq.__version__, "python": sys.version.split()[0],
                   "presets": presets, "seconds": time.perf_counter() - t_start})
    text = render_by_length(result, recompile_lines)
    _write(opts, result, text)
    return BenchRun(result, text)
