"""One source of every syntax option: the declared defaults, presets setting fields, flags winning, validation."""
import argparse
import dataclasses

import pytest
import torch
from helpers import build_task_and_model, first_batch

from syntrans.mechanisms.dbsa import DbsaConfig
from syntrans.mechanisms.distance import DistanceMaskConfig
from syntrans.mechanisms.gate import GateConfig, SyntaxGate
from syntrans.mechanisms.lisa import LisaConfig
from syntrans.mechanisms.nsd import NsdConfig
from syntrans.mechanisms.pascal import PascalConfig
from syntrans.mechanisms.plan import SyntaxPlan
from syntrans.mechanisms.registry import MECHANISMS
from syntrans.mechanisms.sla import SlaConfig
from syntrans.mechanisms.source_labels import LabelsConfig
from syntrans.mechanisms.sync_attn import SyncAttnConfig
from syntrans.models.config import model_config
from syntrans.models.presets import set_fields
from syntrans.models.syntax_transformer import model_shape
from syntrans.modules.syntax_attention import SyntaxMultiheadAttention

#: each mechanism's config group in the typed config and its declared config dataclass
DECLARED = {"distance": DistanceMaskConfig, "pascal": PascalConfig, "lisa": LisaConfig, "gate": GateConfig,
            "dbsa": DbsaConfig, "sync": SyncAttnConfig, "nsd": NsdConfig, "labels": LabelsConfig, "sla": SlaConfig}


def plan_of(layers=2, heads=4, **flat):
    """The SyntaxPlan of a model with ``layers`` encoder and decoder layers of ``heads`` heads and these flat
    (command-line form) fields."""
    cfg = model_config(argparse.Namespace(encoder_layers=layers, decoder_layers=layers, encoder_attention_heads=heads,
                                           decoder_attention_heads=heads, **flat))
    return SyntaxPlan(cfg, model_shape(cfg))


@pytest.mark.fast
def test_missing_or_none_values_take_the_declared_defaults():
    assert {M.key: M.Config for M in MECHANISMS} == DECLARED  # every mechanism's group is checked below
    args = argparse.Namespace(distance_layers="0", distance_heads=3, nsd_src_min=None, gate_hidden=None)
    cfg = model_config(args)
    assert cfg.distance.layers == [0] and cfg.distance.heads == 3
    assert cfg.gate.hidden == GateConfig().hidden and cfg.nsd.src_min is None
    got = {(key, n): v for key in DECLARED for n, v in dataclasses.asdict(getattr(cfg, key)).items()}
    want = {(key, n): v for key, Config in DECLARED.items() for n, v in dataclasses.asdict(Config()).items()}
    given = {("distance", "layers"), ("distance", "heads")}
    assert got.keys() == want.keys()
    assert {k: v for k, v in got.items() if k not in given} == {k: v for k, v in want.items() if k not in given}
    assert vars(args) == {"distance_layers": "0", "distance_heads": 3, "nsd_src_min": None, "gate_hidden": None}


@pytest.mark.fast
def test_presets_set_only_what_is_not_given():
    args = argparse.Namespace(distance_heads=1)
    set_fields(args, distance_layers="0", distance_heads=4)
    assert args.distance_layers == "0" and args.distance_heads == 1  # the flag wins over the preset
    cfg = model_config(args)
    assert cfg.distance.layers == [0] and cfg.distance.heads == 1
    assert cfg.nsd.dist_weight == NsdConfig().dist_weight  # the rest: the declared defaults
    nested = argparse.Namespace(distance={"heads": 2})  # a field given in its group's nested form is given too:
    set_fields(nested, distance_layers="0", distance_heads=4)  # the nested value wins over the preset's flat one
    assert (model_config(nested).distance.layers, model_config(nested).distance.heads) == ([0], 2)


@pytest.mark.fast
@pytest.mark.parametrize("flat, want", [("0,2", [0, 2]), ("2", [2]), ("[0, 1]", [0, 1]), ("all", [0, 1, 2]), ("", []),
                                        ("-1", [-1])])
def test_flat_layer_strings_become_lists_of_ints(flat, want):
    cfg = model_config(argparse.Namespace(encoder_layers=3, decoder_layers=2, distance_layers=flat))
    assert cfg.distance.layers == want and all(type(x) is int for x in cfg.distance.layers)


