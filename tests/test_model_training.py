"""The parts of the stanza model training (syntrans.parsing.model_training) and of the parser scores
(syntrans.parsing.parser_scores) that need no training: attachment scores, labelled bracket F1 and token F1 on
hand-made pairs whose scores are counted by hand in the comments; random indexing, the tokenizer's training files,
the CoNLL-U cleaning, resources.json, and the resumable build's keep/move rule."""
import json
from types import SimpleNamespace

import numpy as np
import pytest

from syntrans.parsing.parser_scores import (
    attachment_scores,
    bracket_counts,
    bracket_scores,
    brackets,
    read_conllu,
    read_conllu_tokens,
    span_f1,
    text_spans,
    token_spans,
)

pytestmark = pytest.mark.fast


def tree(text: str):
    """A bracketed tree as nested SimpleNamespace(label, children)."""
    tokens = text.replace("(", " ( ").replace(")", " ) ").split()
    pos = 0

    def node():
        nonlocal pos
        if tokens[pos] != "(":
            pos += 1
            return SimpleNamespace(label=tokens[pos - 1], children=[])
        label, pos = tokens[pos + 1], pos + 2
        kids = []
        while tokens[pos] != ")":
            kids.append(node())
        pos += 1
        return SimpleNamespace(label=label, children=kids)

    return node()


# the dog | barks | at cats: leaves 0..4
GOLD_TREE = "(ROOT (S (NP (DT the) (NN dog)) (VP (VBZ barks) (PP (IN at) (NP (NNS cats))))))"
# "barks" wrongly inside the subject NP; the VP lost its PP
PRED_TREE = "(ROOT (S (NP (DT the) (NN dog) (VBZ barks)) (VP (IN at) (NP (NNS cats)))))"


def test_brackets_leave_out_preterminals_and_optionally_the_root():
    assert brackets(tree(GOLD_TREE)) == [("NP", 0, 2), ("NP", 4, 5), ("PP", 3, 5), ("VP", 2, 5), ("S", 0, 5),
                                         ("ROOT", 0, 5)]
    assert brackets(tree(PRED_TREE), root=False) == [("NP", 0, 3), ("NP", 4, 5), ("VP", 3, 5), ("S", 0, 5)]


def test_bracket_f1_of_a_hand_counted_pair():
    # matched: NP(4,5), S(0,5), ROOT(0,5) = 3 of 6 gold and 5 predicted brackets
    assert bracket_counts(brackets(tree(GOLD_TREE)), brackets(tree(PRED_TREE))) == (3, 6, 5)
    assert bracket_scores([(tree(GOLD_TREE), tree(PRED_TREE))]) == {
        "trees": 1, "precision": 60.0, "recall": 50.0, "f1": 54.55}  # 2·3 / (6 + 5)
    # without the root: 2 of 5 gold and 4 predicted
    assert bracket_scores([(tree(GOLD_TREE), tree(PRED_TREE))], root=False) == {
        "trees": 1, "precision": 50.0, "recall": 40.0, "f1": 44.44}
    # a perfect parse, summed over the corpus with the imperfect one: (3 + 5) / (6 + 6), (3 + 5) / (5 + 5) ...
    both = bracket_scores([(tree(GOLD_TREE), tree(PRED_TREE)), (tree(GOLD_TREE), tree(GOLD_TREE))], root=False)
    assert both["f1"] == round(200 * (2 + 5) / (5 + 4 + 5 + 5), 2)


def test_a_bracket_matches_as_often_as_it_occurs_in_both():
    # a unary chain NP over NP over one word: the same bracket twice in gold, once predicted
    assert brackets(tree("(NP (NP (NN x)))")) == [("NP", 0, 1)] * 2
    assert bracket_counts(brackets(tree("(NP (NP (NN x)))")), brackets(tree("(NP (NN x))"))) == (1, 2, 1)
    assert bracket_counts([("NP", 0, 1)] * 2, [("NP", 0, 1)] * 3) == (2, 2, 3)


def test_bracket_f1_stand_in_scores_stanza_trees_as_by_hand():
    from stanza.models.constituency import tree_reader

    from syntrans.parsing.model_training import BracketF1

    gold, pred = tree_reader.read_trees(GOLD_TREE + "\n" + PRED_TREE, use_tqdm=False)
    result = SimpleNamespace(gold=gold, predictions=[SimpleNamespace(tree=pred)])
    assert BracketF1().process([result]).f1 == pytest.approx(6 / 11)
    assert BracketF1().process([SimpleNamespace(gold=gold, predictions=[SimpleNamespace(tree=gold)])]).f1 == 1.0


