"""Options of the syntax mechanisms, as a fairseq dataclass so flags and hydra YAML both work."""

from dataclasses import dataclass, field
from typing import List, Optional

from fairseq.dataclass import FairseqDataclass


@dataclass
class DistanceMaskOptions(FairseqDataclass):
    """Distance-mask heads (Hou et al. 2022): attention = softmax(QKᵀ/√d + log M) in chosen heads."""

    distance_layers: str = field(
        default="", metadata={"help": "comma-separated 0-based encoder layers with distance-mask heads; empty: none"}
    )
    distance_heads: int = field(
        default=0, metadata={"help": "number of distance-mask heads per chosen layer: heads 0..k-1"}
    )
    distance_tau: float = field(default=10.0, metadata={"help": "temperature τ of the soft mask (Eq. 6-7)"})
    distance_hard: bool = field(
        default=False, metadata={"help": "use the hard 0/1 mask of Algorithm 2 instead of the soft one"}
    )


@dataclass
class PascalOptions(FairseqDataclass):
    """PASCAL heads (Bugliarello & Okazaki 2020): scaled scores ⊙ N(j; parent_i, σ²) in chosen heads."""

    pascal_layers: str = field(
        default="", metadata={"help": "comma-separated 0-based encoder layers with PASCAL heads; empty: none"}
    )
    pascal_heads: int = field(
        default=0, metadata={"help": "number of PASCAL heads per chosen layer (after any distance-mask heads)"}
    )
    pascal_sigma: float = field(default=1.0, metadata={"help": "standard deviation σ of the parent Gaussian"})
    pascal_ignore: float = field(
        default=0.0, metadata={"help": "parent ignoring: probability q that a query row's weights are ones in training"}
    )


@dataclass
class LisaOptions(FairseqDataclass):
    """LISA heads (Strubell et al. 2018, as in Bugliarello & Okazaki 2020): a bi-affine head trained to attend to parents."""

    lisa_layers: str = field(
        default="", metadata={"help": "comma-separated 0-based encoder layers with one LISA head each; empty: none"}
    )
    lisa_weight: float = field(default=1.0, metadata={"help": "weight of the LISA parent loss"})
    lisa_gold_parents: bool = field(
        default=False,
        metadata={"help": "at evaluation the LISA head attends to the gold parent (oracle); set at generation "
                          "time with --model-overrides \"{'lisa_gold_parents': True}\""},
    )


@dataclass
class GateOptions(FairseqDataclass):
    """Syntax gates (Hou et al., gated self-attention): A = G·A_syn + (1 − G)·A_raw per sentence and head."""

    gate_layers: str = field(
        default="", metadata={"help": "comma-separated 0-based encoder layers (or 'all') whose syntax heads are gated"}
    )
    gate_mode: str = field(
        default="gated", metadata={"help": "gated (learned G), pure (G = 1) or avg (G = 0.5): the paper's ablations"}
    )
    gate_hidden: int = field(default=256, metadata={"help": "hidden size of the gate network"})
    gate_no_batchnorm: bool = field(
        default=False, metadata={"help": "no BatchNorm before the gate's sigmoid (the paper's ablation)"}
    )
    gate_warmup_epochs: int = field(
        default=0, metadata={"help": "pre-warm-up K: the gate network is frozen during epochs 1..K and trains afterwards"}
    )
    gate_syntax_dropout: float = field(
        default=0.0, metadata={"help": "syntax ignoring: dropout rate p on the syntax attention A_syn in training"}
    )


@dataclass
class DbsaOptions(FairseqDataclass):
    """DBSA heads (Deguchi et al. 2019): bi-affine heads A = softmax(Q U Kᵀ/√d) trained to attend to dependency parents."""

    dbsa_encoder_layers: str = field(
        default="", metadata={"help": "comma-separated 0-based encoder layers (or 'all') with DBSA heads; empty: none"}
    )
    dbsa_decoder_layers: str = field(
        default="", metadata={"help": "comma-separated 0-based decoder layers (or 'all') with causal DBSA heads; empty: none"}
    )
    dbsa_heads: int = field(
        default=1,
        metadata={"help": "DBSA heads per chosen layer (after any other syntax heads); the parse is their mean attention"},
    )
    dbsa_weight: float = field(default=0.5, metadata={"help": "λ_dep, weight of each side's DBSA parent loss"})


