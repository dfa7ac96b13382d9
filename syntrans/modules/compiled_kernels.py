"""Kernels compiled by ``torch.compile`` (inductor), and what a layer does when one cannot run.

A compiled kernel (flex attention, the block mask's creation) is built once per kernel, caller, device type and grad
mode (:func:`compiled`): each is its own function to torch's compiler, so each has its own cache of compiled variants and
its own recompile limit; one mechanism's shapes never push another's kernel past that limit. Every call goes through
:func:`call`, which turns the ways compiling can fail (:func:`compile_failure`) into :class:`KernelUnavailable`:

* a compile error (inductor's C++ or Triton compiler, a lowering torch does not implement on this device: dynamo's
  ``BackendCompilerFailed``), the backward included: it is compiled with the forward, not at the first ``backward()``;
* what dynamo cannot trace (``Unsupported``), torch's own refusals (a ``NotImplementedError``, raised or met while
  tracing: flex attention has no backward on CPU) and dynamo's own errors (``InternalTorchDynamoError``);
* an error raised by the generated kernel when it runs (an index check of inductor's code: raised from a module of
  inductor's cache);
* dynamo's recompile limit, where torch would otherwise run the function uncompiled (for flex attention its eager
  reference, which forms every score); compiling in one graph makes torch raise there instead;
* dynamo's ``suppress_errors``, which would also fall back to eager silently, is off for these calls.

Any other error is the kernel's own, a bug of the method's score function that the explicit path would hide: an
exception its code raises (dynamo reports it as ``Unsupported`` caused by an observed exception), or an error of its
tensor operations found while tracing (``TorchRuntimeError``: a wrong index or shape). It propagates, unchanged.

The first failure of a (kernel, caller, device) gives one :class:`KernelFallbackWarning` naming the caller (a
mechanism's heads), the kernel, the torch version and the error, and that kernel is not tried again for that caller
in this process: the caller runs its explicit path (or SDPA) from then on. torch's out-of-memory error is not a
compile failure: it propagates.

``SYNTRANS_COMPILE=0`` in the environment compiles nothing: CUDA layers then take SDPA or the explicit path where
they would take flex attention, and block masks are made eagerly.

:func:`compiled_graphs` counts the graphs torch's compiler has compiled in this process (dynamo's counters), for the
benchmark's recompile count.
"""
from __future__ import annotations

import contextlib
import os
import types
import warnings
from typing import Callable, Dict, Iterator, Tuple

import torch

ENV = "SYNTRANS_COMPILE"  # "0": compile nothing


class KernelUnavailable(RuntimeError):
    """A compiled kernel could not run for this caller (see the module docstring): take the explicit path."""


class KernelFallbackWarning(RuntimeWarning):
    """A compiled kernel failed once; its caller runs the explicit path for the rest of the process."""


_KERNELS: Dict[Tuple[str, str, str, bool, str], Callable] = {}
_OVERRIDE: Dict[str, object] = {}  # torch.compile options every kernel compiled now takes (compile_options)
_FAILED: Dict[Tuple[str, str, str], str] = {}  # (kernel, caller, device type) → the warning given


def compile_enabled() -> bool:
    """Whether kernels are compiled at all (``SYNTRANS_COMPILE`` is not ``0``/``false``/``no``/``off``)."""
    return os.environ.get(ENV, "1").strip().lower() not in ("0", "false", "no", "off")


def usable(kernel: str, caller: str, device: torch.device) -> bool:
    """Whether ``kernel`` compiled for ``caller`` may run on ``device``: compiling is on and it has not failed."""
    return compile_enabled() and (kernel, caller, torch.device(device).type) not in _FAILED


def compiled(kernel: str, caller: str, device: torch.device, fn: Callable, **options) -> Callable:
    """``fn`` compiled by torch.compile (``options``: torch.compile's), one compiled function per (kernel, caller,
    device type, grad mode): a fresh code object each, so that torch keeps a separate cache and recompile limit for
    each."""
    options = {**options, **_OVERRIDE}
    key = (kernel, caller, torch.device(device).type, torch.is_grad_enabled(), repr(sorted(options.items())))
    if key not in _KERNELS:
        def trampoline(*args, **kwargs):
            return fn(*args, **kwargs)

        name = "_".join(("syntrans", kernel, caller, key[2], "grad" if key[3] else "nograd"))
        name = "".join(c if c.isalnum() or c == "_" else "_" for c in name)
        code = trampoline.__code__.replace(co_name=name)
        own = types.FunctionType(code, trampoline.__globals__, name, None, trampoline.__closure__)
        _KERNELS[key] = torch.compile(own, fullgraph=True, **options)
    return _KERNELS[key]


@contextlib.contextmanager
def compile_options(**options) -> Iterator[None]:
    """Kernels compiled inside take these torch.compile options (e.g. ``backend="eager"``: dynamo's guards and
    recompiles without inductor, for the benchmark's recompile count off CUDA); each set has its own kernels."""
    before = dict(_OVERRIDE)
    _OVERRIDE.update(options)
    try:
        yield
    finally:
        _OVERRIDE.clear()
        _OVERRIDE.update(before)


