"""Loading a fairseq checkpoint with its task for translation, as fairseq-generate does, with torch's safe loader."""
from __future__ import annotations

import os
import pickle
from typing import Any, Dict, Optional, Tuple


def load_for_generation(checkpoint: str, data: str, source_lang: Optional[str] = None, target_lang: Optional[str] = None,
                        overrides: Optional[Dict[str, Any]] = None) -> Tuple[Any, Any, Any]:
    """(model, cfg, task) of ``checkpoint``, its task reading the dictionaries in ``data`` (a data-bin folder).

    ``source_lang``/``target_lang`` default to the checkpoint's task config; ``overrides`` are more
    ``arg_overrides`` (as fairseq-generate's ``--model-overrides``). Building the model fills the
    ``syntax_translation`` task's requests (the features the model asks for). Errors name the file.
    """
    from fairseq import checkpoint_utils

    import syntrans  # noqa: F401  (registers the task and models; allow-lists the checkpoint classes for torch's safe loader)

    if not os.path.isfile(checkpoint):
        raise FileNotFoundError(f"{checkpoint}: expected a fairseq checkpoint file, found "
                                f"{'a directory' if os.path.isdir(checkpoint) else 'nothing'}")
    if not os.path.isdir(data):
        raise FileNotFoundError(f"{data}: expected a data-bin folder (fairseq-preprocess or syntrans-preprocess output "
                                f"with dict.*.txt), found {'a file' if os.path.exists(data) else 'nothing'}")
    arg_overrides: Dict[str, Any] = {"data": data, **(overrides or {})}
    if source_lang:
        arg_overrides["source_lang"] = source_lang
    if target_lang:
        arg_overrides["target_lang"] = target_lang
    try:
        models, cfg, task = checkpoint_utils.load_model_ensemble_and_task([checkpoint], arg_overrides=arg_overrides)
    except FileNotFoundError as e:  # a dictionary missing in data
        raise FileNotFoundError(f"{checkpoint} with data {data}: {e}") from None
    except (RuntimeError, KeyError, EOFError, pickle.UnpicklingError) as e:
        why = " ".join(str(e).split())[:500]
        raise ValueError(f"{checkpoint}: cannot load this checkpoint ({type(e).__name__}: {why})") from e
    return models[0], cfg, task