GOLD_CONLLU = """# sent_id = 1
# text = The dog barks.
1\tThe\tthe\tDET\tDT\t_\t2\tdet\t_\t_
2\tdog\tdog\tNOUN\tNN\t_\t3\tnsubj\t_\t_
3\tbarks\tbark\tVERB\tVBZ\t_\t0\troot\t_\tSpaceAfter=No
4\t.\t.\tPUNCT\t.\t_\t3\tpunct\t_\t_

# sent_id = 2
# text = He's gone
1-2\tHe's\t_\t_\t_\t_\t_\t_\t_\t_
1\tHe\the\tPRON\tPRP\t_\t3\tnsubj:pass\t_\t_
2\t's\tbe\tAUX\tVBZ\t_\t3\taux:pass\t_\t_
3\tgone\tgo\tVERB\tVBN\t_\t0\troot\t_\t_
3.1\tgone\tgo\tVERB\tVBN\t_\t_\t_\t3:conj\t_

"""
# sentence 1: dog's relation wrong, barks's UPOS wrong, the period's head wrong;
# sentence 2: He's relation lacks the subtype (counted right), 's attached to He
PRED_CONLLU = """1\tThe\t_\tDET\t_\t_\t2\tdet\t_\t_
2\tdog\t_\tNOUN\t_\t_\t3\tobj\t_\t_
3\tbarks\t_\tNOUN\t_\t_\t0\troot\t_\t_
4\t.\t_\tPUNCT\t_\t_\t2\tpunct\t_\t_

1\tHe\t_\tPRON\t_\t_\t3\tnsubj\t_\t_
2\t's\t_\tAUX\t_\t_\t1\taux:pass\t_\t_
3\tgone\t_\tVERB\t_\t_\t0\troot\t_\t_

"""


def test_read_conllu_keeps_syntactic_words_only():
    gold = read_conllu(GOLD_CONLLU)
    assert [[w.form for w in s] for s in gold] == [["The", "dog", "barks", "."], ["He", "'s", "gone"]]
    assert gold[1][0].head == 3 and gold[1][0].deprel == "nsubj:pass"


def test_attachment_scores_of_a_hand_counted_pair():
    gold, pred = read_conllu(GOLD_CONLLU), read_conllu(PRED_CONLLU)
    # heads right: The, dog, barks; He, gone = 5 of 7; with the relation (universal part): The, barks, He, gone = 4;
    # UPOS right: all but barks = 6
    assert attachment_scores(gold, pred) == {"words": 7, "uas": 71.43, "las": 57.14, "upos": 85.71}
    # the period left out: 5 of 6, 4 of 6, 5 of 6
    assert attachment_scores(gold, pred, punct=False) == {"words": 6, "uas": 83.33, "las": 66.67, "upos": 83.33}
    assert attachment_scores(gold, gold) == {"words": 7, "uas": 100.0, "las": 100.0, "upos": 100.0}


def test_attachment_scores_refuse_unpaired_sentences():
    gold, pred = read_conllu(GOLD_CONLLU), read_conllu(PRED_CONLLU)
    with pytest.raises(ValueError, match="sentence 2"):
        attachment_scores(gold, [pred[0], pred[1][:2]])
    with pytest.raises(ValueError, match="2 gold sentences but 1"):
        attachment_scores(gold, pred[:1])


def test_read_conllu_tokens_takes_a_multiword_token_whole():
    assert read_conllu_tokens(GOLD_CONLLU) == [("The dog barks.", ["The", "dog", "barks", "."]),
                                               ("He's gone", ["He's", "gone"])]


def test_token_f1_over_non_whitespace_characters():
    text = "I can't go."
    gold = token_spans(["I", "ca", "n't", "go", "."])  # UD English splits can't
    assert gold == [(0, 1), (1, 3), (3, 6), (6, 8), (8, 9)]
    pred = text_spans(text, [(0, 1), (2, 7), (8, 11)])  # I | can't | go.
    assert pred == [(0, 1), (1, 6), (6, 9)]
    assert span_f1(gold, pred) == 25.0  # only "I": 2·1 / (5 + 3)
    assert span_f1(gold, gold) == 100.0


# ------------------------------------------------------------------ model_training's pure parts


def test_random_indexing_gives_words_of_shared_contexts_near_vectors():
    from syntrans.parsing.model_training import random_indexing

    sents = [["the", "cat", "sat"], ["the", "dog", "sat"], ["a", "bird", "flew"], ["the", "cat", "ran"]]
    types, vecs = random_indexing(sents, dim=64)
    assert types[:2] == ["the", "cat"]  # by frequency, then alphabetically
    assert vecs.shape == (8, 64) and np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    v = dict(zip(types, vecs))
    assert v["dog"] @ v["cat"] > 0.8 > v["dog"] @ v["bird"]
    again_types, again = random_indexing(sents, dim=64)
    assert again_types == types and np.array_equal(again, vecs)  # the index vectors are seeded by the word


