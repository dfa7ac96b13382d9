"""The compiled path (flex attention compiled by torch.compile) exercised on CPU, against the explicit path, and what a
layer does when a compiled kernel cannot run:

* every block with a score modification (the log-mask heads: distance mask and SLA; PASCAL's Gaussian and its two
  ablations) compiled by inductor on CPU for dynamic shapes over six lengths (one and several of flex attention's
  128-token blocks), with the padding mask and, for the causal mask, the decoder's right padding: the explicit path's
  outputs. Forward only: torch has no flex attention backward on CPU (the GPU check compares the backward on CUDA);
* the parse heads' loss from the log-sum-exp (LISA, DBSA, encoder and causal decoder), compiled where torch can;
* a compile that fails, or dynamo's recompile limit, gives one warning naming the heads, the torch version and the
  error, and the layer goes on with the explicit path, with the explicit path's outputs and gradients;
* the flex block mask is made once per batch and side, whatever the number of layers and blocks.

Known torch limits, each skipped for the torch versions where it is known (a later torch runs the test, and it fails
loudly where the limit remains):

* :data:`CPU_NO_LSE`: compiled flex attention on CPU has no log-sum-exp ("torch.compile on CPU only supports
  inference and `return_lse` is not supported yet"; pytorch/pytorch#190562 adds it);
* :data:`CPU_BATCH_RECOMPILE`: on CPU inductor's flex template keeps the batch size static, and its recompile for a
  new batch size fails to compile (C++ "'cur_qSplitSize…' was not declared"): the tests here keep B fixed across
  lengths. CUDA compiles a different (Triton) kernel;
* :data:`CPU_CAUSAL_DYNAMIC`: the same C++ error for a causal block mask compiled for dynamic shapes: the causal test
  compiles for each shape there.

Each compile takes inductor seconds on CPU: a test compiles once for lengths within one 128-token block and once for
longer ones, and reuses that kernel for every other length.
"""
import warnings

import pytest
import torch
from helpers import side_inputs, syntax_attention

from syntrans.mechanisms.dbsa import DbsaHeads
from syntrans.mechanisms.distance import DistanceHeads, distance_log_mask
from syntrans.mechanisms.lisa import LisaHead
from syntrans.mechanisms.pascal import PascalHeads, PascalInputs
from syntrans.mechanisms.sla import SlaHeads, window_log_mask
from syntrans.modules import attention_kernels, compiled_kernels
from syntrans.modules.attention_kernels import FLEX, flex
from syntrans.modules.blocks import SideInputs
from syntrans.modules.compiled_kernels import KernelFallbackWarning, compiled_graphs, failures

C, H = 32, 8
D = C // H
LENGTHS = (5, 17, 40, 96, 130, 200)  # one 128-token block of flex attention's mask, then two
B = 3  # fixed: see CPU_BATCH_RECOMPILE

TORCH = tuple(int(x) for x in torch.__version__.split("+")[0].split(".")[:2])
#: compiled flex attention on CPU returns no log-sum-exp: seen with torch 2.13 (the CPU kernel exists since 2.6)
CPU_NO_LSE = ((2, 6), (2, 13))
#: inductor's CPU flex template, recompiled for a new batch size, fails to compile: seen with torch 2.13
CPU_BATCH_RECOMPILE = ((2, 13), (2, 13))
#: inductor's CPU flex template fails to compile a causal block mask for dynamic shapes: seen with torch 2.13
CPU_CAUSAL_DYNAMIC = ((2, 13), (2, 13))


def known(limit) -> bool:
    return limit[0] <= TORCH <= limit[1]


def with_options(**changed):
    """compiled_kernels.compiled with some of torch.compile's options changed (to patch into attention_kernels)."""
    real = compiled_kernels.compiled

    def compiled(kernel, caller, device, fn, **options):
        return real(kernel, caller, device, fn, **{**options, **changed})

    return compiled


def with_backend(backend):
    """compiled_kernels.compiled with torch.compile's ``backend`` instead of inductor (for attention_kernels)."""
    return with_options(backend=backend)


@pytest.fixture(autouse=True)
def fresh_kernels():
    """Each test compiles its own kernels (its own caches and recompile limits) and starts with no failure."""
    compiled_kernels.reset()
    yield
    compiled_kernels.reset()


