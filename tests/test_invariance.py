"""A sentence's encoder output and beam-search hypothesis do not depend on the rest of its batch
(left-padded source, longer neighbours), for the vanilla model and every syntax method; with DBSA in the
decoder, neither do its teacher-forced output (right-padded target) and its share of the auxiliary losses."""
import pytest
import torch
from fairseq.sequence_generator import SequenceGenerator
from helpers import build_task_and_model

ARCHS = [("transformer", ()), ("distance_transformer_iwslt_de_en", ("--distance-heads", "2")),
         ("distance_transformer_iwslt_de_en", ("--distance-heads", "4", "--distance-hard")),
         ("pascal_transformer_iwslt_de_en", ()), ("pascal_transformer_iwslt_de_en", ("--pascal-heads", "3")),
         ("lisa_transformer_iwslt_de_en", ()), ("lisa_transformer_iwslt_de_en", ("--lisa-gold-parents",)),
         # distance heads 0-1, PASCAL head 2, LISA head 3 of layer 0; LISA head 0 of layer 1
         ("distance_transformer_iwslt_de_en", ("--distance-heads", "2", "--pascal-layers", "0", "--pascal-heads", "1",
                                               "--lisa-layers", "0,1")),
         ("gated_distance_transformer_iwslt_de_en", ("--gate-warmup-epochs", "0")),
         # a gate mixing PASCAL attention (heads 0-1 of layer 0) with stock attention
         ("pascal_transformer_iwslt_de_en", ("--gate-layers", "0")),
         # DBSA head 0 of encoder layer 0 and of decoder layer 0; SyncAttn adds a training loss only
         ("dbsa_transformer_wmt_en_de", ()), ("syncattn_transformer_wmt_en_de", ()),
         # the DBSA oracle: encoder layer 0's DBSA head attends to the gold parents
         ("dbsa_transformer_wmt_en_de", ("--dbsa-gold-parents",)),
         # LISA head 0 and DBSA head 1 of encoder layer 0; DBSA head 0 of decoder layer 0
         ("lisa_transformer_iwslt_de_en", ("--dbsa-encoder-layers", "0", "--dbsa-decoder-layers", "0")),
         # distance head 0, PASCAL head 1, DBSA heads 2-3 of encoder layer 0; DBSA heads 0-1 of every other layer
         ("dbsa_transformer_wmt_en_de", ("--dbsa-heads", "2", "--dbsa-encoder-layers", "all", "--dbsa-decoder-layers",
                                         "all", "--distance-layers", "0", "--distance-heads", "1", "--pascal-layers",
                                         "0", "--pascal-heads", "1")),
         # NSD: source dD input + PE + output; both sides (target NSD predicted step by step); dS concat input
         ("nsd_src_transformer_base", ("--nsd-embed-dim", "8")), ("nsd_transformer_base", ("--nsd-embed-dim", "8")),
         ("nsd_transformer", ("--nsd-kind", "dS", "--nsd-src-input", "concat", "--nsd-embed-dim", "8"))]
HYP_ARCHS = [a for a in ARCHS if "--distance-hard" not in a[1] and "--pascal-heads" not in a[1]]
DECODER_DBSA_ARCHS = [a for a in ARCHS if a[0].startswith(("dbsa", "syncattn")) or "--dbsa-decoder-layers" in a[1]]


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


