"""SLA (Li et al. 2021 as Hou et al., gated self-attention, §5.2 re-implement it): dependency path lengths by hand,
the tree window of a padded batch (left and right padding) equal to each sentence's alone and to an independent
all-pairs loop, SLA heads mixed with stock attention by a gate with no regularisation, and a small model's
forward/backward."""
import itertools
import re

import numpy as np
import pytest
import torch
from helpers import build_task_and_model, side_inputs, syntax_attention

from syntrans.data.features import FEATURES
from syntrans.mechanisms.distance import DistanceHeads
from syntrans.mechanisms.gate import SyntaxGate
from syntrans.mechanisms.sla import DEFAULT_THRESHOLD, SlaHeads, tree_window, window_log_mask
from syntrans.modules.blocks import LogMaskHeads
from syntrans.syntax.dependency_paths import NO_PATH, subword_path_lengths, word_path_lengths

C, H = 16, 4


# ------------------------------------------------------------------------------------------ path lengths by hand

@pytest.mark.fast
def test_chain_path_lengths():
    # w0 → w1 → w2 → w3 (root): a chain, |i − j| arcs apart
    expect = [[0, 1, 2, 3],
              [1, 0, 1, 2],
              [2, 1, 0, 1],
              [3, 2, 1, 0]]
    assert word_path_lengths([2, 3, 4, 0]).tolist() == expect


@pytest.mark.fast
def test_star_path_lengths():
    # w1 the root, w0, w2, w3 its dependents: root–leaf 1, leaf–leaf 2
    expect = [[0, 1, 2, 2],
              [1, 0, 1, 1],
              [2, 1, 0, 2],
              [2, 1, 2, 0]]
    assert word_path_lengths([2, 0, 2, 2]).tolist() == expect


@pytest.mark.fast
def test_subword_path_lengths_of_a_split_tree():
    # "un-believ-able story told": w0 (3 pieces) → w1, w1 → w2 (root), so w0–w2 is 2 arcs
    expect = [[0, 0, 0, 1, 2],
              [0, 0, 0, 1, 2],
              [0, 0, 0, 1, 2],
              [1, 1, 1, 0, 1],
              [2, 2, 2, 1, 0]]
    assert subword_path_lengths([2, 3, 0], [3, 1, 1]).tolist() == expect
    # a star with a split leaf and a split root: root w0 (2 pieces), leaves w1 (1), w2 (2)
    expect = [[0, 0, 1, 1, 1],
              [0, 0, 1, 1, 1],
              [1, 1, 0, 2, 2],
              [1, 1, 2, 0, 0],
              [1, 1, 2, 0, 0]]
    assert subword_path_lengths([0, 1, 1], [2, 1, 2]).tolist() == expect


@pytest.mark.fast
def test_two_sentences_of_one_line_have_no_path():
    # line = sentence (w0 ← w1 root) + sentence (w2 root ← w3), heads offset to line positions
    d = word_path_lengths([2, 0, 0, 3])
    assert d[:2, :2].tolist() == [[0, 1], [1, 0]] and d[2:, 2:].tolist() == [[0, 1], [1, 0]]
    assert (d[:2, 2:] == NO_PATH).all() and (d[2:, :2] == NO_PATH).all()
    assert word_path_lengths([]).shape == (0, 0)


@pytest.mark.fast
@pytest.mark.parametrize("heads,pieces,message", [
    ([2, 3, 1], [1, 1, 1], "the heads of word 0 (0-based) run into a cycle"),
    ([0, 2], [1, 1], "word 1 (0-based) is its own head"),
    ([0, 5], [1, 1], "word 1 (0-based) has head 5, expected 0..2"),
    ([0, 1], [1, 0], "word 1 (0-based) has 0 pieces"),
    ([0, 1], [1, 1, 1], "one piece count per word: 2 heads"),
])
def test_bad_trees_are_clear_errors(heads, pieces, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)").replace(".", r"\.")):
        subword_path_lengths(heads, pieces)


# ------------------------------------------------------------------------------------ the window of a padded batch

def floyd_words(heads):
    """All-pairs path lengths by Floyd–Warshall on the undirected arcs (the test's own loop), inf where no path."""
    n = len(heads)
    d = np.full((n, n), np.inf)
    np.fill_diagonal(d, 0)
    for w, h in enumerate(heads):
        if h:
            d[w, h - 1] = d[h - 1, w] = 1
    for k, i, j in itertools.product(range(n), repeat=3):
        d[i, j] = min(d[i, j], d[i, k] + d[k, j])
    return d


