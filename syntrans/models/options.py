"""Options of the syntax mechanisms: one fairseq dataclass per mechanism (the flags, with their defaults and help),
and :class:`SyntaxOptions`, all of them in one typed object read once from fairseq's arguments and validated there.

The defaults live only in the field declarations below: the architecture presets set fields (:func:`set_fields`),
fairseq's arguments override them, and every part of the model reads the :class:`SyntaxOptions` it is given.
"""

# no ``from __future__ import annotations`` here: fairseq builds the flags from the fields' real types
from dataclasses import dataclass, field, fields
from typing import Any, Dict, List, Optional, Tuple

from fairseq.dataclass import FairseqDataclass

from ..modules.gate import GATE_MODES
from ..modules.head_plan import GateSpec, HeadPlan, LayerSyntax
from ..modules.lisa import LISA_LOSSES
from ..modules.nsd_layers import NSD_INPUT_MODES
from ..syntax.nsd import NSD_KINDS


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
    """LISA heads (Strubell et al. 2018, as in Bugliarello & Okazaki 2020): a bi-affine head trained to attend to parents;
    or, with ``--lisa-loss l2``, Hou et al.'s baseline (gated self-attention, §5.2): a stock head, L2 to the parent mask."""

    lisa_layers: str = field(
        default="", metadata={"help": "comma-separated 0-based encoder layers with one LISA head each; empty: none"}
    )
    lisa_weight: float = field(default=1.0, metadata={"help": "weight of the LISA parent loss"})
    lisa_loss: str = field(
        default="ce",
        metadata={"help": "ce: bi-affine head, parent log-likelihood (Bugliarello & Okazaki 2020); l2: stock dot-product "
                          "head, squared L2 distance to the 0/1 parent mask (Hou et al., gated self-attention)"},
    )
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
    dbsa_gold_parents: bool = field(
        default=False,
        metadata={"help": "at evaluation the encoder's DBSA heads attend to the gold source parents (oracle; the "
                          "decoder's have no gold parse at generation); set at generation time with "
                          "--model-overrides \"{'dbsa_gold_parents': True}\""},
    )


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
        default=0,
        metadata={"help": "NSD embedding size k for concat/linear; 0: linear uses the model dim (the paper's e ∈ R^d, "
                          "Eq. 10), concat uses model dim / 2 (it replaces the last k dims of the word embedding); "
                          "add always uses the model dim"},
    )
    nsd_src_spe: bool = field(default=False, metadata={"help": "add the syntactic positional encoding of the source NSD"})
    nsd_tgt_spe: bool = field(default=False, metadata={"help": "add the syntactic positional encoding of the target NSD"})
    nsd_spe_lambda: float = field(default=40.0, metadata={"help": "λ_SPE of the syntactic PE (paper: 1e4, 1e2, 40)"})
    nsd_src_output: bool = field(default=False, metadata={"help": "predict the source NSD from the encoder output"})
    nsd_tgt_output: bool = field(default=False, metadata={"help": "predict the target NSD from the decoder output"})
    nsd_ce_weight: float = field(
        default=1.0,
        metadata={"help": "weight of L_entdist (Eq. 20, cross-entropy over NSD values); 1 is the paper's unweighted "
                          "Eq. 17, 0 with --nsd-dist-weight 0 leaves the classifier untrained (Eq. 18: L_NMT only)"},
    )
    nsd_dist_weight: float = field(
        default=1.0,
        metadata={"help": "weight of L_dist (Eq. 19: squared error / variance of the batch's values + each token's "
                          "pairwise order hinge averaged over its pairs, both O(1) per token); 1 is the paper's "
                          "unweighted Eq. 17"},
    )
    nsd_src_min: Optional[int] = field(default=None, metadata={"help": "smallest source NSD value (default: from train)"})
    nsd_src_max: Optional[int] = field(default=None, metadata={"help": "largest source NSD value (default: from train)"})
    nsd_tgt_min: Optional[int] = field(default=None, metadata={"help": "smallest target NSD value (default: from train)"})
    nsd_tgt_max: Optional[int] = field(default=None, metadata={"help": "largest target NSD value (default: from train)"})


#: The option groups, in the order their flags appear in ``--help``.
OPTION_GROUPS = (DistanceMaskOptions, PascalOptions, LisaOptions, GateOptions, DbsaOptions, SyncAttnOptions, NsdOptions)


