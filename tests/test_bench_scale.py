"""The scale benchmark's timing wrapper (syntrans.bench.scale.timed): a training that logged its end and was then
aborted by the interpreter's shutdown is recorded as such, any other failure stops the benchmark."""
import os
import sys

import pytest

from syntrans.bench import scale

pytestmark = pytest.mark.skipif(not os.path.exists(scale.TIME), reason="GNU time (/usr/bin/time) is absent")


def _script(tmp_path, body: str):
    path = tmp_path / "fake_train.py"
    path.write_text("import os, signal, sys\n" + body, encoding="utf-8")
    return [sys.executable, str(path)]


def test_an_abort_after_done_training_is_recorded_not_raised(tmp_path):
    cmd = _script(tmp_path, "print('2026 | INFO | train_inner | epoch 001:      1 / 9 loss=3, num_updates=1', flush=True)\n"
                            "print('2026 | INFO | fairseq_cli.train | done training in 3.1 seconds', flush=True)\n"
                            "os.kill(os.getpid(), signal.SIGABRT)\n")
    out = scale.timed(cmd, tmp_path / "train.log", first_update=True)
    assert out["aborted_after_training"] == "signal 6"
    assert out["first_update_s"] is not None and out["peak_mb"] > 0
    assert "(then signal 6 at exit)" in scale.markdown([{
        "pairs": 1, "fairseq_preprocess": out, "syntrans_preprocess": out, "sidecars_only": out, "wall_ratio": 1.0,
        "sidecar_bytes_per_sentence": 1.0, "fairseq_bytes_per_sentence": 1.0, "train_vanilla": out,
        "train_syntax": out}])


def test_an_abort_before_the_end_of_training_fails_the_benchmark(tmp_path):
    cmd = _script(tmp_path, "print('epoch 001:      1 / 9 num_updates=1', flush=True)\n"
                            "os.kill(os.getpid(), signal.SIGABRT)\n")
    with pytest.raises(RuntimeError, match=r"failed \(exit"):
        scale.timed(cmd, tmp_path / "train.log", first_update=True)


def test_a_failing_preprocess_fails_the_benchmark_even_after_that_phrase(tmp_path):
    cmd = _script(tmp_path, "print('done training', flush=True)\nsys.exit(3)\n")
    with pytest.raises(RuntimeError, match=r"exit 3"):
        scale.timed(cmd, tmp_path / "prep.log")
