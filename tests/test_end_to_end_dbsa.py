"""DBSA (Deguchi et al. 2019) and SyncAttn (Deguchi et al. 2021) end to end with stock fairseq tools:
fairseq-train → fairseq-generate, the parent loss teaching the DBSA heads to parse, and training refused on
data without parents."""
import math
import os
import re
import shutil
import subprocess

import pytest
import torch
from fairseq import checkpoint_utils
from helpers import BIN, N_TEST, UPDATES, generate, metric, metric_lines, run, short_runs, tiny_train_argv

import syntrans  # noqa: F401  (allow-lists the checkpoint classes for torch's safe loader)
from syntrans.models.config import model_config

PRESETS = {"dbsa": "dbsa_transformer_wmt_en_de", "syncattn": "syncattn_transformer_wmt_en_de"}
# the one DBSA head of each preset: encoder layer 0 and decoder layer 0, U of shape (1, d, d), d = 32 / 4
U_KEYS = ["decoder.layers.0.self_attn.q_proj.U", "encoder.layers.0.self_attn.q_proj.U"]
HEAD_DIM = 32 // 4
DBSA_METRICS = ("dbsa_src", "dbsa_tgt", "dbsa_src_uas", "dbsa_tgt_uas", "dbsa_tgt_later")
SIDECAR_KINDS = ("word", "head", "dist", "label")


def train_argv(data, save, arch, *extra, seed=3):
    return tiny_train_argv(data, save, "--arch", arch, *extra, seed=seed)


pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("single_threaded_tools")]  # conftest


@pytest.fixture(scope="module")
def trained(tiny_data, tmp_path_factory):
    """Train each preset at most once per module: name → (checkpoint path, training log)."""
    return short_runs(tiny_data, tmp_path_factory, lambda name: ["--arch", PRESETS[name]])


@pytest.fixture(scope="module")
def bare_data(tiny_data, tmp_path_factory):
    """A copy of the data-bin whose test split has its tokens only: every syntax sidecar of both sides deleted."""
    bare = tmp_path_factory.mktemp("bare") / "data-bin"
    shutil.copytree(tiny_data, bare)
    tokens = {f"test.src-tgt.{lang}.{ext}" for lang in ("src", "tgt") for ext in ("bin", "idx")}
    sidecars = {f"test.src-tgt.{lang}.{kind}.{ext}" for lang in ("src", "tgt") for kind in SIDECAR_KINDS
                for ext in ("bin", "idx")}
    assert {p.name for p in bare.glob("test.*")} == tokens | sidecars  # what syntrans-preprocess wrote
    for name in sidecars:
        (bare / name).unlink()
    assert {p.name for p in bare.glob("test.*")} == tokens
    return bare


def hypotheses(out):
    """id → (score, text) of every H- line of fairseq-generate's output."""
    return {int(i): (score, text) for i, score, text in re.findall(r"^H-(\d+)\t(\S+)\t(.*)$", out, flags=re.M)}


@pytest.mark.parametrize("name", list(PRESETS))
def test_train_logs_dbsa_metrics(name, trained):
    _, log = trained(name)
    assert re.search(rf"num_updates[ =]{UPDATES}\b", log), log[-2000:]
    kinds = {kind: metric_lines(log, kind) for kind in ("train_inner", "train", "valid")}
    assert len(kinds["train_inner"]) == UPDATES and kinds["train"] and kinds["valid"], log[-3000:]
    for kind, lines in kinds.items():
        for line in lines:
            values = {key: metric(line, key) for key in ("loss", "nll_loss", *DBSA_METRICS)}
            for key, value in values.items():
                assert value is not None and math.isfinite(value), (kind, key, line)
            assert values["dbsa_src"] > 0 and values["dbsa_tgt"] > 0, (kind, line)
            assert 0.0 <= values["dbsa_src_uas"] <= 100.0 and 0.0 <= values["dbsa_tgt_uas"] <= 100.0, (kind, line)
            # the synthetic target is head-final: many target arcs point forward and are dropped, but never all
            assert 0.0 < values["dbsa_tgt_later"] <= 100.0, (kind, line)
            sync = metric(line, "sync")
            if name == "syncattn":
                assert sync is not None and math.isfinite(sync) and sync > 0, (kind, line)
            else:
                assert sync is None and not re.search(r"\bsync\b", line), (kind, line)


@pytest.mark.parametrize("name", list(PRESETS))
def test_checkpoint_rebuilds_with_trained_u(name, tiny_data, trained):
    ckpt, _ = trained(name)
    models, cfg, task = checkpoint_utils.load_model_ensemble_and_task([str(ckpt)], arg_overrides={"data": str(tiny_data)})
    model = models[0]
    stored = model_config(cfg.model)  # the stored config, read through the config's one adapter
    assert (stored.dbsa.encoder_layers, stored.dbsa.decoder_layers, stored.dbsa.heads) == ([0], [0], 1)
    assert stored.sync.attn == (name == "syncattn")
    # --sync-layer -2 of a 2-layer decoder is its layer 0; no SyncAttn, no layer
    assert model.plan.alignment_layer() == (0 if name == "syncattn" else None)

    # U exists exactly in the self-attention of encoder layer 0 and decoder layer 0 (no other bi-affine parameter)
    params = dict(model.named_parameters())
    assert sorted(k for k in params if k.endswith(".U")) == U_KEYS
    eye = torch.eye(HEAD_DIM)
    for key in U_KEYS:
        U = params[key].detach()
        assert tuple(U.shape) == (1, HEAD_DIM, HEAD_DIM), (key, U.shape)
        # initialised to the identity, moved by training (Adam: about lr per update per entry)
        assert (U[0] - eye).abs().max() > 1e-4, (key, U)

    # the model asks for no feature; it reads the parents where the split has them
    assert model.syntax_needs().required == set()
    assert model.syntax_needs().optional == {"src_parent_chain", "tgt_parent_chain"}


