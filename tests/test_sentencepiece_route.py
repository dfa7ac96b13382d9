"""SentencePiece through syntrans (issue 41): ``syntrans-prepare --bpe sentencepiece`` on a slice of Multi30k (a tiny
SentencePiece model trained on it, right-branching parses), every method preset trained a few updates on it and
decoded by stock ``fairseq-generate --post-process sentencepiece``, and ``syntrans-translate`` with the model on raw
text. The ``@@`` route writes the sidecars main wrote, byte for byte (a fixture built by main's code); pieces
crossing a word boundary are counted in the reports; a word without a piece of its own is joined to the word whose
piece holds it (refused under --strict).
"""
from __future__ import annotations

import math
import re
import shutil
from pathlib import Path

import pytest
from helpers import BIN, SHARED_DATA, USER_DIR, run, tiny_train_argv

from syntrans.data.build_sidecars import build_side
from syntrans.data.piece_routes import PieceRoute
from syntrans.data.sidecar_format import KINDS

FIXTURE = Path(__file__).parent / "fixtures" / "marker_route"
MULTI30K = SHARED_DATA / "multi30k"
N_TEST = 12  # test pairs of the slice


def test_marker_route_writes_the_sidecars_main_wrote(tmp_path):
    """The default (subword_nmt, ``@@``) route: the sidecars of a synthetic corpus's BPE text and gold parses are, byte
    for byte, those main's build_side wrote (tests/fixtures/marker_route/main.*, built before the segmentations)."""
    for route in (None, PieceRoute()):
        out = tmp_path / ("default" if route is None else "route")
        rep = build_side(str(FIXTURE / "text.src"), str(FIXTURE / "parse.src.conllu"), str(out), route=route)
        assert rep.kinds == list(KINDS) and rep.crossing == 0 and "crossing" not in rep.summary()
        for kind in KINDS:
            for ext in ("bin", "idx"):
                assert Path(f"{out}.{kind}.{ext}").read_bytes() == (FIXTURE / f"main.{kind}.{ext}").read_bytes(), kind


def conllu(sentences):
    """CoNLL-U of right-branching dependency parses of word lists (each word headed by the next, the last the root)."""
    blocks = []
    for words in sentences:
        n = len(words)
        blocks.append("".join(f"{i}\t{w}\t_\tX\tX\t_\t{0 if i == n else i + 1}\t{'root' if i == n else 'dep'}\t_\t_\n"
                              for i, w in enumerate(words, 1)))
    return "\n".join(blocks) + "\n"


def test_crossing_pieces_are_counted_and_a_word_without_a_piece_is_joined(tmp_path):
    """SentencePiece pieces of a parse that splits ``don't`` into ``do n't``: ``▁don`` holds characters of both words
    (a crossing piece, the word of its first character), ``'t`` opens ``n't``; the report counts it, names the line
    and says so in its summary. A piece ``▁a.`` swallowing the word ``.`` leaves it without a piece: joined to ``a``
    (one word, the root), counted; under --strict refused, the file, the line and the word named."""
    text, parse = tmp_path / "t.en", tmp_path / "p.en.conllu"
    text.write_text("▁I ▁don 't ▁know\n▁yes\n", encoding="utf-8")
    parse.write_text(conllu([["I", "do", "n't", "know"], ["yes"]]), encoding="utf-8")
    rep = build_side(str(text), str(parse), str(tmp_path / "out"), route=PieceRoute("sentencepiece"))
    assert (rep.crossing, rep.crossing_lines, rep.words) == (1, [1], 5)
    assert "pieces crossing a word boundary 1 in 1 lines (lines 1)" in rep.summary()
    from syntrans.data.sidecars import binarized_sizes

    assert list(binarized_sizes(str(tmp_path / "out.word"))) == [4, 1]
    text.write_text("▁a.\n", encoding="utf-8")
    parse.write_text(conllu([["a", "."]]), encoding="utf-8")
    rep = build_side(str(text), str(parse), str(tmp_path / "out3"), route=PieceRoute("sentencepiece"))
    assert (rep.joined, rep.joined_lines, rep.words) == (1, [1], 1)
    assert list(binarized_sizes(str(tmp_path / "out3.head"))) == [1]
    with pytest.raises(ValueError, match=r"t\.en, line 1: parse word 2 '\.' has no subword piece of its own"):
        build_side(str(text), str(parse), str(tmp_path / "out2"), route=PieceRoute("sentencepiece"), strict=True)
    assert not list(tmp_path.glob("out2.*"))  # nothing half-written


