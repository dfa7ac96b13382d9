"""NSD (Ma et al. 2019, "Improving Neural Machine Translation with Neural Syntactic Distance"): the syntactic distance
of every word (dS, dG, dR from the constituency tree, dD from the dependency heads; :mod:`syntrans.syntax.nsd_labels`) as an
input embedding with a syntactic positional encoding, and as an output predicted from the hidden states with the
losses L_entdist and L_dist; on the source side, the target side or both.

One :class:`NsdSide` module per side owns everything NSD does there: its input layer (:class:`NsdInput`: the NSD
embedding combined with the word embedding, plus the syntactic PE), its classifier (:class:`NsdClassifier`) and its
losses. On the target side, decoding feeds each step the NSD predicted at the previous one (§3.2), kept in fairseq's
incremental state and reordered with the beams; a token the task puts between BOS and the sentence (the decoder's
language token of ``translation_multi_simple_epoch``, the decoder's ``target_prefix_tokens``) is fed ``NO_NSD``, its
value in training.

NSD values v are integers; a model knows the range [v_min, v_max] of its training split (fixed into its embedding and
classifier sizes and saved in its config). Class k ↔ value v_min + k; values outside the range are clipped (and
counted). Tokens without a value (EOS, padding) carry ``NO_NSD``, the decoder's BOS carries ``BOS_NSD``.
Logged per side as ``nsd_{src,tgt}_ce`` (L_entdist), ``nsd_{src,tgt}_dist`` (L_dist) and ``nsd_{src,tgt}_clipped``.

Under ``--syntax-start pretrained`` the input starts neutral: ``linear`` with W = [I, 0] and b = 0 (W(x‖e) + b = x),
``add`` with E_d = 0, the syntactic PE behind a closed blend (x + tanh(α)·SPE, α = 0); ``concat``, which drops the
last k dimensions of the word embedding, cannot start so and is refused. The classifier reads the states and changes
no translation output.
"""
# no ``from __future__ import annotations`` here: fairseq builds the flags from the config fields' real types
import logging
import math
from dataclasses import dataclass, field
from typing import Dict, Optional, Tuple

import torch
import torch.nn as nn
import torch.nn.functional as F
from fairseq.dataclass import FairseqDataclass

from ..modules.aux_losses import report_aux_loss, report_aux_metric
from ..modules.blocks import LINEAR_DEFAULT, SyntaxPart
from ..modules.closed_start import ClosedBlend
from ..modules.precision import named_precision
from ..syntax.nsd_labels import BOS_NSD, NO_NSD, NSD_KINDS
from .base import FeatureNeeds, Mechanism, check_choice, check_option, is_number, required_feature

logger = logging.getLogger("syntrans.nsd")

NSD_INPUT_MODES = ("none", "concat", "add", "linear")
#: the input modes that cannot start as the pretrained model computes (``--syntax-start pretrained``)
NOT_NEUTRAL = {"concat": "it replaces the last k dimensions of the word embedding by the NSD embedding"}
#: how L_dist (Ma et al. 2019, Eq. 19) is scaled: "sentence" (ours: each term O(1) per token, see :func:`nsd_losses`)
#: or "printed" (Eq. 19 as printed: the squared errors and the pairs' hinges summed)
NSD_DIST_NORMS = ("sentence", "printed")
SHORT = {"encoder": "src", "decoder": "tgt"}