def encoder_batch(T: int, seed: int):
    """x (T, B, C), left padding (the first sentence full, the others shorter), and the inputs of every encoder block:
    random gaps (distance mask), a random tree's window (SLA), random parent positions (PASCAL), parents (LISA)."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(T, B, C, generator=g)
    lengths = [T] + [max(2, T - 3 - 7 * b) for b in range(1, B)]
    pad = torch.tensor([[t < T - n for t in range(T)] for n in lengths])
    gaps = torch.randint(1, 7, (B, T - 1), generator=g)
    word = torch.where(pad, -1, torch.arange(T).expand(B, T))
    parents = torch.full((B, T), -1)
    for b, n in enumerate(lengths):
        off = T - n
        for i in range(n - 1):  # each real token's parent: an earlier real token (the first: itself, the root)
            parents[b, off + i] = off + int(torch.randint(0, i + 1, (1,), generator=g))
    centre = torch.where(parents >= 0, parents.double() + 0.5, -1.0)
    data = {"distance": distance_log_mask(gaps, pad, 10.0, torch.float32),
            "sla": window_log_mask(word, torch.where(parents >= 0, parents, word), pad, 2, torch.float32),
            "pascal": PascalInputs(centre, 1.0), "lisa": parents, "dbsa": parents}
    return x, pad, data


def projections(attn, x, n):
    """The first n heads' q, k, v (B, n, T, d), as the layer cuts them."""
    T, Bx, _ = x.shape
    return [p(x).view(T, Bx, H, D).permute(1, 2, 0, 3)[:, :n] for p in (attn.q_proj, attn.k_proj, attn.v_proj)]


def explicit_attention(q, k, v, scores_fn, pad, causal, scale):
    """softmax(scores_fn(QKᵀ·scale) masked) V, the explicit reference: (B, n, T, d)."""
    s = scores_fn((q * scale) @ k.transpose(-1, -2))
    if causal:
        T = s.size(-1)
        s = s.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf"))
    s = s.masked_fill(pad[:, None, None, :], float("-inf"))
    return torch.softmax(s, dim=-1) @ v


def assert_compiled_ran(graphs_before):
    assert not failures(), failures()  # no fallback: the compiled kernel itself gave these outputs
    assert compiled_graphs() > graphs_before  # and it was compiled here


def test_compiled_log_mask_score_mod_equals_the_explicit_path():
    """The log-mask heads' score modification (softmax(QKᵀ/√d + log M)), compiled by inductor on CPU, with the
    distance mask's log M and SLA's window at six lengths (left padding; rows of padding queries included). The two
    share one score modification, so they share its compiled kernel: one compile for one 128-token block, one for
    several."""
    blocks = {"distance": DistanceHeads(3), "sla": SlaHeads(3)}
    attn = syntax_attention(C, H, [blocks["distance"]])
    before = compiled_graphs()
    for T in LENGTHS:
        x, pad, data = encoder_batch(T, seed=T)
        inputs = side_inputs(pad, **data)
        for key, block in blocks.items():
            with torch.no_grad():
                q, k, v = projections(attn, x, 3)
                got, _ = flex(q, k, v, block.score_mod(inputs), pad, scale=attn.scaling, compiled=True,
                              block_mask=inputs.block_mask(pad, False, T, q.device), caller="log-mask heads")
                log_m = block.log_mask(inputs).unsqueeze(1)
                want = explicit_attention(q, k, v, lambda s: s + log_m, pad, False, attn.scaling)
            torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5, msg=f"{key}, T={T}")
    assert_compiled_ran(before)
    assert compiled_graphs() - before <= 2  # the kernel compiled for one length serves the others


@pytest.mark.parametrize("weights, op, lengths", [("gaussian", "multiply", LENGTHS),
                                                  # the ablations: the same block, within one 128-token block
                                                  ("parent-only", "multiply", (9, 33, 70)),
                                                  ("gaussian", "add", (12, 50, 128))])
def test_compiled_pascal_layer_equals_the_explicit_path(weights, op, lengths):
    """A layer with PASCAL heads (the paper's S ⊙ W and the two ablations) on the compiled path (backend "compiled":
    flex attention compiled by inductor on CPU, at evaluation) gives the explicit path's output at every length."""
    attn = syntax_attention(C, H, [PascalHeads(3, 0.0, op)])
    before = compiled_graphs()
    for T in lengths:
        x, pad, data = encoder_batch(T, seed=T)
        data["pascal"] = PascalInputs(data["pascal"].positions, 1.0, weights)
        out = {}
        with torch.no_grad():
            for backend in ("compiled", "explicit"):
                out[backend] = attn(x, x, x, key_padding_mask=pad, need_weights=False,
                                    inputs=side_inputs(pad, backend=backend, **data))[0]
        torch.testing.assert_close(out["compiled"], out["explicit"], rtol=1e-4, atol=1e-5, msg=f"T={T}")
    assert_compiled_ran(before)


