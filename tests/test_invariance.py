"""The model is correct for any batch and padding (README): a sentence gives the same results alone and inside a
padded batch of longer and shorter sentences (two short, two long: every row padded differently), its source padded
on the left (fairseq's default) or on the right (the task's ``left_pad_source`` false, see :func:`padded`), its
target on the right (fairseq's default) or, where the target's padding matters, on the left (``--left-pad-target``).
For every architecture in ``ARCHS`` and both source paddings:

* the collated syntax features sit in their tokens' columns (``test_features_padded_like_tokens``, every feature);
* the encoder output (``test_encoder_output_batch_invariant``);
* the teacher-forced log-probabilities (``test_teacher_forced_output_batch_invariant``; left-padded targets too);
* the beam-search hypothesis: same tokens, score within 1e-4 (``test_hypothesis_batch_invariant``);
* the auxiliary losses' sums and counts and the metrics' sums and counts: a padded batch's are the sums of its
  sentences' alone (``test_aux_losses_add_up_over_sentences``), at evaluation for every mechanism that reports any,
  in training too for all but the gates (BatchNorm normalises the gate logits with the batch's statistics in
  training, and the gated preset drops syntax attention at random: a gate's training forward depends on the batch
  by design; at evaluation BatchNorm uses its running statistics); left-padded targets too where a loss is on the
  target side.

Models are the small random-init ones of ``helpers.build_task_and_model`` (DBSA's U randomised, dropout 0), built once
per module and shared by the tests that only read them (in eval mode, under ``torch.no_grad``). Outputs are compared
with atol = rtol = 1e-5, loss and metric sums with rel 1e-5 / abs 1e-4, counts exactly."""
import pytest
import torch
from fairseq.sequence_generator import SequenceGenerator
from helpers import build_task_and_model

#: id → (arch, extra flags): the vanilla model and every syntax mechanism, alone and combined (LISA with its ce and
#: its l2 loss; NSD on the source, the target, both)
ARCHS = {
    "transformer": ("transformer", ()),
    "distance": ("distance_transformer_iwslt_de_en", ("--distance-heads", "2")),
    "distance_hard": ("distance_transformer_iwslt_de_en", ("--distance-heads", "4", "--distance-hard")),
    "pascal": ("pascal_transformer_iwslt_de_en", ()),
    "pascal_3heads": ("pascal_transformer_iwslt_de_en", ("--pascal-heads", "3")),
    "lisa": ("lisa_transformer_iwslt_de_en", ()),
    "lisa_gold": ("lisa_transformer_iwslt_de_en", ("--lisa-gold-parents",)),
    "lisa_l2": ("lisa_transformer_iwslt_de_en", ("--lisa-loss", "l2")),
    # distance heads 0-1, PASCAL head 2, LISA head 3 of layer 0; LISA head 0 of layer 1
    "distance_pascal_lisa": ("distance_transformer_iwslt_de_en", ("--distance-heads", "2", "--pascal-layers", "0",
                                                                  "--pascal-heads", "1", "--lisa-layers", "0,1")),
    # every head of every layer gated between the distance mask and stock attention
    "gated_distance": ("gated_distance_transformer_iwslt_de_en", ("--gate-warmup-epochs", "0")),
    # a gate mixing PASCAL attention (heads 0-1 of layer 0) with stock attention
    "pascal_gate": ("pascal_transformer_iwslt_de_en", ("--gate-layers", "0")),
    # SLA: every head of every encoder layer within dependency-tree distance 2, mixed with stock attention by a gate
    # with no BatchNorm; and SLA heads alone (threshold 1) in heads 0-1 of layer 0
    "sla_gate": ("sla_transformer_iwslt_de_en", ()),
    "sla_heads": ("syntax_transformer", ("--sla-layers", "0", "--sla-heads", "2", "--sla-threshold", "1")),
    # DBSA head 0 of encoder layer 0 and of decoder layer 0; SyncAttn adds a training loss only
    "dbsa": ("dbsa_transformer_wmt_en_de", ()),
    "syncattn": ("syncattn_transformer_wmt_en_de", ()),
    # the DBSA oracle: encoder layer 0's DBSA head attends to the gold parents
    "dbsa_gold": ("dbsa_transformer_wmt_en_de", ("--dbsa-gold-parents",)),
    # LISA head 0 and DBSA head 1 of encoder layer 0; DBSA head 0 of decoder layer 0
    "lisa_dbsa": ("lisa_transformer_iwslt_de_en", ("--dbsa-encoder-layers", "0", "--dbsa-decoder-layers", "0")),
    # distance head 0, PASCAL head 1, DBSA heads 2-3 of encoder layer 0; DBSA heads 0-1 of every other layer
    "dbsa_all_distance_pascal": ("dbsa_transformer_wmt_en_de", (
        "--dbsa-heads", "2", "--dbsa-encoder-layers", "all", "--dbsa-decoder-layers", "all", "--distance-layers", "0",
        "--distance-heads", "1", "--pascal-layers", "0", "--pascal-heads", "1")),
    # NSD: source dD input + PE + output; target (predicted step by step in decoding); both; dS concat input
    "nsd_src": ("nsd_src_transformer_base", ("--nsd-embed-dim", "8")),
    "nsd_tgt": ("nsd_tgt_transformer_base", ("--nsd-embed-dim", "8")),
    "nsd_both": ("nsd_transformer_base", ("--nsd-embed-dim", "8")),
    "nsd_ds_concat": ("nsd_transformer", ("--nsd-kind", "dS", "--nsd-src-input", "concat", "--nsd-embed-dim", "8")),
    # +S&H: the source dependency labels in the last 10 dimensions of the token embeddings
    "sh": ("sh_transformer_wmt_en_de", ()),
}
DECODER_DBSA_ARCHS = {k: a for k, a in ARCHS.items() if a[0].startswith(("dbsa", "syncattn"))
                      or "--dbsa-decoder-layers" in a[1]}
