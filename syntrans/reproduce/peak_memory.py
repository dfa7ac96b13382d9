"""fairseq-train with its peak GPU memory recorded: ``python -m syntrans.reproduce.peak_memory OUT.json ARGS…`` runs
``fairseq-train ARGS…`` in this process and writes {"peak_gpu_bytes": {process: bytes}} to OUT.json.

fairseq's trainer resets torch's peak-memory counter after every update (``torch.cuda.reset_peak_memory_stats``, to
log each update's ``gb_free``), so the counter at the end holds the last update only. Here every reset first adds the
peak so far to a running maximum (:func:`watch`), and the maximum over the whole training is written at the end. A
training on several GPUs of one node runs in processes that fairseq starts with ``torch.multiprocessing.spawn``; each
of them is watched the same way and writes its own entry (``rank<k>``). On CPU nothing is recorded (an empty map):
the runner measures the process's peak resident memory itself (``os.wait4``).
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Dict, List

from ..atomic_write import write_text

_peak: Dict[int, int] = {}  # device → the largest max_memory_allocated seen in this process


def _note_peaks(torch) -> None:
    for d in range(torch.cuda.device_count()):
        _peak[d] = max(_peak.get(d, 0), int(torch.cuda.max_memory_allocated(d)))


def watch(torch) -> None:
    """Make ``torch.cuda.reset_peak_memory_stats`` add the peak so far to this process's running maximum first."""
    original = torch.cuda.reset_peak_memory_stats
    if getattr(original, "_syntrans_watched", False):
        return

    def reset_peak_memory_stats(*args, **kwargs):
        if torch.cuda.is_available():
            _note_peaks(torch)
        return original(*args, **kwargs)

    reset_peak_memory_stats._syntrans_watched = True
    torch.cuda.reset_peak_memory_stats = reset_peak_memory_stats


def peak_bytes(torch) -> int:
    """The largest peak over this process's devices so far (0 without CUDA)."""
    if torch.cuda.is_available():
        _note_peaks(torch)
    return max(_peak.values(), default=0)


def _write(out: str, name: str, value: int) -> None:
    write_text(Path(f"{out}.{name}"), json.dumps({name: value}))


def _spawned(out: str, fn, rank: int, *args):
    """A process of torch.multiprocessing.spawn: watched, its peak written when its function returns."""
    import torch

    watch(torch)
    try:
        return fn(rank, *args)
    finally:
        if torch.cuda.is_available():
            _write(out, f"rank{rank}", peak_bytes(torch))


def collect(out: str) -> Dict[str, int]:
    """{process: peak bytes} of every process of one training (the files it left beside ``out``)."""
    found = {}
    for path in sorted(Path(out).parent.glob(Path(out).name + ".*")):
        found.update(json.loads(path.read_text(encoding="utf-8")))
        path.unlink()
    return found


def main(argv: List[str] = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    out, args = argv[0], argv[1:]
    import functools

    import torch
    import torch.multiprocessing

    watch(torch)
    spawn = torch.multiprocessing.spawn

    def watched_spawn(fn, args=(), **kwargs):
        return spawn(functools.partial(_spawned, out, fn), args=args, **kwargs)

    torch.multiprocessing.spawn = watched_spawn
    sys.argv = ["fairseq-train"] + list(args)
    from fairseq_cli.train import cli_main

    try:
        cli_main()
    finally:
        if torch.cuda.is_available():
            _write(out, "main", peak_bytes(torch))
        peaks = collect(out)
        write_text(out, json.dumps({"peak_gpu_bytes": peaks}))
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONWARNINGS", "ignore")
    sys.exit(main())
