"""Tiny stanza models for the tests, built offline with stanza's own training code.

``python tests/stanza_models.py RES GUM [MULTI30K]`` writes an English and a German model set into the
stanza resources directory RES, in the layout ``stanza.download`` produces:

    RES/resources.json
    RES/en/{pretrain,tokenize,mwt,pos,lemma,depparse,constituency}/gum.pt
    RES/de/{pretrain,tokenize,mwt,pos,lemma,depparse,constituency}/tiny.pt

so that ``stanza.Pipeline(lang, dir=RES, download_method=None)`` loads them unchanged. The ``tokenize`` model
(a tokenizer and sentence splitter trained 200 steps on the same sentences' raw text, with their multi-word
tokens) serves the raw-text route, where stanza tokenizes each line itself; pretokenized runs never open it.

* English: trained on the GUM documents in GUM (``dep/*.conllu`` gold dependencies, with their multi-word
  token lines; ``const/*.ptb`` silver constituency trees, token-identical to the CoNLL-U words).
* German: no German treebank is at hand, so :func:`german_sentences` writes a small one from templates
  (caption-like sentences as in Multi30k), with contractions such as ``zum`` = ``zu dem`` as multi-word
  token lines, and the matching trees.
* Word vectors: random indexing (Sahlgren 2005, "An introduction to random indexing") over the training CoNLL-U
  plus, when given, the first 5,000 Multi30k training captions of the language.

The training code is :mod:`syntrans.parsing.model_training` (shared with ``scripts/train_parsers.py``, which trains
real-size parsers on the UD treebanks); this file holds the tests' data and their :data:`TINY` sizes.

The models are tiny (hidden sizes 16 to 32, a few dozen training steps): their parses are poor, and
that is all the tests need. The build runs in a process of its own: stanza's training entry points
re-seed the global random generators and set the ``stanza`` logger to DEBUG. It prints one line per
model with the seconds it took.
"""
from __future__ import annotations

import json
import os
import random
import sys
import time
from pathlib import Path

import torch

from syntrans.parsing.model_training import (
    ConstituencySize,
    NetworkSize,
    Preset,
    TokenizerSize,
    build_language,
    clean_conllu,
    raw_sentences,
    token_sentences,
    write_resources,
)

#: the package name of each language's models in resources.json
PACKAGES = {"en": "gum", "de": "tiny"}
SEED = 7  # the German templates' generator
#: Multi30k captions read for the word vectors
RAW_LINES = 5000
#: the tiny sizes: hidden sizes 16 to 32, a few dozen steps. The networks train on the first 400 sentences (and
#: trees): a few dozen steps see no more, and all of GUM (1,536 sentences) made the English tagger and parser slower
#: to build (measured: 11 s → 7 s and 9 s → 6 s with 400); the dev sets are the first 40 sentences and 30 trees
TINY = Preset(
    name="tiny", vector_dim=24, model_sentences=400, dev_sentences=40, dev_trees=30,
    tokenize=TokenizerSize(emb_dim=16, hidden_dim=16, steps=200, eval_steps=1000, batch_size=16),
    network=NetworkSize(hidden_dim=32, char_hidden_dim=16, deep_biaff_hidden_dim=32, word_emb_dim=16, char_emb_dim=8,
                        tag_emb_dim=8, transformed_dim=16, num_layers=1),
    pos_steps=20, pos_batch=32, pos_biaff_dim=16, dep_steps=20, dep_batch=1000, dep_biaff_output_dim=16,
    eval_interval=20,
    constituency=ConstituencySize(epochs=2, epoch_size=40, train_batch_size=30, hidden_size=32,
                                  transition_hidden_size=16, transition_embedding_dim=8, tag_embedding_dim=8,
                                  delta_embedding_dim=16, num_lstm_layers=1, pattn_num_layers=0, lattn_d_proj=0),
    augment_nopunct=0.0,
)

# ------------------------------------------------------------------ English data from GUM


def gum_conllu(gum: Path) -> str:
    """The GUM documents' CoNLL-U, concatenated, as stanza's trainers read it (:func:`clean_conllu`)."""
    return "".join(clean_conllu(p.read_text(encoding="utf-8")) for p in sorted((gum / "dep").glob("*.conllu")))


def gum_trees(gum: Path) -> str:
    """The GUM constituency trees, one blank-line-separated bracketed tree each (stanza's reader strips the
    function tags itself)."""
    return "\n\n".join(p.read_text(encoding="utf-8").strip() for p in sorted((gum / "const").glob("*.ptb"))) + "\n"


