"""The settings of one benchmark run (:class:`BenchOptions`) and the error for settings it refuses (:class:`BenchError`).

The model size and measurement settings left as None take the values of a preset: :data:`QUICK` with
``quick`` (a smoke test), else :data:`DEFAULTS`; :class:`BenchOptions` fills them in when it is built and
refuses values out of range.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional


class BenchError(ValueError):
    """A setting or an environment the benchmark cannot run with; the message names it and what was found."""


QUICK = dict(layers=2, dim=64, heads=8, ffn=128, batches=2, warmup=1, reps=2, max_tokens=512, gen_batches=1,
             gen_batch_size=8, beam=2, synth_train=200, synth_test=24, max_len_b=5, sidecar_reps=1)
DEFAULTS = dict(layers=6, dim=256, heads=8, ffn=1024, batches=6, warmup=1, reps=4, max_tokens=2048, gen_batches=2,
                gen_batch_size=32, beam=4, synth_train=10000, synth_test=500, max_len_b=10, sidecar_reps=3)
#: the benchmark by length (``--lengths``): Transformer base's layer (512 dims, 8 heads, FFN 2048), 5 timed steps
LAYER_DEFAULTS = dict(dim=512, heads=8, ffn=2048, reps=5, warmup=1)
LAYER_QUICK = dict(dim=64, heads=8, ffn=128, reps=2, warmup=1)

#: settings that must be at least 1
POSITIVE = ("layers", "dim", "heads", "ffn", "batches", "reps", "max_tokens", "gen_batches", "gen_batch_size", "beam",
            "sidecar_reps")


@dataclass
class BenchOptions:
    """Every setting of ``syntrans-benchmark`` (its flags, ``--max-len-a`` as ``max_len_a`` and so on).

    ``device``: ``cpu``, ``cuda``, or None/``all`` (CPU, plus CUDA when available). ``archs``: the syntax
    presets to measure (None: every registered preset). ``corpus``: ``auto`` (Multi30k when ``multi30k_dir``,
    default ``../shared/data/multi30k``, exists and not ``quick``), ``multi30k`` or ``synth``. ``out``/``json``:
    files for the Markdown report and the JSON of all measurements. ``verbose``: keep fairseq's INFO logging.
    """

    device: Optional[str] = None
    archs: Optional[List[str]] = None
    layers: Optional[int] = None
    dim: Optional[int] = None
    heads: Optional[int] = None
    ffn: Optional[int] = None
    batches: Optional[int] = None
    warmup: Optional[int] = None
    reps: Optional[int] = None
    max_tokens: Optional[int] = None
    gen_batches: Optional[int] = None
    gen_batch_size: Optional[int] = None
    beam: Optional[int] = None
    max_len_a: float = 1.2
    max_len_b: Optional[int] = None
    lr: float = 5e-4
    no_matched_vanilla: bool = False
    seed: int = 1
    threads: int = 1
    quick: bool = False
    corpus: str = "auto"
    multi30k_dir: Optional[str] = None
    bpe_merges: Optional[int] = None
    synth_train: Optional[int] = None
    synth_test: Optional[int] = None
    work_dir: str = "bench"
    no_sidecars: bool = False
    sidecar_reps: Optional[int] = None
    out: Optional[str] = None
    json: Optional[str] = None
    verbose: bool = False
    lengths: Optional[List[int]] = None  # the benchmark by length: one layer per mechanism at these sentence lengths
    layer_tokens: Optional[int] = None  # tokens per batch of the benchmark by length
    layer_dtype: str = "float32"  # the dtype of the layers and inputs of the benchmark by length
    recompile_batches: Optional[int] = None  # the benchmark by length: batches of the recompile count (0: none)

    def __post_init__(self) -> None:
        if self.lengths is not None:
            if not self.lengths or any(int(t) < 2 for t in self.lengths):
                raise BenchError(f"--lengths takes sentence lengths of at least 2 tokens, found {self.lengths}")
            self.lengths = [int(t) for t in self.lengths]
            for k, v in (LAYER_QUICK if self.quick else LAYER_DEFAULTS).items():
                if getattr(self, k) is None:
                    setattr(self, k, v)
            if self.layer_tokens is None:
                self.layer_tokens = 512 if self.quick else 4096
            if self.recompile_batches is None:
                self.recompile_batches = 10 if self.quick else 50
            if self.recompile_batches < 0:
                raise BenchError(f"--recompile-batches must be ≥ 0, found {self.recompile_batches}")
            if self.layer_dtype not in ("float32", "float16", "bfloat16"):
                raise BenchError(f"--layer-dtype must be float32, float16 or bfloat16, found {self.layer_dtype!r}")
            if self.layer_tokens < max(self.lengths):
                raise BenchError(f"--layer-tokens {self.layer_tokens} is below the longest length {max(self.lengths)}: a "
                                 "batch holds at least one sentence")
        base = QUICK if self.quick else DEFAULTS
        for k, v in base.items():
            if getattr(self, k) is None:
                setattr(self, k, v)
        for k in POSITIVE:
            if getattr(self, k) < 1:
                raise BenchError(f"--{k.replace('_', '-')} must be ≥ 1, found {getattr(self, k)}")
        if self.warmup < 0:
            raise BenchError(f"--warmup must be ≥ 0, found {self.warmup}")
        if self.dim % self.heads:
            raise BenchError(f"--dim {self.dim} is not divisible by --heads {self.heads}")
        if self.device not in (None, "all", "cpu", "cuda"):
            raise BenchError(f"--device must be cpu, cuda or all, found {self.device!r}")
        if self.corpus not in ("auto", "multi30k", "synth"):
            raise BenchError(f"--corpus must be auto, multi30k or synth, found {self.corpus!r}")
