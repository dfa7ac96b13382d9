"""The typed model config (SyntaxTransformerConfig: fairseq's TransformerConfig plus one group per mechanism) and the
forms it is read from: the command line's flat Namespace, fairseq-hydra-train's nested YAML, checkpoints of today
(nested) and of before (flat, layer lists as strings), and fairseq's --model-overrides in either spelling."""
import argparse

import pytest
from fairseq import options
from fairseq.dataclass.utils import convert_namespace_to_omegaconf, overwrite_args_by_name
from helpers import SMALL, USER_DIR
from hydra.core.override_parser.overrides_parser import OverridesParser
from omegaconf import OmegaConf

import syntrans  # noqa: F401  (registers the model)
from syntrans.mechanisms.registry import MECHANISMS
from syntrans.models.config import HydraValue, SyntaxTransformerConfig, apply_to_typed, syntax_config
from syntrans.models.presets import distance_transformer_iwslt_de_en

pytestmark = pytest.mark.fast


def parsed(*argv):
    """The command line as fairseq-train reads it → (the flat Namespace, the converted config)."""
    parser = options.get_training_parser()
    args = options.parse_args_and_arch(parser, ["data", "--user-dir", USER_DIR, "--task", "translation", *argv])
    return args, convert_namespace_to_omegaconf(args)


def test_command_line_becomes_the_typed_config():
    """Flags of the Transformer part and of the mechanisms' groups reach the typed config (fairseq itself loses a
    nested group's flags; the presets hand them over), layer lists as lists of ints, 'all' resolved."""
    _, cfg = parsed("--arch", "gated_distance_transformer_iwslt_de_en", *SMALL, "--distance-heads", "3",
                    "--dbsa-decoder-layers", "0,1", "--lisa-layers", "-1", "--gate-hidden", "12")
    m = cfg.model  # nested as the schema (fairseq-train merges it with the schema next: add_defaults)
    assert (m.encoder.embed_dim, m.encoder.layers, m.decoder.ffn_embed_dim, m.encoder.attention_heads) == (32, 2, 64, 4)
    assert list(m.distance.layers) == [0, 1] and m.distance.heads == 3  # 'all' of the preset: both layers
    assert list(m.gate.layers) == [0, 1] and m.gate.hidden == 12 and m.gate.warmup_epochs == 80  # flag, preset
    assert list(m.dbsa.decoder_layers) == [0, 1] and list(m.lisa.layers) == [-1]
    assert m.dropout == 0 and m.preset == "gated_distance_transformer_iwslt_de_en"
    assert all(m[f"{M.key}_{f}"] is None for M in MECHANISMS for f in ("weight", "layers") if f"{M.key}_{f}" in m)


def test_bad_flag_values_name_the_flag():
    with pytest.raises(SystemExit):  # argparse's own error for the flag
        parsed("--arch", "syntax_transformer", "--distance-layers", "0;1")
    with pytest.raises(ValueError, match="--distance-layers"):
        syntax_config(argparse.Namespace(distance_layers="0;1"))
    with pytest.raises(ValueError, match="--dbsa-encoder-layers: .*found 'x'"):
        syntax_config(argparse.Namespace(dbsa_encoder_layers="x"))


def test_old_checkpoint_namespace_reads_through_the_schema():
    """A config of before the typed one: flat names, layer lists as strings, 'all' and ''."""
    old = argparse.Namespace(arch="syntax_transformer", encoder_layers=3, decoder_layers=2, distance_layers="0,2",
                             distance_heads=1, gate_layers="all", dbsa_decoder_layers="", lisa_layers="1",
                             sync_attn=False, nsd_src_min=None)
    cfg = syntax_config(old)
    assert cfg.distance.layers == [0, 2] and cfg.gate.layers == [0, 1, 2] and cfg.dbsa.decoder_layers == []
    assert cfg.lisa.layers == [1] and cfg.encoder.layers == 3 and cfg.decoder.embed_dim == 512  # Transformer base
    assert old.distance_layers == "0,2"  # the caller's object is left as it was


@pytest.mark.parametrize("spelling", ["nested", "flat"])
@pytest.mark.parametrize("stored", ["today", "before"])
def test_model_overrides_reach_the_model_in_either_spelling(stored, spelling):
    """fairseq applies --model-overrides to a checkpoint's config by name: a nested group
    ({'lisa': {'gold_parents': True}}) and a flat name ({'lisa_gold_parents': True}) both switch the oracle on, in a
    checkpoint of today (the typed, nested config) and of before (a flat Namespace)."""
    if stored == "today":
        _, cfg = parsed("--arch", "lisa_transformer_iwslt_de_en", *SMALL)
        root = OmegaConf.create({"model": OmegaConf.to_container(cfg.model)})  # as a checkpoint holds it
    else:
        root = OmegaConf.create({"model": None})
        with open_dict_objects():
            root.model = argparse.Namespace(arch="lisa_transformer_iwslt_de_en", lisa_layers="0",
                                            lisa_gold_parents=False, encoder_layers=2, decoder_layers=2)
    override = {"lisa": {"gold_parents": True}} if spelling == "nested" else {"lisa_gold_parents": True}
    overwrite_args_by_name(root, override)
    assert syntax_config(root.model).lisa.gold_parents is True
    assert syntax_config(root.model).lisa.layers == [0]


def open_dict_objects():
    from fairseq.dataclass.utils import omegaconf_no_object_check

    return omegaconf_no_object_check()


def test_yaml_under_a_preset_takes_the_preset_where_it_keeps_the_defaults():
    """Nested YAML named after a preset: the preset fills the fields the YAML leaves at the schema's defaults, marks
    the config with its name, and is not applied twice (a checkpoint holds it already)."""
    yaml = OmegaConf.merge(OmegaConf.structured(SyntaxTransformerConfig),
                           {"encoder": {"layers": 2}, "decoder": {"layers": 2}, "distance": {"heads": 2},
                            "dropout": 0.15})
    apply_to_typed(distance_transformer_iwslt_de_en, "distance_transformer_iwslt_de_en", yaml)
    assert list(yaml.distance.layers) == [0] and yaml.distance.heads == 2  # the preset's layer; the YAML's heads
    assert yaml.dropout == 0.15 and yaml.attention_dropout == 0.2 and yaml.encoder.ffn_embed_dim == 1024
    assert yaml.preset == "distance_transformer_iwslt_de_en"
    yaml.distance.heads = 3
    apply_to_typed(distance_transformer_iwslt_de_en, "distance_transformer_iwslt_de_en", yaml)
    assert yaml.distance.heads == 3  # held already: left alone


@pytest.mark.parametrize("value", [{"embed_path": None, "layers": [0, 1], "flag": False, "rate": 1e-05,
                                    "path": "/a b/c's", "n": 3}, [], {"empty": ""}])
def test_hydra_values_parse_back_to_the_value(value):
    """The groups handed to fairseq's conversion are written in Hydra's override grammar: parsed back, the same."""
    text = f"model.x={HydraValue(value)}"
    assert OverridesParser.create().parse_overrides([text])[0].value() == value
