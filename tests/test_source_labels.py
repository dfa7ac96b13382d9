"""+S&H (Sennrich & Haddow 2016 as Bugliarello & Okazaki 2020, App. A adapt it): dependency labels from the parses
to the label sidecar, to per-token ids in a batch, to the last 10 dimensions of the encoder's token embeddings.

Expected values are written out by hand: the ids are positions in the alphabetical list of the 37 UD v2 relations
(acl 0 … amod 3, case 6, cc 7, compound 10, dep 14, det 15, fixed 19, nmod 25, nsubj 26, obj 28, obl 29, punct 32,
root 34, xcomp 36; other 37)."""
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from helpers import build_task_and_model, first_batch

from syntrans.cli.preprocess import main as preprocess_main
from syntrans.data import sidecars
from syntrans.data.build_sidecars import build_side
from syntrans.data.features import FEATURES, FeatureNeeds
from syntrans.data.sidecars import Sidecar, sidecar_prefix
from syntrans.hub.source_syntax import line_arrays
from syntrans.syntax.deprels import N_LABELS, OTHER_LABEL, UD_RELATIONS, label_id, label_name
from syntrans.syntax.parsed import ParsedSentence, read_parsed
from syntrans.tasks.syntax_translation import SyntaxTranslationConfig, SyntaxTranslationTask

pytestmark = pytest.mark.fast

# ------------------------------------------------------------------------------------------- 1. the label ids


def test_inventory_is_the_37_ud_relations():
    assert len(UD_RELATIONS) == len(set(UD_RELATIONS)) == 37
    assert list(UD_RELATIONS) == sorted(UD_RELATIONS)
    assert (OTHER_LABEL, N_LABELS) == (37, 38)
    assert [label_name(i) for i in (0, 14, 34, 36, 37)] == ["acl", "dep", "root", "xcomp", "other"]
    with pytest.raises(ValueError, match="0..37"):
        label_name(38)


@pytest.mark.parametrize("deprel, expected", [
    ("root", 34), ("ROOT", 34), ("nsubj", 26), ("nsubj:pass", 26), ("nmod:poss", 25), ("acl:relcl", 0),
    ("compound:prt", 10), ("obj", 28), ("punct", 32), ("xcomp", 36),
    ("dobj", 28), ("nsubjpass", 26), ("auxpass", 5), ("neg", 2), ("mwe", 19),  # UD v1 names: their v2 relation
    ("_", 37), ("", 37), (None, 37), ("prep", 37), ("dep:self", 14),
])
def test_label_id_by_hand(deprel, expected):
    assert label_id(deprel) == expected


CONLLU = """# line = 1
1\tthe\t_\t_\t_\t_\t2\tdet\t_\t_
2\tcat\t_\t_\t_\t_\t3\tnsubj\t_\t_
3\tsat\t_\t_\t_\t_\t0\troot\t_\t_
4\ton\t_\t_\t_\t_\t6\tcase\t_\t_
5\tthe\t_\t_\t_\t_\t6\tdet\t_\t_
6\tmat\t_\t_\t_\t_\t3\tobl:tmod\t_\t_
7\t.\t_\t_\t_\t_\t3\tpunct\t_\t_

# line = 2
1\toh\t_\t_\t_\t_\t0\troot\t_\t_

# line = 2
1\tyes\t_\t_\t_\t_\t3\tdiscourse\t_\t_
2\tit\t_\t_\t_\t_\t3\tnsubj:pass\t_\t_
3\tis\t_\t_\t_\t_\t0\troot\t_\t_

# line = 4
1\twow\t_\t_\t_\t_\t0\tprep\t_\t_

"""
TEXT = ["the c@@ at sat on the m@@ at .", "oh y@@ es it is", "", "wow"]
# per word: det 15, nsubj 26, root 34, case 6, det 15, obl 29, punct 32 | root 34 + discourse 16, nsubj 26,
# root 34 (the second sentence of line 2 follows the first) | empty line | "prep" is no UD relation: other 37
LABELS = [[15, 26, 34, 6, 15, 29, 32], [34, 16, 26, 34], [], [37]]
# per subword its word's label, EOS -1: "c@@ at" and "m@@ at" (line 1) and "y@@ es" (line 2) repeat theirs
TOKEN_LABELS = [[15, 26, 26, 34, 6, 15, 29, 29, 32, -1], [34, 16, 16, 26, 34, -1], [-1], [37, -1]]


