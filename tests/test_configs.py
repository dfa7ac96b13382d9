"""Every configs/**/*.args file parses with fairseq's training parser and builds its model (at a tiny size on
the tiny synthetic corpus, no training): catches misspelled flags, unknown archs and bad option values."""
from pathlib import Path

import pytest
from helpers import SMALL, build_task_and_model

from syntrans.reproduce.config_file import read_args_file

CONFIGS = sorted((Path(__file__).resolve().parents[1] / "configs").rglob("*.args"))


def flags(path: Path):
    """The file's flags as the reproduction scripts read them (comments and blank lines dropped)."""
    return read_args_file(path).flags


def test_every_method_has_configs():
    folders = {p.parent.name for p in CONFIGS}
    assert {"distance_mask", "gated", "pascal", "lisa", "dbsa", "syncattn", "nsd"} <= folders, folders


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_config_builds_its_model(path, tiny_data):
    argv = flags(path)
    assert argv, f"{path}: no flags"
    # demo.args holds the shared flags only (demo.sh adds each method's --arch): built as the plain syntax_transformer
    arch = argv[argv.index("--arch") + 1] if "--arch" in argv else "syntax_transformer"
    rest = [a for i, a in enumerate(argv) if a != "--arch" and (i == 0 or argv[i - 1] != "--arch")]
    # the file's flags, then the tiny size (later flags win): 8 heads of 4 dims, as the WMT presets ask for up
    # to 8 syntax heads; NSD's embedding size must fit the tiny model
    nsd = ["--nsd-embed-dim", "8"] if any(a.startswith("--nsd-") for a in argv) else []
    task, model = build_task_and_model(tiny_data, arch, *rest, *SMALL, "--encoder-attention-heads", "8",
                                       "--decoder-attention-heads", "8", *nsd)
    assert model.__class__.__name__ == ("TransformerModel" if arch.startswith("transformer") else "SyntaxTransformerModel")
    assert task.__class__.__name__ == "SyntaxTranslationTask"