@dataclass
class NsdConfig(FairseqDataclass):
    """NSD (Ma et al. 2019): syntactic distances as input embeddings, syntactic PE and predicted outputs, per side."""

    kind: str = field(default="dD", metadata={"help": "which NSD: dS, dG, dR (constituency) or dD (dependency)"})
    src_input: str = field(default="none", metadata={"help": "source NSD input: none, concat, add or linear (W(x‖e)+b)"})
    tgt_input: str = field(default="none", metadata={"help": "target NSD input (decoding feeds the predicted NSD)"})
    embed_dim: int = field(
        default=0,
        metadata={"help": "NSD embedding size k for concat/linear; 0: linear uses the model dim (the paper's e ∈ R^d, "
                          "Eq. 10), concat uses model dim / 2 (it replaces the last k dims of the word embedding); "
                          "add always uses the model dim"},
    )
    src_spe: bool = field(default=False, metadata={"help": "add the syntactic positional encoding of the source NSD"})
    tgt_spe: bool = field(default=False, metadata={"help": "add the syntactic positional encoding of the target NSD"})
    spe_lambda: float = field(default=40.0, metadata={"help": "λ_SPE of the syntactic PE (paper: 1e4, 1e2, 40)"})
    src_output: bool = field(default=False, metadata={"help": "predict the source NSD from the encoder output"})
    tgt_output: bool = field(default=False, metadata={"help": "predict the target NSD from the decoder output"})
    ce_weight: float = field(
        default=1.0,
        metadata={"help": "weight of L_entdist (Eq. 20, cross-entropy over NSD values); 1 is the paper's unweighted "
                          "Eq. 17, 0 with --nsd-dist-weight 0 leaves the classifier untrained (Eq. 18: L_NMT only)"},
    )
    dist_weight: float = field(
        default=1.0,
        metadata={"help": "weight of L_dist (Eq. 19, scaled as --nsd-dist-norm says); 1 is the paper's unweighted "
                          "Eq. 17"},
    )
    dist_norm: str = field(
        default="sentence",
        metadata={"help": "L_dist's scale: sentence (ours: squared error / variance of the sentence's values + each "
                          "token's pairwise order hinge averaged over its pairs, both O(1) per token) or printed "
                          "(Eq. 19 as printed: squared errors + hinges over all pairs i < j, summed)"},
    )
    src_min: Optional[int] = field(default=None, metadata={"help": "smallest source NSD value (default: from train)"})
    src_max: Optional[int] = field(default=None, metadata={"help": "largest source NSD value (default: from train)"})
    tgt_min: Optional[int] = field(default=None, metadata={"help": "smallest target NSD value (default: from train)"})
    tgt_max: Optional[int] = field(default=None, metadata={"help": "largest target NSD value (default: from train)"})


# ------------------------------------------------------------------------------------------------ the pieces

