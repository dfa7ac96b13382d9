"""The common part of the mechanisms that own some heads of chosen encoder layers: ``--<key>-layers`` (0-based
encoder layers, or ``all``) and ``--<key>-heads`` (heads per chosen layer)."""
from __future__ import annotations

from .base import Mechanism
from .layer_lists import resolve_layers


class EncoderHeads(Mechanism):
    """A mechanism of ``cfg.heads`` heads in each encoder layer of ``cfg.layers``; its constructor resolves the
    layers and checks the head count (subclasses check their other options after it)."""

    def __init__(self, cfg, shape):
        super().__init__(cfg, shape)
        self.layers = resolve_layers(cfg.layers, shape.encoder_layers, f"--{self.key}-layers")
        self.check_attention_heads(cfg.heads, shape.encoder_heads, bool(self.layers))

    @property
    def active(self) -> bool:
        return bool(self.layers)

    def heads(self, side: str, layer: int) -> int:
        return int(self.cfg.heads) if side == "encoder" and layer in self.layers else 0
