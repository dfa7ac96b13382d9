"""NSD (Ma et al. 2019) end to end with stock fairseq tools: fairseq-train → fairseq-generate for a source-only
and a source+target configuration on the synthetic corpus; the value range is stored in the checkpoint, and
source+target generation needs no target parse."""
import math
import re
import shutil

import pytest
from fairseq import checkpoint_utils
from helpers import N_TEST, UPDATES, generate, metric, metric_lines, short_runs

import syntrans  # noqa: F401  (allow-lists the checkpoint classes for torch's safe loader)

CASES = {  # name: (arch and flags, logged NSD losses)
    "src": (["--arch", "nsd_src_transformer_base"], ("nsd_src_ce", "nsd_src_dist")),
    "src_tgt": (["--arch", "nsd_transformer_base"], ("nsd_src_ce", "nsd_src_dist", "nsd_tgt_ce", "nsd_tgt_dist")),
    # another Table 1 row: dS by concatenation on the source, no PE, no output
    "dS_concat": (["--arch", "nsd_transformer", "--nsd-kind", "dS", "--nsd-src-input", "concat"], ()),
}


pytestmark = pytest.mark.usefixtures("single_threaded_tools")  # conftest


@pytest.fixture(scope="module")
def trained(tiny_data, tmp_path_factory):
    """Train each case at most once per module: name → (checkpoint path, training log)."""
    return short_runs(tiny_data, tmp_path_factory, lambda name: [*CASES[name][0], "--nsd-embed-dim", "8"])


@pytest.mark.parametrize("name", list(CASES))
def test_train_logs_nsd_losses(name, trained):
    _, log = trained(name)
    assert re.search(rf"num_updates[ =]{UPDATES}\b", log), log[-2000:]
    lines = metric_lines(log, "train_inner") + metric_lines(log, "valid")
    assert len(lines) == UPDATES + 1, log[-3000:]
    for line in lines:
        for key in ("loss", "nll_loss", *CASES[name][1]):
            value = metric(line, key)
            assert value is not None and math.isfinite(value) and value > 0, (key, line)
        for key in {"nsd_src_ce", "nsd_tgt_ce"} - set(CASES[name][1]):
            assert metric(line, key) is None, (key, line)
    assert re.search(r"NSD (dD|dS) of the src side \(src\) in train: values -?\d+\.\.-?\d+", log), log[:5000]


@pytest.mark.parametrize("name", list(CASES))
def test_generate_and_range_in_checkpoint(name, tiny_data, trained, tmp_path):
    ckpt, _ = trained(name)
    models, cfg, _ = checkpoint_utils.load_model_ensemble_and_task([str(ckpt)], arg_overrides={"data": str(tiny_data)})
    enc = models[0].encoder.nsd
    assert enc.v_min is not None and enc.v_min == cfg.model.nsd_src_min and enc.v_max == cfg.model.nsd_src_max
    out = generate(tiny_data, ckpt)
    hyps = re.findall(r"^H-(\d+)\t", out, flags=re.M)
    assert sorted(map(int, hyps)) == list(range(N_TEST)), out[-2000:]
    if name == "src_tgt":  # the target parse is not needed: same hypotheses without the test split's target sidecars
        bare = tmp_path / "data-bin"
        shutil.copytree(tiny_data, bare)
        removed = [p for p in bare.glob("test.src-tgt.tgt.*.*") if p.name.split(".")[3] in ("word", "head", "dist")]
        assert len(removed) == 6
        for p in removed:
            p.unlink()
        without = generate(bare, ckpt)
        assert re.findall(r"^H-.*$", without, flags=re.M) == re.findall(r"^H-.*$", out, flags=re.M)
