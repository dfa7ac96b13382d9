"""syntrans-preprocess with a fixed dictionary (--srcdict/--tgtdict, as a pretrained model's): every subword the
dictionary lacks is binarized as <unk> by fairseq, and counted by us per split and side, with its lines, in the
log and in the report (docs/commands.md, A released multilingual model)."""
import re

from syntrans.cli.preprocess import main as preprocess_main
from syntrans.data.binarization import parse_preprocess_args, preprocess
from syntrans.synth import write_corpus

SIZES = {"train": 30, "valid": 6, "test": 6}


def _corpus_and_dictionary(tmp_path, left_out):
    from fairseq.data import Dictionary

    raw = tmp_path / "raw"
    write_corpus(str(raw), SIZES, 5, src="en", tgt="de", max_len=10)
    counts = {}
    for lang in ("en", "de"):
        for word in (raw / f"train.{lang}").read_text().split():
            counts[word] = counts.get(word, 0) + 1
    vocab = Dictionary()
    ordered = sorted(counts, key=lambda w: (-counts[w], w))
    for word in ordered[left_out:]:  # the most frequent left out: every split meets them
        vocab.add_symbol(word, counts[word])
    vocab.save(str(tmp_path / "dict.txt"))
    held = {line.split()[0] for line in (tmp_path / "dict.txt").read_text().splitlines()}
    missing = lambda word: word not in held  # noqa: E731  (valid and test also hold words train lacks)
    argv = ["-s", "en", "-t", "de", "--srcdict", str(tmp_path / "dict.txt"), "--tgtdict", str(tmp_path / "dict.txt"),
            "--destdir", str(tmp_path / "bin")]
    for split in SIZES:
        argv += [f"--{split}pref", str(raw / split), f"--{split}parse", str(raw / split)]
    return raw, missing, argv


def _expected(raw, split, lang, missing):
    """(count, subwords, lines) read from the text itself."""
    count, total, lines = 0, 0, []
    for i, line in enumerate((raw / f"{split}.{lang}").read_text().splitlines(), 1):
        words = line.split()
        hit = sum(missing(w) for w in words)
        count, total = count + hit, total + len(words)
        if hit:
            lines.append(i)
    return count, total, lines


def test_each_side_counts_the_subwords_the_dictionary_lacks(tmp_path):
    raw, missing, argv = _corpus_and_dictionary(tmp_path, left_out=4)
    report = preprocess(parse_preprocess_args(argv))
    assert set(report.unknown) == {(split, lang) for split in SIZES for lang in ("en", "de")}
    some = 0
    for (split, lang), unknown in report.unknown.items():
        count, total, lines = _expected(raw, split, lang, missing)
        assert (unknown.count, unknown.subwords, unknown.lines) == (count, total, lines), (split, lang)
        some += count
    assert some > 0


def test_the_log_names_the_side_its_share_and_lines(tmp_path, capsys):
    raw, missing, argv = _corpus_and_dictionary(tmp_path, left_out=4)
    assert preprocess_main(argv) == 0
    out = capsys.readouterr()
    text = out.out + out.err
    count, total, lines = _expected(raw, "train", "en", missing)
    line = next(x for x in text.splitlines() if x.startswith("[syntrans] unknown subwords, train.en:"))
    assert f"{count:,} of {total:,} subwords" in line and "<unk>" in line
    assert re.search(rf"in {len(lines):,} lines \({lines[0]}, ", line), line


def test_a_dictionary_holding_every_training_subword_logs_no_training_side(tmp_path, capsys):
    _, _, argv = _corpus_and_dictionary(tmp_path, left_out=0)
    assert preprocess_main(argv) == 0
    out = capsys.readouterr()
    assert "[syntrans] unknown subwords, train." not in out.out + out.err
