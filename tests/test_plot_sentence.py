"""syntrans-plot sentence: the drawn arrays are the library's distances, masks and PASCAL weights (Hou et al. 2022
Fig. 1); sources (text + parser, CoNLL-U, PTB), the --matrices file, and the errors."""
import math

import numpy as np
import pytest
import torch

from syntrans.cli.plot import main as plot_main
from syntrans.mechanisms.pascal import pascal_weights
from syntrans.plots.sentence import plot_sentence, sentence_from_corpus, tree_layout
from syntrans.syntax.masks import local_range_mask
from syntrans.syntax.parsed import ParsedSentence, format_conllu
from syntrans.syntax.trees import tree_distances

PAPER_TREE = "(ROOT (S (NP (PRP I)) (VP (VBP swim) (PP (IN across) (NP (DT the) (NN river)))) (. .)))"
PAPER_WORDS = "I swim across the river .".split()
PAPER_HEADS = [2, 0, 5, 5, 2, 2]  # I ← swim (root) → river ← across, the; swim → .
DOG_TREE = "(ROOT (S (NP (DT the) (NN dog)) (VP (VBD saw) (NP (DT a) (JJ small) (NN cat))) (. .)))"
DOG_WORDS = "the dog saw a small cat .".split()
DOG_HEADS = [2, 3, 0, 6, 6, 3, 3]


def panel(fig, label):
    found = [ax for ax in fig.axes if ax.get_label() == label]
    assert len(found) == 1, (label, [ax.get_label() for ax in fig.axes])
    return found[0]


def drawn(fig, label):
    """The array actually drawn by the heat map of a panel."""
    return np.ma.getdata(panel(fig, label).images[0].get_array())


def expected(tree, heads, n, tau, sigma):
    """Independent calls of the library functions (parents by hand: head word − 1, a root its own position)."""
    gaps = tree_distances(tree)
    g = torch.tensor(gaps)
    parents = torch.tensor([[float(h - 1) if h else float(i) for i, h in enumerate(heads)]])
    return {"gaps": gaps, "hard": local_range_mask(g, None).numpy(), "soft": local_range_mask(g, tau).numpy(),
            "pascal": pascal_weights(parents, n, sigma)[0].numpy()}


def labels(fig):
    return {ax.get_label() for ax in fig.axes} - {"<colorbar>"}


@pytest.mark.parametrize("tau,sigma", [(10.0, 1.0), (1.5, 2.0)])
def test_paper_example_panels_draw_the_library_arrays(tau, sigma):
    parsed = ParsedSentence(PAPER_WORDS, PAPER_HEADS, tree=PAPER_TREE)
    fig, m = plot_sentence(parsed, tau=tau, sigma=sigma)
    want = expected(PAPER_TREE, PAPER_HEADS, 6, tau, sigma)
    assert want["gaps"] == [4, 3, 2, 1, 4]  # Hou et al. 2022, §2.2: distances between adjacent words
    assert labels(fig) == {"tree", "gaps", "arcs", "hard", "soft", "pascal"}

    bars = panel(fig, "gaps").patches
    assert [b.get_height() for b in bars] == [4, 3, 2, 1, 4]
    assert [b.get_x() + b.get_width() / 2 for b in bars] == [0.5, 1.5, 2.5, 3.5, 4.5]  # between the words
    assert [t.get_text() for t in panel(fig, "gaps").get_xticklabels()] == PAPER_WORDS
    for name in ("hard", "soft", "pascal"):
        np.testing.assert_array_equal(drawn(fig, name), want[name])
        np.testing.assert_array_equal(m[name], want[name])
        assert [t.get_text() for t in panel(fig, name).get_yticklabels()] == PAPER_WORDS
    np.testing.assert_array_equal(m["gaps"], want["gaps"])

    # spot values of the formulas: Algorithm 2 stops "swim"'s right range at the gap 4 > 3 before "."
    hard, soft, w = drawn(fig, "hard"), drawn(fig, "soft"), drawn(fig, "pascal")
    assert hard[1].tolist() == [1, 1, 1, 1, 1, 0] and hard[0].tolist() == [1] * 6
    assert math.isclose(soft[0, 2], 1 / (1 + math.exp(-2 * (4 - 3) / tau)), rel_tol=1e-6)  # Eq. 6: σ(2(g_0 − g_1)/τ)
    assert math.isclose(w[2, 4], 1 / (sigma * math.sqrt(2 * math.pi)), rel_tol=1e-6)  # "across" → parent "river"
    assert math.isclose(w[1, 1], 1 / (sigma * math.sqrt(2 * math.pi)), rel_tol=1e-6)  # the root: its own position


