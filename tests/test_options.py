"""One source of every syntax option: the declared defaults, presets setting fields, flags winning, validation."""
import argparse

import pytest
from helpers import build_task_and_model

from syntrans.models.options import NsdOptions, SyntaxOptions, fill_syntax_defaults, set_fields


@pytest.mark.fast
def test_missing_or_none_values_take_the_declared_defaults():
    declared = SyntaxOptions()
    args = argparse.Namespace(distance_layers="0", distance_heads=3, nsd_src_min=None, gate_hidden=None)
    opts = SyntaxOptions.from_args(args)
    assert opts.distance_layers == "0" and opts.distance_heads == 3
    assert opts.gate_hidden == declared.gate_hidden and opts.nsd_src_min is None
    assert {n: getattr(opts, n) for n in SyntaxOptions.names() if n not in ("distance_layers", "distance_heads")} == \
        {n: getattr(declared, n) for n in SyntaxOptions.names() if n not in ("distance_layers", "distance_heads")}


@pytest.mark.fast
def test_presets_set_only_what_is_not_given():
    args = argparse.Namespace(distance_heads=1)
    set_fields(args, distance_layers="0", distance_heads=4)
    fill_syntax_defaults(args)
    assert args.distance_layers == "0" and args.distance_heads == 1  # the flag wins over the preset
    assert args.nsd_dist_weight == NsdOptions().nsd_dist_weight  # the rest: the declared defaults


@pytest.mark.fast
@pytest.mark.parametrize("values, flag", [({"pascal_ignore": 1.5}, "--pascal-ignore"),
                                          ({"gate_syntax_dropout": 1.0}, "--gate-syntax-dropout"),
                                          ({"nsd_kind": "dX"}, "--nsd-kind"),
                                          ({"nsd_tgt_input": "sum"}, "--nsd-tgt-input"),
                                          ({"pascal_layers": "0", "pascal_sigma": 0.0}, "--pascal-sigma"),
                                          ({"gate_layers": "0", "gate_mode": "mean"}, "--gate-mode")])
def test_bad_values_are_refused_where_the_object_is_built(values, flag):
    with pytest.raises(ValueError, match=flag):
        SyntaxOptions(**values)


@pytest.mark.fast
def test_layers_and_heads_are_checked_against_the_model():
    with pytest.raises(ValueError, match="--distance-layers"):
        SyntaxOptions(distance_layers="6", distance_heads=1).encoder_layers(6, 4)
    with pytest.raises(ValueError, match="--pascal-heads must lie in 1..4"):
        SyntaxOptions(pascal_layers="0", pascal_heads=5).encoder_layers(2, 4)
    layers = SyntaxOptions(distance_layers="0,1", distance_heads=1, lisa_layers="1", gate_layers="1").encoder_layers(3, 4)
    assert layers[2] is None
    assert (layers[0].plan.distance, layers[0].plan.lisa, layers[0].gate) == (1, 0, None)
    assert (layers[1].plan.distance, layers[1].plan.lisa, layers[1].plan.gated) == (1, 1, True)
    assert layers[1].gate.hidden == SyntaxOptions().gate_hidden


def test_the_model_reads_the_options_object_with_the_declared_defaults(tiny_data):
    """The NSD loss weights used by both sides are the declared ones (no second default in the model code), and a
    flag given with a preset wins in the layers that are built."""
    _, model = build_task_and_model(tiny_data, "nsd_transformer_base", "--nsd-embed-dim", "8")
    declared = NsdOptions()
    assert model.encoder.syntax.nsd_loss_weights == (declared.nsd_ce_weight, declared.nsd_dist_weight)
    assert model.decoder.syntax == model.encoder.syntax  # both read from the same arguments
    _, model = build_task_and_model(tiny_data, "distance_transformer_iwslt_de_en", "--distance-heads", "2")
    assert model.encoder.layers[0].self_attn.plan.distance == 2  # the preset says 4; the flag wins
    assert model.encoder.layers[1].self_attn.plan.active is False
