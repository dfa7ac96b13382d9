"""NLLB-200's architecture names as plain Transformer settings of fairseq's ``transformer`` model, registered when
fairseq lacks them (fairseq 0.12 does: they live on its ``nllb`` branch), so that a checkpoint whose config names
one is recognised (the warm start's flag check, :mod:`syntrans.tasks.checkpoint_match`) and a stock
``fairseq-train --user-dir … --arch transformer_12_12`` runs.

Shapes as NLLB Team (2022), "No Language Left Behind", describe the dense models (600M distilled: 12+12 layers,
d = 1024, FFN 4096, 16 heads; 1.3B: 24+24, 1024, FFN 8192, 16 heads; 3.3B: 24+24, 2048, FFN 8192, 16 heads),
pre-norm layers and shared embeddings. A released checkpoint's own config is the authority: the warm start compares
every Transformer flag it stores with the run's and names each that differs.
"""
from fairseq.models import ARCH_MODEL_REGISTRY, register_model_architecture
from fairseq.models.transformer.transformer_legacy import base_architecture

#: name → (layers per side, model dimension, FFN dimension, heads)
NLLB_SHAPES = {
    "transformer_12_12": (12, 1024, 4096, 16),
    "transformer_24_24": (24, 1024, 8192, 16),
    "transformer_24_24_big": (24, 2048, 8192, 16),
}


def _nllb(layers: int, dim: int, ffn: int, heads: int):
    def arch(args):
        for side in ("encoder", "decoder"):
            for field, value in (("layers", layers), ("embed_dim", dim), ("ffn_embed_dim", ffn),
                                 ("attention_heads", heads), ("normalize_before", True)):
                if getattr(args, f"{side}_{field}", None) is None:
                    setattr(args, f"{side}_{field}", value)
        if getattr(args, "share_all_embeddings", None) is None:
            args.share_all_embeddings = True
        base_architecture(args)

    return arch


for _name, _shape in NLLB_SHAPES.items():
    if _name not in ARCH_MODEL_REGISTRY:
        register_model_architecture("transformer", _name)(_nllb(*_shape))

__all__ = ["NLLB_SHAPES"]