def gum_tokens(gum: Path) -> list[list[list[tuple]]]:
    """The GUM documents as tokenizer data, one document per file (:func:`token_sentences`)."""
    return [token_sentences(p.read_text(encoding="utf-8")) for p in sorted((gum / "dep").glob("*.conllu"))]


# ------------------------------------------------------------------ German data from templates

# (form, lemma, gender) of nouns in Multi30k captions; m/f/n
NOUNS_SUBJ = [("Mann", "Mann", "m"), ("Frau", "Frau", "f"), ("Hund", "Hund", "m"), ("Kind", "Kind", "n"),
              ("Junge", "Junge", "m"), ("Mädchen", "Mädchen", "n"), ("Radfahrer", "Radfahrer", "m"),
              ("Sängerin", "Sängerin", "f")]
NOUNS_PLACE = [("Strand", "Strand", "m"), ("Park", "Park", "m"), ("Wasser", "Wasser", "n"),
               ("Straße", "Straße", "f"), ("Gras", "Gras", "n"), ("Schnee", "Schnee", "m"),
               ("Bühne", "Bühne", "f"), ("Haus", "Haus", "n"), ("Wiese", "Wiese", "f"), ("Zaun", "Zaun", "m")]
VERBS = [("geht", "gehen"), ("läuft", "laufen"), ("sitzt", "sitzen"), ("steht", "stehen"), ("spielt", "spielen"),
         ("springt", "springen"), ("rennt", "rennen")]
ADJS = [("klein", "klein"), ("jung", "jung"), ("alt", "alt"), ("groß", "groß"), ("braun", "braun")]
# the dative definite article and the contraction of (preposition, article), where German has one
DATIVE_ART = {"m": "dem", "n": "dem", "f": "der"}
CONTRACTIONS = {("zu", "dem"): "zum", ("zu", "der"): "zur", ("in", "dem"): "im", ("an", "dem"): "am",
                ("von", "dem"): "vom", ("bei", "dem"): "beim", ("in", "das"): "ins"}
PREPS = ["zu", "in", "an", "von", "bei", "auf", "mit", "neben"]
# adjective endings: after the nominative indefinite article (strong) and in a dative definite phrase (weak)
NOM_INDEF = {"m": ("Ein", "er"), "f": ("Eine", "e"), "n": ("Ein", "es")}


def german_sentences(n: int = 140, seed: int = SEED) -> list[list[tuple]]:
    """``n`` template sentences; a sentence is a list of tokens, a token a list of syntactic words
    (form, lemma, upos, xpos, head, deprel), heads 1-based over the sentence's words, 0 = root.

    Template: ART (ADJA) NN VVFIN APPR ART (ADJA) NN $. — the preposition and the article written as one
    token (a multi-word token) wherever German contracts them (zum, im, am, vom, beim, zur, ins).
    """
    rng = random.Random(seed)
    out = []
    for k in range(n):
        noun, nlemma, g = NOUNS_SUBJ[k % len(NOUNS_SUBJ)]
        verb, vlemma = VERBS[rng.randrange(len(VERBS))]
        place, plemma, pg = NOUNS_PLACE[rng.randrange(len(NOUNS_PLACE))]
        prep = PREPS[k % len(PREPS)] if k % 3 else rng.choice(["zu", "in", "an", "von", "bei"])
        art_form, ending = NOM_INDEF[g]
        adj = ADJS[rng.randrange(len(ADJS))] if rng.random() < 0.5 else None
        adj2 = ADJS[rng.randrange(len(ADJS))] if rng.random() < 0.3 else None
        words = [(art_form, "ein", "DET", "ART", "det")]
        if adj:
            words.append((adj[0] + ending, adj[1], "ADJ", "ADJA", "amod"))
        subj = len(words) + 1
        words.append((noun, nlemma, "NOUN", "NN", "nsubj"))
        vpos = len(words) + 1
        words.append((verb, vlemma, "VERB", "VVFIN", "root"))
        accusative = prep == "in" and pg == "n" and rng.random() < 0.5  # "ins Wasser"
        article = "das" if accusative else DATIVE_ART[pg]
        pp_first = len(words) + 1
        words.append((prep, prep, "ADP", "APPR", "case"))
        words.append((article, "der", "DET", "ART", "det"))
        if adj2:
            words.append((adj2[0] + ("e" if accusative else "en"), adj2[1], "ADJ", "ADJA", "amod"))
        obj = len(words) + 1
        words.append((place, plemma, "NOUN", "NN", "obl"))
        words.append((".", ".", "PUNCT", "$.", "punct"))
        heads = []
        for i, (_, _, upos, _, rel) in enumerate(words, 1):
            if rel == "root":
                heads.append(0)
            elif rel in ("nsubj", "obl", "punct"):
                heads.append(vpos)
            elif i < subj:
                heads.append(subj)
            else:
                heads.append(obj)
        rows = [w[:4] + (h, w[4]) for w, h in zip(words, heads)]
        tokens, i = [], 0
        while i < len(rows):
            pair = (rows[i][0], rows[i + 1][0]) if i + 1 < len(rows) else None
            if i + 1 == pp_first and pair in CONTRACTIONS:
                tokens.append([rows[i], rows[i + 1]])
                i += 2
            else:
                tokens.append([rows[i]])
                i += 1
        out.append(tokens)
    return out


