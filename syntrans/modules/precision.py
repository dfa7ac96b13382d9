"""Half precision (float16, bfloat16, autocast) in the syntax mechanisms: the pieces every mechanism shares.

* :func:`full_precision`: a block computed in float32 with autocast off, for the small tensors whose precision
  matters more than their cost (a small network over a sentence, unscaled bi-affine scores, a mapped attention).
* :func:`to_dtype_clamped`: a float32 result taken back to a half dtype without overflowing to ±inf.
* :func:`named_precision`: a mechanism that cannot run in a dtype on a device (torch has no kernel for it there, e.g.
  an older torch's CPU LayerNorm in float16) says so by name, instead of torch's bare kernel message.
"""
from __future__ import annotations

import contextlib
import re
from typing import Iterator

import torch

#: torch's messages for an operation it cannot run in a dtype: a missing kernel, or operands of mixed dtypes
_DTYPE_FAILURE = re.compile(r"not implemented for '(Half|BFloat16)'|must have the same dtype|expected (scalar type|both"
                            r"|m1 and m2|mat1 and mat2)[^\n]*(Half|BFloat16|Float)")


class PrecisionError(RuntimeError):
    """A syntax mechanism cannot run in the precision asked for (the message names the mechanism, dtype and device)."""


def _autocast_dtype(device_type: str):
    """The autocast dtype active on ``device_type``, None when autocast is off there."""
    try:
        if torch.is_autocast_enabled(device_type):
            return torch.get_autocast_dtype(device_type)
    except TypeError:  # torch < 2.4: no per-device form
        if device_type == "cpu" and torch.is_autocast_cpu_enabled():
            return torch.get_autocast_cpu_dtype()
        if device_type == "cuda" and torch.is_autocast_enabled():
            return torch.get_autocast_gpu_dtype()
    return None


@contextlib.contextmanager
def named_precision(mechanism: str, x: torch.Tensor) -> Iterator[None]:
    """Run a mechanism's block; a RuntimeError of torch about a dtype it cannot run becomes a
    :class:`PrecisionError` naming ``mechanism``, the dtype of ``x`` (its input), the active autocast and the device."""
    try:
        yield
    except PrecisionError:
        raise
    except RuntimeError as e:
        if not _DTYPE_FAILURE.search(str(e)):
            raise
        device = x.device.type
        cast = _autocast_dtype(device)
        under = f" under torch.autocast({device!r}, dtype={cast})" if cast is not None else ""
        raise PrecisionError(
            f"{mechanism} cannot run with {x.dtype} inputs{under} on {device} with torch {torch.__version__}: {e}. "
            "Run this model in float32 (no --fp16/--bf16/--amp), in the other half dtype, or on a device that has "
            "the kernel (docs/half_precision.md lists what runs where)") from e


def full_precision(device_type: str) -> contextlib.AbstractContextManager:
    """Autocast off on ``device_type``: inside, operations run in their inputs' dtypes (cast them to float32)."""
    return torch.autocast(device_type, enabled=False)


def to_dtype_clamped(x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """``x`` in ``dtype``, finite values clamped to ±finfo(dtype).max first, so that a float32 value beyond the
    half range (65504 in float16) becomes the largest finite one instead of ±inf (a softmax over +inf is NaN)."""
    if x.dtype == dtype:
        return x
    big = torch.finfo(dtype).max
    return x.clamp(-big, big).to(dtype)
