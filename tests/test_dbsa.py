"""DBSA (Deguchi et al. 2019): bi-affine heads softmax(Q U Kᵀ/√d) in encoder and causal decoder self-attention,
their parent loss and attachment score, incremental decoding; and the model's DBSA/SyncAttn losses against a
per-sentence hand computation on a batch padded on both sides."""
import math

import numpy as np
import pytest
import torch
from fairseq.criterions.label_smoothed_cross_entropy import label_smoothed_nll_loss
from fairseq.modules import MultiheadAttention
from helpers import build_task_and_model, side_inputs, syntax_attention

from syntrans.criterions.syntax_label_smoothed_cross_entropy import SyntaxLabelSmoothedCrossEntropyCriterion
from syntrans.mechanisms.dbsa import DbsaHeads
from syntrans.mechanisms.distance import DistanceHeads
from syntrans.syntax.align import pieces_per_word
from syntrans.syntax.parents import subword_parents

C, H = 16, 2
D = C // H


def dbsa_module(heads=1, start=0, causal=False, seed=0, noise=0.5):
    """DBSA on heads start..start+heads−1 (after ``start`` distance heads), with a random U."""
    blocks = ([DistanceHeads(start)] if start else []) + [DbsaHeads(heads, causal=causal, gold_parents=False)]
    attn = syntax_attention(C, H, blocks=blocks, seed=seed)
    with torch.no_grad():
        attn.q_proj.U.add_(noise * torch.randn_like(attn.q_proj.U))
    return attn.eval()


def stock_copy(attn):
    stock = MultiheadAttention(C, H, self_attention=True).eval()
    stock.load_state_dict({k: v for k, v in attn.state_dict().items() if not k.endswith(".U")})
    stock._set_skip_embed_dim_check()  # fairseq's unfused path: per-head weights
    return stock


def left_padded(lengths, T, seed=1):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(T, len(lengths), C, generator=g)
    pad = torch.tensor([[t < T - n for t in range(T)] for n in lengths])
    return x, pad


def hand_probs(attn, x, heads, causal=False):
    """softmax(q_h U_h k_hᵀ/√d) per DBSA head h of one unpadded sentence x (n, C) → (heads, n, n)."""
    q = x @ attn.q_proj.weight.T + attn.q_proj.bias
    k = x @ attn.k_proj.weight.T + attn.k_proj.bias
    out = []
    for i, h in enumerate(heads):
        sl = slice(h * D, (h + 1) * D)
        s = (q[:, sl] @ attn.q_proj.U[i]) @ k[:, sl].T / math.sqrt(D)
        if causal:
            s = s.masked_fill(torch.ones_like(s).triu(1).bool(), float("-inf"))
        out.append(torch.softmax(s, -1))
    return torch.stack(out)


@pytest.mark.fast
def test_dbsa_head_is_the_biaffine_softmax_and_other_heads_are_stock():
    attn = dbsa_module(heads=1, start=1)  # head 0 distance (zero mask), head 1 DBSA
    lengths, T = [6, 3], 6
    x, pad = left_padded(lengths, T)
    _, w, _ = attn(x, x, x, key_padding_mask=pad, need_weights=True, need_head_weights=True,
                   inputs=side_inputs(pad, distance=torch.zeros(2, T, T)))  # (H, B, T, S)
    _, w_stock = stock_copy(attn)(x, x, x, key_padding_mask=pad, need_weights=True, need_head_weights=True)
    for b, n in enumerate(lengths):
        p = T - n
        torch.testing.assert_close(w[1, b, p:, p:], hand_probs(attn, x[p:, b], [1])[0], atol=1e-6, rtol=1e-5)
        torch.testing.assert_close(w[0, b, p:, p:], w_stock[0, b, p:, p:], atol=1e-6, rtol=1e-5)
        assert not torch.allclose(w[1, b, p:, p:], w_stock[1, b, p:, p:], atol=1e-3)  # U matters