def _token_text(token) -> str:
    if len(token) == 1:
        return token[0][0]
    return CONTRACTIONS[(token[0][0], token[1][0])]


def german_conllu(sentences) -> str:
    """CoNLL-U of :func:`german_sentences`, multi-word tokens as ``N-M`` range lines."""
    out = []
    for k, sent in enumerate(sentences, 1):
        lines = [f"# sent_id = tiny-de-{k}", "# text = " + " ".join(_token_text(t) for t in sent)]
        i = 1
        for token in sent:
            if len(token) > 1:
                lines.append(f"{i}-{i + len(token) - 1}\t{_token_text(token)}\t_\t_\t_\t_\t_\t_\t_\t_")
            for form, lemma, upos, xpos, head, rel in token:
                lines.append(f"{i}\t{form}\t{lemma}\t{upos}\t{xpos}\t_\t{head}\t{rel}\t_\t_")
                i += 1
        out.append("\n".join(lines) + "\n\n")
    return "".join(out)


def german_tokens(sentences) -> list[list[list[tuple]]]:
    """:func:`german_sentences` as tokenizer data (:func:`gum_tokens`): documents of 10 sentences, the final period
    attached to the word before it."""
    docs = []
    for start in range(0, len(sentences), 10):
        doc = []
        for sent in sentences[start:start + 10]:
            toks = []
            for k, token in enumerate(sent):
                attached = k + 1 < len(sent) and _token_text(sent[k + 1]) == "."
                toks.append((_token_text(token), not attached, [w[0] for w in token] if len(token) > 1 else None))
            doc.append(toks)
        docs.append(doc)
    return docs


def german_trees(sentences) -> str:
    """One tree per sentence, over its syntactic words, UPOS preterminals (stanza's German constituency
    parser is fed UPOS tags at run time):
    (ROOT (S (NP DET (ADJ) NOUN) (VP VERB (PP ADP DET (ADJ) NOUN)) (PUNCT .)))."""
    out = []
    for sent in sentences:
        words = [w for t in sent for w in t]
        pre = [f"({w[2]} {w[0]})" for w in words]
        v = next(i for i, w in enumerate(words) if w[2] == "VERB")
        p = next(i for i, w in enumerate(words) if w[2] == "ADP")
        np_ = " ".join(pre[:v])
        pp = " ".join(pre[p:-1])
        out.append(f"(ROOT (S (NP {np_}) (VP {pre[v]} (PP {pp})) {pre[-1]}))")
    return "\n".join(out) + "\n"


# ------------------------------------------------------------------ the build


def build(res: Path, gum: Path, multi30k: Path | None = None, langs=("en", "de")) -> dict:
    """Build the models of ``langs`` into ``res`` (work files in ``res/../<name>_work``); returns the seconds per
    model."""
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    res.mkdir(parents=True, exist_ok=True)
    work = res.parent / f"{res.name}_work"
    work.mkdir(exist_ok=True)
    times: dict = {}
    t0 = time.time()
    for lang in langs:
        m30 = multi30k / f"train.{lang}" if multi30k else None
        raw = raw_sentences(m30, RAW_LINES) if m30 and m30.exists() else []
        if lang == "en":
            build_language(res, "en", PACKAGES["en"], "en_gum", TINY, work, times, train_conllu=gum_conllu(gum),
                           trees=gum_trees(gum), vector_text=raw, token_docs=gum_tokens(gum))
        else:
            sents = german_sentences()
            build_language(res, "de", PACKAGES["de"], "de_gsd", TINY, work, times, train_conllu=german_conllu(sents),
                           trees=german_trees(sents), vector_text=raw, token_docs=german_tokens(sents))
    write_resources(res, PACKAGES)
    times["total"] = round(time.time() - t0, 2)
    return times


if __name__ == "__main__":
    if len(sys.argv) not in (3, 4):
        sys.exit("usage: python tests/stanza_models.py RES GUM [MULTI30K]")
    m30 = Path(sys.argv[3]) if len(sys.argv) == 4 else None
    print(json.dumps(build(Path(sys.argv[1]), Path(sys.argv[2]), m30)), flush=True)