def expected_window(heads, pieces, m):
    """(n_sub + 1, n_sub + 1) bool of one sentence alone (EOS last): subwords by their words' distance ≤ m, EOS only
    with itself."""
    d = floyd_words(heads)
    word_of = [w for w, p in enumerate(pieces) for _ in range(p)]
    n = len(word_of)
    out = np.zeros((n + 1, n + 1), dtype=bool)
    for i, j in itertools.product(range(n), repeat=2):
        out[i, j] = d[word_of[i], word_of[j]] <= m
    out[n, n] = True
    return out


#: (heads, pieces) of one line each: a chain with a split word, a star with a split root, two sentences in a line
SENTENCES = [([2, 3, 4, 5, 0], [1, 2, 1, 1, 3]), ([0, 1, 1, 1], [2, 1, 1, 1]), ([2, 0, 0, 3, 3], [1, 1, 2, 1, 1])]


def collate(sentences, left: bool):
    """The per-token features of ``sentences`` built by the dataset's own builders and padded as the collater pads
    positions (shifted by each row's left padding), with the padding mask: (word_first, parent_first, pad)."""
    rows = []
    for heads, pieces in sentences:
        arrays = {"word": np.repeat(np.arange(len(pieces)), pieces), "head": np.asarray(heads)}
        rows.append([torch.from_numpy(FEATURES[name].build(arrays)) for name in ("src_word_first", "src_parent_first")])
    T = max(len(r[0]) for r in rows)
    out = [torch.full((len(rows), T), -1, dtype=torch.long) for _ in range(2)]
    pad = torch.ones(len(rows), T, dtype=torch.bool)
    for b, r in enumerate(rows):
        n = len(r[0])
        off = T - n if left else 0
        for k in range(2):
            out[k][b, off:off + n] = torch.where(r[k] >= 0, r[k] + off, r[k])
        pad[b, off:off + n] = False
    return out[0], out[1], pad


@pytest.mark.fast
@pytest.mark.parametrize("m", [0, 1, 2, 3])
@pytest.mark.parametrize("left", [True, False])
def test_window_of_a_padded_batch_equals_each_sentence_alone(left, m):
    word_first, parent_first, pad = collate(SENTENCES, left)
    window = tree_window(word_first, parent_first, pad, m)  # (B, T, T)
    T = pad.size(1)
    for b, (heads, pieces) in enumerate(SENTENCES):
        n = sum(pieces) + 1
        cols = slice(T - n, T) if left else slice(0, n)
        expect = torch.from_numpy(expected_window(heads, pieces, m))
        assert torch.equal(window[b, cols, cols], expect), (b, m, left)
        alone = tree_window(*collate([(heads, pieces)], left), m)[0]
        assert torch.equal(window[b, cols, cols], alone)
        real = ~pad[b]
        assert not window[b][real][:, pad[b]].any()  # no real token's window holds padding
        assert window[b][pad[b]].all()  # padding queries are left unrestricted (their rows are never read)
        eos = cols.stop - 1
        assert window[b, eos, real].sum() == 1 and window[b, real, eos].sum() == 1  # EOS: itself only


def random_line(rng):
    """A random line of one or two sentences: (heads, pieces), each word's head an earlier-drawn word of its sentence
    (a random tree), the sentence's words shuffled."""
    heads = []
    for _ in range(rng.integers(1, 3)):
        n, off = int(rng.integers(1, 12)), len(heads)
        order = rng.permutation(n)  # order[k]: the position of the k-th drawn word
        sentence = [0] * n
        for k in range(1, n):
            sentence[order[k]] = off + int(order[rng.integers(0, k)]) + 1
        heads += sentence
    return heads, rng.integers(1, 4, len(heads)).tolist()


@pytest.mark.fast
def test_random_trees_against_the_floyd_loop():
    """Random lines (several sentences padded together, left and right): the batched window and the subword path
    lengths agree with the test's own Floyd–Warshall loop for every threshold up to 4."""
    rng = np.random.default_rng(0)
    lines = [random_line(rng) for _ in range(12)]
    for heads, pieces in lines:
        d = floyd_words(heads)
        word_of = np.repeat(np.arange(len(pieces)), pieces)
        words = np.full(d.shape, NO_PATH, dtype=np.int64)
        words[np.isfinite(d)] = d[np.isfinite(d)]
        expect = words[np.ix_(word_of, word_of)]
        assert np.array_equal(subword_path_lengths(heads, pieces), expect)
    for left, m in itertools.product((True, False), range(5)):
        word_first, parent_first, pad = collate(lines, left)
        window = tree_window(word_first, parent_first, pad, m)
        T = pad.size(1)
        for b, (heads, pieces) in enumerate(lines):
            n = sum(pieces) + 1
            cols = slice(T - n, T) if left else slice(0, n)
            assert torch.equal(window[b, cols, cols], torch.from_numpy(expected_window(heads, pieces, m))), (b, m)