def pick(ds):
    """A short sentence and the three longest of the split."""
    sizes = ds.src_sizes
    order = sorted(range(len(sizes)), key=lambda i: sizes[i])
    short = order[len(order) // 4]
    return short, order[-3:]


@pytest.mark.parametrize("arch,extra", ARCHS)
def test_encoder_output_batch_invariant(tiny_data, arch, extra):
    task, model, ds = setup(tiny_data, arch, extra)
    short, longs = pick(ds)
    alone = ds.collater([ds[short]])
    mixed = ds.collater([ds[i] for i in [*longs, short]])
    assert mixed["net_input"]["src_tokens"].size(1) > alone["net_input"]["src_tokens"].size(1)
    row = mixed["id"].tolist().index(short)
    T = alone["net_input"]["src_tokens"].size(1)
    with torch.no_grad():
        enc_alone = model.encoder.forward_torchscript(alone["net_input"])["encoder_out"][0]  # (T, 1, C)
        enc_mixed = model.encoder.forward_torchscript(mixed["net_input"])["encoder_out"][0]  # (T', B, C)
    # left padding: the sentence occupies the last T columns of the mixed batch
    torch.testing.assert_close(enc_mixed[-T:, row], enc_alone[:, 0], atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("arch,extra", HYP_ARCHS)
def test_hypothesis_batch_invariant(tiny_data, arch, extra):
    task, model, ds = setup(tiny_data, arch, extra)
    short, longs = pick(ds)
    gen = SequenceGenerator([model], task.target_dictionary, beam_size=4, max_len_b=30)
    hyps = {}
    for name, ids in (("alone", [short]), ("mixed", [*longs, short])):
        sample = ds.collater([ds[i] for i in ids])
        with torch.no_grad():
            out = gen.generate([model], sample)
        hyps[name] = out[sample["id"].tolist().index(short)][0]
    assert torch.equal(hyps["alone"]["tokens"], hyps["mixed"]["tokens"])
    assert abs(float(hyps["alone"]["score"]) - float(hyps["mixed"]["score"])) < 1e-4


def test_distance_model_reads_gaps(tiny_data):
    """The distance heads use the batch's gaps: other gaps give another encoder output."""
    task, model, ds = setup(tiny_data, "distance_transformer_iwslt_de_en", ("--distance-heads", "2"))
    sample = ds.collater([ds[i] for i in range(4)])
    net = dict(sample["net_input"])
    with torch.no_grad():
        a = model.encoder.forward_torchscript(net)["encoder_out"][0]
        net["src_gaps"] = torch.flip(net["src_gaps"], dims=[1])
        b = model.encoder.forward_torchscript(net)["encoder_out"][0]
    assert not torch.allclose(a, b)


@pytest.mark.parametrize("arch,feature", [("pascal_transformer_iwslt_de_en", "src_parent_middle"),
                                          ("lisa_transformer_iwslt_de_en", "src_parent_first")])
def test_parent_models_read_parents(tiny_data, arch, feature):
    """PASCAL and LISA (with its oracle) use the batch's parents: other parents give another encoder output."""
    task, model, ds = setup(tiny_data, arch, ("--lisa-gold-parents",) if "lisa" in arch else ())
    sample = ds.collater([ds[i] for i in range(4)])
    net = dict(sample["net_input"])
    with torch.no_grad():
        a = model.encoder.forward_torchscript(net)["encoder_out"][0]
        real = net[feature] >= 0
        last_word = torch.full_like(net[feature], net["src_tokens"].size(1) - 2)  # every parent → the token before EOS
        net[feature] = torch.where(real, last_word, net[feature])
        b = model.encoder.forward_torchscript(net)["encoder_out"][0]
    assert not torch.allclose(a, b)


def test_missing_gaps_is_a_clear_error(tiny_data):
    task, model, ds = setup(tiny_data, "distance_transformer_iwslt_de_en", ("--distance-heads", "2"))
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
    reports = out["syntax"]["layers"]
    assert sorted(reports) == [1]  # layer 0 reports nothing: it has no syntax heads
    probs = reports[1]["probs"]  # (B, 4, T, T)
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


@pytest.mark.parametrize("arch,extra", DECODER_DBSA_ARCHS)
def test_teacher_forced_output_batch_invariant(tiny_data, arch, extra):
    """A full teacher-forced forward (decoder DBSA heads on their explicit path, SyncAttn's loss computed):
    the short sentence's log-probabilities over its real target positions are the same alone and in a batch
    where its target is right-padded."""
    task, model, ds = setup(tiny_data, arch, extra)
    short, longs = pick(ds)
    alone = ds.collater([ds[short]])
    mixed = ds.collater([ds[i] for i in [*longs, short]])
    assert "tgt_parent_chain" in mixed["net_input"] and "src_parent_chain" in mixed["net_input"]
    row = mixed["id"].tolist().index(short)
    J = alone["target"].size(1)
    pad = task.target_dictionary.pad()
    assert mixed["target"].size(1) > J and bool(mixed["target"][row, J:].eq(pad).all())  # right-padded
    assert not bool(mixed["target"][row, :J].eq(pad).any())
    with torch.no_grad():
        out_alone = model(**alone["net_input"])
        out_mixed = model(**mixed["net_input"])
        lp_alone = model.get_normalized_probs(out_alone, log_probs=True)  # (1, J, V)
        lp_mixed = model.get_normalized_probs(out_mixed, log_probs=True)  # (B, J', V)
    torch.testing.assert_close(lp_mixed[row, :J], lp_alone[0], atol=1e-5, rtol=1e-5)
    losses = set(out_mixed[1]["aux_losses"])
    assert {"dbsa_src", "dbsa_tgt"} <= losses
    assert ("sync" in losses) == any(m.key == "sync" for m in model.plan.active), losses


@pytest.mark.parametrize("arch,extra", [a for a in DECODER_DBSA_ARCHS if a[0] == "syncattn_transformer_wmt_en_de"])
def test_aux_losses_add_up_over_sentences(tiny_data, arch, extra):
    """The DBSA and SyncAttn losses (sums) and their counts, and the UAS hits, of a padded batch are the sums
    of those of its sentences alone: padding adds nothing to them and takes nothing away."""
    task, model, ds = setup(tiny_data, arch, extra)
    short, longs = pick(ds)
    ids = [*longs, short]

    def aux(sample):
        with torch.no_grad():
            extra_out = model(**sample["net_input"])[1]
        out = {f"{n}:loss": float(v["loss"]) for n, v in extra_out["aux_losses"].items()}
        out.update({f"{n}:n": float(v["ntokens"]) for n, v in extra_out["aux_losses"].items()})
        out.update({f"{n}:value": float(v["value"]) for n, v in extra_out["aux_metrics"].items()})
        out.update({f"{n}:metric_n": float(v["ntokens"]) for n, v in extra_out["aux_metrics"].items()})
        return out

    mixed = aux(ds.collater([ds[i] for i in ids]))
    alone = [aux(ds.collater([ds[i]])) for i in ids]
    assert {k.split(":")[0] for k in mixed} == {"dbsa_src", "dbsa_tgt", "sync", "dbsa_src_uas", "dbsa_tgt_uas",
                                                "dbsa_tgt_later"}
    for key, value in mixed.items():
        total = sum(a[key] for a in alone)
        assert value == pytest.approx(total, rel=1e-5, abs=1e-4), (key, value, [a[key] for a in alone])
    assert all(a["sync:loss"] > 0 and a["dbsa_tgt:n"] > 0 for a in alone)


@pytest.mark.parametrize("arch,extra", DECODER_DBSA_ARCHS)
def test_generation_scores_match_teacher_forcing(tiny_data, arch, extra):
    """Beam search runs the decoder's DBSA heads incrementally on fairseq's own path (U inside q_proj), the
    teacher-forced forward on the explicit one: the best hypothesis's positional scores are the same."""
    task, model, ds = setup(tiny_data, arch, extra)
    short, longs = pick(ds)
    gen = SequenceGenerator([model], task.target_dictionary, beam_size=4, max_len_b=30)
    sample = ds.collater([ds[i] for i in [*longs, short]])
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
    loss_a, loss_b = (float(x["syntax"]["aux_losses"]["dbsa_src"]["loss"]) for x in (a, b))
    assert loss_a != loss_b
    assert "aux_losses" not in c["syntax"]  # no parents: no loss, no UAS
    assert not torch.allclose(a["encoder_out"][0], d["encoder_out"][0])
