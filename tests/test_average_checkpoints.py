"""syntrans-average-checkpoints: the element-wise mean of the parameters, everything else from the last checkpoint,
errors naming the file, and a result that fairseq loads and decodes with."""
import argparse
import collections
import re

import pytest
import torch
from helpers import N_TEST, generate, run, tiny_train_argv
from omegaconf import OmegaConf

import syntrans  # noqa: F401  (allow-lists the checkpoint classes for torch's safe loader)
from syntrans.checkpoints.average import average_checkpoints, last_checkpoints
from syntrans.cli.average_checkpoints import main

pytestmark = pytest.mark.usefixtures("single_threaded_tools")


def fake_state(seed, epoch=1, **model):
    g = torch.Generator().manual_seed(seed)
    params = collections.OrderedDict(
        w=torch.randn(3, 4, generator=g), half=torch.randn(5, generator=g).half(),
        steps=torch.tensor([7, 8]), mask=torch.tensor([True, False]))
    params.update(model)
    return {"model": params, "cfg": OmegaConf.create({"model": {"_name": "transformer"}, "task": {"data": "bin"}}),
            "args": argparse.Namespace(arch="transformer"), "extra_state": {"epoch": epoch, "train_iterator": {"epoch": epoch}}}


def save(path, state):
    torch.save(state, path)
    return str(path)


@pytest.mark.fast
def test_mean_of_each_parameter_the_rest_from_the_last(tmp_path):
    a, b, c = fake_state(1, epoch=1), fake_state(2, epoch=2), fake_state(3, epoch=3)
    paths = [save(tmp_path / f"{k}.pt", s) for k, s in zip("abc", (a, b, c))]
    out = average_checkpoints(paths)
    m = out["model"]
    assert list(m) == ["w", "half", "steps", "mask"]
    assert torch.allclose(m["w"], (a["model"]["w"] + b["model"]["w"] + c["model"]["w"]) / 3, rtol=1e-6, atol=0)
    assert m["half"].dtype == torch.float16  # summed in float32, cast back
    hand = sum(s["model"]["half"].float() for s in (a, b, c)) / 3
    assert torch.equal(m["half"], hand.half())
    assert torch.equal(m["steps"], a["model"]["steps"]) and torch.equal(m["mask"], a["model"]["mask"])
    assert out["extra_state"]["epoch"] == 3 and out["args"].arch == "transformer"


@pytest.mark.fast
def test_integer_entries_must_be_equal(tmp_path):
    p1 = save(tmp_path / "one.pt", fake_state(1))
    p2 = save(tmp_path / "two.pt", fake_state(2, steps=torch.tensor([7, 9])))
    with pytest.raises(ValueError, match=rf"^{re.escape(p2)}: integer entry steps \(torch.int64\) differs from"):
        average_checkpoints([p1, p2])


@pytest.mark.fast
def test_mismatched_keys_and_shapes_name_the_file(tmp_path, capsys):
    p1 = save(tmp_path / "one.pt", fake_state(1))
    extra = save(tmp_path / "extra.pt", fake_state(2, bias=torch.zeros(2)))
    expected = rf"^{re.escape(extra)}: its model has 1 parameter\(s\) that {re.escape(p1)} lacks: bias"
    with pytest.raises(ValueError, match=expected):
        average_checkpoints([p1, extra])
    lacking = fake_state(3)
    del lacking["model"]["w"]
    lacking = save(tmp_path / "lacking.pt", lacking)
    with pytest.raises(ValueError, match=rf"^{re.escape(lacking)}: its model lacks 1 parameter\(s\) that .*: w;"):
        average_checkpoints([p1, lacking])
    wide = save(tmp_path / "wide.pt", fake_state(4, w=torch.zeros(3, 5)))
    with pytest.raises(ValueError, match=rf"^{re.escape(wide)}: parameter w has shape \(3, 5\), {re.escape(p1)} has \(3, 4\)"):
        average_checkpoints([p1, wide])
    # the command line: exit 2, the message names the file, nothing written
    out = tmp_path / "avg.pt"
    assert main(["--inputs", p1, extra, "--output", str(out)]) == 2
    assert f"syntrans-average-checkpoints: error: {extra}: its model has 1 parameter(s)" in capsys.readouterr().err
    assert not out.exists()
    torch.save({"not": "a checkpoint"}, tmp_path / "junk.pt")
    assert main(["--inputs", p1, str(tmp_path / "junk.pt"), "--output", str(out)]) == 2
    assert f"{tmp_path / 'junk.pt'}: not a fairseq checkpoint" in capsys.readouterr().err