@pytest.fixture(scope="module")
def sp_corpus(tmp_path_factory):
    """A slice of Multi30k prepared with a SentencePiece model of 400 pieces trained on it (right-branching parses,
    both views on both sides); (Prepared, log lines)."""
    if not (MULTI30K / "train.de").is_file():
        pytest.skip(f"{MULTI30K} is absent (the shared real-data folder is optional)")
    from syntrans.prep import prepare_corpus
    from syntrans.prep.segmentation import Segmentation

    root = tmp_path_factory.mktemp("sp")
    raw = root / "raw"
    raw.mkdir()
    for lang in ("de", "en"):
        train = (MULTI30K / f"train.{lang}").read_text(encoding="utf-8").splitlines()
        (raw / f"train.{lang}").write_text("\n".join(train[:300]) + "\n", encoding="utf-8")
        (raw / f"val.{lang}").write_text("\n".join(train[300:320]) + "\n", encoding="utf-8")
        test = (MULTI30K / f"test_2016_flickr.{lang}").read_text(encoding="utf-8").splitlines()
        (raw / f"test_2016_flickr.{lang}").write_text("\n".join(test[:N_TEST]) + "\n", encoding="utf-8")
    logs = []
    prepared = prepare_corpus("multi30k", "de", "en", root / "out", raw_dir=raw, smoke=True, parser="right-branching",
                              bpe_ops=400, log=logs.append, segmentation=Segmentation("sentencepiece"))
    return prepared, logs


def test_prepare_with_sentencepiece(sp_corpus):
    """The bpe step trains the model and encodes every split into ▁ pieces; the sidecars are built by characters and
    the crossing pieces of every side are in the reports, prepared.json and the summary; the step settings name the
    segmentation, so that another one redoes bpe and binarize."""
    import json

    from syntrans.prep import markers

    prepared, logs = sp_corpus
    out = prepared.out_dir
    assert prepared.segmentation == "sentencepiece" and prepared.codes == out / "bpe" / "spm.model"
    assert (out / "bpe" / "spm.model").is_file()
    first = (out / "bpe" / "test.en").read_text(encoding="utf-8").splitlines()[0]
    assert first.startswith("▁") and "@@" not in first
    assert set(prepared.crossing) == {f"{s}.{lang}" for s in ("train", "valid", "test") for lang in ("de", "en")}
    assert json.loads((out / "prepared.json").read_text())["crossing"] == prepared.crossing
    assert any("pieces crossing a word boundary" in m and "[syntrans] train.de" in m for m in logs)
    assert "pieces crossing a word boundary, aligned by characters: " in logs[-1], logs[-1]
    settings = markers.load(out, "bpe")["settings"]["segmentation"]
    assert settings == {"bpe": "sentencepiece", "sentencepiece_model": "trained on the training text"}
    assert markers.load(out, "binarize")["settings"]["segmentation"] == "sentencepiece"
    for kind in KINDS:
        assert (prepared.data_bin / f"test.de-en.de.{kind}.bin").is_file()


def test_a_given_model_and_its_checksum_redo_bpe_and_binarize(sp_corpus, tmp_path):
    """``--sentencepiece-model M``: the bpe step's settings hold M's sha256; prepared again with it, the bpe and
    binarize steps run again (the parses are kept)."""
    from syntrans.prep import prepare_corpus
    from syntrans.prep.segmentation import Segmentation

    prepared, _ = sp_corpus
    out = tmp_path / "again"
    shutil.copytree(prepared.out_dir, out, ignore=shutil.ignore_patterns("data-bin"))
    model = tmp_path / "given.model"
    shutil.copyfile(prepared.codes, model)
    logs = []
    raw = prepared.out_dir.parent / "raw"
    prepare_corpus("multi30k", "de", "en", out, raw_dir=raw, smoke=True, parser="right-branching", bpe_ops=400,
                   log=logs.append, segmentation=Segmentation("sentencepiece", sentencepiece_model=str(model)))
    running = [m.split()[1].rstrip(":") for m in logs if re.match(r"step \w+: running", m)]
    assert running == ["bpe", "binarize"], logs


