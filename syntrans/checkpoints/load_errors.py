"""Checkpoint files that do not load name themselves, and the checkpoints that could be used instead.

A file torch cannot read (cut short by a run killed while writing it, a full disk) makes torch raise a message without
the path. syntrans's own readers of checkpoints turn such an error into one that names the file and the other
checkpoints of its folder, newest first, with the ``--restore-file`` flag that resumes from one of them
(:func:`read_error_message`): the scoped loader :func:`syntrans.checkpoints.loading.load_checkpoint` (syntrans-translate,
the figures, the translation API) as a ValueError, and the ``syntax_translation`` task's look at the checkpoint
fairseq-train is about to resume from (:mod:`syntrans.tasks.checkpoint_match`) as a :class:`CheckpointReadError`.
fairseq's own functions are left as they are: ``fairseq.checkpoint_utils.load_checkpoint_to_cpu`` raises torch's
errors, of their own types. Errors of torch's safe loader (a checkpoint holding a class outside the allow-list) keep
their own message, with the path in front.
"""
from __future__ import annotations

import errno
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


def is_read_error(error: BaseException) -> bool:
    """Whether ``error`` is torch failing to read the file (not an error of fairseq's upgrade of what it read): an
    EOFError or UnpicklingError, a RuntimeError of torch's reader or its safe loader, or the OSError "[Errno 22]
    Invalid argument" its zip reader raises for a file cut within its first records (measured: a 2.6 MB checkpoint
    cut to 5–50 kB; other cuts give a RuntimeError)."""
    if isinstance(error, (EOFError, pickle.UnpicklingError)):
        return True
    if isinstance(error, OSError) and error.errno == errno.EINVAL:
        return True
    if not isinstance(error, RuntimeError):
        return False
    text = str(error)
    return any(s in text for s in ("PytorchStreamReader", "zip archive", "corrupted", "Weights only load failed",
                                   "unexpected EOF", "invalid load key"))