@dataclass
class SyncAttnOptions(FairseqDataclass):
    """SyncAttn (Deguchi et al. 2021): L_sync = Σ (softmax(causal(C E Cᵀ)) − D)² ties the source parse to the target's."""

    sync_attn: bool = field(
        default=False, metadata={"help": "add the synchronous syntactic attention loss (needs one DBSA layer per side)"}
    )
    sync_weight: float = field(default=0.5, metadata={"help": "λ_sync (paper: 0.5 WMT14 en-de, 0.1 WMT16 en-ro, 10 ASPEC)"})
    sync_layer: int = field(
        default=-2,
        metadata={"help": "0-based decoder layer whose encoder-decoder attention (mean over heads) is C; negative counts "
                          "from the last: -2 is the penultimate (the paper's layer 5 of 6)"},
    )


@dataclass
class NsdOptions(FairseqDataclass):
    """NSD (Ma et al. 2019): syntactic distances as input embeddings, syntactic PE and predicted outputs, per side."""

    nsd_kind: str = field(default="dD", metadata={"help": "which NSD: dS, dG, dR (constituency) or dD (dependency)"})
    nsd_src_input: str = field(default="none", metadata={"help": "source NSD input: none, concat, add or linear (W(x‖e)+b)"})
    nsd_tgt_input: str = field(default="none", metadata={"help": "target NSD input (decoding feeds the predicted NSD)"})
    nsd_embed_dim: int = field(
        default=0, metadata={"help": "NSD embedding size k for concat/linear (0: model dim / 4); add uses the model dim"}
    )
    nsd_src_spe: bool = field(default=False, metadata={"help": "add the syntactic positional encoding of the source NSD"})
    nsd_tgt_spe: bool = field(default=False, metadata={"help": "add the syntactic positional encoding of the target NSD"})
    nsd_spe_lambda: float = field(default=40.0, metadata={"help": "λ_SPE of the syntactic PE (paper: 1e4, 1e2, 40)"})
    nsd_src_output: bool = field(default=False, metadata={"help": "predict the source NSD from the encoder output"})
    nsd_tgt_output: bool = field(default=False, metadata={"help": "predict the target NSD from the decoder output"})
    nsd_ce_weight: float = field(default=1.0, metadata={"help": "weight of L_entdist (cross-entropy over NSD values)"})
    nsd_dist_weight: float = field(
        default=0.01,
        metadata={"help": "weight of L_dist (squared error + pairwise order hinge, summed: ≈20-40 per token at the start, "
                          "so at weight ≥ 0.1 it stalls translation on the synthetic corpus; 0.01 is our default)"},
    )
    nsd_src_min: Optional[int] = field(default=None, metadata={"help": "smallest source NSD value (default: from train)"})
    nsd_src_max: Optional[int] = field(default=None, metadata={"help": "largest source NSD value (default: from train)"})
    nsd_tgt_min: Optional[int] = field(default=None, metadata={"help": "smallest target NSD value (default: from train)"})
    nsd_tgt_max: Optional[int] = field(default=None, metadata={"help": "largest target NSD value (default: from train)"})


def parse_layers(spec: str, num_layers: int, flag: str) -> List[int]:
    """'0,2' → [0, 2]; 'all' → every layer; checked against the number of layers."""
    spec = (spec or "").strip()
    if not spec:
        return []
    if spec == "all":
        return list(range(num_layers))
    try:
        layers = sorted({int(x) for x in spec.split(",")})
    except ValueError:
        raise ValueError(f"{flag} takes comma-separated layer numbers or 'all', found {spec!r}") from None
    bad = [x for x in layers if not 0 <= x < num_layers]
    if bad:
        raise ValueError(f"{flag}: layers must lie in 0..{num_layers - 1}, found {bad}")
    return layers
