"""Registers everything fairseq needs from syntrans (imported by ``syntrans/__init__.py``)."""
from .checkpoints.safety import allow_fairseq_checkpoint_globals

allow_fairseq_checkpoint_globals()

from . import criterions, models, tasks  # noqa: E402,F401
