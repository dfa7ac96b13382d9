"""What docs/python-api.md promises of a model's forward: the layers' reports in ``extra["syntax"]`` (a
``SyntaxOutput``: each side's ``SideOutput``) per side and layer, ``keep=("probs",)`` and ``keep=("parse",)``
adding every head's probabilities and a parse block's predicted
parents, nothing kept unasked, and ``syntax_backend="explicit"`` (every head's scores formed) giving the same output
as the kernels the attention picks."""
import torch
from helpers import build_task_and_model, first_batch

from syntrans.modules.layer_report import SyntaxOutput


def dbsa_model(tiny_data):
    """DBSA head 0 of encoder and decoder layer 0 (4 heads in all), evaluation mode, and a valid batch of 5."""
    task, model = build_task_and_model(tiny_data, "dbsa_transformer_wmt_en_de")
    model.eval()
    return task, model, first_batch(task, "valid", 5)


def test_keep_probs_and_parse_come_back_per_side_and_layer(tiny_data):
    task, model, sample = dbsa_model(tiny_data)
    net = sample["net_input"]
    B, S = net["src_tokens"].shape
    T = net["prev_output_tokens"].size(1)
    H = model.encoder.layers[0].self_attn.num_heads
    with torch.no_grad():
        _, plain = model(**net)
        _, kept = model(**net, keep=("probs", "parse"))
    assert isinstance(plain["syntax"], SyntaxOutput)
    assert all(r.probs is None and not r.parse for side in ("encoder", "decoder")
               for r in plain["syntax"].side(side).layers.values())
    enc, dec = kept["syntax"].encoder.layers[0], kept["syntax"].decoder.layers[0]
    assert enc.probs.shape == (B, H, S, S) and enc.probs.dtype == torch.float32
    assert dec.probs.shape == (B, H, T, T)
    real = ~net["src_tokens"].eq(task.source_dictionary.pad())  # (B, S) the rows of real source tokens
    torch.testing.assert_close(enc.probs.sum(-1)[real.unsqueeze(1).expand(B, H, S)],
                               torch.ones(int(real.sum()) * H))
    # the parse: each query row's argmax over the DBSA head's (head 0's) attention, decoder side as well
    assert torch.equal(enc.parse["dbsa"], enc.probs[:, :1].mean(1).argmax(-1))
    assert dec.parse["dbsa"].shape == (B, T)
    assert torch.equal(dec.parse["dbsa"], dec.probs[:, :1].mean(1).argmax(-1))
    assert bool((dec.parse["dbsa"] <= torch.arange(T)).all())  # causal: no later parent


def test_encoder_alone_keeps_its_layers_reports(tiny_data):
    _, model, sample = dbsa_model(tiny_data)
    net = {k: v for k, v in sample["net_input"].items() if k != "prev_output_tokens"}
    with torch.no_grad():
        out = model.encoder(**net, keep=("probs",))
        _, extra = model(**sample["net_input"], keep=("probs",))
    torch.testing.assert_close(out["syntax"].layers[0].probs, extra["syntax"].encoder.layers[0].probs)


def test_explicit_backend_gives_the_same_output(tiny_data):
    _, model, sample = dbsa_model(tiny_data)
    with torch.no_grad():
        auto, _ = model(**sample["net_input"])
        explicit, _ = model(**sample["net_input"], syntax_backend="explicit")
    torch.testing.assert_close(explicit, auto, rtol=1e-5, atol=1e-5)
    assert not torch.equal(explicit, torch.zeros_like(explicit))


def test_record_attention_sees_module_forwards_not_generator_decoder_steps(tiny_data):
    """docs/python-api.md: record_attention sees the forwards that go through the modules (the model's, the
    encoder's, its forward_torchscript too), not fairseq's generator's decoder steps (decoder.forward called
    directly)."""
    from fairseq.sequence_generator import SequenceGenerator

    from syntrans.modules.attention_record import record_attention

    task, model, sample = dbsa_model(tiny_data)
    with torch.no_grad():
        with record_attention(model) as probs:
            model.encoder.forward_torchscript(sample["net_input"])
        assert sorted(probs) == [("encoder", 0)]
        gen = SequenceGenerator([model], task.target_dictionary, beam_size=2, max_len_b=5)
        with record_attention(model) as probs:
            hypos = gen.generate([model], sample)
        assert len(hypos) == sample["net_input"]["src_tokens"].size(0)
        assert sorted(probs) == [("encoder", 0)]  # the encoder ran as a module; the decoder steps were not seen
        with record_attention(model) as probs:
            model(**sample["net_input"])
        assert sorted(probs) == [("decoder", 0), ("encoder", 0)]
