"""The typed model config (SyntaxTransformerConfig: fairseq's TransformerConfig plus one group per mechanism) and its
one adapter (model_config) from the forms fairseq keeps: the command line's flat Namespace, fairseq-hydra-train's nested
YAML, checkpoints of today and of before, and fairseq's --model-overrides in either spelling."""
import argparse

import pytest
from fairseq import options
from fairseq.dataclass.utils import convert_namespace_to_omegaconf, overwrite_args_by_name
from fairseq.models import ARCH_CONFIG_REGISTRY
from helpers import SMALL, USER_DIR, build_task_and_model
from omegaconf import OmegaConf, open_dict

import syntrans  # noqa: F401  (registers the model)
from syntrans.models import config as config_module
from syntrans.models.config import SyntaxTransformerConfig, model_config, store

pytestmark = pytest.mark.fast


def parsed(*argv):
    """The command line as fairseq-train reads it → (the flat Namespace, the converted config)."""
    parser = options.get_training_parser()
    args = options.parse_args_and_arch(parser, ["data", "--user-dir", USER_DIR, "--task", "translation", *argv])
    return args, convert_namespace_to_omegaconf(args)


def test_command_line_becomes_the_typed_config():
    """Flags of the Transformer part and of the mechanisms' groups reach the typed config, layer lists as lists of
    ints, 'all' resolved; fairseq keeps the command line's flat Namespace for the model (as for its own Transformer)."""
    _, cfg = parsed("--arch", "gated_distance_transformer_iwslt_de_en", *SMALL, "--distance-heads", "3",
                    "--dbsa-decoder-layers", "0,1", "--lisa-layers", "-1", "--gate-hidden", "12")
    assert isinstance(cfg.model, argparse.Namespace) and cfg.model.distance_heads == 3
    m = model_config(cfg.model)
    assert (m.encoder.embed_dim, m.encoder.layers, m.decoder.ffn_embed_dim, m.encoder.attention_heads) == (32, 2, 64, 4)
    assert list(m.distance.layers) == [0, 1] and m.distance.heads == 3  # 'all' of the preset: both layers
    assert list(m.gate.layers) == [0, 1] and m.gate.hidden == 12 and m.gate.warmup_epochs == 80  # flag, preset
    assert list(m.dbsa.decoder_layers) == [0, 1] and list(m.lisa.layers) == [-1]
    assert m.dropout == 0 and m.preset == "gated_distance_transformer_iwslt_de_en"


def test_a_flag_enters_the_config_module_once_on_its_way_to_the_attention(tiny_data, monkeypatch):
    """From the command line to the model, the config is adapted once (model_config) and its plan built once."""
    from syntrans.mechanisms import plan as plan_module

    calls = {"adapt": 0, "plan": 0}
    adapt, build_plan = config_module.model_config, plan_module.SyntaxPlan.__init__

    def counted_adapt(*a, **k):
        calls["adapt"] += 1
        return adapt(*a, **k)

    def counted_plan(self, *a, **k):
        calls["plan"] += 1
        build_plan(self, *a, **k)

    monkeypatch.setattr("syntrans.models.syntax_transformer.model_config", counted_adapt)
    monkeypatch.setattr(plan_module.SyntaxPlan, "__init__", counted_plan)
    _, model = build_task_and_model(tiny_data, "pascal_transformer_iwslt_de_en", "--pascal-heads", "3")
    assert calls == {"adapt": 1, "plan": 1}
    assert model.encoder.layers[0].self_attn.pascal.num_heads == 3


def test_flat_names_alias_the_groups_of_the_typed_config():
    """fairseq's alias mechanism (encoder_embed_dim ↔ encoder.embed_dim) extended to the registry's keys; a flat
    name whose group has no such field is refused, naming the nearest one."""
    cfg = model_config(argparse.Namespace(pascal_heads=2))
    assert cfg.pascal_heads == 2 and cfg.encoder_embed_dim == cfg.encoder.embed_dim
    cfg.pascal_heads = 3
    assert cfg.pascal.heads == 3
    with pytest.raises(ValueError, match=r"group 'lisa' has no field 'gold_parent'; did you mean 'gold_parents'"):
        cfg.lisa_gold_parent = True
    with pytest.raises(AttributeError, match="did you mean 'gold_parents'"):
        cfg.lisa_gold_parent  # noqa: B018


def test_bad_flag_values_name_the_flag():
    with pytest.raises(SystemExit):  # argparse's own error for the flag
        parsed("--arch", "syntax_transformer", "--distance-layers", "0;1")
    with pytest.raises(ValueError, match="--distance-layers"):
        model_config(argparse.Namespace(distance_layers="0;1"))
    with pytest.raises(ValueError, match="--dbsa-encoder-layers: .*found 'x'"):
        model_config(argparse.Namespace(dbsa_encoder_layers="x"))


def test_old_checkpoint_namespace_reads_through_the_schema():
    """A config of before the typed one: flat names, layer lists as strings, 'all' and ''."""
    old = argparse.Namespace(arch="syntax_transformer", encoder_layers=3, decoder_layers=2, distance_layers="0,2",
                             distance_heads=1, gate_layers="all", dbsa_decoder_layers="", lisa_layers="1",
                             sync_attn=False, nsd_src_min=None)
    cfg = model_config(old)
    assert cfg.distance.layers == [0, 2] and cfg.gate.layers == [0, 1, 2] and cfg.dbsa.decoder_layers == []
    assert cfg.lisa.layers == [1] and cfg.encoder.layers == 3 and cfg.decoder.embed_dim == 512  # Transformer base
    assert old.distance_layers == "0,2"  # the caller's object is left as it was


