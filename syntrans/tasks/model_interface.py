"""What the ``syntax_translation`` task and a syntax model ask of each other, declared once.

* The task asks a model for the batch features it reads (:meth:`SyntaxModel.syntax_needs`), tells it fairseq's
  epoch (:meth:`SyntaxModel.set_epoch`) and whether a checkpoint it loads may lack its syntax parameters
  (:meth:`SyntaxModel.allow_warm_start`: a model built to train); a model that is not a :class:`SyntaxModel` (e.g.
  fairseq's own Transformer) reads no syntax.
* A model, when it is built, asks a :class:`SyntaxTask` for the range of a feature's values over the training split
  (:func:`value_ranges`) and for the ``--model-overrides`` of the command that loads it (:func:`model_overrides`); a
  task that is not one (e.g. fairseq's own translation task) has neither.
"""
from __future__ import annotations

import ast
from typing import Any, Callable, Dict, Tuple

from ..data.features import FeatureNeeds


class SyntaxModel:
    """A model whose batches carry syntax features (mixed into a fairseq model class)."""

    def syntax_needs(self) -> FeatureNeeds:
        """The batch features (``net_input`` keys) the model reads, by when it needs them."""
        raise NotImplementedError

    def set_epoch(self, epoch: int) -> None:
        """fairseq's epoch (1-based), at every epoch start, a resumed one included (warm-ups)."""

    #: whether a checkpoint it loads may lack its syntax parameters (a warm start): :meth:`allow_warm_start`
    warm_start_allowed: bool = False

    def allow_warm_start(self) -> None:
        """Said by the task of a model built to train (not from a checkpoint): a checkpoint it loads may lack the
        syntax parameters, which then start as their method initialises them. A model built from a checkpoint
        (generation) loads only a checkpoint that has them all."""
        self.warm_start_allowed = True


class SyntaxTask:
    """A task whose data carries syntax sidecars (mixed into a fairseq task class)."""

    def value_range(self, side: str, feature: str) -> Tuple[int, int]:
        """(smallest, largest) value of batch feature ``feature`` on ``side`` over the training split."""
        raise NotImplementedError

    def model_overrides_text(self) -> str:
        """The ``--model-overrides`` of the command that loads a checkpoint, as given ('' if none)."""
        raise NotImplementedError


def value_ranges(task, who: str) -> Callable[[str, str], Tuple[int, int]]:
    """``value_range(side, feature) → (min, max)`` of ``task`` over its training split; for another task, a function
    that raises, naming ``who`` needs the range."""
    if isinstance(task, SyntaxTask):
        return task.value_range

    def unknown(side: str, feature: str) -> Tuple[int, int]:
        raise ValueError(f"{who} needs the range of {feature} over the training split: build the model with "
                         f"--task syntax_translation (found {type(task).__name__}), or give the range in the config")

    return unknown


def model_overrides(task) -> Dict[str, Any]:
    """The ``--model-overrides`` of the command that builds the model from a checkpoint (fairseq-generate,
    fairseq-validate, syntrans-translate), as a dict; {} for a new model and for other tasks."""
    if not isinstance(task, SyntaxTask):
        return {}
    text = task.model_overrides_text()
    if not text:
        return {}
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError) as e:
        raise ValueError("--model-overrides: expected a Python dict such as \"{'<key>': {'<field>': value}}\" (a "
                         "mechanism's field nested, or '<key>_<field>': value), "
                         f"found {text!r} ({e})") from None
    if not isinstance(value, dict):
        raise ValueError(f"--model-overrides: expected a Python dict, found {text!r}")
    return value


__all__ = ["SyntaxModel", "SyntaxTask", "model_overrides", "value_ranges"]