@pytest.mark.fast
def test_two_sentences_of_a_line_never_see_each_other():
    word_first, parent_first, pad = collate([SENTENCES[2]], left=False)
    window = tree_window(word_first, parent_first, pad, 10)[0]
    # subwords 0-1 are the first sentence (w0, w1), 2-5 the second (w2 split in two, w3, w4)
    assert window[:2, :2].all() and window[2:6, 2:6].all()
    assert not window[:2, 2:6].any() and not window[2:6, :2].any()


@pytest.mark.fast
def test_log_mask_is_zero_inside_and_minus_inf_outside():
    word_first, parent_first, pad = collate(SENTENCES, True)
    window = tree_window(word_first, parent_first, pad, 1)
    log_m = window_log_mask(word_first, parent_first, pad, 1, torch.float16)
    assert log_m.dtype == torch.float16
    assert (log_m[window] == 0).all() and torch.isneginf(log_m[~window]).all()


# -------------------------------------------------------------------------------- the heads and their mixer

def batch_inputs(m=1):
    word_first, parent_first, pad = collate(SENTENCES, True)
    g = torch.Generator().manual_seed(3)
    x = torch.randn(pad.size(1), pad.size(0), C, generator=g)
    return x, pad, window_log_mask(word_first, parent_first, pad, m, x.dtype), tree_window(word_first, parent_first,
                                                                                          pad, m)


def hand_probs(attn, x, pad, window, heads):
    """Per sentence, real tokens only: each head's softmax of the scaled scores; SLA heads over the window only."""
    d = C // H
    q = (x @ attn.q_proj.weight.T + attn.q_proj.bias) * d ** -0.5
    k = x @ attn.k_proj.weight.T + attn.k_proj.bias
    out = []
    for b in range(x.size(1)):
        real = ~pad[b]
        per_head = []
        for h in range(H):
            sl = slice(h * d, (h + 1) * d)
            s = q[real, b, sl] @ k[real, b, sl].T
            if h in heads:
                s = s.masked_fill(~window[b][real][:, real], float("-inf"))
            per_head.append(torch.softmax(s, -1))
        out.append(torch.stack(per_head))
    return out


def hand_gate(gate, x, pad):
    """G = σ(W₂·LayerNorm(ReLU(W₁·maxpool(x) + b₁)) + b₂) per sentence, no BatchNorm (Hou et al. Eq. 4-6 without BN)."""
    out = []
    for b in range(x.size(1)):
        pooled = x[~pad[b], b].max(dim=0).values
        hidden = torch.relu(pooled @ gate.fc1.weight.T + gate.fc1.bias)
        hidden = torch.nn.functional.layer_norm(hidden, hidden.shape, gate.norm.weight, gate.norm.bias, gate.norm.eps)
        out.append(torch.sigmoid(hidden @ gate.fc2.weight.T + gate.fc2.bias))
    return out


@pytest.mark.fast
@pytest.mark.parametrize("n_sla", [2, 4])
def test_sla_heads_attend_within_the_window(n_sla):
    x, pad, log_m, window = batch_inputs()
    attn = syntax_attention(C, H, blocks=[SlaHeads(n_sla)])
    w = attn(x, x, x, key_padding_mask=pad, need_weights=True, need_head_weights=True,
             inputs=side_inputs(pad, sla=log_m))[1]  # (H, B, T, S)
    expect = hand_probs(attn, x, pad, window, range(n_sla))
    for b in range(x.size(1)):
        real = ~pad[b]
        torch.testing.assert_close(w[:, b][:, real][:, :, real], expect[b], atol=1e-6, rtol=1e-5)
        outside = ~window[b][real][:, real]
        assert outside.any() and (w[:n_sla, b][:, real][:, :, real][:, outside] == 0).all()
    # the fused path (SDPA with log M as the bias) gives the same output
    fused = attn(x, x, x, key_padding_mask=pad, need_weights=False, inputs=side_inputs(pad, sla=log_m))[0]
    explicit = attn(x, x, x, key_padding_mask=pad, need_weights=False, inputs=side_inputs(pad, "explicit", sla=log_m))[0]
    torch.testing.assert_close(fused, explicit, atol=1e-6, rtol=1e-5)


