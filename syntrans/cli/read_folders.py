"""No command writes over a file inside a folder it reads (a ``--data`` data-bin, a ``--destdir``, a ``--save-dir``).

``syntrans-translate --output DATA/dict.src.txt`` wrote its translations over the data-bin's dictionary: that run
ended with exit 0 and every later run failed on "Incorrect dictionary format" naming no file. The outputs are checked
against every folder the command reads before anything is loaded or written (:func:`check_outputs_outside`).
"""
from __future__ import annotations

import os
from typing import Mapping, Optional


def _inside(path: str, folder: str) -> bool:
    path, folder = os.path.realpath(path), os.path.realpath(folder)
    return os.path.commonpath([path, folder]) == folder and path != folder


def check_outputs_outside(outputs: Mapping[str, Optional[str]], folders: Mapping[str, Optional[str]], prog: str
                          ) -> None:
    """ValueError when an output (flag → path; None or '-' for none) is a file that exists inside one of the
    ``folders`` the command reads (flag → folder), naming both and what to do."""
    for flag, path in outputs.items():
        if not path or path == "-" or not os.path.lexists(path):
            continue
        for where, folder in folders.items():
            if folder and os.path.isdir(folder) and _inside(path, folder):
                raise ValueError(f"{flag} {path}: a file of {where} {folder}, which {prog} reads; it never writes over a "
                                 f"file in a folder it reads (found {os.path.basename(path)} there): choose a path "
                                 "outside it")


__all__ = ["check_outputs_outside"]
