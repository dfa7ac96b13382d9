"""fairseq's import, without its side effects on logging (stdlib only: used by ``syntrans/__init__.py``).

Importing fairseq 0.12 configures the root logger from inside library modules: ``logging.basicConfig(level=DEBUG)``
(wav2vec2_classification), ``basicConfig(level=INFO)`` (text_to_speech), and logs "Please install tensorboardX". From
then on every library's debug lines (hydra, matplotlib) reach the terminal. When syntrans is imported first (every
syntrans command, and Python code that imports syntrans before fairseq), fairseq's import runs inside
:func:`fairseq_import_rolled_back`: nothing it logs or warns below WARNING is shown, and the root logger's level and
handlers are put back as they were. ``fairseq-train`` and the other fairseq commands import fairseq first and keep
fairseq's own logging.
"""
from __future__ import annotations

import logging
import warnings
from contextlib import contextmanager
from typing import Iterator


@contextmanager
def fairseq_import_rolled_back() -> Iterator[None]:
    """Run an import with logging below WARNING and every warning silenced; the root logger restored afterwards."""
    root = logging.getLogger()
    level, handlers = root.level, list(root.handlers)
    disabled = logging.root.manager.disable
    logging.disable(logging.INFO)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch.jit.script's deprecation, raised by fairseq's module-level scripting
            yield
    finally:
        logging.disable(disabled)
        for handler in [h for h in root.handlers if h not in handlers]:
            root.removeHandler(handler)
        root.setLevel(level)
