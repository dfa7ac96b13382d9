"""The Transformer flags a checkpoint was trained with, as command-line flags: what a run that starts a syntax model
from a released model (mBART-50, M2M-100, NLLB-200) gives fairseq-train beside its method's flags, read from the
checkpoint's own config rather than assumed (``python -m syntrans.cli.checkpoint_flags CHECKPOINT``).

The flags are those the warm start compares (:data:`~syntrans.tasks.checkpoint_match.TRANSFORMER_FLAGS`), and the
maximum positions where positions are learned (they size the position table); a flag at the syntax model's default
(an unset switch, no value, the decoder's input and output dimension equal to its embedding dimension) is left out.
"""
from __future__ import annotations

from typing import Any, List, Optional, Tuple

from .checkpoint_match import TRANSFORMER_FLAGS, _flag, _get, _stored_state, model_value

POSITIONS = ("max_source_positions", "max_target_positions")


def stored_model_config(path: str) -> Tuple[Any, Optional[str]]:
    """(the model config the checkpoint stores: a config's ``model`` group or the legacy ``args``, its model class
    name ``_name`` or None). ValueError when the file holds neither."""
    state = _stored_state(path)
    if state is None:
        from fairseq import checkpoint_utils

        state = checkpoint_utils.load_checkpoint_to_cpu(path)
    stored = _get(state.get("cfg"), "model") if state.get("cfg") is not None else None
    stored = stored if stored is not None else state.get("args")
    if stored is None:
        raise ValueError(f"{path}: the checkpoint stores no model config (neither cfg.model nor args)")
    name = model_value(stored, "_name")
    return stored, (name if isinstance(name, str) else None)


def transformer_flags(path: str) -> List[str]:
    """The Transformer flags checkpoint ``path`` was trained with (module docs), in :data:`TRANSFORMER_FLAGS`
    order."""
    stored, _ = stored_model_config(path)
    out: List[str] = []
    learned = model_value(stored, "encoder_learned_pos") or model_value(stored, "decoder_learned_pos")
    for option in TRANSFORMER_FLAGS + (POSITIONS if learned else ()):
        value = model_value(stored, option)
        if value is None or value is False or isinstance(value, tuple):
            continue
        if option == "share_decoder_input_output_embed" and model_value(stored, "share_all_embeddings"):
            continue  # implied
        if option in ("decoder_input_dim", "decoder_output_dim") and value == model_value(stored, "decoder_embed_dim"):
            continue  # the default (and no flag of a config-built Transformer)
        out += [_flag(option)] if value is True else [_flag(option), str(value)]
    return out


__all__ = ["stored_model_config", "transformer_flags"]
