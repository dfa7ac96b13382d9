"""+S&H: source dependency labels in the encoder's input embeddings (Sennrich & Haddow 2016, "Linguistic Input
Features Improve Neural Machine Translation", as Bugliarello & Okazaki 2020 adapt it to the Transformer: §3.1
"Baselines" and App. A: "each token is associated with its dependency label which is first embedded into a vector
representation of size 10 and then used to replace the last 10 embedding dimensions of the token embedding, ensuring
a final size that matches the original one").

Every source subword takes its word's label (the batch feature ``src_dep_label``: ids of the fixed UD inventory of
:mod:`syntrans.syntax.deprels`, ``NO_LABEL`` at EOS, ``PAD_LABEL`` at padding). The encoder's scaled token embedding
x (B, T, C) becomes [x_{1..C−k} ; E_l[label]] with k = ``--labels-embed-dim`` (10): the label embedding replaces the
last k dimensions, before the positions are added. As in the paper's released code, the label embedding itself is not
scaled by √C, and EOS has a learned row of its own (there it is the tag dictionary's end-of-sentence symbol); padding
has a zero row. Nothing else changes: no head, no loss, no decoder part.

Under ``--syntax-start pretrained`` the replacement is blended in, closed at the start (:class:`ClosedBlend`):
x' = x + tanh(α)·([x_{1..C−k} ; E_l[label]] − x), α = 0, so the encoder starts with the pretrained embeddings.
"""
# no ``from __future__ import annotations`` here: fairseq builds the flags from the config fields' real types
from dataclasses import dataclass, field
from typing import Dict

import torch
import torch.nn as nn
from fairseq.dataclass import FairseqDataclass

from ..modules.blocks import SyntaxPart
from ..modules.closed_start import ClosedBlend
from ..syntax.deprels import N_LABELS, PAD_LABEL
from .base import FeatureNeeds, Mechanism, check_option, is_number, required_feature

FEATURE = "src_dep_label"


@dataclass
class LabelsConfig(FairseqDataclass):
    """+S&H (Sennrich & Haddow 2016 as Bugliarello & Okazaki 2020, App. A): source dependency labels replace the last
    dimensions of the encoder's token embeddings."""

    input: bool = field(
        default=False,
        metadata={"help": "+S&H: replace the last --labels-embed-dim dimensions of each source token's embedding by "
                          "the embedding of its word's dependency label (needs the source label sidecar)"},
    )
    embed_dim: int = field(
        default=10, metadata={"help": "size k of the dependency label embedding (Bugliarello & Okazaki 2020: 10)"},
    )


class SourceLabelEmbedding(SyntaxPart):
    """[x_{1..C−k} ; E_l[label]]: the label embedding replaces the last k dimensions of the scaled token embedding
    (Bugliarello & Okazaki 2020, App. A, +S&H). E_l has a zero row for padding (0), a row for EOS (1) and one per
    label id l (2 + l)."""

    key = "labels"

    def __init__(self, embed_dim: int, label_dim: int, closed: bool = False):
        super().__init__()
        self.embed_dim, self.label_dim = int(embed_dim), int(label_dim)
        self.embed = nn.Embedding(N_LABELS + 2, label_dim, padding_idx=0)  # 0: padding, 1: EOS, 2 + l: label l
        nn.init.normal_(self.embed.weight, mean=0.0, std=label_dim ** -0.5)  # as fairseq's token embeddings
        nn.init.constant_(self.embed.weight[0], 0.0)
        self.start = ClosedBlend() if closed else None  # --syntax-start pretrained: α over the replacement

    def initialisation(self) -> Dict[str, str]:
        return {"embed.": "E_l: normal, std k^-1/2, as fairseq's token embeddings, the padding row 0 (ours: Sennrich & "
                          "Haddow 2016 and Bugliarello & Okazaki 2020 state none)"}

    def forward(self, x: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """x (B, T, C) scaled token embeddings, labels (B, T) ids (PAD_LABEL, NO_LABEL or 0..N_LABELS−1)
        → (B, T, C) in x's dtype."""
        if tuple(labels.shape) != tuple(x.shape[:2]):
            raise ValueError(f"the label input needs one label per source token: tokens {tuple(x.shape[:2])}, labels "
                             f"{tuple(labels.shape)}")
        e = self.embed(labels.to(x.device).long() - PAD_LABEL).to(x.dtype)  # (B, T, k); PAD_LABEL → row 0
        replaced = torch.cat([x[..., : self.embed_dim - self.label_dim], e], dim=-1)  # (B, T, C)
        return replaced if self.start is None else self.start(x, replaced)


class SourceLabels(Mechanism):
    """The +S&H mechanism: a :class:`SourceLabelEmbedding` on the encoder side."""

    switches = ("input",)
    key = "labels"
    Config = LabelsConfig
    title = "+S&H (Sennrich & Haddow 2016, as Bugliarello & Okazaki 2020)"

    def __init__(self, cfg: LabelsConfig, shape):
        super().__init__(cfg, shape)
        C = shape.encoder_dim
        check_option(not self.active or (is_number(cfg.embed_dim, True) and 0 < cfg.embed_dim < C), "--labels-embed-dim",
                     f"must lie in 1..{C - 1} (below the encoder's embedding dimension {C})", cfg.embed_dim)

    @property
    def active(self) -> bool:
        return bool(self.cfg.input)

    def embeds(self, side):
        return side == "encoder" and self.active

    def side_module(self, side, embed_dim):
        if not self.embeds(side):
            return None
        return SourceLabelEmbedding(embed_dim, int(self.cfg.embed_dim), closed=self.neutral)

    def features(self, side):
        return FeatureNeeds(required={FEATURE}) if self.embeds(side) else FeatureNeeds()

    def prepare(self, side, features, tokens, pad_mask, dtype, training):
        if not self.embeds(side):
            return None
        return required_feature(features, FEATURE, tuple(tokens.shape), "the source label input (+S&H)")

    def embed(self, side, owner, x, inputs, incremental_state=None):
        if not self.embeds(side):
            return x
        labels = inputs.get(self.key)
        if labels is None:
            labels = required_feature({}, FEATURE, tuple(x.shape[:2]), "the source label input (+S&H)")
        return owner.labels(x, labels)


__all__ = ["LabelsConfig", "SourceLabelEmbedding", "SourceLabels"]
