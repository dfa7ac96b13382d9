"""What the ``syntax_translation`` task checks of the checkpoint fairseq-train is about to resume from, where fairseq's
own message is wrong for our case: resuming (a ``checkpoint_last.pt`` in ``--save-dir``, or ``--restore-file``) from a
checkpoint trained on another data-bin. Its embeddings have as many rows as that data-bin's dictionary, and fairseq
says only "please ensure that the architectures match". :func:`check_resume_dictionaries` compares the rows with the
model just built on this data-bin and names the file, the side and both sizes; a checkpoint torch cannot read (cut
short by a run killed while writing it) is named with the checkpoints beside it, before fairseq reads it.

Starting a model from a checkpoint of another model class (a syntax model warm-started from a stock Transformer's,
``--finetune-from-model`` or ``--restore-file`` with the ``--reset-*`` flags): its Transformer must be this run's. The
state dict shows sizes, not everything: a checkpoint of another number of heads, of post-norm layers into pre-norm ones
or with separate embeddings into shared ones loads without complaint and computes something else.
:func:`check_warm_start` compares the Transformer flags the checkpoint was trained with to this run's and names each
that differs; it logs the warm start (the tensors the checkpoint lacks are listed when fairseq loads it:
:mod:`syntrans.models.warm_start`).

All read the command's own config from the root of the task's config (fairseq's ``cfg.checkpoint``, ``cfg.model``),
and do nothing where there is none (a task built outside a fairseq command).

``fairseq-generate --arch X`` with a checkpoint of another architecture: fairseq builds the checkpoint's model and
ignores ``--arch`` (its generation parser takes the flag, default ``wav2vec2``, only for one audio task).
:func:`check_generation_arch` refuses it; ``--model-overrides "{'arch': …}"`` is refused by
:mod:`syntrans.models.overrides`.
"""
from __future__ import annotations

import argparse
import logging
import os
from typing import Any, Dict, Mapping, Optional

logger = logging.getLogger("syntrans.task")

EMBEDDINGS = {"source": "encoder.embed_tokens.weight", "target": "decoder.embed_tokens.weight"}


def command_config(task):
    """What the command's options are read from: the task's config (a dataclass task), else its ``args`` (a legacy
    task such as ``translation_multi_simple_epoch``: the command line's flat Namespace)."""
    cfg = getattr(task, "cfg", None)
    return cfg if cfg is not None else getattr(task, "args", None)


def command_value(task_cfg, key: str) -> Any:
    """``key`` (dotted) of the command's config the task's config belongs to, or None. A group may be an argparse
    Namespace (fairseq keeps the command line's model options so); a whole flat Namespace (a legacy task's ``args``)
    gives the key's last part."""
    if isinstance(task_cfg, argparse.Namespace):
        return getattr(task_cfg, key.rpartition(".")[2], None)
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


def loaded_path(task_cfg) -> Optional[str]:
    """The checkpoint fairseq-train will load, as fairseq chooses it: :func:`resume_path`, else on a first launch
    (no ``checkpoint_last.pt`` yet) ``--finetune-from-model`` when it exists; None otherwise."""
    path = resume_path(task_cfg)
    if path is not None or command_value(task_cfg, "checkpoint.restore_file") != "checkpoint_last.pt":
        return path
    finetune = command_value(task_cfg, "checkpoint.finetune_from_model")
    return finetune if finetune and os.path.isfile(finetune) else None


def _stored_state(path: str) -> Optional[Dict[str, Any]]:
    """The checkpoint's state, memory-mapped (the tensors are not read); None when the file cannot be read this way
    (an old format: fairseq's loader reads it). A file torch cannot read at all raises
    :class:`~syntrans.checkpoints.load_errors.CheckpointReadError`, which names it and the checkpoints beside it."""

    from ..checkpoints.load_errors import CheckpointReadError, is_read_error, read_error_message
    from ..checkpoints.safety import safe_torch_load

    try:
        state = safe_torch_load(path, mmap=True)
    except Exception as error:  # noqa: BLE001 (an old format: left to fairseq's loader; a file torch cannot read)
        if not is_read_error(error):
            return None
        try:
            safe_torch_load(path)  # without mmap: whether torch can read the file at all
        except Exception as again:  # noqa: BLE001 (as above)
            if is_read_error(again):
                raise CheckpointReadError(read_error_message(path, again)) from again
        return None
    return state if isinstance(state, dict) else None


def _stored_embedding_rows(path: str) -> Dict[str, int]:
    """side → rows of the checkpoint's token embeddings; {} when the file cannot be read memory-mapped."""
    state = _stored_state(path) or {}
    model = state.get("model")
    if not isinstance(model, dict):
        return {}
    return {side: int(model[key].shape[0]) for side, key in EMBEDDINGS.items() if key in model}


