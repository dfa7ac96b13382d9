"""LISA (as adapted by Bugliarello & Okazaki 2020): one bi-affine head whose softmax is trained towards the
first subword of each token's head word; loss over real tokens only, the oracle, and the logged numbers. With
``--lisa-loss l2`` (Hou et al., gated self-attention, §2.2 and §5.2): a stock head whose probabilities are pulled
towards the 0/1 parent mask by the squared L2 distance."""
import math

import pytest
import torch
import torch.nn.functional as F
from fairseq.modules import MultiheadAttention
from helpers import side_inputs, syntax_attention

from syntrans.mechanisms.base import ParentReport
from syntrans.mechanisms.distance import DistanceHeads
from syntrans.mechanisms.lisa import Lisa, LisaConfig, LisaHead, parent_l2_loss, parent_loss
from syntrans.mechanisms.plan import SyntaxPlan
from syntrans.models.config import model_config
from syntrans.models.syntax_transformer import model_shape
from syntrans.modules.layer_report import LayerReport

C, H = 16, 4
D = C // H


def lisa_module(head=0, seed=0, loss="ce", dropout=0.0, gold_parents=False):
    """``head`` distance-mask heads (heads 0 … head − 1), then the LISA head (head ``head``), then stock heads."""
    blocks = ([DistanceHeads(head)] if head else []) + [LisaHead(D, loss, gold_parents)]
    return syntax_attention(C, H, blocks=blocks, dropout=dropout, seed=seed)


def small_config(**flat):
    """The typed config of a 2-layer, H-head, C-dimensional model with these flat (command-line form) fields."""
    import argparse

    return model_config(argparse.Namespace(encoder_layers=2, decoder_layers=2, encoder_attention_heads=H,
                                            decoder_attention_heads=H, encoder_embed_dim=C, decoder_embed_dim=C, **flat))


def batch(seed=1):
    """Two sentences of 6 and 3 tokens (EOS last), left-padded; first-subword parents in padded coordinates."""
    g = torch.Generator().manual_seed(seed)
    T, lengths = 6, [6, 3]
    x = torch.randn(T, 2, C, generator=g)
    pad = torch.tensor([[t < T - n for t in range(T)] for n in lengths])
    rel = [[1, 3, 3, 3, 3, -1], [1, 1, -1]]  # sentence-relative; root points at itself; EOS has none
    parents = torch.full((2, T), -1, dtype=torch.long)
    for b, r in enumerate(rel):
        off = T - lengths[b]
        parents[b, off:] = torch.tensor([p + off if p >= 0 else -1 for p in r])
    return x, pad, parents, lengths, rel


def hand_scores(attn, x, b, p, head):
    """s_ij = [f(W_q x_i); 1]ᵀ U f(W_k x_j) over the real tokens of sentence b (f = leaky ReLU, slope 0.01)."""
    sl = slice(head * D, (head + 1) * D)
    q = (x[p:, b] @ attn.q_proj.weight.T + attn.q_proj.bias)[:, sl]
    k = (x[p:, b] @ attn.k_proj.weight.T + attn.k_proj.bias)[:, sl]
    fq = torch.where(q > 0, q, 0.01 * q)
    fk = torch.where(k > 0, k, 0.01 * k)
    U = attn.lisa.U
    n = q.size(0)
    s = torch.zeros(n, n)
    for i in range(n):
        for j in range(n):
            s[i, j] = torch.dot(fq[i], U[:D] @ fk[j]) + torch.dot(U[D], fk[j])
    return s


@pytest.mark.fast
@pytest.mark.parametrize("head", [0, 2])
def test_lisa_head_is_the_biaffine_softmax(head):
    attn = lisa_module(head)
    x, pad, parents, lengths, _ = batch()
    data = {"distance": torch.zeros(2, 6, 6)} if head else {}
    _, w, _ = attn(x, x, x, key_padding_mask=pad, need_weights=True, need_head_weights=True,
                   inputs=side_inputs(pad, lisa=parents, **data))  # (H, B, T, S)
    for b, n in enumerate(lengths):
        p = 6 - n
        torch.testing.assert_close(w[head, b, p:, p:], torch.softmax(hand_scores(attn, x, b, p, head), -1),
                                   atol=1e-6, rtol=1e-5)


