"""The papers' batch in any number of GPUs: tokens per update = max-tokens × GPUs × update-freq (fairseq)."""
from __future__ import annotations

import math
from typing import List, Sequence, Tuple


def batch_flags(tokens_per_update: int, max_tokens: int, world_size: int) -> Tuple[List[str], str]:
    """``--max-tokens M --update-freq F`` with M × world_size × F as close to ``tokens_per_update`` as whole
    numbers allow and M no larger than the config's ``max_tokens`` (the per-GPU memory budget): F is the fewest
    accumulation steps that fit, M the even share of each. Returns (flags, a line saying so for the log)."""
    for name, v in (("tokens per update", tokens_per_update), ("--max-tokens", max_tokens), ("world size", world_size)):
        if v < 1:
            raise ValueError(f"{name} must be a positive integer, found {v}")
    freq = math.ceil(tokens_per_update / (max_tokens * world_size))
    per_gpu = math.ceil(tokens_per_update / (world_size * freq))
    got = per_gpu * world_size * freq
    message = (f"batch: {tokens_per_update} tokens per update (the paper's) = --max-tokens {per_gpu} × {world_size} "
               f"GPU{'s' if world_size > 1 else ''} × --update-freq {freq}" + (f" (= {got})" if got != tokens_per_update else ""))
    return ["--max-tokens", str(per_gpu), "--update-freq", str(freq)], message


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise ValueError(f"--distributed-world-size: expected a positive integer, found {text!r}")
    return int(text)


def world_size_of(train_args: Sequence[str]) -> int:
    """The number of training processes: ``--distributed-world-size N`` among the flags, else the CUDA devices
    fairseq would use (all visible ones), else 1 (CPU)."""
    args = list(train_args)
    for i, a in enumerate(args):
        if a == "--distributed-world-size" and i + 1 < len(args):
            return _positive(args[i + 1])
        if a.startswith("--distributed-world-size="):
            return _positive(a.split("=", 1)[1])
    try:
        import torch  # heavy: only when the world size is not given

        return max(1, torch.cuda.device_count())
    except Exception:  # noqa: BLE001  (no torch, no CUDA driver: one CPU process)
        return 1
