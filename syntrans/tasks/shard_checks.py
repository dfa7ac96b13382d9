"""Checks of how fairseq deals a split's batches to the training processes (``--distributed-world-size W``).

fairseq builds one list of batches, the same in every process, and deals batch i to process i mod W; a
process whose share is one short runs a dummy batch (the list's first, with its gradient and statistics
ignored). A number of batches that W does not divide is therefore harmless, and so is a process without a
batch of its own. Two cases are not:

- ``--skip-remainder-batch`` drops the last batch of each process's share: with at most one batch per
  process no epoch has an update, and fairseq fails with ``UnboundLocalError: … 'valid_losses'``;
- processes that read different data (e.g. nodes with different copies of the data-bin) build different
  lists, and their collective operations stop matching: gloo aborts with "Received data size doesn't match
  expected size", NCCL may wait until its timeout. :func:`check_same_data` compares them first.
"""
from __future__ import annotations

import logging
import math
from typing import List, Optional, Set, Tuple

import numpy as np
import torch
import torch.distributed as dist
from fairseq.data.iterators import EpochBatchIterator
from fairseq.distributed import utils as distributed_utils

logger = logging.getLogger("syntrans.task")
_noted: Set[Tuple[str, int, int]] = set()  # (split, batches, processes) already logged: once per process


def share_error(split: str, n_batches: int, world_size: int, skip_remainder: bool) -> Optional[str]:
    """Why ``n_batches`` dealt to ``world_size`` processes cannot train (None when they can)."""
    if skip_remainder and math.ceil(n_batches / world_size) <= 1:
        each = f"each of the {world_size} processes gets" if world_size > 1 else "the one process gets"
        return (f"split {split}: {each} at most one of the {n_batches} batch{'es' if n_batches != 1 else ''}, and "
                "--skip-remainder-batch drops it: no epoch would have an update. Use a smaller --max-tokens/"
                "--batch-size, fewer processes, or no --skip-remainder-batch")
    return None


def _processes(first: int, last: int) -> str:
    return f"process {first}" if first == last else f"processes {first}..{last}"


def share_note(split: str, n_batches: int, world_size: int) -> Optional[Tuple[int, str]]:
    """(logging level, message) when ``world_size`` does not divide ``n_batches`` (None when it does): a warning
    when some processes get no batch of their own at all, else a note on the short last step."""
    short = n_batches % world_size
    if not short:
        return None
    if n_batches < world_size:
        return logging.WARNING, (
            f"split {split}: {n_batches} batch{'es' if n_batches != 1 else ''} for {world_size} processes: no batch "
            f"of their own for {_processes(n_batches, world_size - 1)}, only fairseq's dummy batch (ignored); a "
            "smaller --max-tokens/--batch-size (or --max-tokens-valid/--batch-size-valid) gives every process data")
    return logging.INFO, (
        f"split {split}: {n_batches} batches over {world_size} processes: in the last step of each pass, "
        f"{_processes(short, world_size - 1)} run{'s' if short == world_size - 1 else ''} fairseq's dummy batch "
        "(ignored)")


def data_fingerprint(dataset, n_batches: int) -> List[int]:
    """[sentences, tokens (source + target), batches] of one process's view of a split."""
    try:
        tokens = int(np.asarray(dataset.sizes, dtype=np.int64).sum())
    except (AttributeError, NotImplementedError):  # a dataset without sizes: compare the rest
        tokens = -1
    return [len(dataset), tokens, n_batches]


def mismatch_error(split: str, rows: List[List[int]]) -> Optional[str]:
    """Why the per-process fingerprints ``rows`` (one per process) do not describe one split (None if they do)."""
    if all(r == rows[0] for r in rows):
        return None
    table = "; ".join(f"process {i}: {s} sentences, {t} tokens, {b} batches" for i, (s, t, b) in enumerate(rows))
    return (f"split {split}: the {len(rows)} training processes read different data ({table}); every process "
            "must read the same data-bin (on several nodes: the same copy on each)")


def _gather(row: List[int], group) -> List[List[int]]:
    """Every process's ``row`` (same length everywhere), in process order."""
    device = torch.device("cuda", torch.cuda.current_device()) if dist.get_backend(group) == "nccl" else "cpu"
    mine = torch.tensor(row, dtype=torch.long, device=device)  # (len(row),)
    rows = [torch.empty_like(mine) for _ in range(dist.get_world_size(group))]
    dist.all_gather(rows, mine, group=group)
    return [r.tolist() for r in rows]


def check_shares(split: str, dataset, epoch_iter) -> None:
    """Raise (every process alike) where training cannot go on, say so where the processes' shares differ; called with
    the iterator fairseq's task built. With several processes this is a collective: each process calls it."""
    if not isinstance(epoch_iter, EpochBatchIterator):  # an iterator over a stream: its batches are not known in advance
        return
    n, num_shards = len(epoch_iter.frozen_batches), epoch_iter.num_shards
    if num_shards > 1 and dist.is_available() and dist.is_initialized() and not distributed_utils.use_xla():
        group = distributed_utils.get_data_parallel_group()
        if dist.get_world_size(group) == num_shards:  # fairseq's data-parallel processes (not --num-shards)
            error = mismatch_error(split, _gather(data_fingerprint(dataset, n), group))
            if error:
                raise ValueError(error)
    error = share_error(split, n, num_shards, bool(epoch_iter.skip_remainder_batch))
    if error:
        raise ValueError(error)
    note = share_note(split, n, num_shards)
    if note and (split, n, num_shards) not in _noted:
        _noted.add((split, n, num_shards))
        logger.log(*note)
