"""Checkpoint files that do not load name themselves, and the checkpoints that could be used instead.

fairseq reads every checkpoint through ``fairseq.checkpoint_utils.load_checkpoint_to_cpu`` (fairseq-train's resume
from ``checkpoint_last.pt`` or ``--restore-file``, fairseq-generate's ``--path``, the model loading of syntrans'
commands). A file torch cannot read (cut short by a run killed while writing it, a full disk) makes torch raise a
message without the path. :func:`install`, run when the plugin registers, wraps that function so that such an error
(:class:`CheckpointReadError`) names the file and the other checkpoints of its folder, newest first, with the
``--restore-file`` flag that resumes from one of them. Errors of torch's safe loader (a checkpoint holding a class
outside the allow-list) keep their own message, with the path in front.
"""
from __future__ import annotations

import functools
import os
import pickle
from typing import List

MAX_LISTED = 5  # other checkpoints named in the message


class CheckpointReadError(RuntimeError):
    """A checkpoint file that cannot be read; the message names it and the checkpoints beside it."""


def other_checkpoints(path: str) -> List[str]:
    """The other ``*.pt`` files of ``path``'s folder that are not empty, newest first."""
    folder = os.path.dirname(os.path.abspath(path))
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    found = []
    for name in names:
        full = os.path.join(folder, name)
        if name.endswith(".pt") and os.path.abspath(full) != os.path.abspath(path) and os.path.isfile(full):
            stat = os.stat(full)
            if stat.st_size:
                found.append((stat.st_mtime, name, full))
    return [full for _, _, full in sorted(found, key=lambda x: (-x[0], x[1]))]


def read_error_message(path: str, error: BaseException) -> str:
    """What :class:`CheckpointReadError` says about ``path``, which raised ``error`` when read."""
    safe_loader = "Weights only load failed" in str(error)
    why = " ".join(str(error).split())  # the safe loader's message ends with the class it refused: kept whole
    why = (why if safe_loader else why[:300]) or "the file ends early"
    what = ("torch's safe loader refuses it" if safe_loader else
            f"the file ({os.path.getsize(path) if os.path.exists(path) else 0} bytes) is cut short or corrupt: a run "
            "killed while writing it, or a full disk")
    others = other_checkpoints(path)
    if others:
        shown = ", ".join(others[:MAX_LISTED]) + (f" and {len(others) - MAX_LISTED} more" if len(others) > MAX_LISTED else "")
        instead = (f"; other checkpoints in its folder, newest first: {shown}. To resume from one, pass "
                   f"--restore-file {others[0]} (fairseq-train), or name it with --path")
    else:
        instead = "; its folder holds no other checkpoint"
    return f"{path}: cannot load this checkpoint: {what} ({type(error).__name__}: {why}){instead}"


def install() -> None:
    """Wrap fairseq's ``load_checkpoint_to_cpu`` (once) so that a file torch cannot read raises
    :class:`CheckpointReadError` naming it (see the module doc)."""
    from fairseq import checkpoint_utils  # lazy: this module is imported when fairseq is

    original = checkpoint_utils.load_checkpoint_to_cpu
    if getattr(original, "names_the_file", False):
        return

    @functools.wraps(original)
    def load_checkpoint_to_cpu(path, *args, **kwargs):
        try:
            return original(path, *args, **kwargs)
        except (RuntimeError, EOFError, pickle.UnpicklingError) as e:
            if isinstance(e, CheckpointReadError) or not _read_error(e):
                raise
            raise CheckpointReadError(read_error_message(str(path), e)) from e

    load_checkpoint_to_cpu.names_the_file = True
    checkpoint_utils.load_checkpoint_to_cpu = load_checkpoint_to_cpu


def _read_error(error: BaseException) -> bool:
    """Whether ``error`` is torch failing to read the file (not an error of fairseq's upgrade of what it read)."""
    if isinstance(error, (EOFError, pickle.UnpicklingError)):
        return True
    text = str(error)
    return any(s in text for s in ("PytorchStreamReader", "zip archive", "corrupted", "Weights only load failed",
                                   "unexpected EOF", "invalid load key"))
