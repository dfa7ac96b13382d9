"""Closed starts (``--syntax-start pretrained``): the pieces that let a method added to a pretrained model start from
that model's exact function and open as training moves them.

Each is a blend b = before + tanh(α)·(after − before) with α = 0 at the start (ours: the per-head sigmoid mix of
Hou et al.'s self-attention paper, §3, A = G·A_syn + (1 − G)·A_raw, generalised to any change a method makes and
started closed, tanh(0) = 0, so that b = before exactly; the zero-started tanh blend of a new branch in a pretrained
network). ``torch.lerp`` computes it, and returns ``before`` itself, bit for bit, at weight 0.

* :class:`ClosedHeadBlend`: a layer's syntax heads, A = A_raw + tanh(α_h)·(A_method − A_raw), one α per head whose
  block changes the attention (a block whose heads start as the stock heads they take over is left alone); the
  attention applies it after the layer's mixer, if any, so it closes that mixer's change too.
* :class:`ClosedBlend`: one α over a change of the embeddings (a replacement, an added encoding).

While α = 0 the method's own parameters behind a blend get no gradient from the translation loss (tanh(α)·…); α
does (∂b/∂α = after − before at the start), and a method's auxiliary loss trains its parameters from the first step.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Optional, Sequence

import torch
import torch.nn as nn

from .blocks import LayerMixer, SideInputs
from .layer_report import MixerReport

#: what a warm start's log says of every α
CLOSED = ("α = 0: closed, tanh(α) = 0, so the pretrained model's function is kept at the start (--syntax-start "
          "pretrained; ours)")


def closed_blend(before: torch.Tensor, after: torch.Tensor, alpha: torch.Tensor) -> torch.Tensor:
    """b = before + tanh(α)·(after − before) (module docstring: the per-head mix of Hou et al., §3, started closed);
    α broadcasts against before and after (same shape) → b in before's dtype; b = before exactly when α = 0."""
    return torch.lerp(before, after, torch.tanh(alpha).to(before.dtype))


class ClosedBlend(nn.Module):
    """One α (shape ``shape``, zeros) over a change of a tensor: ``forward(before, after)`` → closed_blend."""

    def __init__(self, shape: Sequence[int] = ()):
        super().__init__()
        self.alpha = nn.Parameter(torch.zeros(tuple(shape)))

    def initialisation(self) -> Dict[str, str]:
        return {"alpha": CLOSED}

    def forward(self, before: torch.Tensor, after: torch.Tensor) -> torch.Tensor:
        return closed_blend(before, after, self.alpha)


@dataclass
class BlendReport(MixerReport):
    """What a layer's closed blend reports: its weights."""

    values: torch.Tensor  # (n,) tanh(α_h) per syntax head (0 for a head not blended), detached


class ClosedHeadBlend(LayerMixer):
    """A = A_raw + tanh(α_h)·(A_method − A_raw) per syntax head h of a layer (module docstring); α_h for the heads of
    ``blended`` (one flag per syntax head, in head order), the other heads keep their own attention (A_method, which
    is A_raw for a head that starts as the stock one)."""

    key = "start"
    Report = BlendReport

    def __init__(self, blended: Sequence[bool]):
        super().__init__()
        self.num_heads = len(blended)
        heads = [h for h, b in enumerate(blended) if b]
        self.alpha = nn.Parameter(torch.zeros(len(heads)))  # (k,) one per blended head
        self.register_buffer("blended", torch.tensor(heads, dtype=torch.long), persistent=False)  # (k,)

    @classmethod
    def over(cls, blocks) -> Optional["ClosedHeadBlend"]:
        """The blend of a layer's ``blocks`` (in head order): each head of a block that does not start as the stock
        heads it takes over (``HeadBlock.stock_at_start``); None when every block does."""
        flags = [not b.stock_at_start for b in blocks for _ in range(b.num_heads)]
        return cls(flags) if any(flags) else None

    def initialisation(self) -> Dict[str, str]:
        return {"alpha": f"one per changed syntax head, {CLOSED}"}

    def weights(self, dtype: torch.dtype) -> torch.Tensor:
        """tanh(α_h) per syntax head (0 for the heads not blended) → (n,) in ``dtype``."""
        w = torch.zeros(self.num_heads, dtype=self.alpha.dtype, device=self.alpha.device)
        return w.index_copy(0, self.blended, torch.tanh(self.alpha)).to(dtype)

    def _blend(self, method: torch.Tensor, raw: torch.Tensor):
        w = self.weights(method.dtype)  # (n,)
        return torch.lerp(raw, method, w.view(1, -1, 1, 1)), self.Report(w.detach())  # (B, n, T, S|d)

    def mix(self, p_syn, p_raw, x, pad, inputs: SideInputs, syntax_keep=None):
        """p_syn (B, n, T, S) the heads' probabilities after the method (and the layer's mixer), p_raw (B, n, T, S)
        the stock ones → the blend (B, n, T, S) and its report (the weights tanh(α), (n,))."""
        return self._blend(p_syn, p_raw)

    def mix_outputs(self, o_syn, o_raw, x, pad, inputs: SideInputs):
        """The same blend of the heads' outputs A·V (B, n, T, d): it is linear in A."""
        return self._blend(o_syn, o_raw)


__all__ = ["CLOSED", "BlendReport", "ClosedBlend", "ClosedHeadBlend", "closed_blend"]
