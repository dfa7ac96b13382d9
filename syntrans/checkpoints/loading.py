"""Loading a trained model: a fairseq checkpoint with its task on a data-bin folder, as fairseq-generate loads it,
with torch's safe loader (the allow-list of :mod:`syntrans.checkpoints.safety`)."""
from __future__ import annotations

import os
import pickle
from typing import Any, Dict, Optional, Tuple, Union

import torch
from fairseq import checkpoint_utils

from .load_errors import is_read_error, read_error_message

# the task, models and checkpoint allow-list are registered by ``syntrans/__init__.py`` (it imports the plugin
# whenever fairseq imports), which runs before any module of this package

PathLike = Union[str, os.PathLike]


def resolve_device(device: Optional[str]) -> str:
    """``device`` checked against this machine (None: CUDA when available, else CPU): ValueError for a device torch
    cannot name or a CUDA device on a machine without one, before anything is loaded."""
    if device is None:
        return "cuda" if torch.cuda.is_available() else "cpu"
    try:
        parsed = torch.device(device)
    except (RuntimeError, TypeError) as e:
        raise ValueError(f"--device {device}: expected cpu, cuda or cuda:N ({' '.join(str(e).split())[:200]})") from None
    if parsed.type == "cuda":
        if not torch.cuda.is_available():
            raise ValueError(f"--device {device}: torch sees no CUDA device on this machine (torch.cuda.is_available() "
                             "is False): expected --device cpu, or a machine with a GPU and a CUDA build of torch")
        if parsed.index is not None and parsed.index >= torch.cuda.device_count():
            raise ValueError(f"--device {device}: this machine has {torch.cuda.device_count()} CUDA device(s), "
                             f"numbered from 0")
    return device


def load_checkpoint(path: PathLike, data: PathLike, source_lang: Optional[str] = None, target_lang: Optional[str] = None,
                    overrides: Optional[Dict[str, Any]] = None, device: Optional[str] = None) -> Tuple[Any, Any, Any]:
    """(model, cfg, task) of the checkpoint ``path``: its model (the first of the ensemble) on ``device`` (default
    CUDA when available, else CPU), its config, and its task reading the dictionaries in ``data`` (a data-bin folder).

    ``source_lang``/``target_lang`` default to the checkpoint's task config; ``overrides`` are the model's
    overrides as fairseq-generate's ``--model-overrides`` takes them, a mechanism's fields nested
    (``{'lisa': {'gold_parents': True}}``) or by their flat names (``lisa_gold_parents``); the model applies them
    through its config's one adapter. Building the model fills the
    ``syntax_translation`` task's requests (the features the model asks for). Errors name the file:
    FileNotFoundError for a missing checkpoint, data folder or dictionary, ValueError for a device this machine lacks
    (:func:`resolve_device`) or a file that does not load
    (one torch cannot read also names the checkpoints beside it: :mod:`syntrans.checkpoints.load_errors`).
    """
    path, data = os.fspath(path), os.fspath(data)
    device = resolve_device(device)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path}: no such checkpoint file (expected a fairseq checkpoint file, found "
                                f"{'a directory' if os.path.isdir(path) else 'nothing'})")
    if not os.path.isdir(data):
        raise FileNotFoundError(f"{data}: no such data directory (expected a data-bin folder of fairseq-preprocess or "
                                f"syntrans-preprocess with dict.*.txt, found {'a file' if os.path.exists(data) else 'nothing'})")
    # the model overrides reach the model's build as --model-overrides do (the task's common_eval.model_overrides)
    arg_overrides: Dict[str, Any] = {"data": data, "model_overrides": repr(dict(overrides or {}))}
    if source_lang:
        arg_overrides["source_lang"] = source_lang
    if target_lang:
        arg_overrides["target_lang"] = target_lang
    try:
        models, cfg, task = checkpoint_utils.load_model_ensemble_and_task([path], arg_overrides=arg_overrides)
    except FileNotFoundError as e:  # a dictionary missing in data
        raise FileNotFoundError(f"{path} with data {data}: {e}") from None
    except (RuntimeError, KeyError, EOFError, pickle.UnpicklingError, OSError) as e:  # OSError: a cut file (Errno 22)
        if is_read_error(e):  # a file torch cannot read: named, with the checkpoints beside it
            raise ValueError(read_error_message(path, e)) from e
        why = " ".join(str(e).split())[:500]
        raise ValueError(f"{path}: cannot load this checkpoint ({type(e).__name__}: {why})") from e
    model = models[0]
    model.to(device)
    return model, cfg, task
