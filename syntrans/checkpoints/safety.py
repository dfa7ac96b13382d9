"""Safe loading of fairseq checkpoints with torch >= 2.6 (``weights_only=True``).

fairseq checkpoints pickle the training configuration (argparse.Namespace and omegaconf
containers). Rather than the global unsafe switch (TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1, which lets a
checkpoint run arbitrary code), the exact classes those checkpoints need are allow-listed; a
checkpoint carrying any other global is still refused by torch.
"""
from __future__ import annotations

import argparse
import collections
import typing
from typing import List

import torch


def fairseq_checkpoint_globals() -> List[object]:
    """The classes and functions fairseq checkpoints reference besides tensors."""
    import omegaconf  # lazy: omegaconf comes with fairseq (this module imports without it)
    from fairseq.distributed.utils import _TensorPlaceholder  # lazy: fairseq is heavy (this module imports without it)
    from omegaconf import nodes  # lazy: omegaconf, as above
    from omegaconf.base import ContainerMetadata, Metadata  # lazy: omegaconf, as above

    out: List[object] = [
        argparse.Namespace,
        collections.defaultdict,
        collections.OrderedDict,
        typing.Any,
        dict, list, int, float, str, bool, tuple, set,
        omegaconf.DictConfig,
        omegaconf.ListConfig,
        ContainerMetadata,
        Metadata,
        # a resumed multi-process run: rank 0 reads the checkpoint and sends it to the others with the tensors
        # replaced by these placeholders (fairseq.distributed.utils.broadcast_object), and they unpickle it safely
        _TensorPlaceholder,
    ]
    for name in ("AnyNode", "StringNode", "IntegerNode", "FloatNode", "BooleanNode", "EnumNode",
                 "BytesNode", "PathNode", "ValueNode"):
        cls = getattr(nodes, name, None)
        if cls is not None:
            out.append(cls)
    return out


def safe_torch_load(path: str, **extra):
    """The one ``torch.load`` of a fairseq checkpoint in syntrans: on the CPU, weights-only with the fairseq
    allow-list where torch has one (torch >= 2.4; older torch loads it as fairseq itself does); ``extra``: further
    ``torch.load`` arguments (``mmap=True``). Errors are torch's: the callers say what they mean."""
    kwargs = {"map_location": "cpu", **extra}
    if hasattr(torch.serialization, "add_safe_globals"):
        allow_fairseq_checkpoint_globals()
        kwargs["weights_only"] = True
    return torch.load(path, **kwargs)


def allow_fairseq_checkpoint_globals() -> None:
    """Allow-list :func:`fairseq_checkpoint_globals` for ``torch.load(weights_only=True)``."""
    add = getattr(torch.serialization, "add_safe_globals", None)
    if add is not None:  # torch < 2.4 has no weights-only allow-list (and loads unrestricted by default)
        add(fairseq_checkpoint_globals())