def nsd_classes(values: torch.Tensor, v_min: int, v_max: int) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(class index in 0..V−1 after clipping to [v_min, v_max], mask of tokens with a value, number clipped).
    values (B, T) int → ((B, T) long, (B, T) bool, () long)."""
    real = values > NO_NSD
    clipped = (real & ((values < v_min) | (values > v_max))).sum()
    return (values.clamp(v_min, v_max) - v_min).long().masked_fill(~real, 0), real, clipped


def nsd_embed_size(mode: str, embed_dim: int, nsd_dim: int = 0) -> int:
    """The size k of the NSD embedding E_d of input ``mode`` in a model of dimension C = ``embed_dim``; ``nsd_dim``
    is --nsd-embed-dim, 0 for the default:

    * ``linear``: k = C by default (Ma et al. 2019, Eq. 10: e ∈ ℝ^d and W_f ∈ ℝ^{d×2d});
    * ``concat``: k = C/2 by default: [x_{1..C−k} ; e] stays C wide, and its two parts keep the 1:1 proportion of the
      paper's [x; e] (Eq. 8);
    * ``add``: always C (x + e); ``none``: no embedding (0)."""
    if mode == "add":
        return embed_dim
    if mode == "linear":
        return nsd_dim or embed_dim
    if mode == "concat":
        return nsd_dim or embed_dim // 2
    return 0


class NsdInput(nn.Module):
    """x (the scaled word embeddings) combined with E_d[d] (Ma et al. 2019, §3.1, NSD as input), plus the syntactic
    positional encoding SPE(d) when ``spe`` (§3.3).

    * ``concat``: [x_{1..C−k} ; E_d[d]]: the first C − k dimensions of the word embedding, then the k-dim
      NSD embedding (k = ``nsd_dim``), so the two split the model dimension (the paper's [x; e] of Eq. 8 would
      be 2C wide; with k = C/2, the default of :func:`nsd_embed_size`, both halves keep its 1:1 proportion);
    * ``add``: x + E_d[d] (E_d is C-dim);
    * ``linear``: W(x ‖ E_d[d]) + b, W ∈ ℝ^{C×(C+k)} (Ma et al. 2019, Eq. 10: e ∈ ℝ^d, W_f ∈ ℝ^{d×2d}, so k = C
      by default);
    * ``none``: x (SPE only).

    E_d has a row per value of the range, a row for BOS and a zero row for tokens without a value.
    The syntactic PE (Eq. 15–16) is :meth:`spe_table`, added on top of the conventional PE (§4.2); 0 for BOS, EOS,
    padding.
    """

    def __init__(self, mode: str, embed_dim: int, nsd_dim: int, v_min: int, v_max: int, spe: bool = False,
                 spe_lambda: float = 40.0, neutral: bool = False):
        super().__init__()
        self.mode, self.v_min, self.v_max, self.spe, self.spe_lambda = mode, int(v_min), int(v_max), bool(spe), float(spe_lambda)
        if neutral and mode in NOT_NEUTRAL:
            raise ValueError(f"NSD input {mode} cannot start neutral: {NOT_NEUTRAL[mode]}")
        dim = nsd_embed_size(mode, embed_dim, nsd_dim)  # k; 0 in nsd_dim: the default size of the mode
        if mode != "none":
            self.embed = nn.Embedding(self.v_max - self.v_min + 3, dim, padding_idx=0)  # 0: none, 1: BOS, 2+k: class k
            nn.init.normal_(self.embed.weight, mean=0.0, std=dim ** -0.5)
            nn.init.constant_(self.embed.weight[0], 0.0)
        if mode == "linear":
            self.proj = nn.Linear(embed_dim + dim, embed_dim)
        self.embed_dim, self.neutral = embed_dim, bool(neutral)
        self.spe_start = ClosedBlend() if neutral and self.spe else None  # α over the syntactic PE
        if neutral:  # after the papers' draws, so that both starts draw the same random numbers
            self.start_neutral()

    @torch.no_grad()
    def start_neutral(self) -> None:
        """The input as the identity of x (``--syntax-start pretrained``; ours): ``linear`` W = [I_C, 0], b = 0, so
        W(x‖e) + b = x (Ma et al. 2019, Eq. 10, started at x); ``add`` E_d = 0, so x + E_d[d] = x."""
        if self.mode == "linear":
            C = self.embed_dim
            self.proj.weight.zero_()
            self.proj.weight[:, :C].copy_(torch.eye(C))  # (C, C + k) = [I, 0]
            self.proj.bias.zero_()
        elif self.mode == "add":
            self.embed.weight.zero_()


    def index(self, values: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        """Embedding rows (B, T) and the shifted values d' (B, T) float (0 where no value)."""
        cls, real, _ = nsd_classes(values, self.v_min, self.v_max)
        rows = torch.where(real, cls + 2, torch.where(values == BOS_NSD, 1, 0))
        return rows, torch.where(real, cls + 1, 0).to(torch.float32)

    def spe_table(self, shifted: torch.Tensor) -> torch.Tensor:
        """The syntactic positional encoding: (B, T) d' → (B, T, C) float32.

        SPE(d)_{2k} = sin(2π d' / λ_SPE^{2k/C}), SPE(d)_{2k+1} = cos(2π d' / λ_SPE^{2k/C}) (Ma et al. 2019,
        Eq. 15–16): pair k has period exactly λ_SPE^{2k/C} in d', from 1 (k = 0) towards λ_SPE ("the periods of
        these two functions vary from 1 to λ_SPE"). d' = d − v_min + 1 ≥ 1 is the value shifted positive by the
        model's own range (the paper shifts by the corpus' range, d + max − min + 1; a constant shift only
        rotates each pair by a fixed angle). Rows with d' = 0 (no value) are 0. The angle is computed in float64
        so that the periods stay exact for large d'."""
        C = self.embed_dim
        two_k = torch.arange(0, C, 2, device=shifted.device, dtype=torch.float64)  # (C/2,) 2k
        period = self.spe_lambda ** (two_k / C)  # (C/2,) λ^{2k/C}
        angle = 2 * math.pi * shifted.to(torch.float64).unsqueeze(-1) / period  # (B, T, C/2)
        pe = torch.stack([angle.sin(), angle.cos()], dim=-1).flatten(-2)[..., :C]  # (B, T, C)
        return (pe * (shifted > 0).unsqueeze(-1)).to(torch.float32)

    def forward(self, x: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
        """x (B, T, C) scaled word embeddings, values (B, T) raw NSD values → (B, T, C) in x's dtype (under autocast
        the ``linear`` projection runs in half precision: its output is cast back, so the residual stream that starts
        here keeps the precision of a stock model's, float32)."""
        if values.shape != x.shape[:2]:
            raise ValueError(f"NSD input needs one NSD value per token: tokens {tuple(x.shape[:2])}, values "
                             f"{tuple(values.shape)}")
        rows, shifted = self.index(values.to(x.device))
        with named_precision(f"the NSD input ({self.mode}, Ma et al. 2019)", x):
            if self.mode == "concat":
                e = self.embed(rows).to(x.dtype)
                out = torch.cat([x[..., : self.embed_dim - e.size(-1)], e], dim=-1)
            elif self.mode == "add":
                out = x + self.embed(rows).to(x.dtype)
            elif self.mode == "linear":
                out = self.proj(torch.cat([x, self.embed(rows).to(x.dtype)], dim=-1)).to(x.dtype)
            else:
                out = x
            if self.spe:
                spe = self.spe_table(shifted).to(x.dtype)  # (B, T, C)
                out = out + spe if self.spe_start is None else self.spe_start(out, out + spe)
        return out


class NsdClassifier(nn.Module):
    """A softmax classifier over the NSD values of the range from each hidden state (Ma et al. 2019, §3.2, Eq. 11)."""

    def __init__(self, embed_dim: int, v_min: int, v_max: int):
        super().__init__()
        self.v_min, self.v_max = int(v_min), int(v_max)
        self.out = nn.Linear(embed_dim, self.v_max - self.v_min + 1)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        """h (…, C) → logits (…, V) (in half precision under autocast; the losses take them to float32)."""
        with named_precision("the NSD classifier (Ma et al. 2019)", h):
            return self.out(h)

    def predict(self, logits: torch.Tensor) -> torch.Tensor:
        """The most probable NSD value (…,) long."""
        return logits.argmax(-1) + self.v_min


def nsd_losses(logits: torch.Tensor, values: torch.Tensor, v_min: int, v_max: int, norm: str = "sentence"):
    """L_entdist and L_dist (Ma et al. 2019, Eq. 20 and Eq. 19) of one side, summed over the sentences of the batch,
    with the number of tokens with a value and the number of gold values clipped to the range.

    L_entdist = −Σ_i log p(d_i | h_i) (Ma et al. 2019, Eq. 20: the cross-entropy of the NSD classifier of Eq. 11).

    L_dist = Σ_i (d_i − d̂_i)² + Σ_{i, j>i} [1 − sign(d_i − d_j)(d̂_i − d̂_j)]₊ per sentence (Ma et al. 2019, Eq. 19),
    with d the gold value clipped to the range and d̂ the classifier's expected value Σ_k p_k (v_min + k) (our
    choice: differentiable, unlike the argmax). Summed as written its two terms are far larger per token than
    L_NMT and L_entdist (the squared error is of the order of the values' variance, the hinge sums O(n) pairs
    per token), and the unweighted total of Eq. 17 stalls translation. So each term is normalised to O(1) per
    token (our normalisation, ``norm`` "sentence"; ``norm`` "printed" sums the two terms as Eq. 19 prints them):

        L_dist = Σ_i (d_i − d̂_i)² / σ² + 2/(n − 1) · Σ_{i, j>i} [1 − sign(d_i − d_j)(d̂_i − d̂_j)]₊

    * σ² is the variance of the sentence's gold values (at least 1), so the squared term is the share of the
      values' variance left unexplained (1 per token for a constant prediction at their mean); per sentence, so a
      sentence's loss does not depend on the batch it is in (nor on the number of workers);
    * 2/(n − 1), n the sentence's tokens with a value, averages each token's hinge over its n − 1 pairs
      (Σ_i 1/(n − 1) Σ_{j≠i} h_ij = 2/(n − 1) Σ_{i<j} h_ij); a pair with equal gold values counts 1, as written.

    logits (B, T, V), values (B, T) → (ce, dist, count, clipped) scalars."""
    cls, real, clipped = nsd_classes(values, v_min, v_max)  # (B, T)
    logp = F.log_softmax(logits.float(), dim=-1)  # (B, T, V)
    ce = -(logp.gather(-1, cls.unsqueeze(-1)).squeeze(-1) * real).sum()
    grid = torch.arange(v_min, v_max + 1, device=logits.device, dtype=torch.float32)  # (V,)
    d_hat = (logp.exp() * grid).sum(-1)  # (B, T)
    d = (cls + v_min).float()  # (B, T)
    count = real.sum()
    n = real.sum(1).float()  # (B,) tokens with a value per sentence
    T = values.size(1)
    later = torch.ones(T, T, dtype=torch.bool, device=values.device).triu(1)  # (T, T) j > i
    pairs = later & real.unsqueeze(2) & real.unsqueeze(1)  # (B, T, T)
    hinge = F.relu(1 - torch.sign(d.unsqueeze(2) - d.unsqueeze(1)) * (d_hat.unsqueeze(2) - d_hat.unsqueeze(1)))
    if norm == "printed":  # Eq. 19: Σ_i (d_i − d̂_i)² + Σ_{i, j>i} [1 − sign(d_i − d_j)(d̂_i − d̂_j)]₊
        return ce, ((d - d_hat) ** 2 * real).sum() + (hinge * pairs).sum(), count, clipped
    mean = (d * real).sum(1) / n.clamp(min=1)  # (B,)
    variance = (((d - mean.unsqueeze(1)) ** 2) * real).sum(1).div(n.clamp(min=1)).clamp(min=1.0)  # (B,) σ², constant
    square = (((d - d_hat) ** 2 * real).sum(1) / variance).sum()
    per_sentence = (hinge * pairs).sum((1, 2)) * 2 / (n - 1).clamp(min=1)  # (B,)
    return ce, square + per_sentence.sum(), count, clipped


# -------------------------------------------------------------------------------------------------- one side

@dataclass(frozen=True)
class NsdSettings:
    """What NSD does on one side: input embedding mode, syntactic PE, predicted output, and the value range."""

    side: str  # "encoder" or "decoder"
    kind: str = "dD"
    input: str = "none"
    spe: bool = False
    output: bool = False
    v_min: Optional[int] = None
    v_max: Optional[int] = None

    @property
    def short(self) -> str:
        return SHORT[self.side]

    @property
    def embeds(self) -> bool:
        """Whether the side's input gets NSD (embedding or syntactic PE)."""
        return self.input != "none" or self.spe

    @property
    def active(self) -> bool:
        return self.embeds or self.output

    @property
    def input_feature(self) -> str:
        return f"src_nsd_{self.kind}" if self.side == "encoder" else f"tgt_nsd_in_{self.kind}"

    @property
    def label_feature(self) -> str:
        return f"src_nsd_{self.kind}" if self.side == "encoder" else f"tgt_nsd_out_{self.kind}"

    def check(self, embed_dim: int, nsd_dim: int) -> None:
        """The side's options, in a model of dimension ``embed_dim`` with --nsd-embed-dim ``nsd_dim``."""
        flag = f"--nsd-{self.short}"
        check_choice(f"{flag}-input", self.input, NSD_INPUT_MODES)
        if self.input == "concat":
            dim = nsd_embed_size(self.input, embed_dim, nsd_dim)
            check_option(0 < dim < embed_dim, "--nsd-embed-dim",
                         f"of a concat NSD input must lie in 1..{embed_dim - 1} (below the model dimension)", dim)
        if self.side == "decoder" and self.embeds and not self.output:
            raise ValueError("target NSD input (--nsd-tgt-input/--nsd-tgt-spe) needs --nsd-tgt-output: in decoding the "
                             "predicted NSD of the previous token is the next step's input")
        if self.active and (self.v_min is None or self.v_max is None):
            raise ValueError(f"the {self.short} NSD value range is unknown: build the model with --task syntax_translation "
                             f"(it reads the range from the training split) or pass {flag}-min and {flag}-max")
        if self.active and self.v_max < self.v_min:
            raise ValueError(f"{flag}-max ({self.v_max}) is below {flag}-min ({self.v_min})")


class NsdSide(SyntaxPart):
    """NSD on one side of a model (kept as ``encoder.nsd`` / ``decoder.nsd``): its input layer (``input``, when the side
    embeds NSD) and its classifier (``classifier``, when the side predicts it)."""

    key = "nsd"

    def __init__(self, settings: NsdSettings, embed_dim: int, nsd_dim: int, spe_lambda: float, neutral: bool = False):
        super().__init__()
        self.settings = settings
        s = settings
        if s.embeds:
            self.input = NsdInput(s.input, embed_dim, nsd_dim, s.v_min, s.v_max, s.spe, spe_lambda, neutral)
        if s.output:
            self.classifier = NsdClassifier(embed_dim, s.v_min, s.v_max)

    def initialisation(self) -> Dict[str, str]:
        """Ma et al. 2019 state no initialisation of the NSD embedding, W of Eq. 10 or the classifier of Eq. 11; under
        ``--syntax-start pretrained`` the input starts as the identity of x (:meth:`NsdInput.start_neutral`)."""
        out = {"input.embed.": "E_d: normal, std k^-1/2, as fairseq's token embeddings, the no-value row 0 (ours)",
               "input.proj.": f"W, b of W(x‖e) + b (Eq. 10): {LINEAR_DEFAULT} (ours)",
               "classifier.out.": f"the NSD classifier (Eq. 11): {LINEAR_DEFAULT} (ours; it changes no translation "
                                  "output)"}
        if self.settings.embeds and self.input.neutral:
            neutral = "--syntax-start pretrained, ours"
            if self.input.mode == "add":
                out["input.embed."] = f"E_d = 0, so x + E_d[d] = x at the start ({neutral})"
            out["input.proj.weight"] = f"W = [I, 0] of W(x‖e) + b (Eq. 10), so it is x at the start ({neutral})"
            out["input.proj.bias"] = f"b = 0 ({neutral})"
        return out

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        """A checkpoint whose NSD embedding size k differs from the model's was trained with another --nsd-embed-dim:
        most likely with 0 when it meant a quarter of the model dimension. Say so, and how to load it, instead of
        torch's size mismatch."""
        key = prefix + "input.embed.weight"
        embed = self.input.embed if self.settings.embeds and self.settings.input != "none" else None
        if embed is not None and key in state_dict:
            saved, built = int(state_dict[key].shape[-1]), int(embed.weight.shape[-1])
            if saved != built:
                raise ValueError(f"the checkpoint's {self.settings.short} NSD embedding has size {saved}, but the model "
                                 f"builds {built} ({self.input.mode} input): a checkpoint trained with --nsd-embed-dim 0 "
                                 "when 0 meant a quarter of the model dimension loads with "
                                 f"--model-overrides \"{{'nsd': {{'embed_dim': {saved}}}}}\"")
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)