#: padding id → (the source's side, the target's side)
PADDINGS = {"src_left": ("left", "right"), "src_right": ("right", "right"), "tgt_left": ("left", "left")}
SOURCE_PADDINGS = ("src_left", "src_right")  # where only the source's padding matters (encoder, beam search)

_LISA = {"lisa", "lisa_uas"}
_DBSA = {"dbsa_src", "dbsa_src_uas", "dbsa_tgt", "dbsa_tgt_uas", "dbsa_tgt_later"}
_NSD_SRC, _NSD_TGT = ({f"nsd_{s}_ce", f"nsd_{s}_dist", f"nsd_{s}_clipped"} for s in ("src", "tgt"))
#: id → the auxiliary losses and metrics its teacher-forced forward reports at evaluation on the split's parses
#: (architectures that report none are left out)
AUX = {
    "lisa": _LISA, "lisa_gold": _LISA, "lisa_l2": _LISA, "distance_pascal_lisa": _LISA,
    "gated_distance": {f"gate_l{i}h{h}" for i in range(2) for h in range(4)},
    "pascal_gate": {"gate_l0h0", "gate_l0h1"},
    "sla_gate": {f"gate_l{i}h{h}" for i in range(2) for h in range(4)},
    "dbsa": _DBSA, "dbsa_gold": _DBSA, "dbsa_all_distance_pascal": _DBSA, "syncattn": _DBSA | {"sync"},
    "lisa_dbsa": _LISA | _DBSA, "nsd_src": _NSD_SRC, "nsd_tgt": _NSD_TGT, "nsd_both": _NSD_SRC | _NSD_TGT,
}
assert set(AUX) <= set(ARCHS) and set(DECODER_DBSA_ARCHS) == {"dbsa", "syncattn", "dbsa_gold", "lisa_dbsa",
                                                              "dbsa_all_distance_pascal"}
#: (id, mode, backend, padding) of the aux-sum check: every AUX architecture at evaluation, and in training all but
#: the gates (module docstring), under both source paddings, and with a left-padded target where a loss is on the
#: target side; "flex" computes the LISA/DBSA losses from flex attention's log-sum-exp, as fused training on CUDA
#: does (here torch's eager flex attention on CPU)
_AUX_RUNS = ([(k, "eval", "auto") for k in AUX] + [(k, "train", "auto") for k in AUX if "gate" not in k]
             + [(k, mode, "flex") for k in ("lisa_dbsa", "dbsa_all_distance_pascal") for mode in ("eval", "train")])
AUX_CASES = ([(*run, padding) for run in _AUX_RUNS for padding in SOURCE_PADDINGS]
             + [(*run, "tgt_left") for run in _AUX_RUNS if AUX[run[0]] & ({"sync", "dbsa_tgt"} | _NSD_TGT)])