#: what the SentencePiece data trains: one model holding all seven methods (the distance mask, a gate over it and a
#: PASCAL head, LISA, DBSA, SyncAttn, NSD on both sides; the same flags as test_distributed's COMBO), and the two
#: baselines that are presets of their own (SLA; +S&H, which reads the dependency labels). +MULTI-TASK is refused
#: with --bpe sentencepiece (its linearised target is written in subword-nmt pieces).
SYSTEMS = {
    "all seven methods": ["--arch", "syntax_transformer", "--distance-layers", "0", "--distance-heads", "1",
                          "--pascal-layers", "0", "--pascal-heads", "1", "--gate-layers", "0", "--gate-hidden", "8",
                          "--lisa-layers", "1", "--dbsa-encoder-layers", "1", "--dbsa-decoder-layers", "0",
                          "--sync-attn", "--sync-layer", "0", "--nsd-kind", "dD", "--nsd-src-output",
                          "--nsd-tgt-input", "linear", "--nsd-tgt-output", "--nsd-embed-dim", "8"],
    "SLA": ["--arch", "sla_transformer_iwslt_de_en"],
    "+S&H": ["--arch", "sh_transformer_wmt_en_de"],
}


@pytest.mark.slow
@pytest.mark.parametrize("system", list(SYSTEMS))
def test_every_method_trains_and_decodes_with_sentencepiece(sp_corpus, system, tmp_path):
    """Each method trains 2 updates on the SentencePiece data (stock fairseq-train) and stock fairseq-generate
    decodes every test line, ``--post-process sentencepiece`` turning the pieces back into text."""
    prepared, _ = sp_corpus
    data = prepared.data_bin
    save = tmp_path / "run"
    log = run("fairseq-train", *tiny_train_argv(data, save, *SYSTEMS[system], "--lr", "1e-3", "--max-update", "2",
                                                "--disable-validation"))
    losses = [float(x) for x in re.findall(r"\| loss ([-+0-9.eE]+|nan|inf) \|", log)]
    assert losses and all(math.isfinite(x) for x in losses), (system, log[-2000:])
    out = run("fairseq-generate", data, "--user-dir", USER_DIR, "--task", "syntax_translation",
              "--path", save / "checkpoint_last.pt", "--gen-subset", "test", "--beam", "2", "--batch-size", "16",
              "--post-process", "sentencepiece", "--num-workers", "0")
    ids = sorted(int(i) for i in re.findall(r"^H-(\d+)\t", out, flags=re.M))
    assert ids == list(range(N_TEST)), (system, out[-2000:])
    targets = re.findall(r"^T-\d+\t(.*)$", out, flags=re.M)
    assert targets and not any("\u2581" in t for t in targets), (system, targets[:3])
    if system == "all seven methods":
        translate(prepared, save / "checkpoint_last.pt", tmp_path)


def translate(prepared, ckpt, tmp_path):
    """syntrans-translate with the SentencePiece model on raw (untokenized) source text: a line out per line in."""
    import subprocess

    raw = (prepared.out_dir / "ref" / "test.de").read_text(encoding="utf-8").splitlines()[:4]
    src = tmp_path / "in.de"
    src.write_text("\n".join(raw) + "\n", encoding="utf-8")
    p = subprocess.run([str(BIN / "syntrans-translate"), "--checkpoint", str(ckpt), "--data", str(prepared.data_bin),
                        "--bpe", "sentencepiece", "--sentencepiece-model", str(prepared.codes), "--parser",
                        "right-branching", "--input", str(src), "--device", "cpu", "--beam", "2"],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    lines = p.stdout.splitlines()
    assert len(lines) == 4 and not any("\u2581" in x for x in lines), p.stdout


def test_translate_refuses_mixed_segmentation_flags():
    """syntrans-translate: --bpe sentencepiece needs its model, and --bpe-codes does not go with it."""
    from syntrans.cli.translate import build_parser, check_files

    parser = build_parser()
    args = parser.parse_args(["--checkpoint", "c.pt", "--data", "d", "--bpe", "sentencepiece"])
    with pytest.raises(ValueError, match="--bpe sentencepiece needs --sentencepiece-model"):
        check_files(args)
    args = parser.parse_args(["--checkpoint", "c.pt", "--data", "d", "--bpe", "sentencepiece", "--sentencepiece-model",
                              "m", "--bpe-codes", "codes"])
    with pytest.raises(ValueError, match="--bpe-codes does not go with --bpe sentencepiece"):
        check_files(args)