@pytest.mark.parametrize("name", list(PRESETS))
def test_generation_needs_no_parse(name, tiny_data, bare_data, trained):
    """fairseq-generate translates every test sentence, and the parents of the test split (loaded when present,
    for the loss only) change nothing: the same hypotheses, and scores equal but for the last float digits (with
    parents the DBSA heads form their probabilities for the loss, without them they run in the fused kernel)."""
    ckpt, _ = trained(name)
    with_parses = generate(tiny_data, ckpt)
    without = generate(bare_data, ckpt)
    hyps = {"with": hypotheses(with_parses), "without": hypotheses(without)}
    assert sorted(hyps["with"]) == list(range(N_TEST)), with_parses[-2000:]  # every test sentence, none dropped
    assert sorted(hyps["without"]) == list(range(N_TEST)), without[-2000:]
    assert {i: text for i, (_, text) in hyps["with"].items()} == {i: text for i, (_, text) in hyps["without"].items()}
    for i, (score, _) in hyps["with"].items():
        assert float(score) == pytest.approx(float(hyps["without"][i][0]), abs=1e-5), i
    assert re.search(r"Generate test with beam=3: BLEU4 = [0-9.]+", without), without[-2000:]

    # the comparison means something: the original test split carries both sides' parents, the bare copy none
    for data, features in ((tiny_data, ["src_parent_chain", "tgt_parent_chain"]), (bare_data, [])):
        _, _, task = checkpoint_utils.load_model_ensemble_and_task([str(ckpt)], arg_overrides={"data": str(data)})
        task.load_dataset("test")
        assert task.dataset("test").features() == features, data


def learning_curve(data, save, weight, seed=3):
    """A short, fast DBSA run (lr 5e-3, 40 updates, validation every 5): [(updates, src UAS, tgt UAS)]."""
    log = run("fairseq-train", *train_argv(data, save, PRESETS["dbsa"], "--dbsa-weight", weight, "--lr", "5e-3",
                                           "--max-update", "40", "--validate-interval-updates", "5",
                                           "--validate-interval", "1000", "--no-save", "--log-interval", "100",
                                           seed=seed))
    curve = [(int(metric(line, "num_updates")), metric(line, "dbsa_src_uas"), metric(line, "dbsa_tgt_uas"))
             for line in metric_lines(log, "valid")]
    assert [u for u, _, _ in curve] == list(range(5, 45, 5)), log[-3000:]
    return curve


def test_parent_loss_teaches_dbsa_heads_to_parse(tiny_data, tmp_path):
    """With λ_dep = 1 the learned UAS rises clearly above its start on both sides within 40 updates
    (seed 3: source 7.3 → 37.8, target 19.7 → 48.3); without the loss (λ_dep = 0) it stays at chance
    (source 3.9 → 4.7, target 8.2 → 10.2). The run is deterministic under --seed."""
    curve = learning_curve(tiny_data, tmp_path / "a", "1.0")
    assert learning_curve(tiny_data, tmp_path / "b", "1.0") == curve  # same seed, same numbers
    (_, src0, tgt0), (_, src1, tgt1) = curve[0], curve[-1]
    assert src1 >= src0 + 15.0, curve
    assert tgt1 >= tgt0 + 15.0, curve

    control = learning_curve(tiny_data, tmp_path / "c", "0")
    (_, c_src0, c_tgt0), (_, c_src1, c_tgt1) = control[0], control[-1]
    assert abs(c_src1 - c_src0) < 5.0 and abs(c_tgt1 - c_tgt0) < 5.0, control
    assert src1 >= c_src1 + 15.0 and tgt1 >= c_tgt1 + 15.0, (curve, control)


@pytest.mark.parametrize("side", ["tgt", "src"])
def test_training_refuses_data_without_parents(side, tiny_data, tmp_path):
    """A DBSA model cannot train on a split without that side's parses: fairseq-train fails naming the feature."""
    data = tmp_path / "data-bin"
    shutil.copytree(tiny_data, data)
    for ext in ("bin", "idx"):
        (data / f"train.src-tgt.{side}.head.{ext}").unlink()
    env = {k: v for k, v in os.environ.items() if k != "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD"}
    env["PYTHONWARNINGS"] = "ignore"
    p = subprocess.run([str(BIN / "fairseq-train"),
                        *map(str, train_argv(data, tmp_path / "ck", PRESETS["dbsa"], "--lr", "1e-3", "--max-update", "2",
                                             "--disable-validation", "--no-save"))],
                       capture_output=True, text=True, env=env, timeout=600)
    assert p.returncode != 0, p.stdout[-2000:]
    m = re.search(r"^FileNotFoundError: (.*)$", p.stderr, flags=re.M)
    assert m and f"{side}_parent_chain" in m.group(1), p.stderr[-2000:]
    assert f"train.src-tgt.{side}.head" in m.group(1) and "its training loss needs" in m.group(1), m.group(1)
    assert "num_updates" not in p.stdout + p.stderr  # refused before any update