@dataclass
class SyntaxOptions(DistanceMaskOptions, PascalOptions, LisaOptions, GateOptions, DbsaOptions, SyncAttnOptions,
                    NsdOptions):
    """Every syntax option of a ``syntax_transformer``, read once from fairseq's arguments (:meth:`from_args`)
    and validated when built; the encoder, decoder and model read this object, never the arguments."""

    def __post_init__(self):
        if self.nsd_kind not in NSD_KINDS:
            raise ValueError(f"--nsd-kind must be one of {', '.join(NSD_KINDS)}, found {self.nsd_kind!r}")
        if self.lisa_loss not in LISA_LOSSES:
            raise ValueError(f"--lisa-loss must be one of {', '.join(LISA_LOSSES)}, found {self.lisa_loss!r}")
        if not 0.0 <= self.pascal_ignore <= 1.0:
            raise ValueError(f"--pascal-ignore is a probability in [0, 1], found {self.pascal_ignore}")
        if not 0.0 <= self.gate_syntax_dropout < 1.0:
            raise ValueError(f"--gate-syntax-dropout is a dropout rate in [0, 1), found {self.gate_syntax_dropout}")
        if self.pascal_layers and not self.pascal_sigma > 0:
            raise ValueError(f"--pascal-sigma must be > 0, found {self.pascal_sigma}")
        if self.gate_layers and self.gate_mode not in GATE_MODES:
            raise ValueError(f"--gate-mode must be one of {', '.join(GATE_MODES)}, found {self.gate_mode!r}")
        for side in ("src", "tgt"):
            mode = getattr(self, f"nsd_{side}_input")
            if mode not in NSD_INPUT_MODES:
                raise ValueError(f"--nsd-{side}-input must be one of {', '.join(NSD_INPUT_MODES)}, found {mode!r}")

    @classmethod
    def names(cls) -> List[str]:
        """The option names (``args`` attributes), every group's fields (dataclass field order over the groups)."""
        return [f.name for f in fields(cls) if not f.name.startswith("_")]

    @classmethod
    def from_args(cls, args) -> "SyntaxOptions":
        """The options in ``args`` (an argparse namespace, a ``TransformerConfig`` or an omegaconf config; a missing
        or None value takes the field's default, so checkpoints saved by older versions load)."""
        defaults = cls()
        values: Dict[str, Any] = {}
        for name in cls.names():
            value = getattr(args, name, None)
            values[name] = getattr(defaults, name) if value is None else value
        return cls(**values)

    def layers(self, name: str, num_layers: int) -> List[int]:
        """The 0-based layers of option ``name`` (e.g. ``distance_layers``), checked against ``num_layers``."""
        return parse_layers(getattr(self, name), num_layers, "--" + name.replace("_", "-"))

    def heads(self, name: str, layers: List[int], num_heads: int) -> int:
        """Option ``name`` (a number of heads per chosen layer), checked against the layer's heads where used."""
        heads = int(getattr(self, name) or 0)
        if layers and not 1 <= heads <= num_heads:
            raise ValueError(f"--{name.replace('_', '-')} must lie in 1..{num_heads} (attention heads), found {heads}")
        return heads

    @property
    def nsd_loss_weights(self) -> Tuple[float, float]:
        """(weight of L_entdist, weight of L_dist), the NSD losses of each side (Ma et al. 2019, Eq. 17–20)."""
        return float(self.nsd_ce_weight), float(self.nsd_dist_weight)

    def gate_spec(self) -> GateSpec:
        return GateSpec(int(self.gate_hidden), not self.gate_no_batchnorm, self.gate_mode, int(self.gate_warmup_epochs))

    def encoder_layers(self, num_layers: int, num_heads: int) -> List[Optional[LayerSyntax]]:
        """Per encoder layer its :class:`LayerSyntax` (None: a stock layer). In each layer the syntax heads are
        consecutive from head 0: distance-mask, then PASCAL, then the LISA head, then DBSA heads."""
        distance = self.layers("distance_layers", num_layers)
        pascal = self.layers("pascal_layers", num_layers)
        lisa = self.layers("lisa_layers", num_layers)
        dbsa = self.layers("dbsa_encoder_layers", num_layers)
        gated = self.layers("gate_layers", num_layers)
        k_distance = self.heads("distance_heads", distance, num_heads)
        k_pascal = self.heads("pascal_heads", pascal, num_heads)
        k_dbsa = self.heads("dbsa_heads", dbsa, num_heads)
        out: List[Optional[LayerSyntax]] = []
        for i in range(num_layers):
            plan = HeadPlan(num_heads, distance=k_distance if i in distance else 0, pascal=k_pascal if i in pascal else 0,
                            lisa=1 if i in lisa else 0, dbsa=k_dbsa if i in dbsa else 0, gated=i in gated)
            out.append(LayerSyntax(plan, float(self.pascal_ignore), bool(self.lisa_gold_parents),
                                   self.gate_spec() if plan.gated else None, float(self.gate_syntax_dropout),
                                   lisa_loss=self.lisa_loss, dbsa_gold_parents=bool(self.dbsa_gold_parents))
                       if plan.active else None)
        return out

    def decoder_layers(self, num_layers: int, num_heads: int) -> List[Optional[LayerSyntax]]:
        """Per decoder layer its :class:`LayerSyntax` (None: a stock layer): causal DBSA heads from head 0."""
        dbsa = self.layers("dbsa_decoder_layers", num_layers)
        k_dbsa = self.heads("dbsa_heads", dbsa, num_heads)
        return [LayerSyntax(HeadPlan(num_heads, dbsa=k_dbsa), causal=True) if i in dbsa else None
                for i in range(num_layers)]


def set_fields(args, **values) -> None:
    """A preset's settings: each becomes the value of ``args.<name>`` unless that is already set (by a flag, a
    config or an earlier preset), as fairseq's architecture functions do."""
    for name, value in values.items():
        if not hasattr(args, name):
            setattr(args, name, value)


def fill_syntax_defaults(args) -> None:
    """Every syntax option not set yet takes its declared default (:class:`SyntaxOptions`)."""
    defaults = SyntaxOptions()
    set_fields(args, **{name: getattr(defaults, name) for name in SyntaxOptions.names()})


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