@pytest.mark.fast
def test_flex_score_modification_equals_the_explicit_path():
    """flex attention with the block's score_mod (torch's eager reference on CPU) against the explicit block."""
    from syntrans.modules.attention_kernels import flex

    x, pad, log_m, _ = batch_inputs(m=2)
    block = SlaHeads(3)
    attn = syntax_attention(C, H, [block])
    inputs = side_inputs(pad, backend="explicit", sla=log_m)
    T, B, _ = x.shape
    d = C // H
    with torch.no_grad():
        q, k, v = (proj(x).view(T, B, H, d).permute(1, 2, 0, 3)[:, :3] for proj in (attn.q_proj, attn.k_proj,
                                                                                     attn.v_proj))
        fused = flex(q, k, v, block.score_mod(inputs), pad, scale=attn.scaling, compiled=False)[0]
        ref = attn._explicit(x, q, k, v, pad, None, inputs, {}, blocks=[block])[0]
    torch.testing.assert_close(fused, ref, rtol=1e-4, atol=1e-5)


@pytest.mark.fast
@pytest.mark.parametrize("block,message", [
    (SlaHeads(2), "this layer's SLA heads need the batch's tree window (the encoder prepares it from src_word_first"),
    (DistanceHeads(2), "this layer's distance-mask heads need the batch's log M (the encoder prepares it from src_gaps)")])
def test_log_mask_heads_without_their_input_name_it(block, message):
    """SLA and distance-mask heads share one additive log-mask block: without the side's log M, both the fused bias
    and flex attention's score modification say which heads and which input."""
    assert isinstance(block, LogMaskHeads) and block.additive  # one block class serves both (docs/layout.md)
    inputs = side_inputs(torch.zeros(2, 5, dtype=torch.bool))
    for call in (lambda: block.bias(inputs, torch.float32), lambda: block.score_mod(inputs)):
        with pytest.raises(ValueError, match=re.escape(message)):
            call()


@pytest.mark.fast
def test_the_gate_mixes_sla_and_stock_attention_per_head_without_batchnorm():
    """A = G·A_sla + (1 − G)·A_raw per sentence and head (Hou et al. Eq. 10), G from the gate network with no
    BatchNorm: in training, G of a sentence does not depend on the others in its batch."""
    x, pad, log_m, window = batch_inputs()
    torch.manual_seed(0)
    gate = SyntaxGate(C, H, 8, batchnorm=False)
    attn = syntax_attention(C, H, blocks=[SlaHeads(H)], mixer=gate, train=True)
    w, report = attn(x, x, x, key_padding_mask=pad, need_weights=True, need_head_weights=True,
                     inputs=side_inputs(pad, sla=log_m))[1:]
    sla, raw = hand_probs(attn, x, pad, window, range(H)), hand_probs(attn, x, pad, window, ())
    gates = hand_gate(gate, x, pad)
    for b in range(x.size(1)):
        real = ~pad[b]
        g = gates[b].view(H, 1, 1)
        torch.testing.assert_close(w[:, b][:, real][:, :, real], g * sla[b] + (1 - g) * raw[b], atol=1e-6, rtol=1e-5)
        torch.testing.assert_close(report.mechanisms["gate"].values[b], gates[b], atol=1e-6, rtol=1e-5)
        xb = x[real, b:b + 1]  # the sentence alone, unpadded
        alone = attn(xb, xb, xb, key_padding_mask=None, need_weights=False,
                     inputs=side_inputs(pad[b:b + 1, real], sla=log_m[b:b + 1][:, real][:, :, real]))[2]
        torch.testing.assert_close(alone.mechanisms["gate"].values[0], report.mechanisms["gate"].values[b],
                                   atol=1e-6, rtol=1e-5)


@pytest.mark.fast
def test_sla_heads_follow_the_other_heads_and_the_plan_checks_them():
    """Registry order: distance-mask, PASCAL, LISA, DBSA, then SLA heads; too many heads is a clear error."""
    import argparse

    from syntrans.mechanisms.plan import SyntaxPlan
    from syntrans.models.config import model_config
    from syntrans.models.syntax_transformer import model_shape

    def plan(**flat):
        cfg = model_config(argparse.Namespace(encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
                                               decoder_attention_heads=4, encoder_embed_dim=C, decoder_embed_dim=C,
                                               **flat))
        return SyntaxPlan(cfg, model_shape(cfg))

    p = plan(distance_layers="0", distance_heads=1, pascal_layers="0", pascal_heads=1, sla_layers="0,1", sla_heads=2)
    assert p.block_keys("encoder", 0) == ("distance", "pascal", "sla") and p.block_keys("encoder", 1) == ("sla",)
    assert p.features().required >= {"src_word_first", "src_parent_first"}
    with pytest.raises(ValueError, match="encoder layer 0 has 4 heads but its syntax heads ask for 2 PASCAL"):
        plan(pascal_layers="0", pascal_heads=2, sla_layers="0", sla_heads=3)


# ------------------------------------------------------------------------------------------------- the model

