"""The kernels a block of attention heads can run on, as plain functions on (B, n, T, d) tensors.

* :func:`sdpa`: torch's ``scaled_dot_product_attention`` (the fused kernel fairseq's stock layer reaches through
  ``F.multi_head_attention_forward``: flash or memory-efficient on CUDA, the flash kernel on CPU), with an optional
  additive bias broadcast over the block's heads: no (B, n, T, S) tensor is formed.
* :func:`flex`: torch's ``flex_attention`` with a score modification (e.g. a multiplied S ⊙ W) and the padding as a
  block mask (:func:`padding_block_mask`, made once per batch), optionally returning the log-sum-exp of every row;
  no (B, n, T, S) tensor either. Compiled (:mod:`~syntrans.modules.compiled_kernels`: a failed compile leaves the
  heads on the explicit path), on CUDA by default; its backward needs CUDA, and it has no attention dropout.
* :func:`masked_scores` and :func:`softmax_probs`: the explicit path's pieces (scores formed, masked, softmax in
  float32 as fairseq's ``utils.softmax``), the reference every fused kernel is tested against; :func:`dropout_keeps`:
  several dropout masks in one draw (a mixed layer's syntax dropout and attention dropout).
"""
from __future__ import annotations

import math
from typing import Callable, List, Optional, Sequence, Tuple

import torch
import torch.nn.functional as F

from .compiled_kernels import KernelUnavailable, call, compile_enabled, compiled, usable


def additive_mask(pad: Optional[torch.Tensor], attn_mask: Optional[torch.Tensor], bias: Optional[torch.Tensor],
                  dtype: torch.dtype, B: int, S: int) -> Optional[torch.Tensor]:
    """One float mask for SDPA, broadcast over heads: padding keys at −inf (pad (B, S) True at padding), the caller's
    ``attn_mask`` (T, S) (the decoder's causal mask) and a block's ``bias`` (B, 1, T, S); None when there is none.
    Returns (B, 1, 1|T, S) or (1, 1, T, S) in ``dtype``."""
    mask = None
    if pad is not None:
        mask = torch.zeros(B, 1, 1, S, dtype=dtype, device=pad.device).masked_fill(pad.view(B, 1, 1, S), float("-inf"))
    for extra in (attn_mask, bias):
        if extra is None:
            continue
        extra = extra.to(dtype)
        if extra.dim() == 2:
            extra = extra.view(1, 1, *extra.shape)
        mask = extra if mask is None else mask + extra
    return mask


def sdpa(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: Optional[torch.Tensor], dropout_p: float,
         scale: Optional[float] = None) -> torch.Tensor:
    """softmax(q kᵀ · scale + mask) v with attention dropout, fused: q (B, n, T, d), k, v (B, n, S, d) → (B, n, T, d).
    ``scale`` defaults to 1/√d."""
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout_p, scale=scale)


def flex_available(device: torch.device) -> bool:
    """Whether :func:`flex` runs fused here: on CUDA, compiled (torch >= 2.5), unless compiling is off
    (``SYNTRANS_COMPILE=0``). Elsewhere torch runs flex attention as a reference that forms the scores anyway (and has
    no backward on CPU): the explicit path is as good there."""
    if device.type != "cuda" or not compile_enabled():
        return False
    try:
        from torch.nn.attention import flex_attention  # noqa: F401
    except ImportError:
        return False
    return True


def padding_block_mask(pad: Optional[torch.Tensor], causal: bool, B: int, T: int, S: int, device: torch.device):
    """flex attention's block mask of padding keys (pad (B, S) True at padding) and, when ``causal``, later keys; None
    when neither masks anything. Made by torch's ``create_block_mask``, compiled on CUDA (eager where that compile
    failed, :mod:`~syntrans.modules.compiled_kernels`); the side's inputs make it once per batch for every layer
    (:meth:`~syntrans.modules.blocks.SideInputs.block_mask`)."""
    if pad is None and not causal:
        return None
    from torch.nn.attention.flex_attention import create_block_mask

    if pad is None:
        def mask_mod(b, h, q_idx, kv_idx):  # the causal mask alone
            return kv_idx <= q_idx
    elif causal:
        def mask_mod(b, h, q_idx, kv_idx):
            return ~pad[b, kv_idx] & (kv_idx <= q_idx)
    else:
        def mask_mod(b, h, q_idx, kv_idx):
            return ~pad[b, kv_idx]

    caller = "causal mask" if causal else "padding mask"
    if torch.device(device).type == "cuda" and usable("block mask", caller, device):
        make = compiled("block mask", caller, device, create_block_mask, dynamic=True)
        try:
            return call("block mask", caller, device, make, mask_mod, B, None, T, S, device=device)
        except KernelUnavailable:
            pass
    return create_block_mask(mask_mod, B, None, T, S, device=device)


FLEX = "flex attention"  # the kernel's name in compiled_kernels and its warning

def _flex_kernel(compiled_for: Optional[str], device: torch.device):
    """torch's flex attention: eager (its reference), or compiled for one caller on ``device``'s type, for dynamic
    shapes (every batch has its own length)."""
    from torch.nn.attention.flex_attention import flex_attention

    if compiled_for is None:
        return flex_attention
    return compiled(FLEX, compiled_for, device, flex_attention, dynamic=True)