@pytest.mark.fast
def test_identity_U_gives_the_stock_attention_on_every_path():
    """U = I: the explicit path, the fused path (no inputs, or inputs without parents) and the stock module agree."""
    attn = dbsa_module(heads=2, noise=0.0)
    x, pad = left_padded([5, 2], 5)
    want, _ = stock_copy(attn)(x, x, x, key_padding_mask=pad, need_weights=False)
    plain, _, _ = attn(x, x, x, key_padding_mask=pad, need_weights=False)
    fused, _, _ = attn(x, x, x, key_padding_mask=pad, need_weights=False, inputs=side_inputs(pad))
    explicit, _, _ = attn(x, x, x, key_padding_mask=pad, need_weights=False,
                          inputs=side_inputs(pad, backend="explicit"))
    for got in (plain, fused, explicit):
        torch.testing.assert_close(got[-2:, 1], want[-2:, 1], atol=1e-6, rtol=1e-5)
        torch.testing.assert_close(got[:, 0], want[:, 0], atol=1e-6, rtol=1e-5)


@pytest.mark.fast
@pytest.mark.parametrize("causal", [False, True])
def test_parent_loss_uses_the_mean_of_the_heads_and_real_tokens_only(causal):
    """−Σ log mean_h A_h[i, parent(i)] over tokens with a parent (decoder: at or before them; later ones counted)."""
    attn = dbsa_module(heads=2, causal=causal)
    lengths, T = [6, 3], 6
    x, pad = left_padded(lengths, T)
    rel = [[1, 2, 2, 4, 2, -1], [0, 0, -1]]  # sentence-relative parents; −1: none
    parents = torch.full((2, T), -1)
    for b, r in enumerate(rel):
        off = T - lengths[b]
        parents[b, off:] = torch.tensor([p + off if p >= 0 else -1 for p in r])
    mask = torch.ones(T, T).triu(1).bool() if causal else None
    _, _, report = attn(x, x, x, key_padding_mask=pad, need_weights=False, inputs=side_inputs(pad, dbsa=parents),
                        attn_mask=None if mask is None else torch.zeros(T, T).masked_fill(mask, float("-inf")))
    loss, count, hits, dropped = report.mechanisms["dbsa"].stats
    want, n_arcs, n_hits, n_later = 0.0, 0, 0, 0
    for b, n in enumerate(lengths):
        p = T - n
        probs = hand_probs(attn, x[p:, b], [0, 1], causal=causal).mean(0)
        for i, par in enumerate(rel[b]):
            if par < 0:
                continue
            if causal and par > i:
                n_later += 1
                continue
            want -= math.log(probs[i, par].item())
            n_arcs += 1
            n_hits += int(probs[i].argmax() == par)
    assert int(count) == n_arcs and int(dropped) == n_later and int(hits) == n_hits
    assert n_later == (3 if causal else 0)  # 0→1, 1→2 and 3→4 of sentence 0 point forward
    assert loss.item() == pytest.approx(want, rel=1e-5)


def forced_module(parents_rel, T, causal, scale):
    """One DBSA head whose score of key j for query i is U[i, j] on one-hot inputs: U = scale·one-hot(parent)."""
    attn = syntax_attention(C, H, blocks=[DbsaHeads(1, causal=causal, gold_parents=False)])
    with torch.no_grad():
        for proj in (attn.q_proj, attn.k_proj):
            proj.weight.copy_(torch.eye(C))
            proj.bias.zero_()
        U = torch.zeros(D, D)
        for i, p in enumerate(parents_rel):
            if p >= 0:
                U[i, p] = scale
        attn.q_proj.U.copy_(U.unsqueeze(0) * math.sqrt(D))
    return attn.eval()


@pytest.mark.fast
@pytest.mark.parametrize("causal", [False, True])
def test_uas_is_one_for_a_head_forced_to_gold_and_chance_for_a_uniform_head(causal):
    T, B = 8, 1
    rng = np.random.default_rng(0)
    rel = [int(rng.integers(0, i + 1)) if causal else int(rng.integers(0, T)) for i in range(T)]
    x = torch.eye(C)[:T].unsqueeze(1).repeat(1, B, 1)  # token i = e_i: q_i = k_i = e_i in head 0
    parents = torch.tensor([rel])
    mask = torch.zeros(T, T).masked_fill(torch.ones(T, T).triu(1).bool(), float("-inf")) if causal else None
    forced = forced_module(rel, T, causal, scale=30.0)
    inputs = side_inputs(torch.zeros(1, T, dtype=torch.bool), dbsa=parents)
    _, _, report = forced(x, x, x, need_weights=False, attn_mask=mask, inputs=inputs)
    loss, count, hits, _ = report.mechanisms["dbsa"].stats
    assert int(hits) == int(count) == T and loss.item() < 1e-6
    uniform = forced_module(rel, T, causal, scale=0.0)  # every score 0: uniform over the allowed keys
    _, _, report = uniform(x, x, x, need_weights=False, attn_mask=mask, inputs=inputs)
    loss, count, hits, _ = report.mechanisms["dbsa"].stats
    want = sum(math.log(i + 1) for i in range(T)) if causal else T * math.log(T)
    assert loss.item() == pytest.approx(want, rel=1e-5)