def call(kernel: str, caller: str, device: torch.device, fn: Callable, *args, **kwargs):
    """``fn(*args, **kwargs)``, ``fn`` a compiled kernel; a failure to compile or run it (:func:`compile_failure`) →
    one warning for this (kernel, caller, device), the kernel given up for that caller, and :class:`KernelUnavailable`;
    any other error propagates."""
    device_type = torch.device(device).type
    if not usable(kernel, caller, device):
        raise KernelUnavailable(_FAILED.get((kernel, caller, device_type), f"{ENV}=0: nothing is compiled"))
    from torch._dynamo import config as dynamo_config
    from torch._functorch import config as functorch_config

    try:
        # errors raise (no silent eager run); a float captured by a score modification (σ, a scale) is a constant,
        # not an input (inductor's flex lowering fails on an unbacked float); the backward compiles with the forward
        with dynamo_config.patch(suppress_errors=False, specialize_float=True), \
                functorch_config.patch(force_non_lazy_backward_lowering=True):
            return fn(*args, **kwargs)
    except torch.OutOfMemoryError:
        raise
    except Exception as error:
        if not compile_failure(error):
            raise  # the kernel's own bug: the explicit path would hide it
        message = give_up(kernel, caller, device_type, error)
        raise KernelUnavailable(message) from error


def compile_failure(error: BaseException) -> bool:
    """Whether ``error``, raised by a call of a compiled kernel, is torch failing to compile or run it (the module
    docstring's list: the explicit path is the remedy) rather than an error of the kernel's own code."""
    from torch._dynamo import exc  # lazy: dynamo is imported when a kernel is compiled

    recompile_limit = getattr(exc, "FailOnRecompileLimitHit", ())  # with fullgraph; an older torch: Unsupported
    if isinstance(error, torch.OutOfMemoryError):
        return False
    if isinstance(error, exc.Unsupported):  # an exception the traced code raised, or what dynamo cannot trace
        observed = error.__cause__ or error.__context__
        return not isinstance(observed, exc.ObservedException) or isinstance(observed, exc.ObservedNotImplementedError)
    if isinstance(error, (exc.BackendCompilerFailed, exc.InternalTorchDynamoError, recompile_limit, NotImplementedError)):
        return True
    return isinstance(error, RuntimeError) and not isinstance(error, exc.TorchRuntimeError) and _raised_in_generated_code(error)


def _raised_in_generated_code(error: BaseException) -> bool:
    """Whether ``error`` was raised from a module inductor generated (its cache folder)."""
    try:
        from torch._inductor.runtime.cache_dir_utils import cache_dir

        root = os.path.realpath(cache_dir())
    except (ImportError, OSError):
        return False
    tb = error.__traceback__
    while tb is not None:
        if os.path.realpath(tb.tb_frame.f_code.co_filename).startswith(root + os.sep):
            return True
        tb = tb.tb_next
    return False


def give_up(kernel: str, caller: str, device_type: str, error: BaseException) -> str:
    """Record that ``kernel`` failed for ``caller`` on ``device_type`` and warn once; returns the warning's text."""
    key = (kernel, caller, device_type)
    if key in _FAILED:
        return _FAILED[key]
    limit = type(error).__name__ == "FailOnRecompileLimitHit" or "recompile limit" in str(error).lower()
    what = (f"hit dynamo's recompile limit (torch._dynamo.config.recompile_limit = {_recompile_limit()}), where torch "
            "would run it uncompiled" if limit else "failed")
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    errors = [line for line in lines if "error:" in line]  # a compiler's own error lines, not its command line
    text = " ".join((lines[:1] + errors[:2]) if errors else lines)
    if len(text) > 600:
        text = text[:600] + " …"
    message = (f"syntrans: {caller}: {kernel} compiled by torch.compile (inductor) on {device_type} {what} with torch "
               f"{torch.__version__}: {type(error).__name__}: {text}. These heads run on the explicit path (or SDPA) "
               f"for the rest of this process; {ENV}=0 compiles nothing.")
    _FAILED[key] = message
    warnings.warn(message, KernelFallbackWarning, stacklevel=3)
    return message


def failures() -> Dict[Tuple[str, str, str], str]:
    """The kernels given up so far: (kernel, caller, device type) → the warning given."""
    return dict(_FAILED)


def reset() -> None:
    """Forget the compiled kernels and the failures (tests; a new torch compiler configuration)."""
    _KERNELS.clear()
    _FAILED.clear()


def compiled_graphs() -> int:
    """The graphs torch's compiler (dynamo) has compiled in this process so far: its ``unique_graphs`` counter. Every
    compile of a kernel for a new shape or grad mode adds one (torch's eager flex attention, which compiles itself
    with a non-inductor backend, adds one per variant too)."""
    from torch._dynamo.utils import counters

    return int(counters["stats"]["unique_graphs"])


def _recompile_limit() -> object:
    from torch._dynamo import config as dynamo_config

    return getattr(dynamo_config, "recompile_limit", getattr(dynamo_config, "cache_size_limit", "?"))
