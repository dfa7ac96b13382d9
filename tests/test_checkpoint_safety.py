"""fairseq checkpoints load with torch's weights-only loader once syntrans is imported; any other global is refused."""
import argparse
import collections
import decimal
import os
import pickle

import pytest
import torch
from omegaconf import OmegaConf

import syntrans  # noqa: F401  (allow-lists the classes fairseq checkpoints need)

pytestmark = pytest.mark.fast


class Sneaky:
    def __reduce__(self):
        return (os.getcwd, ())


def fairseq_like_state():
    cfg = OmegaConf.create({"model": {"_name": "syntax_transformer", "dropout": 0.3, "arch": None},
                            "task": {"data": "bin", "source_lang": "de"}, "optimization": {"lr": [0.001]}})
    return {"args": argparse.Namespace(arch="syntax_transformer", lr=[1e-3]), "cfg": cfg,
            "model": collections.OrderedDict(w=torch.ones(2)), "extra_state": {"epoch": 3, "train_iterator": {"epoch": 3}}}


def test_fairseq_like_checkpoint_loads_weights_only(tmp_path):
    path = tmp_path / "ck.pt"
    torch.save(fairseq_like_state(), path)
    state = torch.load(path, weights_only=True)
    assert state["args"].arch == "syntax_transformer"
    assert state["cfg"].model.dropout == 0.3
    assert torch.equal(state["model"]["w"], torch.ones(2))


@pytest.mark.parametrize("payload", [Sneaky(), decimal.Decimal("1.5")])
def test_other_globals_are_refused(tmp_path, payload):
    path = tmp_path / "evil.pt"
    torch.save({"model": {}, "x": payload}, path)
    with pytest.raises(pickle.UnpicklingError):
        torch.load(path, weights_only=True)