@pytest.mark.fast
def test_lisa_loss_counts_real_tokens_only():
    """−Σ log A[i, parent(i)] over real tokens (no pad, no EOS), with the count and the attachment hits."""
    attn = lisa_module()
    x, pad, parents, lengths, rel = batch()
    _, _, report = attn(x, x, x, key_padding_mask=pad, need_weights=False, inputs=side_inputs(pad, lisa=parents))
    loss, count, hits = report.mechanisms["lisa"].stats
    want_loss, want_count, want_hits = 0.0, 0, 0
    for b, n in enumerate(lengths):
        p = 6 - n
        logp = torch.log_softmax(hand_scores(attn, x, b, p, 0), -1)
        for i, par in enumerate(rel[b]):
            if par >= 0:
                want_loss -= logp[i, par].item()
                want_count += 1
                want_hits += int(logp[i].argmax().item() == par)
    assert int(count) == want_count == 7
    assert int(hits) == want_hits
    assert loss.item() == pytest.approx(want_loss, rel=1e-5)


@pytest.mark.fast
def test_parent_loss_ignores_rows_without_parent_even_at_masked_keys():
    scores = torch.randn(1, 3, 3)
    log_probs = torch.log_softmax(scores, -1)
    log_probs[0, 0] = float("-inf")  # a padding row: every key masked
    log_probs[0, 0, 0] = 0.0
    parents = torch.tensor([[-1, 2, 1]])
    loss, count, hits = parent_loss(log_probs, parents)
    assert math.isfinite(loss.item()) and int(count) == 2
    assert loss.item() == pytest.approx(-(log_probs[0, 1, 2] + log_probs[0, 2, 1]).item())
    scores[0, 0] = float("-inf")  # the same rows as raw scores (the loss takes scores now): the same loss
    scores[0, 0, 0] = 5.0
    from_scores = parent_loss(scores, parents)
    assert from_scores[0].item() == pytest.approx(loss.item(), rel=1e-6) and int(from_scores[1]) == 2
    forced = torch.full((1, 3, 3), -30.0)
    forced[0, 1, 2] = forced[0, 2, 1] = 0.0
    assert int(parent_loss(forced, parents)[2]) == 2  # attachment: argmax on the gold parent


@pytest.mark.fast
@pytest.mark.parametrize("loss", ["ce", "l2"])
def test_gold_parent_oracle_at_evaluation_only(loss):
    attn = lisa_module(loss=loss, gold_parents=True)
    x, pad, parents, lengths, _ = batch()
    syntax = side_inputs(pad, lisa=parents)
    _, w, _ = attn(x, x, x, key_padding_mask=pad, need_weights=True, need_head_weights=True, inputs=syntax)
    has = parents >= 0
    one_hot = F.one_hot(parents.clamp(min=0), 6).float()
    assert torch.equal(w[0][has], one_hot[has])  # every real token attends to its gold parent
    attn.train()
    _, w_train, _ = attn(x, x, x, key_padding_mask=pad, need_weights=True, need_head_weights=True, inputs=syntax)
    assert not torch.equal(w_train[0][has], one_hot[has])  # training keeps the learned head
    # rows without a parent (the EOS rows: real, no parent) keep the learned head's rows (no dropout here), which
    # are not the one-hot rows that clamping their parent −1 to key 0 would give
    eos = ~has & ~pad
    learned, clamped = w_train[0][eos], one_hot[eos]
    assert learned.shape == clamped.shape == (2, 6)
    torch.testing.assert_close(w[0][eos], learned, atol=1e-6, rtol=1e-5)
    assert (w[0][eos] != clamped).any()


@pytest.mark.fast
def test_biaffine_scorer_shapes_and_bias_row():
    torch.manual_seed(0)
    s = LisaHead(4, "ce", False)
    with torch.no_grad():
        s.U.zero_()
        s.U[4] = torch.tensor([1.0, 0.0, 0.0, 0.0])  # only the bias row: score_ij = f(k_j)[0]
    q, k = torch.randn(2, 3, 4), torch.randn(2, 5, 4)
    out = s.biaffine(q, k)
    assert out.shape == (2, 3, 5)
    expect = F.leaky_relu(k[..., 0]).unsqueeze(1).expand(2, 3, 5)
    torch.testing.assert_close(out, expect)


@pytest.mark.fast
def test_lisa_layer_without_parents_still_attends():
    """Generation needs no parents for the loss: the head runs, no statistics are recorded."""
    attn = lisa_module()
    x, pad, _, _, _ = batch()
    out, _, report = attn(x, x, x, key_padding_mask=pad, need_weights=False, inputs=side_inputs(pad))
    assert torch.isfinite(out).all() and report.mechanisms.get("lisa") is None
    stock = MultiheadAttention(C, H, self_attention=True).eval()
    stock.load_state_dict({k: v for k, v in attn.state_dict().items() if not k.startswith("lisa.")})
    assert not torch.allclose(stock(x, x, x, key_padding_mask=pad, need_weights=False)[0], out)