@pytest.mark.fast
def test_unsafe_checkpoints_are_refused(tmp_path):
    import decimal

    evil = fake_state(1)
    evil["extra_state"]["x"] = decimal.Decimal("1.5")  # a global outside the allow-list
    p = save(tmp_path / "evil.pt", evil)
    with pytest.raises(ValueError, match=rf"^{re.escape(p)}: cannot load this checkpoint \(UnpicklingError"):
        average_checkpoints([p, p])


@pytest.mark.fast
def test_last_checkpoints_by_number_not_by_name(tmp_path):
    for name in ("checkpoint2.pt", "checkpoint9.pt", "checkpoint10.pt", "checkpoint_last.pt", "checkpoint_best.pt",
                 "checkpoint_1_500.pt", "checkpoint_2_1000.pt", "checkpoint_3_1500.pt"):
        (tmp_path / name).write_bytes(b"")
    names = lambda paths: [p.rsplit("/", 1)[1] for p in paths]  # noqa: E731
    assert names(last_checkpoints(str(tmp_path), 2)) == ["checkpoint9.pt", "checkpoint10.pt"]
    assert names(last_checkpoints(str(tmp_path), 2, upper_bound=9)) == ["checkpoint2.pt", "checkpoint9.pt"]
    assert names(last_checkpoints(str(tmp_path), 2, by_update=True, upper_bound=1000)) == [
        "checkpoint_1_500.pt", "checkpoint_2_1000.pt"]
    with pytest.raises(ValueError, match=r"4 checkpoints checkpoint\{epoch\}\.pt were asked for, found 3"):
        last_checkpoints(str(tmp_path), 4)


@pytest.mark.slow
def test_average_of_trained_checkpoints_decodes(tiny_data, tmp_path):
    """Two checkpoints of one run (updates 4 and 8) → the mean of each parameter → fairseq-generate decodes with it."""
    from fairseq import checkpoint_utils

    save_dir = tmp_path / "ckpt"
    run("fairseq-train", *tiny_train_argv(tiny_data, save_dir, "--arch", "distance_transformer_iwslt_de_en",
                                          "--distance-heads", "2", "--lr", "1e-3", "--max-update", "8",
                                          "--save-interval-updates", "4", "--no-save-optimizer-state"))
    avg = tmp_path / "avg.pt"
    log = run("syntrans-average-checkpoints", "--inputs", save_dir, "--num-update-checkpoints", "2", "--output", avg)
    assert "averaged 2 checkpoints (checkpoint_1_4.pt, checkpoint_1_8.pt)" in log
    s4, s8 = (torch.load(save_dir / f"checkpoint_1_{u}.pt", weights_only=True) for u in (4, 8))
    averaged = checkpoint_utils.load_checkpoint_to_cpu(str(avg))  # fairseq's own loader
    assert set(averaged["model"]) == set(s8["model"])
    moved = 0
    for key, value in averaged["model"].items():
        a, b = s4["model"][key], s8["model"][key]
        if value.is_floating_point():
            assert torch.allclose(value, (a + b) / 2, rtol=1e-6, atol=1e-7), key
            moved += not torch.equal(a, b)
        else:
            assert torch.equal(value, b), key
    assert moved > 10  # the two checkpoints really differ
    assert averaged["extra_state"]["train_iterator"] == s8["extra_state"]["train_iterator"]
    out = generate(tiny_data, avg)
    assert sorted(map(int, re.findall(r"^H-(\d+)\t", out, flags=re.M))) == list(range(N_TEST))