def test_tree_layout():
    layout = tree_layout(PAPER_TREE)
    leaves = layout.leaves
    assert [layout.labels[k] for k in leaves] == PAPER_WORDS
    assert [layout.x[k] for k in leaves] == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    assert len({layout.y[k] for k in leaves}) == 1 and layout.y[leaves[0]] == max(layout.y)  # bottom line
    children = {}
    for a, b in layout.edges:
        children.setdefault(a, []).append(b)
    assert len(layout.edges) == len(layout.labels) - 1
    for k, kids in children.items():  # above the mean of its children, one level above them
        assert layout.x[k] == pytest.approx(np.mean([layout.x[c] for c in kids]))
        assert all(layout.y[c] == layout.y[k] + 1 for c in kids if c not in leaves)
    nps = sorted(layout.x[k] for k, lab in enumerate(layout.labels) if lab == "NP")
    assert nps == [0.0, 3.5]  # (NP (PRP I)) and (NP (DT the) (NN river))
    assert layout.labels[0] == "ROOT" and layout.y[0] == 0.0


def write_corpus(path, with_trees=True):
    """CoNLL-U: line 1 the paper's sentence, line 2 empty (no sentence), line 3 the dog sentence."""
    sents = [ParsedSentence(PAPER_WORDS, PAPER_HEADS, tree=PAPER_TREE if with_trees else None, line=1),
             ParsedSentence(DOG_WORDS, DOG_HEADS, tree=DOG_TREE if with_trees else None, line=3)]
    path.write_text(format_conllu(sents), encoding="utf-8")
    return path


def test_cli_conllu_sentence_png_and_matrices(tmp_path, capsys):
    corpus = write_corpus(tmp_path / "test.tok.en.conllu")
    png, npz = tmp_path / "out" / "fig.png", tmp_path / "m.npz"
    assert plot_main(["sentence", "--parse", str(corpus), "--line", "3", "--tau", "4", "--sigma", "0.7",
                      "--out", str(png), "--matrices", str(npz)]) == 0
    summary = capsys.readouterr().out
    assert str(png) in summary and str(npz) in summary and "7 words" in summary
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000
    want = expected(DOG_TREE, DOG_HEADS, 7, 4.0, 0.7)
    assert want["gaps"] == [1, 3, 2, 1, 1, 3]
    with np.load(npz, allow_pickle=False) as f:
        assert sorted(f.files) == ["gaps", "hard", "pascal", "soft", "words"]
        assert f["words"].tolist() == DOG_WORDS
        assert f["gaps"].tolist() == want["gaps"]
        for name in ("hard", "soft", "pascal"):
            np.testing.assert_array_equal(f[name], want[name])
    # the figure of that sentence draws the same arrays
    fig, _ = plot_sentence(sentence_from_corpus(corpus, 3), tau=4.0, sigma=0.7)
    for name in ("hard", "soft", "pascal"):
        np.testing.assert_array_equal(drawn(fig, name), want[name])


def test_dependency_only_draws_only_pascal(tmp_path, capsys):
    corpus = write_corpus(tmp_path / "deps.conllu", with_trees=False)
    fig, m = plot_sentence(sentence_from_corpus(corpus, 1))
    assert sorted(m) == ["pascal"]
    assert labels(fig) == {"note", "arcs", "pascal"}
    assert sum(len(ax.images) for ax in fig.axes) == 1 and not any(ax.patches for ax in fig.axes)
    np.testing.assert_array_equal(drawn(fig, "pascal"), expected(PAPER_TREE, PAPER_HEADS, 6, 10.0, 1.0)["pascal"])
    assert "no constituency tree" in panel(fig, "note").texts[0].get_text()

    png, npz = tmp_path / "deps.svg", tmp_path / "deps.npz"
    assert plot_main(["sentence", "--parse", str(corpus), "--line", "1", "--out", str(png), "--matrices", str(npz)]) == 0
    assert "no constituency tree" in capsys.readouterr().out
    assert png.read_text().lstrip().startswith("<?xml")
    with np.load(npz) as f:
        assert sorted(f.files) == ["pascal", "words"]


