"""syntrans-plot gates: gate matrices from a model, a checkpoint and a training log; heat map, TSV and per-epoch plot."""
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from helpers import SMALL, build_task_and_model

import syntrans
from syntrans.cli.plot import main as plot_main
from syntrans.plots.gates import (
    gate_history_from_log,
    gate_matrix_from_checkpoint,
    gate_matrix_from_model,
    plot_gate_epochs,
    plot_gate_heatmap,
    read_gate_tsv,
)

BIN = Path(sys.executable).parent
USER_DIR = os.path.dirname(syntrans.__file__)
GATED = "gated_distance_transformer_iwslt_de_en"


def gated_layers(model):
    """The encoder layers whose self-attention has a mixer (a gate): {layer: attention}."""
    return {i: layer.self_attn for i, layer in enumerate(model.encoder.layers)
            if getattr(layer.self_attn, "mixer_key", None) == "gate"}


def gates_one_by_one(task, model, split="valid"):
    """Reference: every sentence of the split alone through the encoder, its reported gate values (one per syntax
    head of the layer) averaged by hand."""
    if split not in task.datasets:
        task.load_dataset(split)
    ds = task.dataset(split)
    enc = model.encoder
    gated = gated_layers(model)
    sums = {i: torch.zeros(attn.syntax_heads, dtype=torch.float64) for i, attn in gated.items()}
    model.eval()
    with torch.no_grad():
        for k in range(len(ds)):
            sample = ds.collater([ds[k]])
            reports = enc.forward_torchscript(sample["net_input"])["syntax"].layers
            for i in sums:
                g = reports[i].mechanisms["gate"].values
                assert g.shape == (1, gated[i].syntax_heads)
                sums[i] += g[0].double()
    model.train()
    return {i: s / len(ds) for i, s in sums.items()}, len(ds)


def image_array(fig):
    return np.ma.filled(np.ma.asarray(fig.axes[0].images[0].get_array(), dtype=float), np.nan)


def test_heatmap_from_model_all_gated(tiny_data, tmp_path):
    task, model = build_task_and_model(tiny_data, GATED)
    ref, n = gates_one_by_one(task, model)
    assert n == 40 and sorted(ref) == [0, 1]
    m = gate_matrix_from_model(model, task, "valid", max_sentences=16)
    assert m.shape == (2, 4) and np.isfinite(m).all()
    for i in range(2):
        np.testing.assert_allclose(m[i], ref[i].numpy(), rtol=0, atol=1e-6)
    assert m.std() > 1e-3  # distinct values per layer × head: a transposed or shuffled matrix would fail
    assert model.training  # the model's mode is restored
    # the batching does not change the result (deterministic, every sentence counted once)
    np.testing.assert_allclose(gate_matrix_from_model(model, task, "valid"), m, rtol=0, atol=1e-6)

    fig = plot_gate_heatmap(m, tmp_path / "sub" / "gates.png", title="t")
    png = tmp_path / "sub" / "gates.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    np.testing.assert_array_equal(image_array(fig), m)
    assert fig.axes[0].images[0].get_clim() == (0.0, 1.0)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["layer 0", "layer 1"]
    assert [t.get_text() for t in ax.get_xticklabels()] == [f"head {h}" for h in range(4)]
    assert sorted(t.get_text() for t in ax.texts) == sorted(f"{v:.2f}" for v in m.ravel())
    np.testing.assert_allclose(read_gate_tsv(png.with_suffix(".tsv")), m, rtol=1e-7, atol=0)


