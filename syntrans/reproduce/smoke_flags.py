"""The flags a ``--smoke`` run adds after a config's: a tiny model, as deep as the system's layer flags need, trained
a few hundred updates."""
from __future__ import annotations

from typing import List, Optional, Tuple

from .config_file import ArgsFile


#: flags after a config's in a --smoke run: a tiny model, a few hundred updates, a short warm-up (later flags win)
SMOKE_MODEL = ["--encoder-layers", "2", "--decoder-layers", "2", "--encoder-embed-dim", "64", "--decoder-embed-dim", "64",
               "--encoder-ffn-embed-dim", "128", "--decoder-ffn-embed-dim", "128", "--encoder-attention-heads", "8",
               "--decoder-attention-heads", "8", "--max-tokens", "2048", "--lr", "2e-3", "--warmup-init-lr", "1e-7",
               "--num-workers", "0"]


def _last_value(flags: List[str], name: str) -> Optional[str]:
    """The value of the last ``name`` among fairseq flags (later flags win), or None."""
    values = [v for f, v in zip(flags, flags[1:]) if f == name]
    return values[-1] if values else None


def smoke_layers(flags: List[str]) -> int:
    """The layers a smoke model needs: 2, or more where a flag ``--…-layers`` names a deeper layer (0-based), e.g. a
    table's layer sweep (``--pascal-layers 5`` needs 6 layers)."""
    deepest = 1
    for name, value in zip(flags, flags[1:]):
        if name.startswith("--") and name.endswith("-layers") and name not in ("--encoder-layers", "--decoder-layers"):
            for part in value.split(","):
                if part.strip().isdigit():
                    deepest = max(deepest, int(part))
    return deepest + 1


def smoke_flags(cfg: ArgsFile, updates: int, extra: Tuple[str, ...] = ()) -> List[str]:
    """Flags after a config's (and a system's extra flags) in a --smoke run: :data:`SMOKE_MODEL`, as many layers as
    the system's layer flags need, a few hundred updates and a short warm-up."""
    layers = str(smoke_layers(list(cfg.flags) + list(extra)))
    flags = SMOKE_MODEL + ["--encoder-layers", layers, "--decoder-layers", layers]
    flags += ["--max-update", str(updates), "--warmup-updates", str(max(10, updates // 4))]
    warmup = _last_value(list(cfg.flags) + list(extra), "--gate-warmup-epochs")
    if warmup is not None and warmup.isdigit() and int(warmup) > 1:
        # the published K (50–80 epochs) would freeze the gates for the whole run; an ablation's K = 0 stays
        flags += ["--gate-warmup-epochs", "1"]
    if cfg.value("--nsd-embed-dim") is not None:
        flags += ["--nsd-embed-dim", "64"]  # e ∈ ℝ^d (Ma et al. 2019, Eq. 10) for the tiny model's 64 dims
    return flags
