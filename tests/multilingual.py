"""A tiny multilingual data-bin as ``translation_multi_simple_epoch`` reads it (shared by the multilingual tests):
three languages of synthetic parsed text, each pair binarized by syntrans-preprocess with one fixed dictionary (the
pretrained model's, never rebuilt) into one data-bin with its sidecars. Imports nothing heavy at module level."""
from pathlib import Path

LANGS = ("en", "de", "fr")
#: the pairs binarized (a corpus each); de-en is read from the en-de files, as fairseq reads a pair either way
BINARIZED = (("en", "de", 1), ("en", "fr", 2))
LANG_PAIRS = "en-de,en-fr,de-en"
SIZES = {"train": 40, "valid": 8, "test": 8}
#: words of the corpus left out of the fixed dictionary: pieces that become <unk>, counted
LEFT_OUT = 3


def make_multilingual_data(root: Path) -> Path:
    """The data-bin (``root/data-bin``); the fixed dictionary is ``root/dict.txt`` (and ``dict.{lang}.txt`` in the
    data-bin, as fairseq-preprocess copies it), the language list ``root/langs.txt``."""
    from fairseq.data import Dictionary

    from syntrans.cli.preprocess import main as preprocess
    from syntrans.synth import write_corpus

    raw = root / "raw"
    for src, tgt, seed in BINARIZED:
        write_corpus(str(raw / f"{src}-{tgt}"), SIZES, seed, src=src, tgt=tgt, max_len=12)
    counts = {}
    for src, tgt, _ in BINARIZED:
        for lang in (src, tgt):
            for word in (raw / f"{src}-{tgt}" / f"train.{lang}").read_text().split():
                counts[word] = counts.get(word, 0) + 1
    vocab = Dictionary()
    for word in sorted(counts, key=lambda w: (-counts[w], w))[:-LEFT_OUT]:  # the rarest left out
        vocab.add_symbol(word, counts[word])
    vocab.save(str(root / "dict.txt"))
    (root / "langs.txt").write_text("".join(f"{x}\n" for x in LANGS))
    dest = root / "data-bin"
    for src, tgt, _ in BINARIZED:
        folder = raw / f"{src}-{tgt}"
        argv = ["-s", src, "-t", tgt, "--srcdict", str(root / "dict.txt"), "--tgtdict", str(root / "dict.txt"),
                "--destdir", str(dest)]
        for split in SIZES:
            argv += [f"--{split}pref", str(folder / split), f"--{split}parse", str(folder / split)]
        assert preprocess(argv) == 0
    return dest


#: a tiny syntax_transformer for the generation tests of the multilingual task
SMALL = ["--encoder-layers", "1", "--decoder-layers", "1", "--encoder-embed-dim", "16", "--decoder-embed-dim", "16",
         "--encoder-ffn-embed-dim", "32", "--decoder-ffn-embed-dim", "32", "--encoder-attention-heads", "2",
         "--decoder-attention-heads", "2", "--share-all-embeddings"]


def generation_task_and_model(data: Path, *flags: str):
    """(task, model in eval mode) as fairseq-generate sets them up for en→de on ``data``, a new tiny
    ``syntax_transformer`` with ``flags`` (langtok options, methods), seed 1, the test split loaded."""
    import torch
    from fairseq import options, tasks
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf

    argv = [str(data), "--task", "syntax_translation_multi_simple_epoch", "--arch", "syntax_transformer",
            "--lang-pairs", LANG_PAIRS, "--langs", ",".join(LANGS), "-s", "en", "-t", "de", *SMALL, *flags]
    cfg = convert_namespace_to_omegaconf(options.parse_args_and_arch(options.get_training_parser(), argv))
    task = tasks.setup_task(cfg.task)
    torch.manual_seed(1)
    model = task.build_model(cfg.model).eval()
    task.load_dataset("test")
    return task, model