@pytest.fixture(scope="module")
def sla_model(tiny_data):
    return build_task_and_model(tiny_data, "sla_transformer_iwslt_de_en")


def test_preset_gates_every_sla_layer_with_no_regularisation(sla_model):
    _, model = sla_model
    cfg = model.cfg
    assert (cfg.sla.layers, cfg.sla.heads, cfg.sla.threshold) == ([0, 1], 4, DEFAULT_THRESHOLD)
    assert not any(isinstance(m, torch.nn.modules.batchnorm._BatchNorm) for m in model.modules())
    for layer in model.encoder.layers:
        attn = layer.self_attn
        assert attn.block_keys == ("sla",) and attn.syntax_heads == 4
        gate = attn.gate
        assert gate.mode == "gated" and gate.bn is None and gate.warmup_epochs == 0 and gate.syntax_dropout == 0.0
        gate.set_epoch(1)
        assert not gate.frozen  # no pre-warm-up: the gate trains from the first epoch
    assert all(not getattr(layer.self_attn, "block_keys", ()) for layer in model.decoder.layers)  # source only


def test_forward_backward_reaches_the_gate_and_the_window_matters(sla_model, tiny_data):
    from helpers import first_batch

    task, model = sla_model
    sample = first_batch(task, "train", 6)
    net = sample["net_input"]
    assert {"src_word_first", "src_parent_first"} <= set(net)
    model.train()
    model.zero_grad()
    try:
        out = model(**net)
        lprobs = model.get_normalized_probs(out, log_probs=True)
        loss = -lprobs.gather(-1, sample["target"].unsqueeze(-1)).sum()
        loss.backward()
    finally:
        model.eval()
    assert torch.isfinite(loss)
    for layer in model.encoder.layers:
        for name, p in layer.self_attn.gate.named_parameters():
            assert p.grad is not None and p.grad.abs().sum() > 0, name
    # the window changes the encoder: the same weights with threshold 0 (each token's own word only) differ
    _, narrow = build_task_and_model(tiny_data, "sla_transformer_iwslt_de_en", "--sla-threshold", "0")
    narrow.load_state_dict(model.state_dict())
    narrow.eval()
    with torch.no_grad():
        a = model.encoder.forward_torchscript(net)["encoder_out"][0]
        b = narrow.encoder.forward_torchscript(net)["encoder_out"][0]
    assert not torch.allclose(a, b, atol=1e-4)


@pytest.mark.parametrize("flags,message", [
    (("--sla-heads", "0"), "--sla-heads must lie in 1..4"),
    (("--sla-threshold", "-1"), "--sla-threshold is a number of dependency arcs"),
])
def test_bad_options_are_clear_errors(tiny_data, flags, message):
    with pytest.raises(ValueError, match=message):
        build_task_and_model(tiny_data, "sla_transformer_iwslt_de_en", *flags)


def test_missing_features_are_a_clear_error(sla_model):
    task, model = sla_model
    tokens = torch.full((1, 3), 5, dtype=torch.long)
    with pytest.raises(ValueError, match="the SLA heads needs src_word_first"):
        model.encoder.forward_torchscript({"src_tokens": tokens, "src_lengths": torch.tensor([3])})


# ------------------------------------------------------------------- Li et al.'s released forms (options)

def expected_neighbour_window(heads, pieces, m):
    """The test's own loop: token i (word w) sees token j when some k ∈ {w−1, w, w+1} of w's own tree (a finite
    Floyd distance from w) has D(k, word_j) ≤ m; EOS only itself."""
    d = floyd_words(heads)
    n_words = len(heads)
    word_of = [w for w, p in enumerate(pieces) for _ in range(p)]
    n = len(word_of)
    out = np.zeros((n + 1, n + 1), dtype=bool)
    for i, j in itertools.product(range(n), repeat=2):
        w = word_of[i]
        ks = [k for k in (w - 1, w, w + 1) if 0 <= k < n_words and np.isfinite(d[w, k])]
        out[i, j] = min(d[k, word_of[j]] for k in ks) <= m
    out[n, n] = True
    return out