@pytest.mark.fast
def test_random_near_uniform_head_scores_chance():
    """Tiny random scores over 8 keys and random gold parents: the attachment score is near 1/8."""
    Tn, B = 8, 400
    g = torch.Generator().manual_seed(3)
    attn = dbsa_module(heads=1, noise=0.0)
    with torch.no_grad():
        attn.q_proj.weight.mul_(1e-3)
        attn.q_proj.bias.zero_()
    x = torch.randn(Tn, B, C, generator=g)
    parents = torch.randint(0, Tn, (B, Tn), generator=g)
    _, _, report = attn(x, x, x, need_weights=False, inputs=side_inputs(torch.zeros(B, Tn, dtype=torch.bool), dbsa=parents))
    loss, count, hits, _ = report.mechanisms["dbsa"].stats
    assert abs(float(hits) / float(count) - 1 / Tn) < 0.03
    assert loss.item() / float(count) == pytest.approx(math.log(Tn), rel=1e-3)


# ---- the whole model: features, losses, λ = 0, incremental decoding ----

def model_and_batch(data, *extra, left_pad_target=False):
    flags = ["--left-pad-target"] if left_pad_target else []  # a switch in fairseq
    task, model = build_task_and_model(data, "syncattn_transformer_wmt_en_de", "--dbsa-heads", "2", *flags, *extra)
    with torch.no_grad():
        g = torch.Generator().manual_seed(5)
        for name, p in model.named_parameters():
            if name.endswith("q_proj.U"):
                p.add_(0.5 * torch.randn(p.shape, generator=g))
    task.load_dataset("valid")
    ds = task.dataset("valid")
    order = np.argsort(ds.src_sizes, kind="stable")
    ids = [int(order[len(order) // 4]), int(order[-1])]  # a short and the longest source
    sample = ds.collater([ds[i] for i in ids])
    return task, model.eval(), ds, sample


def chain_parents(side, index):
    heads = side["head"][index]
    return subword_parents(heads, pieces_per_word(side["word"][index]), "chain")


@pytest.mark.parametrize("left_pad_target", [False, True])
def test_target_parents_are_in_decoder_input_coordinates(tiny_data, left_pad_target):
    _, _, ds, sample = model_and_batch(tiny_data, left_pad_target=left_pad_target)
    prev = sample["net_input"]["prev_output_tokens"]
    feat = sample["net_input"]["tgt_parent_chain"]
    assert feat.shape == prev.shape
    for row, index in enumerate(sample["id"].tolist()):
        m = int(prev[row].ne(1).sum())  # real decoder positions: BOS + target subwords
        off = prev.size(1) - m if left_pad_target else 0
        want = [-1] * off + [-1] + [p + 1 + off for p in chain_parents(ds.tgt_side, index)]
        want += [-1] * (prev.size(1) - len(want))
        assert feat[row].tolist() == want


def capture(module, store, key):
    def hook(mod, args, kwargs):
        store[key] = kwargs.get("query", args[0] if args else None)
    return module.register_forward_pre_hook(hook, with_kwargs=True)


@pytest.mark.parametrize("left_pad_target", [False, True])
def test_dbsa_and_sync_losses_equal_a_per_sentence_hand_computation(tiny_data, left_pad_target):
    """Source left-padded, target right- (or left-) padded, two sentences of different lengths."""
    task, model, ds, sample = model_and_batch(tiny_data, left_pad_target=left_pad_target)
    enc_attn = model.encoder.layers[0].self_attn
    dec_attn = model.decoder.layers[0].self_attn
    cross = model.decoder.layers[model.plan.alignment_layer()].encoder_attn
    seen = {}
    hooks = [capture(enc_attn, seen, "enc"), capture(dec_attn, seen, "dec"), capture(cross, seen, "cross")]
    with torch.no_grad():
        _, extra = model(**sample["net_input"])
        enc_out = model.encoder.forward_torchscript(sample["net_input"])["encoder_out"][0]  # (I, B, C)
    for h in hooks:
        h.remove()
    src, prev = sample["net_input"]["src_tokens"], sample["net_input"]["prev_output_tokens"]
    S, J = src.size(1), prev.size(1)
    heads = [0, 1]
    want = {"dbsa_src": [0.0, 0], "dbsa_tgt": [0.0, 0], "sync": [0.0, 0]}
    with torch.no_grad():  # the hand computation: plain numbers, no graph
        for row, index in enumerate(sample["id"].tolist()):
            n, m = int(src[row].ne(1).sum()), int(prev[row].ne(1).sum())
            s = slice(S - n, S)
            t = slice(J - m, J) if left_pad_target else slice(0, m)
            E = hand_probs(enc_attn, seen["enc"][s, row], heads).mean(0)  # (n, n)
            Dm = hand_probs(dec_attn, seen["dec"][t, row], heads, causal=True).mean(0)  # (m, m)
            for i, p in enumerate(chain_parents(ds.src_side, index)):  # the EOS (last) has no parent
                want["dbsa_src"][0] -= math.log(E[i, int(p)])
                want["dbsa_src"][1] += 1
            for i, p in enumerate(chain_parents(ds.tgt_side, index)):  # decoder position i+1, parent p+1
                if p <= i:
                    want["dbsa_tgt"][0] -= math.log(Dm[i + 1, int(p) + 1])
                    want["dbsa_tgt"][1] += 1
            # C: cross-attention of the sync layer, mean over heads, over the sentence's real source keys
            q = (seen["cross"][t, row] @ cross.q_proj.weight.T + cross.q_proj.bias) * cross.scaling
            k = enc_out[s, row] @ cross.k_proj.weight.T + cross.k_proj.bias
            Cm = torch.stack([torch.softmax(q[:, h * 8:(h + 1) * 8] @ k[:, h * 8:(h + 1) * 8].T, -1) for h in range(4)]).mean(0)
            mapped = Cm @ E @ Cm.T
            for tt in range(m):
                d_prime = torch.softmax(mapped[tt, : tt + 1], -1)
                want["sync"][0] += float(((d_prime - Dm[tt, : tt + 1]) ** 2).sum())
            want["sync"][1] += m
    aux = extra["aux_losses"]
    for name, (loss, count) in want.items():
        assert int(aux[name]["ntokens"]) == count, name
        assert float(aux[name]["loss"]) == pytest.approx(loss, rel=1e-4), name
    assert want["dbsa_tgt"][1] > 0 and want["sync"][0] > 0


def test_zero_weights_give_the_plain_label_smoothed_loss(tiny_data):
    task, model, ds, sample = model_and_batch(tiny_data, "--dbsa-weight", "0", "--sync-weight", "0")
    crit = SyntaxLabelSmoothedCrossEntropyCriterion(task, False, 0.1)
    with torch.no_grad():
        loss, sample_size, log = crit(model, sample)
        net_output = model(**sample["net_input"])
    lprobs = model.get_normalized_probs(net_output, log_probs=True).view(-1, len(task.target_dictionary))
    plain, _ = label_smoothed_nll_loss(lprobs, sample["target"].view(-1), 0.1, ignore_index=task.target_dictionary.pad())
    assert loss.item() == pytest.approx(float(plain), rel=1e-6)
    assert all(float(log[f"aux:{k}"]) > 0 for k in ("dbsa_src", "dbsa_tgt", "sync"))  # computed, weighted by 0
    task2, model2, _, _ = model_and_batch(tiny_data)
    model2.load_state_dict(model.state_dict())
    with torch.no_grad():
        weighted, _, _ = SyntaxLabelSmoothedCrossEntropyCriterion(task2, False, 0.1)(model2.eval(), sample)
    assert float(weighted) > loss.item() + 1.0


def test_incremental_decoding_equals_the_teacher_forced_forward(tiny_data):
    """Per step, the decoder with fairseq's key/value cache (U inside q_proj) gives the log-probs of the full
    teacher-forced forward (the explicit path with target parents) for the same prefix."""
    _, model, _, sample = model_and_batch(tiny_data)
    net = sample["net_input"]
    prev = net["prev_output_tokens"]
    seen = []  # the syntax inputs the decoder's DBSA layer is given at each incremental step
    with torch.no_grad():
        full = model.get_normalized_probs(model(**net), log_probs=True)  # (B, J, V)
        enc = model.encoder.forward_torchscript(net)
        hook = model.decoder.layers[0].self_attn.register_forward_pre_hook(
            lambda mod, args, kwargs: seen.append(kwargs.get("inputs")), with_kwargs=True)
        state = {}
        steps = []
        for t in range(prev.size(1)):
            out = model.decoder(prev[:, : t + 1], encoder_out=enc, incremental_state=state)
            steps.append(model.get_normalized_probs(out, log_probs=True)[:, -1])
        hook.remove()
    inc = torch.stack(steps, dim=1)
    real = prev.ne(1)
    torch.testing.assert_close(inc[real], full[real], atol=1e-5, rtol=1e-5)
    assert len(seen) == prev.size(1)
    assert all(s is not None and s.get("dbsa") is None for s in seen)  # generation never sees a training batch


def test_training_without_parents_is_a_clear_error(tiny_data):
    _, model, _, sample = model_and_batch(tiny_data)
    model.train()
    net = dict(sample["net_input"])
    del net["tgt_parent_chain"]
    with pytest.raises(ValueError, match="tgt_parent_chain"):
        model(**net)
    net = dict(sample["net_input"])
    del net["src_parent_chain"]
    with pytest.raises(ValueError, match="src_parent_chain"):
        model(**net)


@pytest.mark.parametrize("extra,message", [
    (("--dbsa-encoder-layers", "0,1"), "exactly one layer"),
    (("--sync-layer", "2"), "--sync-layer"),
    (("--dbsa-heads", "5"), "--dbsa-heads"),
    (("--gate-layers", "0", "--distance-layers", "0", "--distance-heads", "1"),
     "heads of DBSA .* cannot be mixed by gated self-attention.*--gate-layers"),
])
def test_bad_dbsa_settings_are_refused(tiny_data, extra, message):
    with pytest.raises(ValueError, match=message):
        build_task_and_model(tiny_data, "syncattn_transformer_wmt_en_de", *extra)


@pytest.mark.fast
def test_several_dbsa_heads_average_and_keep_finite_gradients():
    """With 2 DBSA heads the parse distribution is log((softmax(s_1) + softmax(s_2)) / 2); keys masked in every head
    (padding, the causal future) take no part and give no NaN gradient (logsumexp's backward at an all −inf slice)."""
    from syntrans.mechanisms.dbsa import dbsa_parent_loss

    g = torch.Generator().manual_seed(3)
    scores = torch.randn(2, 2, 3, 4, generator=g, dtype=torch.float64)
    future = torch.ones(3, 4, dtype=torch.bool).triu(2)  # keys after the query + 1: masked in both heads
    scores = scores.masked_fill(future, float("-inf"))
    scores[1, :, :, 0] = float("-inf")  # a padded key of the second sentence
    scores.requires_grad_(True)
    by_hand = torch.log((torch.softmax(scores.detach(), -1)[:, 0] + torch.softmax(scores.detach(), -1)[:, 1]) / 2)
    masked = future.unsqueeze(0).expand(2, 3, 4).clone()
    masked[1, :, 0] = True
    total = 0.0
    for key in range(4):  # every query whose key `key` is not masked takes it as its parent: each unmasked cell once
        parents = torch.where(masked[:, :, key], -1, key)  # (B, T)
        loss, count, hits = dbsa_parent_loss(scores, parents)
        has = parents >= 0
        assert int(count) == int(has.sum()) > 0
        assert loss.item() == pytest.approx(-float(by_hand[:, :, key][has].sum()), rel=1e-6)
        assert int(hits) == int((by_hand.argmax(-1) == key)[has].sum())
        total = total + loss
    assert torch.isfinite(by_hand[~masked]).all() and torch.isneginf(by_hand[masked]).all()
    total.backward()
    assert torch.isfinite(scores.grad).all()
    assert (scores.grad[masked.unsqueeze(1).expand_as(scores)] == 0).all()