def check_resume_dictionaries(task, model) -> None:
    """ValueError when fairseq-train is about to resume ``model`` (just built on the task's data-bin) from a checkpoint
    whose token embeddings have another number of rows (module docs)."""
    cfg = command_config(task)
    path = loaded_path(cfg)
    if path is None:
        return
    resuming = path == resume_path(cfg)
    stored = _stored_embedding_rows(path)
    langs = {"source": getattr(cfg, "source_lang", None), "target": getattr(cfg, "target_lang", None)}
    params = dict(model.named_parameters())
    for side, key in EMBEDDINGS.items():
        if side not in stored or key not in params:
            continue
        here = int(params[key].shape[0])
        if stored[side] != here:
            data = command_value(cfg, "task.data") or cfg.data
            raise ValueError(
                f"{path}: fairseq-train would {'resume' if resuming else 'start (--finetune-from-model)'} from this "
                f"checkpoint, but its {side} embeddings have {stored[side]} rows (the dictionary of the data-bin it was "
                f"trained on) and this data-bin's dict.{langs[side]}.txt ({data}) gives {here}: the checkpoint was "
                "trained on another data-bin (fairseq would say only 'please ensure that the architectures match'). "
                + ("Resume with the data-bin it was trained on, or train into another --save-dir" if resuming else
                   "Train on the data-bin it was trained on (its dictionaries)"))
    check_dictionary_words(task, path, resuming)


def _dictionary_words(path: str):
    """The words of a fairseq dictionary file in id order (its first column), or None when it cannot be read."""
    try:
        with open(path, encoding="utf-8") as f:
            return [line.split(" ", 1)[0] for line in f.read().splitlines()]
    except (OSError, UnicodeDecodeError):
        return None


def check_dictionary_words(task, path: str, resuming: bool) -> None:
    """ValueError when the checkpoint ``path`` was trained on a data-bin (the ``task.data`` it stores) whose
    dictionaries hold other words, in other order, than this run's: a dictionary of the same size but other words
    passes the rows check and maps every id to another word (resuming then fails in fairseq's data loader with "please
    report this to the fairseq developers"). Not checked where the stored data-bin is this run's or is gone."""
    state = _stored_state(path)
    if state is None:
        return
    stored_task = _get(state.get("cfg"), "task") if state.get("cfg") is not None else None
    stored_task = stored_task if stored_task is not None else state.get("args")
    stored_data = _get(stored_task, "data") if stored_task is not None else None
    options = getattr(task, "cfg", None) or getattr(task, "args", None)  # a dataclass task's cfg, a legacy task's args
    data = command_value(options, "task.data") or getattr(options, "data", None)
    if not isinstance(stored_data, str) or not isinstance(data, str):
        return
    theirs_dir, ours_dir = stored_data.split(os.pathsep)[0], data.split(os.pathsep)[0]
    if not os.path.isdir(theirs_dir) or os.path.realpath(theirs_dir) == os.path.realpath(ours_dir):
        return
    pair = [(side, getattr(options, f"{side}_lang", None)) for side in ("source", "target")]
    sides = pair if all(lang for _, lang in pair) else [(lang, lang) for lang in getattr(task, "langs", None) or []]
    for side, lang in sides:  # the translation task: source and target; the multilingual task: each language
        theirs_file, ours_file = (os.path.join(d, f"dict.{lang}.txt") for d in (theirs_dir, ours_dir))
        theirs, ours = _dictionary_words(theirs_file), _dictionary_words(ours_file)
        if theirs is None or ours is None or theirs == ours:
            continue
        k = next((i for i, (a, b) in enumerate(zip(theirs, ours)) if a != b), min(len(theirs), len(ours)))
        word = lambda words: repr(words[k]) if k < len(words) else "(the end)"  # noqa: E731
        raise ValueError(
            f"{path}: fairseq-train would {'resume' if resuming else 'start'} from this checkpoint, trained on "
            f"{theirs_dir}, whose {side} dictionary {theirs_file} is not this run's {ours_file}: entry {k + 1} is "
            f"{word(theirs)} there and {word(ours)} here (every id would mean another word, even with as many entries). "
            + ("Resume with the data-bin it was trained on, or train into another --save-dir" if resuming else
               "Train on the data-bin it was trained on (its dictionaries)"))


#: the Transformer flags (fairseq's flat names) a model started from a checkpoint of another model class must share
#: with it: its sizes, and what changes the computation without changing a shape (norm placement, embeddings shared,
#: scaled or positioned otherwise, heads, activation)
TRANSFORMER_FLAGS = (
    "encoder_embed_dim", "encoder_ffn_embed_dim", "encoder_layers", "encoder_attention_heads", "encoder_normalize_before",
    "encoder_learned_pos", "encoder_layers_to_keep", "decoder_embed_dim", "decoder_ffn_embed_dim", "decoder_layers",
    "decoder_attention_heads", "decoder_normalize_before", "decoder_learned_pos", "decoder_layers_to_keep",
    "decoder_input_dim", "decoder_output_dim", "share_all_embeddings", "share_decoder_input_output_embed",
    "layernorm_embedding", "no_scale_embedding", "no_token_positional_embeddings", "activation_fn",
    "cross_self_attention", "no_cross_attention", "adaptive_input", "adaptive_softmax_cutoff", "tie_adaptive_weights",
)