def test_heatmap_nan_for_ungated_layers_and_heads(tiny_data, tmp_path):
    task, model = build_task_and_model(tiny_data, GATED, "--gate-layers", "1", "--distance-heads", "2")
    assert sorted(gated_layers(model)) == [1] and model.encoder.layers[1].self_attn.syntax_heads == 2
    ref, _ = gates_one_by_one(task, model)
    m = gate_matrix_from_model(model, task, "valid", max_sentences=7)
    assert m.shape == (2, 4)
    assert np.isnan(m[0]).all() and np.isnan(m[1, 2:]).all()  # layer 0 not gated; heads 2, 3 not syntax heads
    np.testing.assert_allclose(m[1, :2], ref[1][:2].numpy(), rtol=0, atol=1e-6)

    out = tmp_path / "gates.pdf"
    fig = plot_gate_heatmap(m, out)
    assert out.read_bytes()[:5] == b"%PDF-"
    img = fig.axes[0].images[0].get_array()
    assert img.mask.tolist() == [[True] * 4, [False, False, True, True]]  # NaN cells blank
    np.testing.assert_array_equal(image_array(fig), m)
    assert len(fig.axes[0].texts) == 2
    rows = out.with_suffix(".tsv").read_text().splitlines()
    assert rows[0].split("\t") == ["layer", "head 0", "head 1", "head 2", "head 3"]
    assert rows[1].split("\t") == ["0", "", "", "", ""]
    assert rows[2].split("\t")[3:] == ["", ""]
    np.testing.assert_array_equal(np.isnan(read_gate_tsv(out.with_suffix(".tsv"))), np.isnan(m))

    _, plain = build_task_and_model(tiny_data, "distance_transformer_iwslt_de_en", "--distance-heads", "2")
    with pytest.raises(ValueError, match="no syntax gates"):
        gate_matrix_from_model(plain, task, "valid")
    with pytest.raises(ValueError, match="unsupported image type"):
        plot_gate_heatmap(m, tmp_path / "gates.txt")


# ---------------------------------------------------------------------------------------- a real run

@pytest.fixture(scope="module")
def trained(tiny_data, tmp_path_factory):
    """fairseq-train, 2 epochs of 1 update each (trained on the 40 test sentences, one batch), gates frozen in epoch 1."""
    root = tmp_path_factory.mktemp("gates_run")
    env = {k: v for k, v in os.environ.items() if k != "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD"}
    env["PYTHONWARNINGS"] = "ignore"
    args = [tiny_data, "--user-dir", USER_DIR, "--task", "syntax_translation", "--arch", GATED, *SMALL,
            "--criterion", "syntax_label_smoothed_cross_entropy", "--optimizer", "adam", "--lr", "1e-3",
            "--train-subset", "test", "--max-tokens", "100000", "--batch-size", "1000", "--required-batch-size-multiple", "1",
            "--max-update", "2", "--max-epoch", "2", "--gate-warmup-epochs", "1", "--save-dir", root / "ckpt",
            "--no-epoch-checkpoints", "--num-workers", "0", "--log-format", "simple", "--log-interval", "1", "--seed", "3"]
    p = subprocess.run([str(BIN / "fairseq-train"), *map(str, args)], capture_output=True, text=True, env=env, timeout=600)
    assert p.returncode == 0, f"fairseq-train failed:\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}"
    log = root / "train.log"
    log.write_text(p.stdout + p.stderr)
    return root / "ckpt" / "checkpoint_last.pt", log


def last_valid_gates(log_text):
    """The gate_lXhY numbers of the log's last valid line, read independently of syntrans.plots."""
    line = [x for x in log_text.splitlines() if "valid on 'valid' subset" in x and "gate_l" in x][-1]
    return {(int(a), int(b)): float(v) for a, b, v in re.findall(r"gate_l(\d+)h(\d+) ([0-9.]+)", line)}