def stock_head_probs(attn, x, b, p, head):
    """softmax_j(q_i·k_j/√d) of one head over the real tokens of sentence b, by a loop (fairseq: q scaled first)."""
    sl = slice(head * D, (head + 1) * D)
    q = (x[p:, b] @ attn.q_proj.weight.T + attn.q_proj.bias)[:, sl] * D ** -0.5
    k = (x[p:, b] @ attn.k_proj.weight.T + attn.k_proj.bias)[:, sl]
    n = q.size(0)
    s = torch.zeros(n, n)
    for i in range(n):
        for j in range(n):
            s[i, j] = torch.dot(q[i], k[j])
    return torch.softmax(s, -1)


@pytest.mark.fast
def test_l2_loss_by_hand_with_padding_and_eos():
    """Σ_i Σ_j (A_ij − M_ij)² over the rows with a parent: sentence 0 has 3 words + EOS, sentence 1 one pad + 2 words
    + EOS (left-padded; A = 0 at its padded key)."""
    probs = torch.tensor([[[0.1, 0.6, 0.2, 0.1],    # parent 1: .01 + .16 + .04 + .01 = .22, argmax 1: hit
                           [0.2, 0.4, 0.2, 0.2],    # parent 1 (root): .04 + .36 + .04 + .04 = .48, hit
                           [0.0, 0.0, 1.0, 0.0],    # parent 1: 1 + 1 = 2, miss
                           [0.5, 0.5, 0.0, 0.0]],   # EOS: no parent, left out
                          [[0.0, 0.3, 0.3, 0.4],    # padding query: left out
                           [0.0, 0.2, 0.7, 0.1],    # parent 2: .04 + .09 + .01 = .14, hit
                           [0.0, 0.5, 0.4, 0.1],    # parent 2 (root): .25 + .36 + .01 = .62, miss
                           [0.0, 0.1, 0.1, 0.8]]])  # EOS: left out
    parents = torch.tensor([[1, 1, 1, -1], [-1, 2, 2, -1]])
    loss, count, hits = parent_l2_loss(probs, parents)
    assert loss.item() == pytest.approx(0.22 + 0.48 + 2.0 + 0.14 + 0.62)  # 3.46
    assert (int(count), int(hits)) == (5, 3)
    extra = {}
    cfg = small_config(lisa_layers="0", lisa_weight=0.5)
    reports = {0: LayerReport(mechanisms={"lisa": ParentReport(loss=loss, count=count, hits=hits)})}
    Lisa(cfg.lisa, model_shape(cfg)).report("encoder", reports, extra, True)
    logged = extra["aux_losses"]["lisa"]
    assert logged["loss"].item() == pytest.approx(3.46) and int(logged["ntokens"]) == 5 and logged["weight"] == 0.5
    assert extra["aux_metrics"]["lisa_uas"]["value"].item() == pytest.approx(300.0)  # 3 of 5 tokens: 60 %