def write_corpus(root: Path) -> Path:
    (root / "train.src").write_text("".join(x + "\n" for x in TEXT), encoding="utf-8")
    (root / "train.tgt").write_text("der kat@@ ze\nja\nnichts\nwau\n", encoding="utf-8")
    (root / "parse.src.conllu").write_text(CONLLU, encoding="utf-8")
    # the target parse is PTB brackets: no dependencies, so no label sidecar
    (root / "parse.tgt.ptb").write_text("(S (D der) (N katze))\n(X ja)\n(X nichts)\n(X wau)\n", encoding="utf-8")
    return root


def test_parse_reads_the_deprels():
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "p.conllu"
        p.write_text(CONLLU, encoding="utf-8")
        s = read_parsed(str(p))
    assert s[0].deprels == ["det", "nsubj", "root", "case", "det", "obl:tmod", "punct"]
    with pytest.raises(ValueError, match="3 words but 2 dependency relations"):
        ParsedSentence(["a", "b", "c"], [0, 1, 1], ["root", "dep"]).validate("here")


# ------------------------------------------------------------------------------------- 2. subwords, the feature


def test_subwords_take_their_words_label():
    build = FEATURES["src_dep_label"].build
    # words: 0 (2 pieces), 1 (1 piece), 2 (3 pieces); labels nsubj 26, root 34, obj 28
    got = build({"word": np.array([0, 0, 1, 2, 2, 2]), "label": np.array([26, 34, 28])})
    assert got.tolist() == [26, 26, 34, 28, 28, 28, -1] and got.dtype == np.int64
    assert build({"word": np.array([], dtype=np.int64), "label": np.array([], dtype=np.int64)}).tolist() == [-1]
    with pytest.raises(ValueError, match="3 words but its label row gives 2"):
        build({"word": np.array([0, 1, 2]), "label": np.array([1, 2])})
    with pytest.raises(ValueError, match="word 1 .* label id 38"):
        build({"word": np.array([0, 1]), "label": np.array([1, 38])})


def test_translation_input_gets_labels_like_preprocess():
    """syntrans-translate builds a line's sidecar items in memory with the same label ids."""
    sentences = [ParsedSentence(["oh"], [0], ["root"]), ParsedSentence(["yes", "it", "is"], [3, 3, 0],
                                                                       ["discourse", "nsubj:pass", "root"])]
    items = line_arrays("oh y@@ es it is".split(), sentences, "input line 1")
    assert items["label"] == LABELS[1] and items["word"] == [0, 1, 1, 2, 3]


# --------------------------------------------------------------------------- 3. round trip through preprocessing


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    root = write_corpus(tmp_path_factory.mktemp("labels"))
    dest = root / "bin"
    assert preprocess_main(["-s", "src", "-t", "tgt", "--trainpref", str(root / "train"), "--validpref",
                            str(root / "train"), "--trainparse", str(root / "parse"), "--validparse",
                            str(root / "parse"), "--destdir", str(dest), "--joined-dictionary", "--workers", "1"]) == 0
    return dest


def load(dest: Path, requests=("src_dep_label",), left_pad_source=True):
    cfg = SyntaxTranslationConfig(data=str(dest), source_lang="src", target_lang="tgt", train_subset="train",
                                  dataset_impl="mmap", required_seq_len_multiple=1, left_pad_source=left_pad_source)
    task = SyntaxTranslationTask.setup_task(cfg)
    task.syntax_needs = FeatureNeeds(required=set(requests))
    task.load_dataset("train")
    return task.dataset("train")


def test_label_sidecar_round_trip(data):
    p = lambda lang, kind: sidecar_prefix(str(data), "train", "src", "tgt", lang, kind)  # noqa: E731
    sc = Sidecar(p("src", "label"))
    assert [sc[i].tolist() for i in range(len(sc))] == LABELS
    assert not sidecars.exists(p("tgt", "label")) and not sidecars.exists(p("tgt", "head"))
    ds = load(data)
    assert [ds[i]["src_dep_label"].tolist() for i in range(4)] == TOKEN_LABELS


