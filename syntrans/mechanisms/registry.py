"""The registry: every syntax mechanism of a ``syntax_transformer``, in head order.

A layer's syntax heads are consecutive from head 0, in this order (distance-mask, PASCAL, LISA, DBSA, SLA); the rest
of a layer's heads are stock. The model config has one group per mechanism, under its key (:mod:`syntrans.models.config`).
A new mechanism is a module of this package plus its line here (and its presets, :mod:`syntrans.models.presets`).
"""
from .dbsa import Dbsa
from .distance import DistanceMask
from .gate import Gate
from .lisa import Lisa
from .nsd import Nsd
from .pascal import Pascal
from .sla import Sla
from .source_labels import SourceLabels
from .sync_attn import SyncAttn

# +S&H last: its labels replace the last dimensions of the embeddings whatever an earlier mechanism put there
MECHANISMS = (DistanceMask, Pascal, Lisa, Dbsa, Sla, Gate, SyncAttn, Nsd, SourceLabels)

BY_KEY = {m.key: m for m in MECHANISMS}
#: each mechanism by the name figures give its heads (its ``name``, else its key)
BY_NAME = {(m.name or m.key): m for m in MECHANISMS}


def head_name(key: str) -> str:
    """How figures name the heads of the mechanism ``key`` (a block's key); an unknown key names itself."""
    m = BY_KEY.get(key)
    return (m.name or m.key) if m is not None else key
