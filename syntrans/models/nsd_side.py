"""The NSD settings of one side (source or target) of a ``syntax_transformer`` (Ma et al. 2019)."""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Optional

from ..modules.nsd_layers import NSD_INPUT_MODES, NsdClassifier, NsdInput
from ..syntax.nsd import NSD_KINDS

logger = logging.getLogger("syntrans.nsd")


@dataclass(frozen=True)
class NsdSide:
    """What NSD does on one side: input embedding mode, syntactic PE, predicted output, and the value range."""

    side: str  # "src" or "tgt"
    kind: str = "dD"
    input: str = "none"
    spe: bool = False
    output: bool = False
    v_min: Optional[int] = None
    v_max: Optional[int] = None

    @classmethod
    def from_options(cls, opts, side: str) -> "NsdSide":
        """One side's settings from the model's :class:`~syntrans.models.options.SyntaxOptions`, checked."""
        get = lambda name: getattr(opts, f"nsd_{side}_{name}")  # noqa: E731
        out = cls(side, str(opts.nsd_kind), str(get("input") or "none"), bool(get("spe")), bool(get("output")),
                  get("min"), get("max"))
        out.check()
        if out.output:
            out.check_loss_weights(float(opts.nsd_ce_weight), float(opts.nsd_dist_weight))
        return out

    @property
    def embeds(self) -> bool:
        """Whether the side's input gets NSD (embedding or syntactic PE)."""
        return self.input != "none" or self.spe

    @property
    def active(self) -> bool:
        return self.embeds or self.output

    @property
    def input_feature(self) -> str:
        return f"src_nsd_{self.kind}" if self.side == "src" else f"tgt_nsd_in_{self.kind}"

    @property
    def label_feature(self) -> str:
        return f"src_nsd_{self.kind}" if self.side == "src" else f"tgt_nsd_out_{self.kind}"

    def check(self) -> None:
        flag = f"--nsd-{self.side}"
        if self.kind not in NSD_KINDS:
            raise ValueError(f"--nsd-kind must be one of {', '.join(NSD_KINDS)}, found {self.kind!r}")
        if self.input not in NSD_INPUT_MODES:
            raise ValueError(f"{flag}-input must be one of {', '.join(NSD_INPUT_MODES)}, found {self.input!r}")
        if self.side == "tgt" and self.embeds and not self.output:
            raise ValueError("target NSD input (--nsd-tgt-input/--nsd-tgt-spe) needs --nsd-tgt-output: in decoding the "
                             "predicted NSD of the previous token is the next step's input")
        if self.active and (self.v_min is None or self.v_max is None):
            raise ValueError(f"the {self.side} NSD value range is unknown: build the model with --task syntax_translation "
                             f"(it reads the range from the training split) or pass {flag}-min and {flag}-max")
        if self.active and self.v_max < self.v_min:
            raise ValueError(f"{flag}-max ({self.v_max}) is below {flag}-min ({self.v_min})")

    def check_loss_weights(self, ce_weight: float, dist_weight: float) -> None:
        """The weights of L_entdist and L_dist (Ma et al. 2019, Eq. 17) of a side with an output: not negative; both 0
        is Table 1's "O" row trained with L_NMT only (Eq. 18): accepted, and logged, since the classifier then
        stays untrained."""
        for flag, weight in (("--nsd-ce-weight", ce_weight), ("--nsd-dist-weight", dist_weight)):
            if weight < 0:
                raise ValueError(f"{flag} is the weight of an NSD loss and must be >= 0, found {weight}")
        if ce_weight == 0 and dist_weight == 0:
            message = (f"the {self.side} NSD classifier (--nsd-{self.side}-output) is not trained: --nsd-ce-weight and "
                       "--nsd-dist-weight are both 0 (L_NMT only, Ma et al. 2019 Eq. 18)")
            if self.side == "tgt" and self.embeds:
                logger.warning(message + "; decoding feeds its untrained predictions to the target NSD input")
            else:
                logger.info(message)

    def build_input(self, embed_dim: int, nsd_dim: int, spe_lambda: float) -> NsdInput:
        """The side's NSD input layer; ``nsd_dim`` is --nsd-embed-dim (0: the input mode's default size,
        :func:`~syntrans.modules.nsd_layers.nsd_embed_size`)."""
        return NsdInput(self.input, embed_dim, nsd_dim, self.v_min, self.v_max, self.spe, spe_lambda)

    def build_classifier(self, embed_dim: int) -> NsdClassifier:
        return NsdClassifier(embed_dim, self.v_min, self.v_max)
