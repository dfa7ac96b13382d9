"""synth → preprocess → fairseq-train (a few updates) → resume → fairseq-generate → BLEU, with stock fairseq tools."""
import re

import pytest
import torch
from helpers import SMALL, USER_DIR, check_generate_bleu, run

import syntrans  # noqa: F401  (allow-lists the checkpoint classes for torch's safe loader)

pytestmark = pytest.mark.slow  # trains, translates or installs in other processes (conftest)


def train(data, save, updates):
    return run("fairseq-train", data, "--user-dir", USER_DIR, "--task", "syntax_translation",
               "--arch", "distance_transformer_iwslt_de_en", *SMALL, "--distance-heads", "2",
               "--criterion", "syntax_label_smoothed_cross_entropy", "--label-smoothing", "0.1",
               "--optimizer", "adam", "--lr", "1e-3", "--max-tokens", "1000", "--max-update", updates,
               "--save-dir", save, "--no-epoch-checkpoints", "--num-workers", "0", "--log-format", "simple",
               "--log-interval", "1", "--seed", "3")


def test_train_resume_generate(tiny_data, tmp_path):
    save = tmp_path / "ckpt"
    log1 = train(tiny_data, save, 6)
    assert "num_updates 6" in log1 or "num_updates=6" in log1
    assert (save / "checkpoint_last.pt").exists()

    log2 = train(tiny_data, save, 10)
    assert re.search(r"Loaded checkpoint \S*checkpoint_last\.pt \(epoch \d+ @ 6 updates\)", log2), log2[-2000:]
    assert re.search(r"num_updates[ =]10\b", log2)

    out = run("fairseq-generate", tiny_data, "--user-dir", USER_DIR, "--task", "syntax_translation",
              "--path", save / "checkpoint_last.pt", "--gen-subset", "test", "--beam", "3", "--batch-size", "16",
              "--remove-bpe", "--num-workers", "0")
    hyps = re.findall(r"^H-(\d+)\t", out, flags=re.M)
    assert sorted(map(int, hyps)) == list(range(40))  # every test sentence, none dropped
    bleu = check_generate_bleu(out)  # fairseq's BLEU4 line against the one computed here from the H-/T- lines
    assert bleu["precisions"][0] > 0, bleu  # the hypotheses share words with the references: the check is not 0 = 0

    # the checkpoint loads with torch's safe loader (syntrans imported; no unsafe switch)
    state = torch.load(save / "checkpoint_last.pt", weights_only=True, map_location="cpu")
    assert state["extra_state"]["train_iterator"]["epoch"] >= 1
    # the command line's config as fairseq keeps it (flat, as for its own Transformer), every mechanism field at its
    # resolved value; read through the config's one adapter: the typed config, layer lists lists of ints
    from syntrans.models.config import model_config

    assert state["cfg"]["model"].distance_layers == [0]
    model_cfg = model_config(state["cfg"]["model"])
    assert model_cfg.distance.heads == 2 and model_cfg.distance.layers == [0]
    assert model_cfg.encoder.embed_dim == 32 and model_cfg.preset == "distance_transformer_iwslt_de_en"


@pytest.mark.parametrize("name", ["distance_transformer_iwslt_de_en", "syntax_transformer"])
def test_hydra_yaml_config(tiny_data, tmp_path, name):
    """The model config is typed (fairseq's TransformerConfig plus one group per mechanism): fairseq-hydra-train
    takes it from YAML in its nested form, and the model it trains has the syntax heads it asks for (not only the
    saved configuration: a LISA head adds its parameters U). Under a preset's name the preset fills what the YAML
    leaves at its defaults (distance layer 0, dropout 0.3); under the model's name nothing is filled."""
    (tmp_path / "cfg.yaml").write_text(f"""# @package _group_
common: {{user_dir: {USER_DIR}, log_format: simple, seed: 2}}
task: {{_name: syntax_translation, data: {tiny_data}, source_lang: src, target_lang: tgt}}
model: {{_name: {name}, encoder: {{layers: 1, embed_dim: 32, ffn_embed_dim: 64}},
        decoder: {{layers: 1, embed_dim: 32, ffn_embed_dim: 64}}, distance: {{heads: 3, tau: 5.0, layers: [0]}},
        lisa: {{layers: [0]}}}}
criterion: {{_name: syntax_label_smoothed_cross_entropy, label_smoothing: 0.1}}
optimizer: {{_name: adam}}
lr_scheduler: {{_name: fixed}}
optimization: {{lr: [0.001], max_update: 2}}
dataset: {{max_tokens: 1000, num_workers: 0}}
checkpoint: {{save_dir: {tmp_path / 'ck'}, no_epoch_checkpoints: true}}
hydra: {{run: {{dir: {tmp_path / 'hydra'}}}}}
""")
    run("fairseq-hydra-train", "--config-dir", tmp_path, "--config-name", "cfg")
    state = torch.load(tmp_path / "ck" / "checkpoint_last.pt", weights_only=True, map_location="cpu")
    model_cfg = state["cfg"]["model"]
    assert model_cfg["distance"]["heads"] == 3 and model_cfg["distance"]["tau"] == 5.0
    assert model_cfg["_name"] == name
    assert model_cfg["dropout"] == (0.3 if name != "syntax_transformer" else 0.1)  # the preset's, or the schema's
    assert state["optimizer_history"][-1]["num_updates"] == 2
    assert "encoder.layers.0.self_attn.lisa.U" in state["model"]  # the options reached the model