@pytest.mark.fast
def test_negative_layer_numbers_count_from_the_last_layer():
    """docs/methods.md: negative layer numbers count from the last layer; beyond either end is refused by flag."""
    from syntrans.mechanisms.layer_lists import resolve_layers

    assert resolve_layers([-1], 6, "--lisa-layers") == [5]
    assert resolve_layers([0, -1], 6, "--lisa-layers") == [0, 5]
    with pytest.raises(ValueError, match=r"--lisa-layers: layer 0 is named twice in \[-6, 0\]"):
        resolve_layers([-6, 0], 6, "--lisa-layers")
    cfg = model_config(argparse.Namespace(encoder_layers=3, decoder_layers=2, dbsa_decoder_layers="-1"))
    assert cfg.dbsa.decoder_layers == [-1]  # kept as given in the config; resolved against the side's own depth
    for bad in ([-7], [6]):
        with pytest.raises(ValueError, match=r"--lisa-layers: layers must lie in 0\.\.5 .* found -?\d"):
            resolve_layers(bad, 6, "--lisa-layers")


@pytest.mark.fast
def test_all_means_every_layer_of_its_own_side():
    cfg = model_config(argparse.Namespace(encoder_layers=3, decoder_layers=2, dbsa_encoder_layers="all",
                                           dbsa_decoder_layers="all", gate_layers="all"))
    assert cfg.dbsa.encoder_layers == [0, 1, 2] and cfg.dbsa.decoder_layers == [0, 1]
    assert cfg.gate.layers == [0, 1, 2]


@pytest.mark.fast
@pytest.mark.parametrize("values, flag", [({"pascal_ignore": 1.5}, "--pascal-ignore"),
                                          ({"gate_syntax_dropout": 1.0}, "--gate-syntax-dropout"),
                                          ({"nsd_kind": "dX"}, "--nsd-kind"),
                                          ({"nsd_tgt_input": "sum"}, "--nsd-tgt-input"),
                                          ({"pascal_layers": "0", "pascal_heads": 1, "pascal_sigma": 0.0},
                                           "--pascal-sigma"),
                                          ({"gate_layers": "0", "gate_mode": "mean"}, "--gate-mode"),
                                          ({"distance_tau": -5.0}, "--distance-tau"), ({"distance_tau": 0.0}, "--distance-tau"),
                                          ({"lisa_weight": -5.0}, "--lisa-weight"), ({"dbsa_weight": -1.0}, "--dbsa-weight"),
                                          ({"sync_weight": -0.5}, "--sync-weight"), ({"nsd_ce_weight": -3.0}, "--nsd-ce-weight"),
                                          ({"gate_hidden": 0}, "--gate-hidden"),
                                          ({"gate_warmup_epochs": -1}, "--gate-warmup-epochs"),
                                          ({"nsd_spe_lambda": 0.0}, "--nsd-spe-lambda"),
                                          ({"distance_layers": "0,0", "distance_heads": 1},
                                           "--distance-layers: layer 0 is named twice"),
                                          ({"lisa_layers": "5,-1"}, "--lisa-layers: layer 5 is named twice")])
def test_bad_values_are_refused_where_the_object_is_built(values, flag):
    cfg = model_config(argparse.Namespace(**values))  # read as given ...
    with pytest.raises(ValueError, match=flag):  # ... and refused when the model's mechanisms are built
        SyntaxPlan(cfg, model_shape(cfg))


@pytest.mark.fast
def test_bad_layer_strings_are_refused_naming_the_flag():
    """A layer list that is no list of layer numbers, in a flat config (a checkpoint's, a preset's view of a YAML
    config): refused naming its flag, as a layer out of range is."""
    with pytest.raises(ValueError, match="--distance-layers"):
        plan_of(distance_layers="0;1", distance_heads=1)
    with pytest.raises(ValueError, match="--dbsa-decoder-layers"):
        plan_of(dbsa_decoder_layers="first")