@pytest.mark.parametrize("left", [True, False], ids=["left-pad", "right-pad"])
def test_batch_pads_labels_like_tokens(data, left):
    ds = load(data, left_pad_source=left)
    batch = ds.collater([ds[i] for i in range(4)])
    tokens, labels = batch["net_input"]["src_tokens"], batch["net_input"]["src_dep_label"]
    assert labels.shape == tokens.shape and labels.dtype == torch.int64
    for row, i in enumerate(batch["id"].tolist()):
        mine, width = TOKEN_LABELS[i], tokens.size(1)
        fill = [-2] * (width - len(mine))
        assert labels[row].tolist() == (fill + mine if left else mine + fill), (i, left)


def test_report_counts_lines_with_other_labels(data, tmp_path):
    root = data.parent
    rep = build_side(str(root / "train.src"), str(root / "parse.src.conllu"), str(tmp_path / "out"))
    assert rep.kinds == ["word", "head", "label"] and rep.other_labels == [4]
    assert "lines with a dependency relation outside UD v2 1 (lines 4) (label 'other')" in rep.summary()


def test_label_sidecar_disagreeing_with_heads_is_refused(data, tmp_path):
    bad = tmp_path / "bin"
    shutil.copytree(data, bad)
    prefix = sidecar_prefix(str(bad), "train", "src", "tgt", "src", "label")
    sidecars.write(prefix, [LABELS[0], [34, 16], [], [37]])
    with pytest.raises(ValueError) as e:
        load(bad)
    msg = str(e.value)
    assert prefix in msg and "sentence 1 (line 2 of the text) has 2 labels" in msg and "has 4 words" in msg


# ------------------------------------------------------------------------------------------- 4. the embedding

ARCH = "sh_transformer_wmt_en_de"