@pytest.mark.fast
def test_neighbour_window_by_hand():
    """Li et al.'s released code: the window of word w is the union of the windows of words w−1, w, w+1.
    "a b c d e", heads (1-based) [2, 0, 2, 5, 3]: b the root, a and c its dependents, e under c, d under e.
    Path lengths from each word: a: b1 c2 e3 d4; b: a1 c1 e2 d3; c: b1 e1 a2 d2; d: e1 c2 b3 a4; e: c1 d1 b2 a3."""
    heads, pieces = [2, 0, 2, 5, 3], [1, 1, 1, 1, 1]
    word_first, parent_first, pad = collate([(heads, pieces)], left=False)
    own = tree_window(word_first, parent_first, pad, 1)[0, :5, :5]
    union = tree_window(word_first, parent_first, pad, 1, neighbours=True)[0, :5, :5]
    a, b, c, d, e = range(5)
    hand_own = {a: {a, b}, b: {a, b, c}, c: {b, c, e}, d: {d, e}, e: {c, d, e}}
    # a ∪ b; a ∪ b ∪ c; b ∪ c ∪ d; c ∪ d ∪ e; d ∪ e (e has no next word)
    hand_union = {a: {a, b, c}, b: {a, b, c, e}, c: {a, b, c, d, e}, d: {b, c, d, e}, e: {c, d, e}}
    for hand, got in ((hand_own, own), (hand_union, union)):
        want = torch.zeros(5, 5, dtype=torch.bool)
        for i, seen in hand.items():
            want[i, sorted(seen)] = True
        assert torch.equal(got, want)
    # m = 0: a word's own window is itself; the union is the word and its two neighbours
    union0 = tree_window(word_first, parent_first, pad, 0, neighbours=True)[0, :5, :5]
    assert torch.equal(union0, torch.tensor([[abs(i - j) <= 1 for j in range(5)] for i in range(5)]))


@pytest.mark.fast
def test_neighbour_window_of_padded_random_lines_against_the_loop():
    """Random lines (one or two sentences, split words, left and right padding): the batched union window equals the
    test's loop for m = 0…3; a neighbour across a sentence boundary adds nothing (the sentences never see each other)."""
    rng = np.random.default_rng(1)
    lines = [random_line(rng) for _ in range(12)] + [SENTENCES[2]]
    for left, m in itertools.product((True, False), range(4)):
        word_first, parent_first, pad = collate(lines, left)
        window = tree_window(word_first, parent_first, pad, m, neighbours=True)
        T = pad.size(1)
        for b, (heads, pieces) in enumerate(lines):
            n = sum(pieces) + 1
            cols = slice(T - n, T) if left else slice(0, n)
            want = torch.from_numpy(expected_neighbour_window(heads, pieces, m))
            assert torch.equal(window[b, cols, cols], want), (b, m, left)
            assert window[b][pad[b]].all() and not window[b][~pad[b]][:, pad[b]].any()
    two = tree_window(*collate([SENTENCES[2]], left=False), 10, neighbours=True)[0]
    assert not two[:2, 2:6].any() and not two[2:6, :2].any()


def hand_token_gate(gate, x, pad):
    """g (B, T) = σ(w·x_i + b) per token (Li et al.'s released selector with one output shared by the heads)."""
    return torch.sigmoid(x @ gate.proj.weight.T + gate.proj.bias).squeeze(-1).t()


