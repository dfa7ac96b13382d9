"""Loading a trained model for a figure: a fairseq checkpoint with its task on a data-bin folder."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Optional, Union

PathLike = Union[str, os.PathLike]


def load_model_and_task(path: PathLike, data: PathLike, device: Optional[str] = None):
    """A fairseq checkpoint's model (first of the ensemble, on ``device``: default CUDA when available) and its
    task reading ``data`` (a data-bin folder of syntrans-preprocess); errors name the file."""
    import pickle

    import torch
    from fairseq import checkpoint_utils

    import syntrans  # noqa: F401  (registers the task, model and criterion; allow-lists checkpoint classes)

    path, data = Path(path), Path(data)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such checkpoint file")
    if not data.is_dir():
        raise FileNotFoundError(f"{data}: no such data directory (expected a data-bin folder of syntrans-preprocess)")
    try:
        models, _cfg, task = checkpoint_utils.load_model_ensemble_and_task([str(path)], arg_overrides={"data": str(data)})
    except (RuntimeError, KeyError, EOFError, pickle.UnpicklingError) as e:
        raise ValueError(f"{path}: cannot load this checkpoint ({type(e).__name__}: {e})") from e
    model = models[0]
    model.to(device or ("cuda" if torch.cuda.is_available() else "cpu"))
    return model, task