def randomise_dbsa(model, std: float = 0.5, seed: int = 0) -> int:
    """Add N(0, std²) noise to every DBSA U (returns how many): U starts as the identity, where a DBSA head
    computes exactly a stock head, so an untrained model would not exercise the bi-affine path."""
    g = torch.Generator().manual_seed(seed)
    n = 0
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("q_proj.U"):
                p.add_(torch.randn(p.shape, generator=g) * std)
                n += 1
    return n


def setup(data, arch, extra):
    task, model = build_task_and_model(data, arch, *extra)
    randomise_dbsa(model)
    task.load_dataset("valid")
    model.eval()
    return task, model, task.dataset("valid")


@pytest.fixture(scope="module")
def built(tiny_data):
    """id of ``ARCHS`` (or (arch, extra)) → (task, model) in eval mode, built once per module (:func:`setup`); the
    tests that take a model from here only read it and leave it in eval mode."""
    cache = {}

    def get(key):
        arch, extra = ARCHS[key] if isinstance(key, str) else key
        if (arch, extra) not in cache:
            cache[arch, extra] = setup(tiny_data, arch, extra)[:2]
        task, model = cache[arch, extra]
        model.eval()
        return task, model

    return get


def padded(task, padding: str):
    """The valid split, loaded with the ``padding`` of ``PADDINGS``: the task config's left_pad_source and
    left_pad_target, which fairseq's translation task hands to its datasets. (fairseq 0.12's ``--left-pad-source``
    is a store_true flag on a True default: the command line cannot turn it off, a fairseq-hydra-train config's
    ``task.left_pad_source: false`` can; ``--left-pad-target`` turns the target's on.)"""
    src, tgt = PADDINGS[padding]
    task.cfg.left_pad_source, task.cfg.left_pad_target = src == "left", tgt == "left"
    task.load_dataset("valid")
    ds = task.dataset("valid")
    assert (ds.left_pad_source, ds.left_pad_target) == (src == "left", tgt == "left")
    return ds


