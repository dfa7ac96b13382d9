"""Mixed precision on a CPU (``--cpu-autocast bf16`` of the syntax tasks): the forward passes of training and
validation, the loss included, run under ``torch.autocast("cpu", dtype=torch.bfloat16)``; the parameters, their
gradients and the optimizer stay in float32 (bfloat16 keeps float32's exponent range, so no loss scaling is needed).
On CPUs with bfloat16 matrix units (Intel AMX, AVX512-BF16) a matrix product runs several times faster this way.
fairseq's ``--amp`` (CUDA autocast) and ``--bf16`` (the whole model in bfloat16) do not apply to a CPU; generation
stays in float32 unless fairseq-generate is given the flag too."""
from typing import Callable

import torch

#: the values of --cpu-autocast
CPU_AUTOCAST = ("off", "bf16")
CPU_AUTOCAST_HELP = ("bf16: the forward passes of training and validation under torch.autocast on the CPU in bfloat16, "
                     "the parameters, gradients and optimizer in float32 (fast on CPUs with bfloat16 matrix units: "
                     "Intel AMX, AVX512-BF16); off (default): float32. fairseq-generate decodes in float32 unless "
                     "given the flag too. On a GPU use --amp")


def check_cpu_autocast(mode: str, on_cuda: bool) -> None:
    """ValueError when ``mode`` is unknown, or asked for a run on a GPU (where fairseq's --amp is the way)."""
    if mode not in CPU_AUTOCAST:
        raise ValueError(f"--cpu-autocast {mode!r}: expected one of {', '.join(CPU_AUTOCAST)}")
    if mode != "off" and on_cuda:
        raise ValueError(f"--cpu-autocast {mode} runs on the CPU, but this run is on a GPU: use fairseq's --amp (or "
                         f"--fp16) there, or add --cpu")


def autocast_criterion(criterion: Callable, mode: str) -> Callable:
    """``criterion`` (model, sample) → (loss, sample_size, logging_output) with its forward under CPU autocast in
    ``mode`` (the loss handed back in float32); ``criterion`` itself when ``mode`` is "off"."""
    if mode == "off":
        return criterion

    def under_autocast(model, sample):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss, sample_size, logging_output = criterion(model, sample)
        return loss.float(), sample_size, logging_output

    return under_autocast