def test_tokenizer_files_label_token_sentence_and_multiword_ends(tmp_path):
    from syntrans.parsing.model_training import token_sentences, tokenizer_files

    conllu = ("1\tHi\t_\t_\t_\t_\t0\troot\t_\tSpaceAfter=No\n2\t,\t_\t_\t_\t_\t1\tpunct\t_\t_\n"
              "3-4\the's\t_\t_\t_\t_\t_\t_\t_\t_\n3\the\t_\t_\t_\t_\t5\tnsubj\t_\t_\n4\t's\t_\t_\t_\t_\t5\tcop\t_\t_\n"
              "5\there\t_\t_\t_\t_\t1\tparataxis\t_\tSpaceAfter=No\n6\t.\t_\t_\t_\t_\t1\tpunct\t_\t_\n\n")
    sents = token_sentences(conllu)
    assert sents == [[("Hi", False, None), (",", True, None), ("he's", True, ["he", "'s"]), ("here", False, None),
                      (".", True, None)]]
    txt, labels, mwt = tmp_path / "t.txt", tmp_path / "t.labels", tmp_path / "mwt.json"
    tokenizer_files([sents, sents], txt, labels, mwt)
    assert txt.read_text() == "Hi, he's here.\n\nHi, he's here.\n"
    # Hi=01 ,=1 _=0 he's=0003 _=0 here=0001 .=2
    assert labels.read_text() == "01100003000012\n\n01100003000012\n"
    assert json.loads(mwt.read_text()) == [[["he's", ["he", "'s"]], 2]]


def test_clean_conllu_and_documents():
    from syntrans.parsing.model_training import clean_conllu, documents

    text = ("# newdoc id = a\n# sent_id = a-1\n# text = x\n# foo = bar\n1\tx\tx\tX\tX\t_\t0\troot\t0:root\tSpaceAfter=No\n"
            "1.1\ty\ty\tX\tX\t_\t_\t_\t1:dep\t_\n\n"
            "# sent_id = a-2\n1\tz\tz\tX\tX\t_\t0\troot\t_\t_\n\n"
            "# newdoc id = b\n# sent_id = b-1\n1\tw\tw\tX\tX\t_\t0\troot\t_\t_\n\n")
    assert clean_conllu(text).split("\n\n")[0] == "# sent_id = a-1\n# text = x\n1\tx\tx\tX\tX\t_\t0\troot\t_\t_"
    docs = documents(text)
    assert len(docs) == 2 and docs[0].count("sent_id") == 2 and "b-1" in docs[1]
    no_newdoc = clean_conllu(text)  # newdoc comments dropped: runs of `size` sentences
    assert [d.count("sent_id") for d in documents(no_newdoc, size=2)] == [2, 1]


def test_options_name_stanza_flags():
    from syntrans.parsing.model_training import REAL, TokenizerSize, options

    assert options(TokenizerSize(emb_dim=8, hidden_dim=16, steps=3, eval_steps=3, batch_size=2)) == [
        "--emb_dim", "8", "--hidden_dim", "16", "--steps", "3", "--eval_steps", "3", "--batch_size", "2",
        "--max_seqlen", "100"]
    assert REAL.pos_steps % REAL.eval_interval == 0 and REAL.dep_steps % REAL.eval_interval == 0  # else no dev eval


def test_write_resources_lists_the_models_on_disk(tmp_path):
    from syntrans.parsing.model_training import write_resources

    for proc in ("pretrain", "pos", "mwt"):
        (tmp_path / "en" / proc).mkdir(parents=True)
        (tmp_path / "en" / proc / "ewt.pt").write_bytes(proc.encode())
    write_resources(tmp_path, {"en": "ewt"})
    res = json.loads((tmp_path / "resources.json").read_text())
    assert set(res["en"]) == {"lang_name", "pretrain", "pos", "mwt", "default_processors", "packages"}
    assert res["en"]["pos"]["ewt"]["dependencies"] == [{"model": "pretrain", "package": "ewt"}]
    assert "dependencies" not in res["en"]["mwt"]["ewt"]
    assert res["en"]["default_processors"] == {"mwt": "ewt", "pos": "ewt"} and res["english"] == {"alias": "en"}


def test_a_model_moves_into_place_only_when_its_training_returns(tmp_path):
    from syntrans.parsing.model_training import _Models

    times = {}
    models = _Models(tmp_path / "res", "en", "ewt", tmp_path / "work", times, force=False)
    with pytest.raises(RuntimeError):
        with models.build("pos") as folder:
            (folder / "ewt.pt").write_text("half")
            raise RuntimeError("interrupted")
    assert not models.final("pos").exists() and "en pos" not in times
    with models.build("pos") as folder:
        (folder / "ewt.pt").write_text("done")
    assert models.final("pos").read_text() == "done" and "en pos" in times
    with models.build("pos") as folder:  # kept: not trained again
        assert folder is None
    forced = _Models(tmp_path / "res", "en", "ewt", tmp_path / "work", times, force=True)
    with forced.build("pos") as folder:
        (folder / "ewt.pt").write_text("again")
    assert models.final("pos").read_text() == "again"
