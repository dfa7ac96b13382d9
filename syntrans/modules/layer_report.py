"""What a layer returns beside its output: :class:`LayerReport`, filled by its syntax attention and read by the
mechanisms (their losses and metrics), the attention recorder and the parse recorder."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Optional

import torch


@dataclass
class LayerReport:
    """One layer's report of one forward (empty for a layer without syntax heads)."""

    #: by mechanism key: what its block or mixer reports (a loss's statistics, a mixer's weights, mean attention, …)
    mechanisms: Dict[str, Any] = field(default_factory=dict)
    #: every head's probabilities (B, H, T, S) float32, when the forward keeps ``probs`` (``KEEP_PROBS``)
    probs: Optional[torch.Tensor] = None
    #: by mechanism key: the predicted parent of every query row (B, T) long, when the forward keeps ``parse``
    parse: Dict[str, torch.Tensor] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.mechanisms) or self.probs is not None or bool(self.parse)