def pick(ds):
    """Two short sentences and the two longest of the split, all of different source and target lengths: in their
    batch every row but the longest is padded, each by another amount."""
    order = sorted(range(len(ds)), key=lambda i: (ds.src_sizes[i], ds.tgt_sizes[i], i))
    ids = [order[len(order) // 5], order[len(order) // 3], order[-2], order[-1]]
    assert len({int(ds.src_sizes[i]) for i in ids}) == 4 and len({int(ds.tgt_sizes[i]) for i in ids}) == 4
    return ids


def columns(side: str, width: int, n: int) -> slice:
    """The columns of a sentence of ``n`` tokens in a row of ``width`` padded on ``side``."""
    return slice(width - n, width) if side == "left" else slice(0, n)


def batches(ds, ids):
    """(the padded batch of ``ids``, {id: (its row there, its batch alone)})."""
    mixed = ds.collater([ds[i] for i in ids])
    rows = mixed["id"].tolist()
    return mixed, {i: (rows.index(i), ds.collater([ds[i]])) for i in ids}


@pytest.mark.parametrize("padding", list(PADDINGS))
def test_features_padded_like_tokens(built, padding):
    """Every syntax feature (all of ``FEATURES`` requested at once), collated: each sentence's values sit in the
    columns of its tokens (source and target padded as ``padding`` says), token positions shifted by the sentence's
    left padding, the feature's pad value elsewhere; the tokens themselves too."""
    from syntrans.data.features import FEATURES, FeatureNeeds
    from syntrans.data.syntax_dataset import SyntaxPairDataset

    task, _ = built("transformer")
    base = padded(task, padding)
    ds = SyntaxPairDataset(base.dataset, base.src_side, base.tgt_side, FeatureNeeds(required=set(FEATURES)))
    items = {i: ds[i] for i in pick(ds)}
    mixed = ds.collater(list(items.values()))
    pad = task.source_dictionary.pad()
    for row, i in enumerate(mixed["id"].tolist()):
        item = items[i]
        for name, f in FEATURES.items():
            tokens, where = ((item["source"], PADDINGS[padding][0]) if f.side == "source"
                             else (item["target"], PADDINGS[padding][1]))
            ref = mixed["net_input"]["src_tokens"] if f.side == "source" else mixed["target"]
            width, n = ref.size(1), len(tokens)
            cols = columns(where, width, n)
            expected_tokens = torch.full((width,), pad, dtype=ref.dtype)
            expected_tokens[cols] = tokens
            assert torch.equal(ref[row], expected_tokens), (name, padding)
            values = item[name]
            if f.positions and where == "left":
                values = torch.where(values >= 0, values + (width - n), values)
            row_values = torch.full((width,), f.pad, dtype=values.dtype)
            row_values[cols] = values
            torch.testing.assert_close(mixed["net_input"][name][row], f.finish(row_values.unsqueeze(0))[0],
                                       rtol=0, atol=0, msg=f"{name}, sentence {i}, {padding}")


@pytest.mark.parametrize("padding", SOURCE_PADDINGS)
@pytest.mark.parametrize("key", list(ARCHS))
def test_encoder_output_batch_invariant(built, key, padding):
    task, model = built(key)
    ds = padded(task, padding)
    side = PADDINGS[padding][0]
    mixed, alone = batches(ds, pick(ds))
    src = mixed["net_input"]["src_tokens"]
    pad = task.source_dictionary.pad()
    assert len({int(src[r].eq(pad).sum()) for r, _ in alone.values()}) == 4  # every row padded by another amount
    with torch.no_grad():
        enc_mixed = model.encoder.forward_torchscript(mixed["net_input"])["encoder_out"][0]  # (T', B, C)
        for i, (row, one) in alone.items():
            T = one["net_input"]["src_tokens"].size(1)
            cols = columns(side, src.size(1), T)
            assert torch.equal(src[row, cols], one["net_input"]["src_tokens"][0])
            enc_alone = model.encoder.forward_torchscript(one["net_input"])["encoder_out"][0]  # (T, 1, C)
            torch.testing.assert_close(enc_mixed[cols, row], enc_alone[:, 0], atol=1e-5, rtol=1e-5,
                                       msg=lambda m: f"sentence {i} (source padded {side}): {m}")


@pytest.mark.parametrize("key,padding", [(k, p) for k in ARCHS for p in SOURCE_PADDINGS] + [
    (k, "tgt_left") for k in ARCHS])  # a left-padded target: a padding query's row fully masked in the decoder
def test_teacher_forced_output_batch_invariant(built, key, padding):
    """A full teacher-forced forward (decoder DBSA heads on their explicit path, every auxiliary loss computed):
    each sentence's log-probabilities over its real target positions are the same alone and in the batch, its source
    and target padded as ``padding`` says."""
    task, model = built(key)
    ds = padded(task, padding)
    mixed, alone = batches(ds, pick(ds))
    pad = task.target_dictionary.pad()
    with torch.no_grad():
        lp_mixed = model.get_normalized_probs(model(**mixed["net_input"]), log_probs=True)  # (B, J', V)
        for i, (row, one) in alone.items():
            J = one["target"].size(1)
            cols = columns(PADDINGS[padding][1], mixed["target"].size(1), J)
            assert torch.equal(mixed["target"][row, cols], one["target"][0])
            assert int(mixed["target"][row].eq(pad).sum()) == mixed["target"].size(1) - J
            lp_alone = model.get_normalized_probs(model(**one["net_input"]), log_probs=True)  # (1, J, V)
            torch.testing.assert_close(lp_mixed[row, cols], lp_alone[0], atol=1e-5, rtol=1e-5,
                                       msg=lambda m: f"sentence {i} ({padding}): {m}")


@pytest.mark.parametrize("padding", SOURCE_PADDINGS)
@pytest.mark.parametrize("key", list(ARCHS))
def test_hypothesis_batch_invariant(built, key, padding):
    """Beam search (beam 4): each sentence's best hypothesis alone and in the padded batch has the same tokens and a
    score within 1e-4."""
    task, model = built(key)
    ds = padded(task, padding)
    mixed, alone = batches(ds, pick(ds))
    gen = SequenceGenerator([model], task.target_dictionary, beam_size=4, max_len_b=30)
    with torch.no_grad():
        hyps_mixed = gen.generate([model], mixed)
        for i, (row, one) in alone.items():
            a, m = gen.generate([model], one)[0][0], hyps_mixed[row][0]
            assert torch.equal(a["tokens"], m["tokens"]), (i, padding, a["tokens"].tolist(), m["tokens"].tolist())
            assert abs(float(a["score"]) - float(m["score"])) < 1e-4, (i, padding, float(a["score"]), float(m["score"]))


def aux_sums(model, sample, backend: str):
    """{name:part: value} of a teacher-forced forward's auxiliary losses (``loss``: the sum, ``n``: its count) and
    metrics (``value``: the sum, ``metric_n``: its count), as syntax_label_smoothed_cross_entropy reads them."""
    with torch.no_grad():
        extra = model(**sample["net_input"], syntax_backend=backend)[1]
    out = {f"{n}:loss": float(v["loss"]) for n, v in extra.get("aux_losses", {}).items()}
    out.update({f"{n}:n": float(v["ntokens"]) for n, v in extra.get("aux_losses", {}).items()})
    out.update({f"{n}:value": float(v["value"]) for n, v in extra.get("aux_metrics", {}).items()})
    out.update({f"{n}:metric_n": float(v["ntokens"]) for n, v in extra.get("aux_metrics", {}).items()})
    return out


@pytest.mark.parametrize("key,mode,backend,padding", AUX_CASES)
def test_aux_losses_add_up_over_sentences(built, key, mode, backend, padding):
    """Every auxiliary loss (its sum and its count) and metric (its sum and its count: the UAS hits ×100, the
    clipped NSD values ×100, the gate values G summed over sentences with the sentences as count) of a padded batch
    is the sum of those of its sentences alone: padding adds nothing to them and takes nothing away. The gates in
    eval mode only (module docstring); dropout is 0."""
    task, model = built(key)
    ds = padded(task, padding)
    ids = pick(ds)
    model.train(mode == "train")
    try:
        mixed = aux_sums(model, ds.collater([ds[i] for i in ids]), backend)
        alone = [aux_sums(model, ds.collater([ds[i]]), backend) for i in ids]
    finally:
        model.eval()
    assert {k.split(":")[0] for k in mixed} == AUX[key]
    for name, value in mixed.items():
        parts = [a[name] for a in alone]
        if name.endswith((":n", ":metric_n")):  # counts: exactly
            assert value == sum(parts), (name, value, parts)
        else:
            assert value == pytest.approx(sum(parts), rel=1e-5, abs=1e-4), (name, value, parts)
    for name in mixed:
        if name.endswith(":n"):  # every sentence takes part in every loss
            assert all(a[name] > 0 for a in alone), (name, [a[name] for a in alone])
        if name.startswith("gate_") and name.endswith(":metric_n"):  # a gate value per sentence
            assert mixed[name] == len(ids)


@pytest.mark.parametrize("heads", [1, 2])
@pytest.mark.parametrize("side,causal", [("left", False), ("right", False), ("left", True)])
def test_fused_parent_loss_adds_up_over_sentences(side, causal, heads):
    """The LISA/DBSA parent loss from a fused kernel's log-sum-exp (``parent_loss_from_lse``: flex attention, CUDA
    training): the loss, count and hits of a padded batch are the sums of its sentences' alone, with the padding keys
    made to score highest, so that a hit taken over them would differ (checked here: without the padding mask some
    real query's best key is a padding one). Right padding under the causal mask is left out: there every padding
    key follows every real query, so the causal mask hides it anyway."""
    from syntrans.mechanisms.base import parent_loss_from_lse

    g = torch.Generator().manual_seed(0)
    d, T, lengths, scale = 8, 7, (7, 4, 2), 8 ** -0.5
    B = len(lengths)
    q, k = torch.randn(B, heads, T, d, generator=g), torch.randn(B, heads, T, d, generator=g)
    pad = torch.ones(B, T, dtype=torch.bool)
    parents = torch.full((B, T), -1)
    alone = []
    for b, n in enumerate(lengths):
        cols = columns(side, T, n)
        pad[b, cols] = False
        own = torch.randint(0, n, (n,), generator=g)  # parents within the sentence, the last token (EOS) has none
        own = torch.minimum(own, torch.arange(n)) if causal else own
        own[-1] = -1
        parents[b, cols] = torch.where(own >= 0, own + cols.start, own)
        alone.append((cols, own))
    k = torch.where(pad[:, None, :, None], 100 * q.mean(dim=2, keepdim=True), k)  # padding keys score highest

    def scores(q, k, pad):
        s = (q @ k.transpose(-1, -2)) * scale
        if pad is not None:
            s = s.masked_fill(pad[:, None, None, :], float("-inf"))
        if causal:
            s = s.masked_fill(torch.ones(s.size(-2), s.size(-1), dtype=torch.bool).triu(1), float("-inf"))
        return s

    def stats(q, k, pad, parents):
        lse = torch.logsumexp(scores(q, k, pad), dim=-1)  # (B, n, T) what the kernel returns (−inf: no key at all)
        return [float(x) for x in parent_loss_from_lse(q, k, lse, scale, parents, pad, causal)]

    unmasked_best = scores(q, k, None).mean(dim=1).argmax(-1)  # (B, T) without the padding mask
    assert bool((pad.gather(1, unmasked_best) & (parents >= 0)).any())  # padding keys would win somewhere
    loss, count, hits = stats(q, k, pad, parents)
    parts = [stats(q[b:b + 1, :, cols], k[b:b + 1, :, cols], None, own.unsqueeze(0))
             for b, (cols, own) in enumerate(alone)]
    assert loss == pytest.approx(sum(p[0] for p in parts), rel=1e-5, abs=1e-4)
    assert (count, hits) == (sum(p[1] for p in parts), sum(p[2] for p in parts))
    assert count == sum(n - 1 for n in lengths)


def test_distance_model_reads_gaps(built):
    """The distance heads use the batch's gaps: other gaps give another encoder output."""
    task, model = built("distance")
    ds = padded(task, "src_left")
    sample = ds.collater([ds[i] for i in range(4)])
    net = dict(sample["net_input"])
    with torch.no_grad():
        a = model.encoder.forward_torchscript(net)["encoder_out"][0]
        net["src_gaps"] = torch.flip(net["src_gaps"], dims=[1])
        b = model.encoder.forward_torchscript(net)["encoder_out"][0]
    assert not torch.allclose(a, b)


@pytest.mark.parametrize("key,feature", [("pascal", "src_parent_middle"), ("lisa_gold", "src_parent_first")])
def test_parent_models_read_parents(built, key, feature):
    """PASCAL and LISA (with its oracle) use the batch's parents: other parents give another encoder output."""
    task, model = built(key)
    ds = padded(task, "src_left")
    sample = ds.collater([ds[i] for i in range(4)])
    net = dict(sample["net_input"])
    with torch.no_grad():
        a = model.encoder.forward_torchscript(net)["encoder_out"][0]
        real = net[feature] >= 0
        last_word = torch.full_like(net[feature], net["src_tokens"].size(1) - 2)  # every parent → the token before EOS
        net[feature] = torch.where(real, last_word, net[feature])
        b = model.encoder.forward_torchscript(net)["encoder_out"][0]
    assert not torch.allclose(a, b)


def test_missing_gaps_is_a_clear_error(built):
    task, model = built("distance")
    ds = padded(task, "src_left")
    sample = ds.collater([ds[0]])
    net = {k: v for k, v in sample["net_input"].items() if k != "src_gaps"}
    with pytest.raises(ValueError, match="src_gaps"):
        model.encoder.forward_torchscript(net)


def test_only_chosen_layers_and_heads_are_biased(tiny_data):
    """--distance-layers 1 --distance-heads 3: layer 0 is fairseq's stock attention; in layer 1 heads 0-2 attend with
    softmax(QKᵀ/√d + log M) and head 3 with the stock softmax (both recomputed here from the layer's input)."""
    import torch.nn.functional as F
    from fairseq.modules import MultiheadAttention

    from syntrans.mechanisms.distance import distance_log_mask

    task, model, ds = setup(tiny_data, "distance_transformer_iwslt_de_en", ("--distance-layers", "1", "--distance-heads", "3"))
    sample = ds.collater([ds[i] for i in range(3)])
    layers = model.encoder.layers
    assert type(layers[0].self_attn) is MultiheadAttention and layers[1].self_attn.block_keys == ("distance",)
    seen = {}
    hook = layers[1].self_attn.register_forward_pre_hook(lambda m, args, kw: seen.update(x=kw["query"]),
                                                         with_kwargs=True)
    try:
        with torch.no_grad():
            out = model.encoder(**{k: v for k, v in sample["net_input"].items() if k != "prev_output_tokens"},
                                keep=("probs",))
    finally:
        hook.remove()
    reports = out["syntax"].layers
    assert sorted(reports) == [1]  # layer 0 reports nothing: it has no syntax heads
    probs = reports[1].probs  # (B, 4, T, T)
    attn, x = layers[1].self_attn, seen["x"]
    B, T = sample["net_input"]["src_tokens"].shape
    q = (attn.q_proj(x) * attn.scaling).view(T, B, 4, -1).permute(1, 2, 0, 3)
    k = attn.k_proj(x).view(T, B, 4, -1).permute(1, 2, 0, 3)
    pad = sample["net_input"]["src_tokens"].eq(task.source_dictionary.pad())
    log_m = distance_log_mask(sample["net_input"]["src_gaps"], pad, 10.0, torch.float32)
    scores = (q @ k.transpose(-1, -2)).masked_fill(pad[:, None, None, :], float("-inf"))
    torch.testing.assert_close(probs[:, 3], F.softmax(scores[:, 3], -1), rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(probs[:, :3], F.softmax(scores[:, :3] + log_m.unsqueeze(1), -1), rtol=1e-5, atol=1e-6)
    assert not torch.allclose(probs[:, :3], F.softmax(scores[:, :3], -1), atol=1e-3)  # the bias did something


@pytest.mark.parametrize("key", list(DECODER_DBSA_ARCHS))
def test_generation_scores_match_teacher_forcing(built, key):
    """Beam search runs the decoder's DBSA heads incrementally on fairseq's own path (U inside q_proj), the
    teacher-forced forward on the explicit one: the best hypothesis's positional scores are the same."""
    task, model = built(key)
    ds = padded(task, "src_left")
    gen = SequenceGenerator([model], task.target_dictionary, beam_size=4, max_len_b=30)
    sample = ds.collater([ds[i] for i in pick(ds)])
    with torch.no_grad():
        hypos = gen.generate([model], sample)
    eos = task.target_dictionary.eos()
    for b in range(len(hypos)):
        best = hypos[b][0]
        tokens = best["tokens"].unsqueeze(0)  # (1, n), ends in EOS
        prev = torch.cat([tokens.new_full((1, 1), eos), tokens[:, :-1]], dim=1)
        net = {k: v[b:b + 1] for k, v in sample["net_input"].items() if k not in ("prev_output_tokens", "tgt_parent_chain")}
        with torch.no_grad():
            lp = model.get_normalized_probs(model(prev_output_tokens=prev, **net), log_probs=True)  # (1, n, V)
        forced = lp[0].gather(-1, tokens[0].unsqueeze(-1)).squeeze(-1)  # (n,)
        torch.testing.assert_close(forced, best["positional_scores"], atol=1e-4, rtol=1e-4)


def test_dbsa_parents_feed_only_the_loss(tiny_data):
    """DBSA's parents enter the parent loss only: other parents leave the encoder output unchanged and move the loss;
    none leave it unchanged but for the last float digits (without a loss the heads run in the fused kernel); its U
    enters the attention: the identity U gives another encoder output."""
    task, model, ds = setup(tiny_data, "dbsa_transformer_wmt_en_de", ())
    sample = ds.collater([ds[i] for i in range(4)])
    net = dict(sample["net_input"])
    with torch.no_grad():
        a = model.encoder.forward_torchscript(net)
        real = net["src_parent_chain"] >= 0
        last_word = torch.full_like(net["src_parent_chain"], net["src_tokens"].size(1) - 2)
        b = model.encoder.forward_torchscript({**net, "src_parent_chain": torch.where(real, last_word, net["src_parent_chain"])})
        c = model.encoder.forward_torchscript({k: v for k, v in net.items() if k != "src_parent_chain"})
        model.encoder.layers[0].self_attn.q_proj.U.copy_(torch.eye(32 // 4).unsqueeze(0))
        d = model.encoder.forward_torchscript(net)
    assert torch.equal(a["encoder_out"][0], b["encoder_out"][0])
    torch.testing.assert_close(a["encoder_out"][0], c["encoder_out"][0], rtol=1e-5, atol=1e-6)
    loss_a, loss_b = (float(x["syntax"].aux["aux_losses"]["dbsa_src"]["loss"]) for x in (a, b))
    assert loss_a != loss_b
    assert "aux_losses" not in c["syntax"].aux  # no parents: no loss, no UAS
    assert not torch.allclose(a["encoder_out"][0], d["encoder_out"][0])