@pytest.mark.fast
def test_the_token_gate_mixes_each_query_row_by_its_tokens_gate():
    """A[h, i, :] = g_i·A_sla[h, i, :] + (1 − g_i)·A_raw[h, i, :] with one g_i per token for every head; the same at
    evaluation, where the mix is taken on the heads' outputs (fused), as in training (explicit)."""
    from syntrans.mechanisms.sla import TokenGate

    x, pad, log_m, window = batch_inputs()
    torch.manual_seed(0)
    gate = TokenGate(C)
    attn = syntax_attention(C, H, blocks=[SlaHeads(H)], mixer=gate, train=True)
    w, report = attn(x, x, x, key_padding_mask=pad, need_weights=True, need_head_weights=True,
                     inputs=side_inputs(pad, sla=log_m))[1:]
    sla, raw = hand_probs(attn, x, pad, window, range(H)), hand_probs(attn, x, pad, window, ())
    g = hand_token_gate(gate, x, pad)  # (B, T)
    assert g.shape == pad.shape and 0 < g.min() and g.max() < 1 and g.std() > 0  # not a constant
    for b in range(x.size(1)):
        real = ~pad[b]
        gi = g[b, real].view(1, -1, 1)  # one value per query row, the same in every head
        torch.testing.assert_close(w[:, b][:, real][:, :, real], gi * sla[b] + (1 - gi) * raw[b], atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(report.mechanisms["sla_gate"].values, g, atol=1e-6, rtol=1e-5)
    assert report.mechanisms["sla_gate"].weights_per_head is None  # one gate per token: figures draw no G per head
    attn.eval()
    explicit = attn(x, x, x, key_padding_mask=pad, need_weights=True, inputs=side_inputs(pad, sla=log_m))[0]
    fused = attn(x, x, x, key_padding_mask=pad, need_weights=False, inputs=side_inputs(pad, sla=log_m))[0]
    real = (~pad).t().unsqueeze(-1)  # (T, B, 1)
    torch.testing.assert_close(fused * real, explicit * real, atol=1e-5, rtol=1e-4)


def _plan(**flat):
    import argparse

    from syntrans.mechanisms.plan import SyntaxPlan
    from syntrans.models.config import model_config
    from syntrans.models.syntax_transformer import model_shape

    cfg = model_config(argparse.Namespace(encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
                                           decoder_attention_heads=4, encoder_embed_dim=C, decoder_embed_dim=C, **flat))
    return SyntaxPlan(cfg, model_shape(cfg))


@pytest.mark.fast
def test_the_new_options_are_off_by_default_and_checked_in_the_mechanism():
    """Default: the gated paper's form (own-word window, no mixer of SLA's own); --sla-token-gate puts the token gate
    on the SLA layers; with --gate-layers on the same layer it is refused (one mixer per layer)."""
    from syntrans.mechanisms.sla import SlaConfig, TokenGate

    assert (SlaConfig().window, SlaConfig().token_gate) == ("word", False)
    p = _plan(sla_layers="0,1", sla_heads=2)
    assert all(p.sides["encoder"].layer(i).mixer(C, 4) is None for i in (0, 1))
    p = _plan(sla_layers="1", sla_heads=2, sla_token_gate=True)
    assert p.sides["encoder"].layer(0).mixer(C, 4) is None
    assert isinstance(p.sides["encoder"].layer(1).mixer(C, 4), TokenGate)
    assert _plan(sla_layers="0", sla_heads=2, sla_token_gate=True, gate_layers="1", distance_layers="1",
                 distance_heads=1).sides["encoder"].layer(1).mixer(C, 4).key == "gate"
    with pytest.raises(ValueError, match="encoder layer 0: both SLA .* and gated self-attention .* a layer takes one "
                                         "mixer"):
        _plan(sla_layers="0", sla_heads=2, sla_token_gate=True, gate_layers="0")
    assert SlaConfig().boundary_visible is False
    with pytest.raises(ValueError, match="--sla-window must be one of word, neighbours, neighbours-unrestricted, found "
                                         "'union'"):
        _plan(sla_layers="0", sla_heads=2, sla_window="union")


def test_a_token_gated_neighbour_sla_model_trains_its_gate(tiny_data):
    """The preset with Li et al.'s two forms (--sla-window neighbours --sla-token-gate, no per-head gate): the token
    gates get gradients, the validation report logs their mean per layer, and the window option changes the encoder."""
    from helpers import first_batch

    flags = ("--sla-window", "neighbours", "--sla-token-gate", "--gate-layers", "", "--sla-threshold", "1")
    task, model = build_task_and_model(tiny_data, "sla_transformer_iwslt_de_en", *flags)
    assert (model.cfg.sla.window, model.cfg.sla.token_gate) == ("neighbours", True)
    for layer in model.encoder.layers:
        assert layer.self_attn.mixer_key == "sla_gate" and not hasattr(layer.self_attn, "gate")
    sample = first_batch(task, "train", 6)
    model.train()
    model.zero_grad()
    try:
        out = model(**sample["net_input"])
        loss = -model.get_normalized_probs(out, log_probs=True).gather(-1, sample["target"].unsqueeze(-1)).sum()
        loss.backward()
    finally:
        model.eval()
    for layer in model.encoder.layers:
        assert layer.self_attn.sla_gate.proj.weight.grad.abs().sum() > 0
    with torch.no_grad():
        extra = model(**sample["net_input"])[1]
    metrics = extra["aux_metrics"]
    assert {"sla_gate_l0", "sla_gate_l1"} <= set(metrics)
    assert 0 < float(metrics["sla_gate_l0"]["value"]) / float(metrics["sla_gate_l0"]["ntokens"]) < 1
    _, word = build_task_and_model(tiny_data, "sla_transformer_iwslt_de_en", *flags[:1], "word", *flags[2:])
    word.load_state_dict(model.state_dict())
    word.eval()
    net = sample["net_input"]
    with torch.no_grad():
        a = model.encoder.forward_torchscript(net)["encoder_out"][0]
        b = word.encoder.forward_torchscript(net)["encoder_out"][0]
    assert not torch.allclose(a, b, atol=1e-4)


# ------------------------------------------- Li et al.'s unrestricted neighbours and [CLS]/[SEP]-style visible EOS

def _by_words(word_sets, pieces, eos_row=None, eos_col=False):
    """(n_sub + 1, n_sub + 1) bool from {word: words seen} expanded to subwords, EOS last (its row ``eos_row``: None
    itself only, else every token; ``eos_col``: every token sees EOS)."""
    word_of = [w for w, p in enumerate(pieces) for _ in range(p)]
    n = len(word_of)
    out = torch.zeros(n + 1, n + 1, dtype=torch.bool)
    for i, j in itertools.product(range(n), repeat=2):
        out[i, j] = word_of[j] in word_sets[word_of[i]]
    out[n, n] = True
    if eos_row:
        out[n, :] = True
    if eos_col:
        out[:, n] = True
    return out


@pytest.mark.fast
def test_unrestricted_neighbours_and_visible_boundary_by_hand():
    """One line of two sentences, "a b | c d" with b split in two pieces: a → b (b the root), d → c (c the root);
    heads (1-based) [2, 0, 0, 3]. Li et al. 2021's released code (src/dataset.py) takes the windows of i−1 and i+1
    whatever tree they are in, and makes [CLS]/[SEP] visible to and from every token; ours by default keeps a
    neighbour of another tree out and lets EOS see only itself."""
    heads, pieces = [2, 0, 0, 3], [1, 2, 1, 1]
    word_first, parent_first, pad = collate([(heads, pieces), ([0], [1])], left=False)  # row 1 pads row 0's length
    a, b, c, d = range(4)
    expect = {
        # m = 0: own word; restricted union (b's next word c is another tree: left out); unrestricted union
        (0, "word"): {a: {a}, b: {b}, c: {c}, d: {d}},
        (0, "neighbours"): {a: {a, b}, b: {a, b}, c: {c, d}, d: {c, d}},
        (0, "neighbours-unrestricted"): {a: {a, b}, b: {a, b, c}, c: {b, c, d}, d: {c, d}},
        # m = 1: a–b and c–d one arc apart; the unrestricted union of b and c crosses the sentence boundary
        (1, "word"): {a: {a, b}, b: {a, b}, c: {c, d}, d: {c, d}},
        (1, "neighbours"): {a: {a, b}, b: {a, b}, c: {c, d}, d: {c, d}},
        (1, "neighbours-unrestricted"): {a: {a, b}, b: {a, b, c, d}, c: {a, b, c, d}, d: {c, d}},
    }
    for (m, kind), words in expect.items():
        for visible in (False, True):
            got = tree_window(word_first, parent_first, pad, m, kind, boundary_visible=visible)  # (2, T, T)
            want = _by_words(words, pieces, eos_row=visible, eos_col=visible)
            assert torch.equal(got[0], want), (m, kind, visible)
            # the short row: its one word and EOS, then padding (queries unrestricted, keys never seen)
            short = got[1]
            assert short[2:].all() and not short[:2, 2:].any()
            assert short[0, 1].item() is visible and short[1, 0].item() is visible
    # True/False stay the names of the restricted union and of the word window
    assert torch.equal(tree_window(word_first, parent_first, pad, 1, True),
                       tree_window(word_first, parent_first, pad, 1, "neighbours"))


@pytest.mark.fast
def test_the_window_module_lists_its_windows_and_names_a_bad_one():
    from syntrans.syntax import sla_window

    assert sla_window.WINDOWS == ("word", "neighbours", "neighbours-unrestricted")
    word_first, parent_first, pad = collate([SENTENCES[0]], left=False)
    with pytest.raises(ValueError, match="SLA window must be one of word, neighbours, neighbours-unrestricted, found "
                                         "'union'"):
        tree_window(word_first, parent_first, pad, 1, "union")


@pytest.mark.fast
def test_the_mechanism_passes_the_window_and_boundary_options_to_the_mask():
    """--sla-window neighbours-unrestricted and --sla-boundary-visible reach the log mask the SLA heads read."""
    from syntrans.mechanisms.sla import Sla, SlaConfig

    word_first, parent_first, pad = collate([([2, 0, 0, 3], [1, 2, 1, 1])], left=False)
    shape = type("Shape", (), {"encoder_layers": 2, "encoder_heads": 4})()
    features = {"src_word_first": word_first, "src_parent_first": parent_first}
    for window, visible in itertools.product(("word", "neighbours", "neighbours-unrestricted"), (False, True)):
        mech = Sla(SlaConfig(layers=[0], heads=2, threshold=1, window=window, boundary_visible=visible), shape)
        log_m = mech.prepare("encoder", features, word_first, pad, torch.float32, training=False)  # (1, T, T)
        want = tree_window(word_first, parent_first, pad, 1, window, boundary_visible=visible)
        assert torch.equal(log_m == 0, want)
    with pytest.raises(ValueError, match="--sla-boundary-visible is a switch"):
        Sla(SlaConfig(layers=[0], heads=2, boundary_visible="yes"), shape)
