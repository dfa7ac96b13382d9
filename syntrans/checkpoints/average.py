"""Checkpoint averaging: the element-wise mean of the parameters of several fairseq checkpoints.

fairseq's ``scripts/average_checkpoints.py`` is not installed with the package; this is our own version
(``syntrans-average-checkpoints``). Floating-point tensors are summed in float32 (float64 stays float64) and
the mean is cast back to the dtype of the last checkpoint's tensor; integer and boolean tensors (counters,
buffers) cannot be averaged and must be equal in every checkpoint. The checkpoints' model configs must be equal too
(methods without parameters of their own, e.g. distance-mask and PASCAL heads, give models of the same parameters)
when the caller gives how to read them (``config_fields``: :func:`syntrans.models.config_fields.model_fields`, which
stands above this package): the first differing field is named. Everything else (``cfg``, ``args``,
``extra_state``, optimizer history) is the last checkpoint's, so the result loads wherever that one does
(fairseq-generate, resuming). Checkpoints load with torch's weights-only loader and the allow-list of
:mod:`syntrans.checkpoints.safety`, never with the global unsafe switch.
"""
from __future__ import annotations

import collections
import os
import pickle
import re
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import torch

from ..atomic_write import atomic_path
from .load_errors import is_read_error, read_error_message
from .safety import safe_torch_load

EPOCH_CHECKPOINT = re.compile(r"^checkpoint(\d+)\.pt$")  # checkpoint{epoch}.pt
UPDATE_CHECKPOINT = re.compile(r"^checkpoint_\d+_(\d+)\.pt$")  # checkpoint_{epoch}_{update}.pt


def load_checkpoint_safely(path: str) -> Dict:
    """A fairseq checkpoint's state dict on the CPU, loaded weights-only with the fairseq allow-list.

    torch < 2.4 has no allow-list: there the checkpoint loads as fairseq itself loads it.
    """
    if not os.path.isfile(path):
        found = "a directory" if os.path.isdir(path) else "nothing"
        raise FileNotFoundError(f"{path}: expected a checkpoint file, found {found}")
    try:
        state = safe_torch_load(path)
    except (pickle.UnpicklingError, RuntimeError, EOFError, ValueError, OSError) as e:
        if isinstance(e, OSError) and is_read_error(e):  # cut short ("[Errno 22]"): named, with the checkpoints beside it
            raise ValueError(read_error_message(path, e)) from e
        why = " ".join(str(e).split())[:400]
        raise ValueError(f"{path}: cannot load this checkpoint ({type(e).__name__}: {why})") from e
    if not isinstance(state, dict) or not isinstance(state.get("model"), dict):
        raise ValueError(f"{path}: not a fairseq checkpoint (expected a dict with a 'model' state dict, found "
                         f"{type(state).__name__}{' without one' if isinstance(state, dict) else ''})")
    return state


def last_checkpoints(directory: str, n: int, by_update: bool = False, upper_bound: Optional[int] = None) -> List[str]:
    """The last ``n`` epoch checkpoints (``checkpoint{E}.pt``) of ``directory``, or update checkpoints
    (``checkpoint_{E}_{U}.pt``) with ``by_update``, oldest first; numbers above ``upper_bound`` are left out."""
    if n < 1:
        raise ValueError(f"the number of checkpoints to average must be at least 1, found {n}")
    if not os.path.isdir(directory):
        raise FileNotFoundError(f"{directory}: expected a directory of checkpoints, found "
                                f"{'a file' if os.path.exists(directory) else 'nothing'}")
    pattern = UPDATE_CHECKPOINT if by_update else EPOCH_CHECKPOINT
    found = []
    for name in os.listdir(directory):
        m = pattern.match(name)
        if m and (upper_bound is None or int(m.group(1)) <= upper_bound):
            found.append((int(m.group(1)), name))
    kind = "checkpoint_{epoch}_{update}.pt" if by_update else "checkpoint{epoch}.pt"
    if len(found) < n:
        bound = f" at most {upper_bound}" if upper_bound is not None else ""
        raise ValueError(f"{directory}: {n} checkpoints {kind}{bound} were asked for, found {len(found)}")
    return [os.path.join(directory, name) for _, name in sorted(found)[-n:]]


def stored_model_config(state: Dict) -> Optional[Any]:
    """The model config a checkpoint holds as stored (``cfg["model"]``, or the ``args`` of a checkpoint without a
    ``cfg``); None when it holds neither."""
    cfg = state.get("cfg")
    model = cfg.get("model") if hasattr(cfg, "get") else None
    return model if model is not None else state.get("args")