@pytest.mark.fast
def test_l2_lisa_head_is_a_stock_head_with_the_l2_loss_on_its_probabilities():
    """No U; the layer is fairseq's MultiheadAttention with the same weights; the recorded loss is the squared
    distance of the head's softmax over the real keys to the one-hot parent rows, over real tokens with a parent."""
    attn = lisa_module(loss="l2")
    assert not hasattr(attn.lisa, "U") and not [n for n, _ in attn.named_parameters() if "lisa" in n]
    x, pad, parents, lengths, rel = batch()
    out, w, report = attn(x, x, x, key_padding_mask=pad, need_weights=True, need_head_weights=True,
                          inputs=side_inputs(pad, lisa=parents))  # (H, B, T, S)
    stock = MultiheadAttention(C, H, self_attention=True).eval()
    stock.load_state_dict(attn.state_dict())  # strict: the very same parameter names
    want_out, want_w = stock(x, x, x, key_padding_mask=pad, need_weights=True)  # fused path: head mean (B, T, S)
    torch.testing.assert_close(out, want_out, atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(w.mean(dim=0), want_w, atol=1e-6, rtol=1e-5)
    want_loss, want_count, want_hits = 0.0, 0, 0
    for b, n in enumerate(lengths):
        p = 6 - n
        A = stock_head_probs(attn, x, b, p, 0)
        torch.testing.assert_close(w[0, b, p:, p:], A, atol=1e-6, rtol=1e-5)
        assert (w[0, b, :, :p] == 0).all()  # padded keys: probability 0
        for i, par in enumerate(rel[b]):
            if par >= 0:
                want_loss += sum((A[i, j].item() - (1.0 if j == par else 0.0)) ** 2 for j in range(n))
                want_count += 1
                want_hits += int(A[i].argmax().item() == par)
    loss, count, hits = report.mechanisms["lisa"].stats
    assert int(count) == want_count == 7 and int(hits) == want_hits
    assert loss.item() == pytest.approx(want_loss, rel=1e-5)


@pytest.mark.fast
@pytest.mark.parametrize("loss", ["ce", "l2"])
def test_lisa_loss_is_taken_before_attention_dropout(loss):
    """In training, attention dropout changes the output but not the supervised probabilities."""
    attn = lisa_module(loss=loss, dropout=0.5)
    x, pad, parents, _, _ = batch()
    syntax = side_inputs(pad, lisa=parents)
    out_eval, _, report_eval = attn(x, x, x, key_padding_mask=pad, need_weights=False, inputs=syntax)
    evaluated = report_eval.mechanisms["lisa"].stats
    attn.train()
    torch.manual_seed(3)
    out_train, _, report_train = attn(x, x, x, key_padding_mask=pad, need_weights=False, inputs=syntax)
    assert not torch.allclose(out_train, out_eval)  # the dropout ran
    assert len(report_train.mechanisms["lisa"].stats) == len(evaluated) == 3
    for got, want in zip(report_train.mechanisms["lisa"].stats, evaluated):
        assert torch.equal(got, want)


@pytest.mark.fast
def test_ce_lisa_head_keeps_its_parameter_names():
    """The default (ce) adds exactly one parameter, ``lisa.U``, to fairseq's: checkpoints keep their keys."""
    stock = set(MultiheadAttention(C, H, self_attention=True).state_dict())
    assert set(lisa_module().state_dict()) == stock | {"lisa.U"}
    assert set(lisa_module(loss="l2").state_dict()) == stock
    assert tuple(lisa_module().lisa.U.shape) == (D + 1, D)


@pytest.mark.fast
def test_bad_lisa_loss_is_refused_naming_the_flag_and_value():
    cfg = small_config()
    with pytest.raises(ValueError, match=r"--lisa-loss must be one of ce, l2, found 'l1'"):
        Lisa(LisaConfig(loss="l1"), model_shape(cfg))
    cfg = small_config(lisa_layers="1", lisa_loss="l1")  # the flags as the command line gives them
    assert cfg.lisa.loss == "l1"  # read as given: refused where the model's mechanisms are built
    with pytest.raises(ValueError, match=r"--lisa-loss .*'l1'"):
        SyntaxPlan(cfg, model_shape(cfg))
    cfg = small_config(lisa_layers="1", lisa_loss="l2")
    plan = SyntaxPlan(cfg, model_shape(cfg))
    assert plan.sides["encoder"].layer(0).blocks(D) == []
    (block,) = plan.sides["encoder"].layer(1).blocks(D)
    assert isinstance(block, LisaHead) and block.loss == "l2"


def criterion_loss(task, model, sample):
    from syntrans.criterions.syntax_label_smoothed_cross_entropy import SyntaxLabelSmoothedCrossEntropyCriterion

    crit = SyntaxLabelSmoothedCrossEntropyCriterion(task, sentence_avg=False, label_smoothing=0.1)
    loss, sample_size, log = crit(model, sample)
    return loss, sample_size, log, crit


def test_lisa_loss_scale_does_not_depend_on_batch_size_and_is_logged(tiny_data):
    from fairseq import metrics
    from helpers import build_task_and_model, lisa_attachments

    task, model = build_task_and_model(tiny_data, "lisa_transformer_iwslt_de_en", "--lisa-weight", "0.5")
    task.load_dataset("valid")
    ds = task.dataset("valid")
    model.eval()
    one = ds.collater([ds[0]])
    two = ds.collater([ds[0], ds[0]])
    with torch.no_grad():
        l1, n1, log1, crit = criterion_loss(task, model, one)
        l2, n2, log2, _ = criterion_loss(task, model, two)
    assert n2 == 2 * n1
    assert (l2 / n2).item() == pytest.approx((l1 / n1).item(), rel=1e-5)  # per-token scale
    # the total is CE + 0.5 × mean LISA loss per source token, times sample_size
    n_src = int(log1["aux:lisa:n"])
    assert n_src == len(ds[0]["source"]) - 1  # real tokens without EOS
    from fairseq.criterions.label_smoothed_cross_entropy import LabelSmoothedCrossEntropyCriterion

    with torch.no_grad():
        ce = LabelSmoothedCrossEntropyCriterion(task, sentence_avg=False, label_smoothing=0.1)(model, one)[0]
    assert float(l1) == pytest.approx(float(ce) + 0.5 * float(log1["aux:lisa"]) * n1 / n_src, rel=1e-5)
    with metrics.aggregate() as agg:
        crit.reduce_metrics([log1, log2])
    logged = agg.get_smoothed_values()
    assert logged["lisa"] == pytest.approx(float(log1["aux:lisa"]) / n_src, rel=1e-3)
    hits, count = lisa_attachments(model, one)  # counted here from the head's recorded attention
    assert count == n_src
    assert logged["lisa_uas"] == pytest.approx(100.0 * hits / n_src, abs=6e-5)  # 4 decimals: half a step + noise


def test_lisa_needs_parents_to_train_but_not_to_translate(tiny_data, tmp_path):
    """Without source head sidecars a LISA model still translates (its head learned to parse), refuses to
    train (its loss would be silently missing), and a PASCAL model is refused with the file it lacks."""
    import shutil

    from helpers import build_task_and_model, first_batch

    data = tmp_path / "data-bin"
    shutil.copytree(tiny_data, data)
    for f in data.glob("*.src.head.*"):
        f.unlink()
    task, model = build_task_and_model(data, "lisa_transformer_iwslt_de_en")
    sample = first_batch(task, "valid", 3)
    assert "src_parent_first" not in sample["net_input"]
    model.eval()
    with torch.no_grad():
        out, extra = model(**sample["net_input"])
    assert torch.isfinite(out).all() and "aux_losses" not in extra
    model.train()
    with pytest.raises(ValueError, match="src_parent_first"):
        model(**sample["net_input"])
    task, _ = build_task_and_model(data, "pascal_transformer_iwslt_de_en")
    with pytest.raises(FileNotFoundError, match=r"src\.head"):
        task.load_dataset("valid")


def test_l2_lisa_trains_through_the_model(tiny_data):
    """``--lisa-loss l2`` through the model: no U in the checkpoint keys (ce keeps it), a finite training loss, and
    the L2 loss alone sends gradient into the LISA head's slice of q_proj/k_proj of layer 0 and nowhere else there."""
    from helpers import build_task_and_model, first_batch

    _, ce_model = build_task_and_model(tiny_data, "lisa_transformer_iwslt_de_en")
    task, model = build_task_and_model(tiny_data, "lisa_transformer_iwslt_de_en", "--lisa-loss", "l2")
    assert set(ce_model.state_dict()) - set(model.state_dict()) == {"encoder.layers.0.self_attn.lisa.U"}
    assert set(model.state_dict()) <= set(ce_model.state_dict())
    sample = first_batch(task, "valid", 4)
    model.train()
    loss, sample_size, log, _ = criterion_loss(task, model, sample)
    assert math.isfinite(loss.item()) and log["aux:lisa:n"] > 0
    from syntrans.modules.attention_record import record_attention

    with record_attention(model) as probs:
        _, extra = model(**sample["net_input"])
    # the loss summed here, query by query, from the head's recorded attention: Σ_i Σ_j (A_ij − M_ij)²
    p, gold = probs[("encoder", 0)][:, 0].double(), sample["net_input"]["src_parent_first"]  # (B, T, S), (B, T)
    want, rows = 0.0, 0
    for b, t in (gold >= 0).nonzero().tolist():
        one_hot = torch.zeros(p.size(-1), dtype=p.dtype)
        one_hot[gold[b, t]] = 1.0
        want, rows = want + float(((p[b, t] - one_hot) ** 2).sum()), rows + 1
    assert log["aux:lisa:n"] == rows and float(log["aux:lisa"]) == pytest.approx(want, rel=1e-5)
    assert extra["aux_losses"]["lisa"]["loss"].item() == pytest.approx(want, rel=1e-5)
    extra["aux_losses"]["lisa"]["loss"].backward()
    attn = model.encoder.layers[0].self_attn
    d = attn.head_dim
    for proj in (attn.q_proj, attn.k_proj):
        g = proj.weight.grad  # (C, C): rows of head h are h·d … (h+1)·d − 1
        assert torch.isfinite(g).all() and g[:d].abs().sum() > 0  # the LISA head (head 0)
        assert (g[d:] == 0).all()  # the stock heads take no part in the L2 loss