def flex(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, score_mod: Optional[Callable], pad: Optional[torch.Tensor],
         causal: bool = False, scale: Optional[float] = None, return_lse: bool = False,
         compiled: Optional[bool] = None, block_mask=None, caller: str = "syntax heads"
         ) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
    """flex attention over (B, n, T, d) with ``score_mod(score, b, h, q_idx, kv_idx)`` applied to the scaled scores
    and the padding keys (pad (B, S)) and, when ``causal``, later keys masked → (out (B, n, T, d), lse (B, n, T) or
    None). ``h`` counts the block's heads from 0. ``block_mask``: that mask made already (:func:`padding_block_mask`;
    made here when None). ``compiled`` (default: on CUDA) runs torch's compiled kernel, for ``caller`` (the heads, as
    its failure warning names them): :class:`~syntrans.modules.compiled_kernels.KernelUnavailable` when it cannot
    run; the eager one is torch's reference (the tests compare it with the explicit path on CPU)."""
    B, _, T, _ = q.shape
    S = k.size(2)
    if block_mask is None:
        block_mask = padding_block_mask(pad, causal, B, T, S, q.device)
    compiled = q.device.type == "cuda" if compiled is None else compiled
    run = _flex_kernel(caller if compiled else None, q.device)
    kwargs = dict(score_mod=score_mod, block_mask=block_mask, scale=scale)
    if return_lse:
        try:  # torch >= 2.9 asks for the log-sum-exp with return_aux (its return_lse is deprecated)
            from torch.nn.attention.flex_attention import AuxRequest
            kwargs["return_aux"] = AuxRequest(lse=True)
        except ImportError:
            kwargs["return_lse"] = True
    result = call(FLEX, caller, q.device, run, q, k, v, **kwargs) if compiled else run(q, k, v, **kwargs)
    if not return_lse:
        return result, None
    out, aux = result
    return out, getattr(aux, "lse", aux)


def masked_scores(scores: torch.Tensor, attn_mask: Optional[torch.Tensor], pad: Optional[torch.Tensor]) -> torch.Tensor:
    """scores (B, n, T, S) + the caller's attn_mask (T, S), padding keys (pad (B, S)) at −inf. (``where`` rather than
    an out-of-place ``masked_fill``: the same values and gradients in one pass instead of a copy and a fill.)"""
    if attn_mask is not None:
        scores = scores + attn_mask.to(scores.dtype)
    if pad is not None:
        B, _, _, S = scores.shape
        scores = torch.where(pad.view(B, 1, 1, S), scores.new_tensor(float("-inf")), scores)
    return scores


def softmax_probs(scores: torch.Tensor, live: bool = False) -> torch.Tensor:
    """Softmax over keys in float32 whatever the scores' dtype, as fairseq's unfused attention takes it. A query
    row whose keys are all masked (a padding query of a left-padded target under the causal mask) gets zeros, not
    the NaN of a softmax over −inf, which the next layer's probabilities × values would carry into the real rows
    (0 · NaN) — in the forward and in the gradients. scores (B, h, T, S) → (B, h, T, S) float32.

    torch's ``_safe_softmax`` (the softmax SDPA's reference path takes) does exactly that in fewer passes over the
    (B, h, T, S) tensor; torch versions without it take the same steps one by one. ``live``: the caller knows that no
    row is fully masked (:func:`rows_live`), so the plain softmax gives the same numbers in fewer passes still."""
    scores = scores.float()
    if live:
        return F.softmax(scores, dim=-1)
    if _SAFE_SOFTMAX is not None:
        return _SAFE_SOFTMAX(scores, -1)
    dead = torch.isneginf(scores).all(dim=-1, keepdim=True)  # (B, h, T, 1)
    return F.softmax(scores.masked_fill(dead, 0.0), dim=-1).masked_fill(dead, 0.0)


_SAFE_SOFTMAX = getattr(torch, "_safe_softmax", None)


def rows_live(pad: Optional[torch.Tensor], attn_mask: Optional[torch.Tensor]) -> bool:
    """Whether every query row keeps a key after the masks alone (no caller mask, and no sentence all padding), known
    without waiting for a device: on CPU only (on CUDA the check would stop the stream; False there, and with no
    padding mask to tell the device by)."""
    if attn_mask is not None or pad is None or pad.device.type != "cpu":
        return False
    return not bool(pad.all(dim=-1).any())


def dropout_keeps(shapes: Sequence[Tuple[int, ...]], rates: Sequence[float], device: torch.device
                  ) -> List[Optional[Tuple[torch.Tensor, float]]]:
    """Dropout masks for several tensors, drawn at once (one ``torch.rand``, cheaper than torch's ``bernoulli_`` per
    tensor): for each (shape, rate) the boolean mask of the kept elements (each kept with probability 1 − rate,
    independently of every other element, in every mask) and the scale 1/(1 − rate) of inverted dropout, as
    ``F.dropout`` applies them (:func:`dropped`); None for rate 0. A boolean mask is what backward keeps: a quarter
    of a float one."""
    sizes = [math.prod(shape) if rate > 0 else 0 for shape, rate in zip(shapes, rates)]
    u = torch.rand(sum(sizes), device=device)  # float32 uniforms in [0, 1)
    out: List[Optional[Tuple[torch.Tensor, float]]] = []
    for part, shape, rate in zip(u.split(sizes), shapes, rates):
        if rate <= 0:
            out.append(None)
        elif rate >= 1:
            out.append((torch.zeros(shape, dtype=torch.bool, device=device), 0.0))
        else:
            out.append((part.view(shape) < 1.0 - rate, 1.0 / (1.0 - rate)))
    return out


def dropped(x: torch.Tensor, keep: Optional[Tuple[torch.Tensor, float]], scale: bool = True) -> torch.Tensor:
    """x with a mask of :func:`dropout_keeps` applied: x · scale where kept, 0 where dropped (``scale`` False: the
    caller scales later, e.g. a product's smaller result)."""
    if keep is None:
        return x
    mask, factor = keep
    return torch.where(mask, x * factor if scale else x, x.new_zeros(()))