def test_compiled_causal_block_mask_equals_the_explicit_path(monkeypatch):
    """The decoder's mask (causal, right padding), as the side makes it for flex attention, compiled by inductor on
    CPU with a score modification (a log-mask head's, random log M), at six lengths; where inductor's CPU kernel cannot
    compile it for dynamic shapes (CPU_CAUSAL_DYNAMIC), compiled for each shape, at two lengths (one and two blocks).
    (Its own user, the decoder's DBSA loss from the log-sum-exp, cannot compile on CPU: CPU_NO_LSE.)"""
    lengths = LENGTHS
    if known(CPU_CAUSAL_DYNAMIC):
        monkeypatch.setattr(attention_kernels, "compiled", with_options(dynamic=False))
        lengths = (17, 130)
    g = torch.Generator().manual_seed(0)
    before = compiled_graphs()
    for T in lengths:
        q, k, v = (torch.randn(B, 2, T, D, generator=g) for _ in range(3))
        pad = torch.tensor([[t >= n for t in range(T)] for n in (T, max(1, T - 4), max(1, T // 2))])
        bias = torch.randn(B, T, T, generator=g)
        inputs = SideInputs(pad_mask=pad, data={"distance": bias})
        with torch.no_grad():
            got, _ = flex(q, k, v, DistanceHeads(2).score_mod(inputs), pad, causal=True, scale=0.5, compiled=True,
                          block_mask=inputs.block_mask(pad, True, T, q.device), caller="log-mask heads")
            want = explicit_attention(q, k, v, lambda s: s + bias[:, None], pad, True, 0.5)
        real = ~pad  # padding query rows of a right-padded target are never read
        torch.testing.assert_close(got.transpose(1, 2)[real], want.transpose(1, 2)[real], rtol=1e-4, atol=1e-5,
                                   msg=f"T={T}")
    assert_compiled_ran(before)


@pytest.mark.skipif(known(CPU_NO_LSE), reason=f"torch {torch.__version__}: compiled flex attention on CPU returns no "
                    "log-sum-exp ('return_lse is not supported yet'; pytorch/pytorch#190562)")
@pytest.mark.parametrize("layout, causal", [("lisa", False), ("dbsa", False), ("dbsa", True)])
def test_compiled_parse_loss_from_the_log_sum_exp_equals_the_explicit_one(layout, causal):
    """The parse heads' loss from the compiled kernel's log-sum-exp and the gathered parent score, forward, at six
    lengths: the explicit path's loss, hits and output."""
    blocks = {"lisa": [LisaHead(D, "ce", False)], "dbsa": [DbsaHeads(1, causal, False)]}[layout]
    attn = syntax_attention(C, H, blocks, train=True)
    before = compiled_graphs()
    for T in LENGTHS:
        x, pad, data = encoder_batch(T, seed=T)
        mask = torch.triu(torch.full((T, T), float("-inf")), 1) if causal else None
        if causal:  # a target: right padding, parents of the real tokens (some point forward: dropped)
            pad = pad.flip(1)
            data["dbsa"] = torch.where(pad, -1, data["dbsa"].flip(1).clamp(min=0) % (~pad).sum(1, keepdim=True))
        out = {}
        with torch.no_grad():
            for backend in ("compiled", "explicit"):
                o, _, rep = attn(x, x, x, key_padding_mask=pad, need_weights=False, attn_mask=mask,
                                 inputs=side_inputs(pad, backend=backend, **data))
                out[backend] = (o, rep.mechanisms[blocks[0].key].stats)
        torch.testing.assert_close(out["compiled"][0], out["explicit"][0], rtol=1e-4, atol=1e-5, msg=f"T={T}")
        for got, want in zip(out["compiled"][1], out["explicit"][1]):
            torch.testing.assert_close(got.float(), want.float(), rtol=1e-4, atol=1e-4, msg=f"T={T}")
    assert_compiled_ran(before)


def test_compiled_parse_loss_on_cpu_falls_back_where_torch_has_no_log_sum_exp():
    """Where torch's compiled CPU kernel has no log-sum-exp (CPU_NO_LSE), asking for it is a compile failure like any
    other: one warning naming the LISA heads, and the loss and output of the explicit path."""
    if not known(CPU_NO_LSE):
        pytest.skip(f"torch {torch.__version__} compiles flex attention's log-sum-exp on CPU")
    attn = syntax_attention(C, H, [LisaHead(D, "ce", False)], train=True)
    x, pad, data = encoder_batch(17, seed=1)
    with torch.no_grad(), pytest.warns(KernelFallbackWarning, match=r"lisa heads: flex attention .* torch "
                                       + torch.__version__.replace("+", r"\+") + r".*return_lse"):
        got = attn(x, x, x, key_padding_mask=pad, need_weights=False, inputs=side_inputs(pad, backend="compiled",
                                                                                           **data))
    with torch.no_grad():
        want = attn(x, x, x, key_padding_mask=pad, need_weights=False, inputs=side_inputs(pad, backend="explicit",
                                                                                            **data))
    torch.testing.assert_close(got[0], want[0])
    for g, w in zip(got[2].mechanisms["lisa"].stats, want[2].mechanisms["lisa"].stats):
        torch.testing.assert_close(g.float(), w.float())


# ------------------------------------------------------------------------------------------------- failures

def failing_backend(gm, example_inputs):
    raise RuntimeError("forced compile failure (test)")




def _score_raises(score, b, h, q, kv):
    raise ValueError("a bug in this score function (test)")


_TABLE = torch.zeros(8)


def _score_indexes_wrongly(score, b, h, q, kv):
    return score + _TABLE[q, kv]  # two indices into a 1-D tensor: an IndexError in eager code


@pytest.mark.parametrize("score_mod, error", [(_score_raises, "a bug in this score function"),
                                              (_score_indexes_wrongly, "too many indices")])
def test_a_bug_in_a_score_function_propagates_instead_of_falling_back(monkeypatch, score_mod, error):
    """Only torch failing to compile or run a kernel is a fallback: an error of the score function's own code (an
    exception it raises, a wrong index found while tracing) propagates with its message, with no warning, and the
    kernel is not given up (the explicit path would hide the bug). (torch.compile's "eager" backend: dynamo traces
    the score function as for inductor.)"""
    monkeypatch.setattr(attention_kernels, "compiled", with_backend("eager"))
    q = torch.randn(1, 2, 8, 4)
    with torch.no_grad(), warnings.catch_warnings(), pytest.raises(Exception, match=error) as raised:
        warnings.simplefilter("error", KernelFallbackWarning)
        flex(q, q, q, score_mod, None, compiled=True, caller="buggy heads")
    assert not isinstance(raised.value, compiled_kernels.KernelUnavailable)
    assert not compiled_kernels.compile_failure(raised.value)
    assert not failures()


@pytest.mark.parametrize("train", [False, True])
def test_a_failed_compile_warns_once_and_the_layer_goes_on_explicit(monkeypatch, train):
    """A kernel whose compile fails (a backend that raises, standing in for inductor's C++ or Triton compiler): one
    KernelFallbackWarning naming the PASCAL heads, the torch version and the error; the layer's outputs and gradients
    are the explicit path's; the next forward neither warns nor tries again."""
    monkeypatch.setattr(attention_kernels, "compiled", with_backend(failing_backend))
    attn = syntax_attention(C, H, [PascalHeads(3, 0.0)], train=train)
    x, pad, data = encoder_batch(17, seed=2)

    def step(backend):
        attn.zero_grad(set_to_none=True)
        with torch.set_grad_enabled(train):
            out = attn(x, x, x, key_padding_mask=pad, need_weights=False,
                       inputs=side_inputs(pad, backend=backend, **data))[0]
        if train:
            out.square().sum().backward()
        return out, {n: p.grad.clone() for n, p in attn.named_parameters() if p.grad is not None}

    version = torch.__version__.replace("+", r"\+")
    # in training on CPU torch refuses earlier, on its own: flex attention has no backward there
    why = "" if train else r": .*forced compile failure \(test\)"
    with pytest.warns(KernelFallbackWarning, match=rf"pascal heads: flex attention compiled by torch.compile "
                                                   rf"\(inductor\) on cpu failed with torch {version}{why}") as record:
        got, got_grads = step("compiled")
    assert len([w for w in record if issubclass(w.category, KernelFallbackWarning)]) == 1
    want, want_grads = step("explicit")
    torch.testing.assert_close(got, want)
    assert set(got_grads) == set(want_grads) and (got_grads or not train)
    for n in want_grads:
        torch.testing.assert_close(got_grads[n], want_grads[n], msg=n)
    assert list(failures()) == [(FLEX, "pascal heads", "cpu")]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a second warning would raise
        again, _ = step("compiled")
    torch.testing.assert_close(again, want)


def test_the_recompile_limit_falls_back_instead_of_running_eager(monkeypatch):
    """Past dynamo's recompile limit torch would run flex attention uncompiled (its eager reference, every score
    formed); here the layer warns, naming the limit, and takes the explicit path. (torch.compile's "eager" backend:
    the same guards and limit as inductor's, without its compile time.)"""
    monkeypatch.setattr(attention_kernels, "compiled", with_backend("eager"))
    from torch._dynamo import config as dynamo_config

    attn = syntax_attention(C, H, [PascalHeads(3, 0.0)])
    outs = []
    with torch.no_grad(), dynamo_config.patch(recompile_limit=1), \
            pytest.warns(KernelFallbackWarning, match=r"pascal heads: .*hit dynamo's recompile limit"):
        for T, Bx in ((9, 3), (12, 2), (20, 3), (30, 1)):  # new batch sizes and lengths: recompiles
            x, pad, data = encoder_batch(T, seed=T)
            x, pad = x[:, :Bx], pad[:Bx]
            data = {"pascal": PascalInputs(data["pascal"].positions[:Bx], 1.0)}
            outs.append((attn(x, x, x, key_padding_mask=pad, need_weights=False,
                              inputs=side_inputs(pad, backend="compiled", **data))[0],
                         attn(x, x, x, key_padding_mask=pad, need_weights=False,
                              inputs=side_inputs(pad, backend="explicit", **data))[0]))
    for got, want in outs:
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
    assert list(failures()) == [(FLEX, "pascal heads", "cpu")]


def test_compiling_can_be_switched_off(monkeypatch):
    """SYNTRANS_COMPILE=0: nothing is compiled, CUDA layers would not pick flex attention, and backend "compiled"
    takes the explicit path without a warning."""
    monkeypatch.setenv("SYNTRANS_COMPILE", "0")
    assert not attention_kernels.flex_available(torch.device("cuda"))
    attn = syntax_attention(C, H, [PascalHeads(3, 0.0)])
    x, pad, data = encoder_batch(9, seed=3)
    before = compiled_graphs()
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("error")
        got = attn(x, x, x, key_padding_mask=pad, need_weights=False, inputs=side_inputs(pad, backend="compiled",
                                                                                           **data))[0]
        want = attn(x, x, x, key_padding_mask=pad, need_weights=False, inputs=side_inputs(pad, backend="explicit",
                                                                                            **data))[0]
    torch.testing.assert_close(got, want)
    assert compiled_graphs() == before and not failures()


# ---------------------------------------------------------------------------------------------- block masks

def test_block_mask_made_once_per_batch_and_side(monkeypatch):
    """Two layers, each with PASCAL heads (a score modification) and a LISA head (its loss from the log-sum-exp), both
    under flex attention (torch's eager reference on CPU): one block mask for the batch, shared by the four blocks;
    a new batch (new inputs) makes a new one."""
    made = []
    real = attention_kernels.padding_block_mask

    def counting(*args, **kwargs):
        made.append(args[:3])
        return real(*args, **kwargs)

    monkeypatch.setattr(attention_kernels, "padding_block_mask", counting)
    layers = [syntax_attention(C, H, [PascalHeads(2, 0.0), LisaHead(D, "ce", False)], seed=s, train=True)
              for s in range(2)]
    x, pad, data = encoder_batch(17, seed=4)
    inputs = side_inputs(pad, backend="flex", **data)
    with torch.no_grad():
        for layer in layers:
            _, _, rep = layer(x, x, x, key_padding_mask=pad, need_weights=False, inputs=inputs)
            assert rep.mechanisms["lisa"].loss is not None  # the LISA head ran (its loss from the log-sum-exp)
    assert len(made) == 1 and made[0][0] is pad
    with torch.no_grad():
        layers[0](x, x, x, key_padding_mask=pad, need_weights=False, inputs=side_inputs(pad, backend="flex", **data))
    assert len(made) == 2
