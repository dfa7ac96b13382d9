"""Registers everything fairseq needs from syntrans (imported by ``syntrans/__init__.py``)."""
from .checkpoints.load_errors import install as name_unreadable_checkpoints
from .checkpoints.safety import allow_fairseq_checkpoint_globals

allow_fairseq_checkpoint_globals()
name_unreadable_checkpoints()

from . import criterions, models, tasks  # noqa: E402,F401
