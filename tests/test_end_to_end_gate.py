"""Gated distance end to end with stock fairseq tools: pre-warm-up follows fairseq's epoch counter, also
across a resume from checkpoint_last.pt in the middle of warm-up; gates are logged; generation works."""
import re

import pytest
import torch
from helpers import SMALL, USER_DIR, run

import syntrans  # noqa: F401  (allow-lists the checkpoint classes for torch's safe loader)

pytestmark = pytest.mark.slow  # trains, translates or installs in other processes (conftest)

K = 2  # pre-warm-up epochs


def train(data, save, *stop):
    return run("fairseq-train", data, "--user-dir", USER_DIR, "--task", "syntax_translation",
               "--arch", "gated_distance_transformer_iwslt_de_en", *SMALL, "--distance-heads", "2",
               "--gate-warmup-epochs", K, "--gate-hidden", "8", "--weight-decay", "0.01",
               "--criterion", "syntax_label_smoothed_cross_entropy", "--label-smoothing", "0.1",
               "--optimizer", "adam", "--lr", "3e-3", "--max-tokens", "1000", *stop,
               "--save-dir", save, "--num-workers", "0", "--log-format", "simple", "--log-interval", "1", "--seed", "3")


def params(path, prefix="encoder.layers.0.self_attn.gate."):
    model = torch.load(path, weights_only=True, map_location="cpu")["model"]
    return {k: v for k, v in model.items() if k.startswith(prefix) and "running" not in k and "num_batches" not in k}


def test_warmup_schedule_survives_resume(tiny_data, tmp_path):
    full = tmp_path / "full"
    log = train(tiny_data, full, "--max-epoch", K + 1)
    # frozen through epochs 1..K (weight decay and Adam would move any parameter with a gradient), trained in K + 1
    e1, e2, e3 = (params(full / f"checkpoint{e}.pt") for e in (1, 2, 3))
    assert e1 and all(torch.equal(e1[k], e2[k]) for k in e1)
    assert any(not torch.equal(e2[k], e3[k]) for k in e2)
    # gate values of every layer × syntax head are logged at each validation
    valid = [line for line in log.splitlines() if "| valid |" in line]
    assert len(valid) == K + 1
    for line in valid:
        gates = dict(re.findall(r"\| (gate_l\dh\d) ([0-9.]+)", line))
        assert sorted(gates) == [f"gate_l{layer}h{h}" for layer in range(2) for h in range(2)]
        assert all(0.0 < float(v) < 1.0 for v in gates.values())

    # the same run stopped in the middle of epoch K and resumed from checkpoint_last.pt: still frozen until the
    # end of epoch K (the resumed epoch counter, not a fresh start), trained in epoch K + 1. (Parameters other
    # than the gates are not compared with the uninterrupted run: fairseq's own resume is not bit-exact.)
    first = [x for x in valid if "epoch 001" in x][0]
    updates_per_epoch = int(re.search(r"num_updates (\d+)", first).group(1))
    part = tmp_path / "part"
    train(tiny_data, part, "--max-update", updates_per_epoch * (K - 1) + updates_per_epoch // 2, "--no-epoch-checkpoints")
    assert all(torch.equal(params(part / "checkpoint_last.pt")[k], e1[k]) for k in e1)
    log2 = train(tiny_data, part, "--max-epoch", K, "--no-epoch-checkpoints")
    assert re.search(rf"Loaded checkpoint \S*checkpoint_last\.pt \(epoch {K} @ \d+ updates\)", log2), log2[-2000:]
    assert re.search(rf"num_updates[ =]{updates_per_epoch * K}\b", log2)
    assert all(torch.equal(params(part / "checkpoint_last.pt")[k], e1[k]) for k in e1)
    train(tiny_data, part, "--max-epoch", K + 1, "--no-epoch-checkpoints")
    assert any(not torch.equal(params(part / "checkpoint_last.pt")[k], e1[k]) for k in e1)

    out = run("fairseq-generate", tiny_data, "--user-dir", USER_DIR, "--task", "syntax_translation",
              "--path", full / "checkpoint_last.pt", "--gen-subset", "test", "--beam", "3", "--batch-size", "16",
              "--remove-bpe", "--num-workers", "0")
    assert sorted(int(i) for i in re.findall(r"^H-(\d+)\t", out, flags=re.M)) == list(range(40))