def model_value(model_cfg, name: str):
    """The value of the flat model option ``name`` in a model config as fairseq keeps it: the command line's
    Namespace (flat) or a config with the groups nested (``encoder.embed_dim``); None when it holds none. An option
    of choices gives its value."""
    if model_cfg is None:
        return None
    value = _get(model_cfg, name)
    group, _, field = name.partition("_")
    if value is None and group in ("encoder", "decoder"):
        node = _get(model_cfg, group)
        value = _get(node, field) if node is not None else None
    value = getattr(value, "value", value)  # an enum of choices
    return tuple(value) if isinstance(value, (list, tuple)) else value


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def check_warm_start(task, model, cfg) -> None:
    """When fairseq-train is about to start ``model`` (just built from the model config ``cfg``) from a checkpoint of
    another model class (:func:`loaded_path`; a syntax model from a stock Transformer's): ValueError naming each of
    :data:`TRANSFORMER_FLAGS` the checkpoint was trained with another value of; else a log line saying how many of
    the model's tensors the checkpoint lacks (module docs)."""
    path = loaded_path(command_config(task))
    state = _stored_state(path) if path is not None else None
    if state is None:
        return
    stored = _get(state.get("cfg"), "model") if state.get("cfg") is not None else None
    stored = stored if stored is not None else state.get("args")
    from fairseq.models import ARCH_MODEL_REGISTRY, MODEL_REGISTRY

    arch, name = model_value(stored, "arch"), model_value(stored, "_name")
    stored_class = ARCH_MODEL_REGISTRY.get(arch) or MODEL_REGISTRY.get(name)
    if stored_class is None or type(model) is stored_class:
        return
    differ = []
    for option in TRANSFORMER_FLAGS:
        theirs, ours = model_value(stored, option), model_value(cfg, option)
        if option == "share_decoder_input_output_embed" and model_value(stored, "share_all_embeddings"):
            continue  # implied by --share-all-embeddings (fairseq sets it when it builds the model)
        if theirs is not None and ours is not None and theirs != ours:
            differ.append(f"{_flag(option)}: checkpoint {theirs!r}, this run {ours!r}")
    held = arch or name
    if differ:
        raise ValueError(f"{path}: fairseq-train would start this model from a checkpoint of a {held} model whose "
                         f"Transformer differs from this run's (the tensors' shapes do not show all of it): "
                         f"{'; '.join(differ)}. Give this run the Transformer flags the checkpoint was trained with")
    weights = state.get("model") if isinstance(state.get("model"), dict) else {}
    new = [k for k in model.state_dict() if k not in weights]
    logger.info(f"warm start from {path}, a checkpoint of a {held} model: its Transformer flags are this run's; "
                + (f"{len(new)} tensor of this model is not in it and starts as its method initialises it (listed as "
                   "it is loaded)" if len(new) == 1 else
                   f"{len(new)} tensors of this model are not in it and start as their method initialises them "
                   "(listed as it is loaded)" if new else
                   f"all {len(weights)} of its tensors are this model's, and it has no other (its method adds no "
                   "parameters)"))


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


#: override names the checkpoint decides: the model's class and preset are those it was trained as
CHECKPOINT_DECIDES = ("arch", "_name", "preset")


def decided_message(name: str, architecture: Optional[str] = None) -> str:
    """The refusal of an override of ``name``, one of :data:`CHECKPOINT_DECIDES` (``architecture``: the checkpoint's)."""
    arch = f" ({architecture})" if architecture else ""
    return (f"--model-overrides {name!r}: the checkpoint decides the architecture{arch}: an override cannot change the "
            "model it holds (its parameters are that architecture's); train a model of the other architecture, or "
            "override the options of its methods ({GROUP: {FIELD: VALUE}}, the groups as the model's config names "
            "them)")


def check_decided(overrides: Mapping[str, Any], architecture: Optional[str] = None) -> None:
    """ValueError (:func:`decided_message`) when ``overrides`` name what the checkpoint decides. The task checks this
    before fairseq builds the model: an override of ``_name`` or ``arch`` has by then chosen fairseq's model class
    (``{'_name': 'transformer'}``: a stock Transformer, which fails later on the syntax tensors without a word on
    the cause), so the model's own check (:func:`syntrans.models.overrides.check_overrides`) would never run."""
    for name in overrides:
        if name in CHECKPOINT_DECIDES:
            raise ValueError(decided_message(name, architecture))


def check_decided_overrides(overrides: Dict[str, Any], cfg) -> None:
    """ValueError when the ``--model-overrides`` of the command that loads a checkpoint name what the checkpoint
    decides (:func:`check_decided`), the checkpoint's architecture named (as stored, where the override has not
    replaced it)."""
    held = next((_get(cfg, k) for k in ("preset", "arch", "_name") if k not in overrides and _get(cfg, k)), None)
    check_decided(overrides, held)


__all__ = ["CHECKPOINT_DECIDES", "check_decided", "check_decided_overrides", "decided_message", "check_generation_arch", "check_resume_dictionaries", "check_warm_start", "command_value", "loaded_path",
           "model_value", "resume_path"]