def test_ptb_tree_without_dependencies(tmp_path):
    ptb = tmp_path / "test.ptb"
    ptb.write_text(PAPER_TREE + "\n" + DOG_TREE + "\n")
    fig, m = plot_sentence(sentence_from_corpus(ptb, 2))
    assert sorted(m) == ["gaps", "hard", "soft"]
    assert labels(fig) == {"tree", "gaps", "hard", "soft", "note"}
    np.testing.assert_array_equal(drawn(fig, "soft"), expected(DOG_TREE, DOG_HEADS, 7, 10.0, 1.0)["soft"])


@pytest.mark.parametrize("kind,gaps", [("right-branching", [5, 4, 3, 2, 1]), ("left-branching", [1, 2, 3, 4, 5]),
                                       ("flat", [1, 1, 1, 1, 1])])
def test_cli_text_with_trivial_parsers(kind, gaps, tmp_path, capsys):
    npz = tmp_path / "m.npz"
    assert plot_main(["sentence", " ".join(PAPER_WORDS), "--parser", kind, "--out", str(tmp_path / "f.png"),
                      "--matrices", str(npz)]) == 0
    assert f"distances {gaps}" in capsys.readouterr().out
    with np.load(npz) as f:
        assert f["gaps"].tolist() == gaps
        np.testing.assert_array_equal(f["hard"], local_range_mask(torch.tensor(gaps), None).numpy())


def test_errors(tmp_path, capsys, monkeypatch):
    corpus = write_corpus(tmp_path / "c.conllu")
    out = str(tmp_path / "f.png")
    for line, what in ((2, "no sentence on this line"), (9, "no such line")):
        assert plot_main(["sentence", "--parse", str(corpus), "--line", str(line), "--out", out]) == 2
        err = capsys.readouterr().err
        assert err.startswith("syntrans-plot sentence: error: ")
        assert f"{corpus}: line {line}: {what}" in err, err
    assert plot_main(["sentence", "--parse", str(tmp_path / "none.conllu"), "--line", "1", "--out", out]) == 2
    assert "none.conllu: no such parsed corpus" in capsys.readouterr().err
    assert plot_main(["sentence", "a b", "--parser", "flat", "--out", str(tmp_path / "f.jpg")]) == 2
    assert "unsupported image type '.jpg'" in capsys.readouterr().err
    assert not (tmp_path / "f.png").exists()

    # stanza without installed models: syntrans-parse's message (how to install, the model-free parsers), exit 2
    monkeypatch.setenv("STANZA_RESOURCES_DIR", str(tmp_path / "no_models"))
    assert plot_main(["sentence", "I swim .", "--parser", "stanza", "--lang", "en", "--out", out]) == 2
    err = capsys.readouterr().err
    assert err.startswith("syntrans-plot sentence: error: cannot load the stanza models for language 'en'")
    assert "stanza.download('en'" in err and "--parser right-branching" in err and "syntrans-parse:" not in err

    for argv in (["sentence", "--out", out],  # no sentence
                 ["sentence", "a b", "--parse", str(corpus), "--line", "1", "--out", out],  # both
                 ["sentence", "--parse", str(corpus), "--out", out],  # no --line
                 ["sentence", "--parse", str(corpus), "--line", "1", "--parser", "flat", "--out", out],
                 ["sentence", "a b", "--line", "1", "--out", out],
                 ["sentence", "a b", "--tau", "0", "--out", out],
                 ["sentence", "--parse", str(corpus), "--line", "0", "--out", out]):
        with pytest.raises(SystemExit) as e:
            plot_main(argv)
        assert e.value.code == 2
