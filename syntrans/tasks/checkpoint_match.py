"""What the ``syntax_translation`` task checks of the checkpoint fairseq-train is about to resume from, where fairseq's
own message is wrong for our case: resuming (a ``checkpoint_last.pt`` in ``--save-dir``, or ``--restore-file``) from a
checkpoint trained on another data-bin. Its embeddings have as many rows as that data-bin's dictionary, and fairseq
says only "please ensure that the architectures match". :func:`check_resume_dictionaries` compares the rows with the
model just built on this data-bin and names the file, the side and both sizes; a checkpoint torch cannot read (cut
short by a run killed while writing it) is named with the checkpoints beside it, before fairseq reads it.

Both read the command's own config from the root of the task's config (fairseq's ``cfg.checkpoint``, ``cfg.model``),
and do nothing where there is none (a task built outside a fairseq command).

``fairseq-generate --arch X`` with a checkpoint of another architecture: fairseq builds the checkpoint's model and
ignores ``--arch`` (its generation parser takes the flag, default ``wav2vec2``, only for one audio task).
:func:`check_generation_arch` refuses it; ``--model-overrides "{'arch': …}"`` is refused by
:mod:`syntrans.models.overrides`.
"""
from __future__ import annotations

import os
from typing import Any, Dict, Optional

EMBEDDINGS = {"source": "encoder.embed_tokens.weight", "target": "decoder.embed_tokens.weight"}


def command_value(task_cfg, key: str) -> Any:
    """``key`` (dotted) of the command's config the task's config belongs to, or None. A group may be an argparse
    Namespace (fairseq keeps the command line's model options so)."""
    try:
        from omegaconf import DictConfig

        if not isinstance(task_cfg, DictConfig):
            return None
        node: Any = task_cfg._get_root()
        for part in key.split("."):
            if node is None:
                return None
            node = node.get(part) if isinstance(node, DictConfig) else getattr(node, part, None)
        return node
    except Exception:  # noqa: BLE001 (no root, an interpolation that does not resolve: nothing to check)
        return None


def resume_path(task_cfg) -> Optional[str]:
    """The checkpoint fairseq-train will resume from, as fairseq finds it (``--restore-file``, default
    ``checkpoint_last.pt`` in ``--save-dir``), when it exists; None otherwise."""
    save_dir, restore = command_value(task_cfg, "checkpoint.save_dir"), command_value(task_cfg, "checkpoint.restore_file")
    if not save_dir or not restore:
        return None
    suffix = command_value(task_cfg, "checkpoint.checkpoint_suffix") or ""
    if restore == "checkpoint_last.pt":
        path = os.path.join(save_dir, f"checkpoint_last{suffix}.pt")
    else:
        path = restore if suffix in ("", None) else restore.replace(".pt", f"{suffix}.pt")
    return path if os.path.isfile(path) else None


def _stored_embedding_rows(path: str) -> Dict[str, int]:
    """side → rows of the checkpoint's token embeddings (memory-mapped: the tensors are not read); {} when the file
    cannot be read this way (an old format: fairseq's loader reads it). A file torch cannot read at all raises
    :class:`~syntrans.checkpoints.load_errors.CheckpointReadError`, which names it and the checkpoints beside it."""
    import torch

    from ..checkpoints.load_errors import CheckpointReadError, is_read_error, read_error_message
    from ..checkpoints.safety import allow_fairseq_checkpoint_globals

    kwargs: Dict[str, Any] = {"map_location": "cpu"}
    if hasattr(torch.serialization, "add_safe_globals"):
        allow_fairseq_checkpoint_globals()
        kwargs["weights_only"] = True
    try:
        state = torch.load(path, mmap=True, **kwargs)
    except Exception as error:  # noqa: BLE001 (an old format: left to fairseq's loader; a file torch cannot read)
        if not is_read_error(error):
            return {}
        try:
            torch.load(path, **kwargs)  # without mmap: whether torch can read the file at all
        except Exception as again:  # noqa: BLE001 (as above)
            if is_read_error(again):
                raise CheckpointReadError(read_error_message(path, again)) from again
        return {}
    model = state.get("model") if isinstance(state, dict) else None
    if not isinstance(model, dict):
        return {}
    return {side: int(model[key].shape[0]) for side, key in EMBEDDINGS.items() if key in model}


def check_resume_dictionaries(task, model) -> None:
    """ValueError when fairseq-train is about to resume ``model`` (just built on the task's data-bin) from a checkpoint
    whose token embeddings have another number of rows (module docs)."""
    path = resume_path(task.cfg)
    if path is None:
        return
    stored = _stored_embedding_rows(path)
    langs = {"source": task.cfg.source_lang, "target": task.cfg.target_lang}
    params = dict(model.named_parameters())
    for side, key in EMBEDDINGS.items():
        if side not in stored or key not in params:
            continue
        here = int(params[key].shape[0])
        if stored[side] != here:
            data = command_value(task.cfg, "task.data") or task.cfg.data
            raise ValueError(
                f"{path}: fairseq-train would resume from this checkpoint, but its {side} embeddings have {stored[side]} "
                f"rows (the dictionary of the data-bin it was trained on) and this data-bin's dict.{langs[side]}.txt "
                f"({data}) gives {here}: the checkpoint was trained on another data-bin (fairseq would say only "
                "'please ensure that the architectures match'). Resume with the data-bin it was trained on, or train "
                "into another --save-dir")


#: the default of fairseq-generate's ``--arch`` (fairseq_cli.generate): not a choice the user made
GENERATE_ARCH_DEFAULT = "wav2vec2"


def _get(cfg, key: str):
    return cfg.get(key) if hasattr(cfg, "get") else getattr(cfg, key, None)


def check_generation_arch(task, cfg) -> None:
    """ValueError when the command that loads a checkpoint (fairseq-generate) was given ``--arch`` naming another
    architecture than the checkpoint's model config ``cfg`` (fairseq builds the checkpoint's and ignores it)."""
    asked = command_value(task.cfg, "model.arch") or command_value(task.cfg, "model._name")
    names = {_get(cfg, "arch"), _get(cfg, "_name"), _get(cfg, "preset")} - {None}
    if not asked or asked == GENERATE_ARCH_DEFAULT or not names or asked in names:
        return
    held = _get(cfg, "preset") or _get(cfg, "arch") or _get(cfg, "_name")
    raise ValueError(f"--arch {asked}: the checkpoint holds a model of architecture {held}, which is what a checkpoint "
                     "is loaded as (fairseq would ignore --arch without a word): leave out --arch, or load a checkpoint "
                     f"of a {asked} model")


__all__ = ["check_generation_arch", "check_resume_dictionaries", "command_value", "resume_path"]