def stored(form: str):
    """A checkpoint's root config with a LISA model: the command line's flat Namespace (today's from the command line,
    and every one before the typed config), or the nested form (fairseq-hydra-train YAML; the typed config of the
    version before this one, with its flat copies at None)."""
    args, cfg = parsed("--arch", "lisa_transformer_iwslt_de_en", *SMALL)
    if form == "flat":
        root = OmegaConf.create({"model": None})
        with open_dict_objects():
            root.model = cfg.model
        return root
    nested = {"_name": "lisa_transformer_iwslt_de_en", "encoder": {"layers": 2}, "decoder": {"layers": 2},
              "lisa": {"layers": [0], "gold_parents": False}, "lisa_gold_parents": None, "preset": "lisa_transformer_iwslt_de_en"}
    return OmegaConf.create({"model": nested})


@pytest.mark.parametrize("spelling", ["nested", "flat"])
@pytest.mark.parametrize("form", ["flat", "nested"])
def test_model_overrides_reach_the_model_in_either_spelling(form, spelling):
    """fairseq applies --model-overrides to a checkpoint's config by name, and the model's build applies them again
    through the adapter (fairseq drops a name its stored form lacks): a nested group ({'lisa': {'gold_parents': True}})
    and a flat name ({'lisa_gold_parents': True}) both switch the oracle on, whatever form the checkpoint stored."""
    root = stored(form)
    override = {"lisa": {"gold_parents": True}} if spelling == "nested" else {"lisa_gold_parents": True}
    with open_dict_objects():
        overwrite_args_by_name(root, override)
    typed = model_config(root.model, override)
    assert typed.lisa.gold_parents is True and typed.lisa.layers == [0]
    assert model_config(root.model, {}).lisa.layers == [0]


@pytest.mark.parametrize("override, near", [({"lisa": {"gold_parent": True}}, "gold_parents"),
                                            ({"lisa_gold_parent": True}, "gold_parents"),
                                            ({"pascal": {"head": 2}}, "heads")])
def test_a_misspelt_override_is_an_error_naming_the_nearest_field(override, near):
    with pytest.raises(ValueError, match=f"has no field .*did you mean '{near}'"):
        model_config(stored("flat").model, override)


def test_the_resolved_config_is_written_back_in_the_form_fairseq_keeps():
    """So that a checkpoint holds the whole configuration (data-derived fields included): a flat Namespace takes
    every mechanism field by its flat name; a nested config each group nested, its flat names read into them."""
    flat = argparse.Namespace(arch="lisa_transformer_iwslt_de_en", lisa_layers="0", encoder_layers=2)
    typed = model_config(flat)
    typed.nsd.src_min = -3
    store(typed, flat)
    assert flat.lisa_layers == [0] and flat.nsd_src_min == -3 and flat.pascal_sigma == 1.0
    nested = OmegaConf.create({"lisa": {"layers": [0]}, "pascal_heads": None, "encoder": {"layers": 2}})
    store(typed, nested)
    assert "pascal_heads" not in nested and nested.nsd.src_min == -3 and list(nested.lisa.layers) == [0]
    assert model_config(nested).nsd.src_min == -3 and model_config(flat).nsd.src_min == -3


def open_dict_objects():
    from fairseq.dataclass.utils import omegaconf_no_object_check

    return omegaconf_no_object_check()


def test_yaml_under_a_preset_takes_the_preset_where_it_keeps_the_defaults():
    """Nested YAML named after a preset: fairseq runs the preset on it when it builds the model; the preset fills the
    fields the YAML does not give (a nested value wins over its flat one), marks the config with its name, and may
    run again (a checkpoint) without changing what the YAML or a first run set."""
    yaml = OmegaConf.create({"_name": "distance_transformer_iwslt_de_en", "encoder": {"layers": 2},
                             "decoder": {"layers": 2}, "distance": {"heads": 2}, "dropout": 0.15})
    with open_dict(yaml):
        ARCH_CONFIG_REGISTRY["distance_transformer_iwslt_de_en"](yaml)
    typed = model_config(yaml)
    assert list(typed.distance.layers) == [0] and typed.distance.heads == 2  # the preset's layer; the YAML's heads
    assert typed.dropout == 0.15 and typed.attention_dropout == 0.2 and typed.encoder.ffn_embed_dim == 1024
    assert typed.preset == "distance_transformer_iwslt_de_en" and typed.encoder.layers == 2
    yaml.distance.heads = 3
    with open_dict(yaml):
        ARCH_CONFIG_REGISTRY["distance_transformer_iwslt_de_en"](yaml)
    assert model_config(yaml).distance.heads == 3  # held already: left alone


def test_the_typed_config_is_fairseqs_transformer_config_with_the_groups():
    from fairseq.models.transformer import TransformerConfig

    from syntrans.mechanisms.registry import MECHANISMS

    cfg = SyntaxTransformerConfig()
    assert isinstance(cfg, TransformerConfig)
    assert all(type(getattr(cfg, M.key)) is M.Config for M in MECHANISMS)