@pytest.mark.slow
def test_cli_from_checkpoint_and_log(trained, tiny_data, tmp_path, capsys):
    ckpt, log = trained
    logged = last_valid_gates(log.read_text())
    assert sorted(logged) == [(layer, h) for layer in range(2) for h in range(4)]

    out = tmp_path / "ckpt_gates.png"
    assert plot_main(["gates", "--checkpoint", str(ckpt), "--data", str(tiny_data), "--max-sentences", "9",
                      "--out", str(out)]) == 0
    summary = capsys.readouterr().out.strip().splitlines()
    assert len(summary) == 1 and str(out) in summary[0] and "2x4" in summary[0] and "mean gate" in summary[0]
    assert out.read_bytes()[:4] == b"\x89PNG"
    from_ckpt = read_gate_tsv(out.with_suffix(".tsv"))
    assert from_ckpt.shape == (2, 4)
    np.testing.assert_allclose(from_ckpt, gate_matrix_from_checkpoint(ckpt, tiny_data, "valid"), rtol=0, atol=1e-6)
    assert f"mean gate {from_ckpt.mean():.4f}" in summary[0]
    # the checkpoint was saved right after the last validation: its gates are the logged ones (rounded to 4 places)
    for (layer, h), v in logged.items():
        assert abs(from_ckpt[layer, h] - v) < 2e-4, (layer, h, from_ckpt[layer, h], v)

    out2, epochs_out = tmp_path / "log_gates.png", tmp_path / "epochs.png"
    assert plot_main(["gates", "--log", str(log), "--out", str(out2), "--epochs-out", str(epochs_out)]) == 0
    summary = capsys.readouterr().out
    assert str(out2) in summary and str(epochs_out) in summary and "epoch 2, 2 updates" in summary
    from_log = read_gate_tsv(out2.with_suffix(".tsv"))
    expected = np.array([[logged[layer, h] for h in range(4)] for layer in range(2)])
    np.testing.assert_array_equal(from_log, expected)
    assert epochs_out.read_bytes()[:4] == b"\x89PNG"
    history = gate_history_from_log(log)
    assert [(e, u) for e, u, _ in history] == [(1, 1), (2, 2)]
    assert not np.array_equal(history[0][2], history[1][2])  # the gates moved in epoch 2 (after the warm-up)


# ------------------------------------------------------------------------------------------- log text

LOG = """\
2026-11-22 07:20:01 | INFO | fairseq_cli.train | begin training epoch 1
2026-11-22 07:20:30 | INFO | train_inner | epoch 001:     10 / 20 loss=9.9, nll_loss=9.8, num_updates=10, lr=0.001
2026-11-22 07:20:31 | INFO | valid | epoch 001 | valid on 'valid' subset | loss 9.5 | nll_loss 9.4 | gate_l0h0 0.4987 | \
gate_l0h1 0.5021 | gate_l1h0 0.61 | gate_l1h1 0.3 | ppl 675.5 | wps 1000 | num_updates 10
2026-11-22 07:20:59 | INFO | valid | epoch 001 | valid on 'valid' subset | loss 9.2 | nll_loss 9.1 | gate_l0h0 0.45 | \
gate_l0h1 0.55 | gate_l1h0 0.7 | gate_l1h1 0.2 | ppl 550 | wps 1000 | num_updates 20 | best_loss 9.2
2026-11-22 07:21:00 | INFO | train | epoch 001 | loss 9.7 | nll_loss 9.6 | ppl 800 | num_updates 20 | lr 0.001
2026-11-22 07:21:56 | INFO | valid | epoch 002 | valid on 'valid' subset | loss 9.1 | nll_loss 8.9 | gate_l0h0 0.25 | \
gate_l0h1 0.125 | gate_l1h0 0.875 | gate_l1h1 1e-05 | ppl 478 | wps 2000 | num_updates 40 | best_loss 9.1
2026-11-22 07:21:57 | INFO | fairseq_cli.train | done training in 116.0 seconds
"""