@pytest.mark.fast
def test_layers_and_heads_are_checked_against_the_model():
    with pytest.raises(ValueError, match="--distance-layers"):
        plan_of(6, 4, distance_layers="6", distance_heads=1)
    with pytest.raises(ValueError, match="--pascal-heads must lie in 1..4"):
        plan_of(2, 4, pascal_layers="0", pascal_heads=5)
    plan = plan_of(3, 4, distance_layers="0,1", distance_heads=1, lisa_layers="1", gate_layers="1")
    C, H = 16, 4
    encoder = plan.sides["encoder"]
    assert plan.block_keys("encoder", 2) == () and encoder.layer(2).mixer(C, H) is None
    layer0 = {m.key: n for m, n in plan.heads["encoder", 0]}
    layer1 = {m.key: n for m, n in plan.heads["encoder", 1]}
    assert (layer0.get("distance", 0), layer0.get("lisa", 0), encoder.layer(0).mixer(C, H)) == (1, 0, None)
    assert plan.block_keys("encoder", 1) == ("distance", "lisa") and (layer1["distance"], layer1["lisa"]) == (1, 1)
    gate = encoder.layer(1).mixer(C, H)
    assert isinstance(gate, SyntaxGate) and gate.fc1.out_features == GateConfig().hidden
    attn = SyntaxMultiheadAttention(C, H, self_attention=True, blocks=encoder.layer(1).blocks(C // H), mixer=gate)
    assert attn.syntax_heads == 2 and attn.block_keys == ("distance", "lisa") and attn.mixer is gate


def test_the_model_reads_the_options_object_with_the_declared_defaults(tiny_data):
    """The NSD loss weights used by both sides are the declared ones (no second default in the model code), and a
    flag given with a preset wins in the layers that are built."""
    task, model = build_task_and_model(tiny_data, "nsd_transformer_base", "--nsd-embed-dim", "8")
    declared = NsdConfig()
    (nsd,) = [m for m in model.plan.active if m.key == "nsd"]
    assert (nsd.cfg.ce_weight, nsd.cfg.dist_weight) == (declared.ce_weight, declared.dist_weight)
    assert nsd in model.encoder.syntax.mechanisms and nsd in model.decoder.syntax.mechanisms  # one config, both sides
    sample = first_batch(task, "valid", 2)
    model.eval()
    with torch.no_grad():
        _, extra = model(**sample["net_input"])
    weights = {name: extra["aux_losses"][name]["weight"] for name in
               ("nsd_src_ce", "nsd_src_dist", "nsd_tgt_ce", "nsd_tgt_dist")}  # what the losses are weighted with
    assert weights == {"nsd_src_ce": declared.ce_weight, "nsd_src_dist": declared.dist_weight,
                       "nsd_tgt_ce": declared.ce_weight, "nsd_tgt_dist": declared.dist_weight}
    _, model = build_task_and_model(tiny_data, "distance_transformer_iwslt_de_en", "--distance-heads", "2")
    assert (model.plan.mechanisms[0].key, model.plan.mechanisms[0].cfg.heads) == ("distance", 2)  # preset: 4
    attn = model.encoder.layers[0].self_attn
    assert isinstance(attn, SyntaxMultiheadAttention) and attn.block_keys == ("distance",)
    assert attn.distance.num_heads == 2 and attn.syntax_heads == 2  # the preset says 4; the flag wins
    assert not isinstance(model.encoder.layers[1].self_attn, SyntaxMultiheadAttention)  # no syntax heads there



def test_target_embedding_mechanism_needs_embeddings_as_wide_as_the_decoder(tiny_data):
    """A mechanism that changes the target embeddings (NSD target input) refuses embeddings that fairseq would
    project into the decoder, naming the mechanism and both widths."""
    import torch.nn as nn

    from syntrans.models.decoder import SyntaxTransformerDecoder

    _, model = build_task_and_model(tiny_data, "nsd_tgt_transformer_base", "--nsd-embed-dim", "8")
    narrow = nn.Embedding(len(model.decoder.dictionary), 16, padding_idx=model.decoder.padding_idx)
    with pytest.raises(ValueError, match=r"NSD .* changes the target embeddings .* \(--decoder-embed-dim\).* found "
                                         r"target embeddings of 16 and a decoder of 32"):
        SyntaxTransformerDecoder(model.cfg, model.plan.sides["decoder"], model.decoder.dictionary, narrow)
