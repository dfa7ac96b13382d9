"""A sentence's encoder output and beam-search hypothesis do not depend on the rest of its batch
(left-padded source, longer neighbours), for the vanilla model and every source-syntax method."""
import pytest
import torch
from conftest import build_task_and_model
from fairseq.sequence_generator import SequenceGenerator

ARCHS = [("transformer", ()), ("distance_transformer_iwslt_de_en", ("--distance-heads", "2")),
         ("distance_transformer_iwslt_de_en", ("--distance-heads", "4", "--distance-hard")),
         ("pascal_transformer_iwslt_de_en", ()), ("pascal_transformer_iwslt_de_en", ("--pascal-heads", "3")),
         ("lisa_transformer_iwslt_de_en", ()), ("lisa_transformer_iwslt_de_en", ("--lisa-gold-parents",)),
         # distance heads 0-1, PASCAL head 2, LISA head 3 of layer 0; LISA head 0 of layer 1
         ("distance_transformer_iwslt_de_en", ("--distance-heads", "2", "--pascal-layers", "0", "--pascal-heads", "1",
                                               "--lisa-layers", "0,1")),
         ("gated_distance_transformer_iwslt_de_en", ("--gate-warmup-epochs", "0")),
         # a gate mixing PASCAL attention (heads 0-1 of layer 0) with stock attention
         ("pascal_transformer_iwslt_de_en", ("--gate-layers", "0"))]
HYP_ARCHS = [a for a in ARCHS if "--distance-hard" not in a[1] and "--pascal-heads" not in a[1]]


def setup(data, arch, extra):
    task, model = build_task_and_model(data, arch, *extra)
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
    task, model, ds = setup(tiny_data, "distance_transformer_iwslt_de_en", ("--distance-layers", "1", "--distance-heads", "3"))
    sample = ds.collater([ds[i] for i in range(3)])
    with torch.no_grad():
        model.encoder.forward_torchscript(sample["net_input"])
    layers = model.encoder.layers
    assert layers[0].self_attn.syntax_bias is None
    bias = layers[1].self_attn.syntax_bias
    B, T = sample["net_input"]["src_tokens"].shape
    assert bias.shape == (B * 4, T, T)
    per_head = bias.view(B, 4, T, T)
    assert torch.all(per_head[:, 3] == 0) and bool((per_head[:, :3] != 0).any())