def expected_embedding(model, tokens: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Each row computed alone from the two tables: √C · E_tok[token], its last 10 dimensions replaced by the label
    table's row (0: padding, 1: EOS, 2 + l: label l)."""
    E, L = model.encoder.embed_tokens.weight, model.encoder.labels.embed.weight
    C = E.size(1)
    out = torch.empty(*tokens.shape, C)
    for b in range(tokens.size(0)):
        for t in range(tokens.size(1)):
            lab = int(labels[b, t])
            row = 0 if lab == -2 else 1 if lab == -1 else lab + 2
            out[b, t, :C - 10] = E[tokens[b, t], :C - 10] * C ** 0.5
            out[b, t, C - 10:] = L[row]
    return out


@pytest.mark.parametrize("left", [True, False], ids=["left-pad", "right-pad"])
def test_embedding_replaces_the_last_10_dimensions(tiny_data, left):
    task, model = build_task_and_model(tiny_data, ARCH)
    assert model.encoder.labels.embed.weight.shape == (N_LABELS + 2, 10)
    assert torch.all(model.encoder.labels.embed.weight[0] == 0)
    task.cfg.left_pad_source = left
    batch = first_batch(task, "valid", 4)
    net = batch["net_input"]
    tokens, labels = net["src_tokens"], net["src_dep_label"]
    assert (tokens == task.source_dictionary.pad()).any()  # the batch is padded
    # the labels by hand from the sidecars: each token its word's label, EOS −1, padding −2
    ds = task.dataset("valid")
    for row, i in enumerate(batch["id"].tolist()):
        words, word_labels = ds.src_side["word"][i], ds.src_side["label"][i]
        mine = [int(word_labels[w]) for w in words] + [-1]
        fill = [-2] * (tokens.size(1) - len(mine))
        assert labels[row].tolist() == (fill + mine if left else mine + fill)
    model.eval()
    with torch.no_grad():
        embed = model.encoder(**{k: v for k, v in net.items() if k != "prev_output_tokens"})["encoder_embedding"][0]
        want = expected_embedding(model, tokens, labels)
    torch.testing.assert_close(embed, want, rtol=1e-6, atol=1e-6)
    # the labels matter: other labels give other embeddings in the last 10 dimensions only
    shifted = torch.where(labels >= 0, (labels + 1) % N_LABELS, labels)
    with torch.no_grad():
        other = model.encoder(**{**{k: v for k, v in net.items() if k != "prev_output_tokens"},
                                 "src_dep_label": shifted})["encoder_embedding"][0]
    C = embed.size(-1)
    assert torch.equal(other[..., :C - 10], embed[..., :C - 10])
    words = labels >= 0
    assert not torch.isclose(other[..., C - 10:][words], embed[..., C - 10:][words]).all(-1).any()


def test_labels_embed_dim_must_fit_the_model(tiny_data):
    with pytest.raises(ValueError, match=r"--labels-embed-dim must lie in 1\.\.31 .* found 32"):
        build_task_and_model(tiny_data, ARCH, "--labels-embed-dim", "32")


# ------------------------------------------------------------------------------ 5. data without the label sidecar


def without_labels(tiny_data, root: Path) -> Path:
    old = root / "data-bin"
    shutil.copytree(tiny_data, old)
    removed = list(old.glob("*.label.*"))
    assert len(removed) == 12  # 3 splits × 2 sides × .bin/.idx
    for p in removed:
        p.unlink()
    return old


def test_data_without_labels_is_refused_naming_the_file_and_the_remedy(tiny_data, tmp_path):
    old = without_labels(tiny_data, tmp_path)
    task, model = build_task_and_model(old, ARCH)
    with pytest.raises(FileNotFoundError) as e:
        task.load_dataset("train")
    msg = str(e.value)
    assert "src_dep_label" in msg and str(old / "train.src-tgt.src.label.{idx,bin}") in msg
    assert "re-run syntrans-preprocess" in msg and "syntrans-prepare" in msg and "DEPREL" in msg
    # the other methods read the same data as before
    task, model = build_task_and_model(old, "pascal_transformer_iwslt_de_en")
    batch = first_batch(task, "valid", 3)
    assert "src_parent_middle" in batch["net_input"] and "src_dep_label" not in batch["net_input"]
    # the remedy: syntrans-preprocess --sidecars-only on the same BPE text and parses (make_bpe_corpus's) adds them
    tokens = (old / "train.src-tgt.src.bin").read_bytes()
    root = tiny_data.parent
    argv = ["-s", "src", "-t", "tgt", "--destdir", str(old), "--sidecars-only"]
    for split in ("train", "valid", "test"):
        argv += [f"--{split}pref", str(root / f"{split}.bpe"), f"--{split}parse", str(root / "raw" / split)]
    assert preprocess_main(argv) == 0
    assert (old / "train.src-tgt.src.bin").read_bytes() == tokens
    task, model = build_task_and_model(old, ARCH)
    assert first_batch(task, "train", 2)["net_input"]["src_dep_label"].shape[0] == 2


def test_prepare_binarizes_again_a_folder_without_labels(tmp_path):
    """A syntrans-prepare folder binarized before the label sidecar existed (its marker's settings lack the sidecar
    kinds, its data-bin the label files): running syntrans-prepare again redoes the binarize step only."""
    from syntrans.prep.pipeline import prepare_corpus

    out, sizes = tmp_path / "syn", {"train": 60, "valid": 10, "test": 10}
    p = prepare_corpus("synthetic", "src", "tgt", out, smoke=True, smoke_sizes=sizes, log=lambda m: None)
    marker = out / ".done" / "binarize.json"
    m = json.loads(marker.read_text())
    del m["settings"]["sidecars"]
    m["outputs"] = [x for x in m["outputs"] if ".label." not in x]
    marker.write_text(json.dumps(m))
    for f in p.data_bin.glob("*.label.*"):
        f.unlink()
    log = []
    prepare_corpus("synthetic", "src", "tgt", out, smoke=True, smoke_sizes=sizes, log=log.append)
    assert "step binarize: running (its settings changed (sidecars))" in log
    assert "step parse: done before, skipped" in log
    assert Sidecar(str(p.data_bin / "train.src-tgt.src.label")).sizes.sum() > 0


def test_heads_without_relations_read_as_their_conllu():
    """A parse with heads but no DEPREL in memory (the trivial parsers, a fallback) gives the labels its CoNLL-U file
    gives (write_conllu writes root/dep): root 34, dep 14."""
    import tempfile

    from syntrans.syntax.parsed import write_conllu

    s = ParsedSentence(["a", "b", "c"], [2, 0, 2], line=1)
    assert line_arrays(["a", "b", "c"], [s], "input line 1")["label"] == [14, 34, 14]
    with tempfile.TemporaryDirectory() as d:
        write_conllu(str(Path(d) / "p.conllu"), [s])
        back = read_parsed(str(Path(d) / "p.conllu"))
    assert line_arrays(["a", "b", "c"], back, "line 1")["label"] == [14, 34, 14]