def config_difference(a: Dict[str, Any], b: Dict[str, Any]) -> Optional[Tuple[str, Any, Any]]:
    """(field, value in a, value in b) of the first field where two read configs (``config_fields``) differ, or None (a field one
    lacks has the value ``<absent>`` there)."""
    for key in list(a) + [k for k in b if k not in a]:
        va, vb = a.get(key, "<absent>"), b.get(key, "<absent>")
        if va != vb:
            return key, va, vb
    return None


def _accumulator_dtype(dtype: torch.dtype) -> torch.dtype:
    return torch.float64 if dtype == torch.float64 else torch.float32


def average_checkpoints(paths: Sequence[str], config_fields: Optional[Callable[[Any], Dict[str, Any]]] = None) -> Dict:
    """The last checkpoint's state with ``model`` replaced by the mean of every checkpoint's ``model``.

    Errors (ValueError) name the file: a model config that differs from the first checkpoint's (its first differing
    field of ``config_fields``, which reads a stored model config into dotted name → value; not checked when None),
    keys missing or extra compared with the first checkpoint, a shape that differs, an integer or boolean entry that
    differs.
    """
    if not paths:
        raise ValueError("no checkpoints to average")
    first = paths[0]
    sums: Dict[str, torch.Tensor] = collections.OrderedDict()  # float: running sum; other: the first's value
    state: Dict = {}
    first_config = None
    for k, path in enumerate(paths):
        state = load_checkpoint_safely(path)
        params = state["model"]
        stored = None if config_fields is None else stored_model_config(state)
        try:
            config = None if stored is None else config_fields(stored)
        except ValueError as e:
            raise ValueError(f"{path}: its model config does not read: {e}") from None
        if k == 0:
            first_config = config
        elif first_config is not None and config is not None:
            diff = config_difference(first_config, config)
            if diff:
                field, was, found = diff
                raise ValueError(f"{path}: its model config differs from {first}'s at {field} ({found!r} here, {was!r} "
                                 "there): checkpoints of different models can have the same parameters without meaning "
                                 "the same (e.g. heads of parameter-free methods); average checkpoints of one model, or "
                                 "pass --allow-different-config to average them anyway (the config is the last one's)")
        if not sums:
            for key, value in params.items():
                if not torch.is_tensor(value):
                    raise ValueError(f"{path}: model entry {key} is a {type(value).__name__}, expected a tensor")
                sums[key] = value.to(_accumulator_dtype(value.dtype)).clone() if value.is_floating_point() else value
            continue
        missing, extra = [k for k in sums if k not in params], [k for k in params if k not in sums]
        if missing or extra:
            parts = [f"lacks {len(missing)} parameter(s) that {first} has: {', '.join(missing[:5])}" if missing else "",
                     f"has {len(extra)} parameter(s) that {first} lacks: {', '.join(extra[:5])}" if extra else ""]
            raise ValueError(f"{path}: its model {' and '.join(p for p in parts if p)}; only checkpoints of the same "
                             "architecture can be averaged")
        for key, acc in sums.items():
            value = params[key]
            if not torch.is_tensor(value) or value.shape != acc.shape:
                found = tuple(value.shape) if torch.is_tensor(value) else type(value).__name__
                raise ValueError(f"{path}: parameter {key} has shape {found}, {first} has {tuple(acc.shape)}")
            if acc.is_floating_point() != value.is_floating_point():
                raise ValueError(f"{path}: parameter {key} is {value.dtype}, {first} has {acc.dtype}")
            if acc.is_floating_point():
                acc.add_(value.to(acc.dtype))
            elif not torch.equal(acc, value):
                raise ValueError(f"{path}: integer entry {key} ({value.dtype}) differs from {first}'s; integer and "
                                 "boolean tensors cannot be averaged and must be equal in every checkpoint")
    last = state["model"]
    averaged = collections.OrderedDict()
    for key, acc in sums.items():
        averaged[key] = acc.div(len(paths)).to(last[key].dtype) if acc.is_floating_point() else last[key]
    state["model"] = averaged
    return state


def save_checkpoint(state: Dict, path: str) -> None:
    """``torch.save`` through a temporary file, so that a failed write leaves no half-written checkpoint."""
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise FileNotFoundError(f"{path}: the output directory {directory} does not exist")
    with atomic_path(path) as tmp:
        torch.save(state, tmp)