def warn_clipped(values: torch.Tensor, settings: NsdSettings) -> None:
    """NSD values outside the training range are clipped to it: say how many (at evaluation and generation)."""
    clipped = int(nsd_classes(values, settings.v_min, settings.v_max)[2])
    if clipped:
        logger.warning(f"{clipped} {settings.short} NSD value(s) outside the training range "
                       f"[{settings.v_min}, {settings.v_max}] clipped to it")


class Nsd(Mechanism):
    """The NSD mechanism: one :class:`NsdSide` per side that uses it."""

    switches = ("src_input", "tgt_input", "src_spe", "tgt_spe", "src_output", "tgt_output")
    key = "nsd"
    Config = NsdConfig
    title = "NSD (Ma et al. 2019)"

    def __init__(self, cfg: NsdConfig, shape):
        super().__init__(cfg, shape)
        check_choice("--nsd-kind", cfg.kind, NSD_KINDS)
        check_option(is_number(cfg.embed_dim, True) and cfg.embed_dim >= 0, "--nsd-embed-dim",
                     "must be >= 0 (0: the default size)", cfg.embed_dim)
        check_choice("--nsd-dist-norm", cfg.dist_norm, NSD_DIST_NORMS)
        check_option(is_number(cfg.spe_lambda) and cfg.spe_lambda > 0, "--nsd-spe-lambda",
                     "(λ_SPE, the longest period of the syntactic PE, Eq. 15-16) must be > 0", cfg.spe_lambda)
        for flag, weight in (("--nsd-ce-weight", cfg.ce_weight), ("--nsd-dist-weight", cfg.dist_weight)):
            check_option(is_number(weight) and weight >= 0, flag, "is the weight of an NSD loss and must be >= 0", weight)
        self.sides: Dict[str, NsdSettings] = {}
        for side, short in SHORT.items():
            get = lambda name: getattr(cfg, f"{short}_{name}")  # noqa: E731
            s = NsdSettings(side, str(cfg.kind), str(get("input") or "none"), bool(get("spe")), bool(get("output")),
                            get("min"), get("max"))
            s.check(shape.dim(side), int(cfg.embed_dim))
            if s.output:
                self._log_untrained(s)
            self.sides[side] = s

    def _log_untrained(self, s: NsdSettings) -> None:
        """Both loss weights 0 is Table 1's "O" row trained with L_NMT only (Ma et al. 2019, Eq. 18): accepted, and
        logged, since the classifier of a side with an output then stays untrained."""
        if float(self.cfg.ce_weight) == 0 and float(self.cfg.dist_weight) == 0:
            message = (f"the {s.short} NSD classifier (--nsd-{s.short}-output) is not trained: --nsd-ce-weight and "
                       "--nsd-dist-weight are both 0 (L_NMT only, Ma et al. 2019 Eq. 18)")
            if s.side == "decoder" and s.embeds:
                logger.warning(message + "; decoding feeds its untrained predictions to the target NSD input")
            else:
                logger.info(message)

    @classmethod
    def data_fields(cls, cfg: NsdConfig, value_range) -> Dict[str, int]:
        """The value range of every side that uses NSD and has none given, from the training split:
        ``value_range(side, feature) → (min, max)`` (the task's); {field: value}."""
        out = {}
        if cfg.kind not in NSD_KINDS:  # no such feature to ask for: the mechanism's check names the option
            return out
        for side, short in SHORT.items():
            used = (getattr(cfg, f"{short}_input") or "none") != "none" or getattr(cfg, f"{short}_spe") \
                or getattr(cfg, f"{short}_output")
            if not used or (getattr(cfg, f"{short}_min") is not None and getattr(cfg, f"{short}_max") is not None):
                continue
            feature = f"src_nsd_{cfg.kind}" if side == "encoder" else f"tgt_nsd_out_{cfg.kind}"
            out[f"{short}_min"], out[f"{short}_max"] = value_range(side, feature)
        return out

    @property
    def active(self) -> bool:
        return any(s.active for s in self.sides.values())

    def embeds(self, side):
        return self.sides[side].embeds

    def side_module(self, side, embed_dim):
        s = self.sides[side]
        if not s.active:
            return None
        return NsdSide(s, embed_dim, int(self.cfg.embed_dim or 0), float(self.cfg.spe_lambda), self.neutral)

    def start_from(self, start):
        """``--syntax-start pretrained`` refuses an input mode that cannot start neutral (:data:`NOT_NEUTRAL`)."""
        super().start_from(start)
        for s in self.sides.values():
            if self.neutral and s.input in NOT_NEUTRAL:
                raise ValueError(f"--nsd-{s.short}-input {s.input} cannot start from the pretrained model's function "
                                 f"(--syntax-start pretrained): {NOT_NEUTRAL[s.input]}; use linear (W = [I, 0] at the "
                                 "start) or add (E_d = 0 at the start)")

    def legacy_keys(self, side):
        """Before one module per side: the source's ``nsd_input``/``nsd_classifier``, the target's input in fairseq's
        ``project_in_dim`` hook."""
        s = self.sides[side]
        if not s.active:
            return {}
        return {"nsd_input.": "nsd.input.", "nsd_classifier.": "nsd.classifier.",
                **({"project_in_dim.": "nsd.input."} if side == "decoder" and s.embeds else {})}

    def features(self, side):
        s = self.sides[side]
        need = FeatureNeeds()
        if s.embeds and side == "encoder":
            need.required.add(s.input_feature)  # generation reads the source's values too
        elif s.embeds:  # teacher forcing reads the target's; decoding predicts them
            need.optional.add(s.input_feature)
            need.training.add(s.input_feature)
        if s.output:
            need.optional.add(s.label_feature)
            need.training.add(s.label_feature)
        return need

    def prepare(self, side, features, tokens, pad_mask, dtype, training):
        s = self.sides[side]
        if not s.active:
            return None
        shape = tuple(tokens.shape)
        labels = None
        if s.output:
            labels = features.get(s.label_feature)
            if labels is None and training:
                labels = required_feature(features, s.label_feature, shape, f"the {s.short} NSD output")
        values = features.get(s.input_feature) if s.embeds else None
        if values is not None and tuple(values.shape) != shape:
            raise ValueError(f"{s.input_feature} has shape {tuple(values.shape)}, expected {shape}")
        return {"values": values, "labels": labels}

    def embed(self, side, owner, x, inputs, incremental_state=None):
        s = self.sides[side]
        return x if not s.embeds else self._embed(owner, s, x, inputs, incremental_state)

    def _embed(self, owner, s: NsdSettings, x, inputs, incremental_state):
        given = (inputs.get(self.key) or {}).get("values")
        if s.side == "encoder" or incremental_state is None:
            if given is None:
                why = ("this model's source NSD input" if s.side == "encoder" else
                       "a teacher-forced forward with target NSD input (incremental decoding predicts it instead)")
                given = required_feature({}, s.input_feature, tuple(x.shape[:2]), why)
            values = given
        else:  # incremental decoding: the previous step's prediction; BOS_NSD first, NO_NSD for a language token
            saved = owner.get_incremental_state(incremental_state, self.key)
            step = 0 if saved is None else int(saved.get("step", 0))  # the decoder inputs read before this one
            if step == 0:
                values = torch.full(x.shape[:2], BOS_NSD, dtype=torch.long, device=x.device)
            elif step <= getattr(owner, "target_prefix_tokens", 0):  # a token the task puts before the sentence:
                values = torch.full(x.shape[:2], NO_NSD, dtype=torch.long, device=x.device)  # its filler in training
            else:
                values = saved["prev"].unsqueeze(1)  # (B, 1)
            return owner.nsd.input(x, values)  # a prediction is in the range by construction: nothing to warn of
        if not owner.training:
            warn_clipped(values, s)
        return owner.nsd.input(x, values)

    def outputs(self, side, owner, states, inputs, extra, incremental_state=None):
        s = self.sides[side]
        if not s.output:
            return
        labels = (inputs.get(self.key) or {}).get("labels")
        feeds = incremental_state is not None and s.embeds  # the prediction is the next step's input
        if labels is None and not feeds:  # generation without labels: nothing reads the logits
            return
        logits = owner.nsd.classifier(states)  # (B, T, V)
        if labels is not None:
            ce, dist, count, clipped = nsd_losses(logits, labels, s.v_min, s.v_max, str(self.cfg.dist_norm))
            report_aux_loss(extra, f"nsd_{s.short}_ce", ce, count, float(self.cfg.ce_weight))
            report_aux_loss(extra, f"nsd_{s.short}_dist", dist, count, float(self.cfg.dist_weight))
            report_aux_metric(extra, f"nsd_{s.short}_clipped", 100.0 * clipped.float(), count)
        if feeds:
            predicted = owner.nsd.classifier.predict(logits[:, -1])  # (B,) the next input's NSD
            saved = owner.get_incremental_state(incremental_state, self.key)
            step = 0 if saved is None else int(saved.get("step", 0))
            owner.set_incremental_state(incremental_state, self.key, {"prev": predicted, "step": step + 1})

    def reorder(self, owner, incremental_state, new_order):
        """The predicted NSD of each hypothesis follows it when the beams are reordered."""
        saved = owner.get_incremental_state(incremental_state, self.key)
        if saved is not None and saved.get("prev") is not None:
            owner.set_incremental_state(incremental_state, self.key, {"prev": saved["prev"].index_select(0, new_order),
                                                                      "step": saved.get("step", 0)})


__all__ = ["NOT_NEUTRAL", "NSD_DIST_NORMS", "NSD_INPUT_MODES", "Nsd", "NsdClassifier", "NsdConfig", "NsdInput", "NsdSettings", "NsdSide",
           "nsd_classes", "nsd_embed_size", "nsd_losses"]
