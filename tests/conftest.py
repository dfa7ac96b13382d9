"""Shared fixtures: a tiny synthetic parsed corpus, BPE'd and binarized with its syntax sidecars."""
import io
import os
from pathlib import Path

import pytest

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def make_bpe_corpus(root: Path, sizes=None, merges: int = 200, seed: int = 1) -> Path:
    """synth corpus → joint subword-nmt BPE → syntrans-preprocess; returns the data-bin directory."""
    from subword_nmt.apply_bpe import BPE
    from subword_nmt.learn_bpe import learn_bpe

    from syntrans.cli.preprocess import main as preprocess
    from syntrans.synth import write_corpus

    sizes = sizes or {"train": 300, "valid": 40, "test": 40}
    raw = root / "raw"
    write_corpus(str(raw), sizes, seed)
    text = (raw / "train.src").read_text() + (raw / "train.tgt").read_text()
    codes = io.StringIO()
    learn_bpe(io.StringIO(text), codes, merges)
    (root / "bpe.codes").write_text(codes.getvalue())  # the codes, kept for syntrans-translate
    codes.seek(0)
    bpe = BPE(codes)
    for split in sizes:
        for lang in ("src", "tgt"):
            lines = (raw / f"{split}.{lang}").read_text().splitlines()
            (root / f"{split}.bpe.{lang}").write_text("".join(bpe.process_line(x) + "\n" for x in lines))
    dest = root / "data-bin"
    argv = ["-s", "src", "-t", "tgt", "--joined-dictionary", "--destdir", str(dest)]
    for split in sizes:
        argv += [f"--{split}pref", str(root / f"{split}.bpe"), f"--{split}parse", str(raw / split)]
    assert preprocess(argv) == 0
    return dest


@pytest.fixture(scope="session")
def tiny_data(tmp_path_factory) -> Path:
    return make_bpe_corpus(tmp_path_factory.mktemp("tiny"))


@pytest.fixture(scope="module")
def single_threaded_tools():
    """The fairseq tools a test module starts run with one OpenMP thread: on a few shared cores, spinning
    threads make them up to ten times slower when another process is busy."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("OMP_NUM_THREADS", os.environ.get("OMP_NUM_THREADS", "1"))
        yield


@pytest.fixture(autouse=True)
def _no_unsafe_torch_load(monkeypatch):
    # every test must pass with torch's safe loader: never the global unsafe switch
    monkeypatch.delenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", raising=False)
    os.environ.pop("TORCH_FORCE_WEIGHTS_ONLY_LOAD", None)


SMALL = ["--encoder-layers", "2", "--decoder-layers", "2", "--encoder-embed-dim", "32", "--decoder-embed-dim", "32",
         "--encoder-ffn-embed-dim", "64", "--decoder-ffn-embed-dim", "64", "--encoder-attention-heads", "4",
         "--decoder-attention-heads", "4", "--dropout", "0", "--attention-dropout", "0"]


def build_task_and_model(data: Path, arch: str, *extra: str, seed: int = 1):
    """The syntax_translation task on ``data`` and a small model of ``arch`` built the way fairseq-train does."""
    import torch
    from fairseq import options, tasks
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf

    import syntrans

    user_dir = os.path.dirname(syntrans.__file__)
    parser = options.get_training_parser()
    args = options.parse_args_and_arch(parser, [str(data), "--user-dir", user_dir, "--task", "syntax_translation",
                                                "--arch", arch, *SMALL, *extra])
    cfg = convert_namespace_to_omegaconf(args)
    task = tasks.setup_task(cfg.task)
    torch.manual_seed(seed)
    model = task.build_model(cfg.model)
    return task, model