def test_log_history_and_epoch_plot(tmp_path):
    log = tmp_path / "train.log"
    log.write_text(LOG)
    history = gate_history_from_log(log)
    assert [(e, u) for e, u, _ in history] == [(1, 10), (1, 20), (2, 40)]
    expected = [[[0.4987, 0.5021], [0.61, 0.3]], [[0.45, 0.55], [0.7, 0.2]], [[0.25, 0.125], [0.875, 1e-05]]]
    for (_, _, m), want in zip(history, expected):
        np.testing.assert_array_equal(m, np.array(want))

    fig = plot_gate_epochs(history, tmp_path / "epochs.png")
    assert (tmp_path / "epochs.png").read_bytes()[:4] == b"\x89PNG"
    lines = fig.axes[0].lines
    assert [line.get_label() for line in lines] == ["layer 0", "layer 1"]
    assert [list(line.get_xdata()) for line in lines] == [[1, 2], [1, 2]]
    # the last validation of epoch 1 (num_updates 20), not the first one
    np.testing.assert_allclose(lines[0].get_ydata(), [0.5, 0.1875], rtol=0, atol=1e-12)
    np.testing.assert_allclose(lines[1].get_ydata(), [0.45, (0.875 + 1e-05) / 2], rtol=0, atol=1e-12)

    # the json log format holds the same numbers under valid_gate_l…
    json_log = tmp_path / "train.json.log"
    json_log.write_text('2026-11-22 07:21:56 | INFO | valid | {"epoch": 3, "valid_loss": "9.1", "valid_gate_l0h0": "0.25", '
                        '"valid_gate_l1h1": "0.75", "valid_num_updates": "60"}\n')
    ((epoch, updates, m),) = gate_history_from_log(json_log)
    assert (epoch, updates) == (3, 60)
    np.testing.assert_array_equal(np.isnan(m), [[False, True], [True, False]])
    assert m[0, 0] == 0.25 and m[1, 1] == 0.75


def test_log_without_gates(tmp_path, capsys):
    log = tmp_path / "plain.log"
    log.write_text("\n".join(x for x in LOG.replace("\\\n", "").splitlines() if "valid on" not in x) +
                   "\n2026-11-22 07:20:31 | INFO | valid | epoch 001 | valid on 'valid' subset | loss 9.5 | num_updates 10\n")
    with pytest.raises(ValueError, match=re.escape(str(log))):
        gate_history_from_log(log)
    assert plot_main(["gates", "--log", str(log), "--out", str(tmp_path / "g.png")]) == 2
    err = capsys.readouterr().err
    assert str(log) in err and "no validation line" in err
    assert not (tmp_path / "g.png").exists()


def test_cli_errors(tiny_data, tmp_path, capsys):
    missing = tmp_path / "nope" / "checkpoint_last.pt"
    assert plot_main(["gates", "--checkpoint", str(missing), "--data", str(tiny_data), "--out", str(tmp_path / "g.png")]) == 2
    err = capsys.readouterr().err
    assert f"{missing}: no such checkpoint file" in err and err.count("\n") == 1
    assert plot_main(["gates", "--log", str(tmp_path / "none.log"), "--out", str(tmp_path / "g.png")]) == 2
    assert "none.log: no such training log" in capsys.readouterr().err
    for argv in (["gates", "--out", "g.png"],  # neither source
                 ["gates", "--log", "a.log", "--checkpoint", "c.pt", "--data", "d", "--out", "g.png"],  # both
                 ["gates", "--checkpoint", "c.pt", "--out", "g.png"],  # no --data
                 ["sentence"]):  # neither SENTENCE nor --parse
        with pytest.raises(SystemExit) as e:
            plot_main(argv)
        assert e.value.code == 2


def test_a_gate_per_token_is_refused_by_name(tiny_data):
    """SLA's released gate (--sla-token-gate) weighs each token, not each head and sentence: the figure of per-head
    gates names it instead of drawing it as one."""
    task, model = build_task_and_model(tiny_data, "sla_transformer_iwslt_de_en", "--sla-token-gate", "--gate-layers", "")
    with pytest.raises(ValueError, match="--sla-token-gate"):
        gate_matrix_from_model(model, task, "valid")
