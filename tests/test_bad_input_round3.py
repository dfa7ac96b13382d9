"""Bad input, third round (issue 54's probes), on what users produce: checkpoints written in this module by
``fairseq-train --arch <preset>`` (their model config an ``argparse.Namespace``, as every checkpoint of the command
line is), corpora prepared by our commands. Nothing is matched by count alone, nothing written over an input, every
error one line naming the file.

Rounds 1 and 2 (test_bad_input.py, test_bad_input_round2.py) ran most probes on ``tests/fixtures/typed_config``, whose
stored config is a nested typed one that no user has any more: fairseq's loader treats the two forms differently
(item 1)."""
import os
import subprocess

import pytest
from helpers import BIN, SMALL, USER_DIR, run, tiny_train_argv

#: a preset with parse heads on both sides: its oracle ({'dbsa': {'gold_parents': True}}) changes the decoding
PRESET = "dbsa_transformer_wmt_en_de"


def command(tool, *args, timeout=300):
    """``tool`` (a console script of the venv) run as a user runs it: (exit status, stdout, stderr)."""
    env = {k: v for k, v in os.environ.items() if k != "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD"}
    env["PYTHONWARNINGS"] = "ignore"
    p = subprocess.run([str(BIN / tool), *map(str, args)], capture_output=True, text=True, env=env, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


@pytest.fixture(scope="module")
def preset_checkpoint(tiny_data, tmp_path_factory, single_threaded_tools):
    """checkpoint_last.pt of ``fairseq-train --arch PRESET`` (the SMALL sizes), two updates on the tiny corpus."""
    save = tmp_path_factory.mktemp("preset")
    run("fairseq-train", *tiny_train_argv(tiny_data, save, "--arch", PRESET, "--lr", "1e-3", "--max-update", "2",
                                          "--max-epoch", "1"))
    return save / "checkpoint_last.pt"


# --------------------------------------------------------------------------- 1. and 10.: --model-overrides


@pytest.mark.slow
@pytest.mark.parametrize("overrides, message", [
    ("{'dbas': {'gold_parents': True}}", "no group 'dbas' in the model config (names are case-sensitive); did you mean "
                                         "the group 'dbsa'?"),
    ("{'lsia': {'gold_parents': True}}", "no group 'lsia' in the model config"),
    ("{'Lisa': {'gold_parents': True}}", "no group 'Lisa' in the model config"),
    ("{'gold_parents': True}", "a field of 2 groups (lisa, dbsa): name its group"),
    ("{'dropuot': 0.3}", "no field or group 'dropuot' in the model config (names are case-sensitive); did you mean "
                         "'dropout'?"),
    ("{'_name': 'transformer'}", f"--model-overrides '_name': the checkpoint decides the architecture ({PRESET})"),
])
def test_generate_refuses_a_misspelt_override_on_a_checkpoint_of_the_command_line(tiny_data, preset_checkpoint,
                                                                                  overrides, message):
    """Item 1 (and item 10's ``_name``). A checkpoint of ``fairseq-train --arch <preset>`` keeps ``cfg.model`` as a
    Namespace, on which fairseq's loader sets every override's name before the model is built: the check found the
    misspelt name among the stored ones, and fairseq-generate decoded without the override, exit 0 (a ``_name`` chose
    fairseq's own Transformer, which failed on the syntax tensors). Round 2's test
    (test_bad_input_round2.py::test_fairseq_generate_refuses_a_misspelt_group_and_another_arch) passed on the
    typed-config fixture, whose config is no Namespace: no user has such a checkpoint."""
    status, out, err = command("fairseq-generate", tiny_data, "--user-dir", USER_DIR, "--task", "syntax_translation",
                               "--path", preset_checkpoint, "--gen-subset", "valid", "--beam", "1", "--max-len-b", "2",
                               "--batch-size", "40", "--cpu", "--model-overrides", overrides)
    assert status != 0 and message in err, err[-2000:]
    assert "H-" not in out


@pytest.mark.slow
def test_generate_takes_the_well_spelt_oracle_on_a_checkpoint_of_the_command_line(tiny_data, preset_checkpoint):
    """The same checkpoint and the group spelt right: decoded."""
    status, out, err = command("fairseq-generate", tiny_data, "--user-dir", USER_DIR, "--task", "syntax_translation",
                               "--path", preset_checkpoint, "--gen-subset", "valid", "--beam", "1", "--max-len-b", "2",
                               "--batch-size", "40", "--cpu", "--model-overrides", "{'dbsa': {'gold_parents': True}}")
    assert status == 0, err[-2000:]
    assert out.count("\nH-") + out.startswith("H-") == 40
