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
* Word vectors: random indexing (Sahlgren 2005, "An introduction to random indexing"): each word type
  gets a sparse random index vector; a word's vector is the sum of the index vectors of its neighbours
  (window 2) over the text, L2-normalised. The text is the training CoNLL-U plus, when given, the
  Multi30k training captions of the language.

The models are tiny (hidden sizes 16 to 32, a few dozen training steps): their parses are poor, and
that is all the tests need. The build runs in a process of its own: stanza's training entry points
re-seed the global random generators and set the ``stanza`` logger to DEBUG. It prints one line per
model with the seconds it took.
"""
from __future__ import annotations

import json
import os
import random
import re
import sys
import time
import zlib
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import torch
from stanza.models import constituency_parser, lemmatizer, mwt_expander, parser, tagger, tokenizer
from stanza.models.common.pretrain import Pretrain
from stanza.models.constituency import parser_training, tree_reader
from stanza.protobuf import EvaluateParserResponse
from stanza.resources.common import get_md5

#: the package name of each language's models in resources.json
PACKAGES = {"en": "gum", "de": "tiny"}
#: the processors built for each language (tokenize is not needed for pretokenized input)
BUILT = ("pretrain", "tokenize", "mwt", "pos", "lemma", "depparse", "constituency")
LANG_NAMES = {"en": "English", "de": "German"}
DIM = 24  # word vector size
SEED = 7
#: the sentences (and trees) the networks train on: a few dozen steps see no more, and all of GUM (1,536 sentences)
#: made the English tagger and parser slower to build (measured: 11 s → 7 s and 9 s → 6 s with 400)
MODEL_SENTENCES = 400

# ------------------------------------------------------------------ English data from GUM


def gum_conllu(gum: Path) -> str:
    """The GUM documents' CoNLL-U, concatenated: sentence ids and text kept, empty nodes dropped, DEPS and MISC
    blanked (MISC holds long entity strings), multi-word token lines kept."""
    out = []
    for path in sorted((gum / "dep").glob("*.conllu")):
        block = []
        for line in path.read_text(encoding="utf-8").splitlines():
            if not line.strip():
                if any(not x.startswith("#") for x in block):
                    out.append("\n".join(block) + "\n\n")
                block = []
            elif line.startswith("#"):
                if line.startswith(("# sent_id", "# text")):
                    block.append(line)
            else:
                cols = line.split("\t")
                if "." in cols[0]:
                    continue  # an empty node of the enhanced graph
                cols[8] = cols[9] = "_"
                block.append("\t".join(cols))
        if any(not x.startswith("#") for x in block):
            out.append("\n".join(block) + "\n\n")
    return "".join(out)


def gum_trees(gum: Path) -> str:
    """The GUM constituency trees, one blank-line-separated bracketed tree each (stanza's reader strips the
    function tags itself)."""
    return "\n\n".join(p.read_text(encoding="utf-8").strip() for p in sorted((gum / "const").glob("*.ptb"))) + "\n"


def gum_tokens(gum: Path) -> list[list[list[tuple]]]:
    """The GUM documents as tokenizer data: per document its sentences, a sentence its tokens, a token (its text,
    whether a space follows it (MISC ``SpaceAfter=No``), the words of a multi-word token or None)."""
    docs = []
    for path in sorted((gum / "dep").glob("*.conllu")):
        sents, cur, mwt_end, mwt = [], [], 0, None
        for line in path.read_text(encoding="utf-8").splitlines():
            if not line.strip():
                if cur:
                    sents.append(cur)
                cur, mwt_end = [], 0
                continue
            if line.startswith("#"):
                continue
            cols = line.split("\t")
            space = "SpaceAfter=No" not in cols[9]
            if "-" in cols[0]:
                a, b = (int(x) for x in cols[0].split("-"))
                mwt_end, mwt = b, [cols[1], space, []]
                cur.append(mwt)
            elif "." in cols[0]:
                continue
            elif int(cols[0]) <= mwt_end:
                mwt[2].append(cols[1])
            else:
                cur.append([cols[1], space, None])
        if cur:
            sents.append(cur)
        docs.append([[tuple(t) for t in s] for s in sents])
    return docs


def tokenizer_files(docs: list[list[list[tuple]]], txt: Path, labels: Path, mwt_json: Path) -> None:
    """stanza's tokenizer training files: the raw text (a paragraph per document), a label per character (0 inside,
    1 the end of a token, 2 the end of a sentence; 3 and 4 the same for a multi-word token), and the multi-word
    tokens' expansions ([[token, words], count] items)."""
    paras, marks, expansions = [], [], {}
    for doc in docs:
        text, lab = [], []
        for sent in doc:
            for k, (form, space, words) in enumerate(sent):
                end = k == len(sent) - 1
                text.append(form)
                lab.append("0" * (len(form) - 1) + ("24"[words is not None] if end else "13"[words is not None]))
                if words is not None:
                    key = (form, tuple(words))
                    expansions[key] = expansions.get(key, 0) + 1
                if space or end:
                    text.append(" ")
                    lab.append("0")
        paras.append("".join(text).rstrip())
        marks.append("".join(lab)[:len(paras[-1])])
    txt.write_text("\n\n".join(paras) + "\n", encoding="utf-8")
    labels.write_text("\n\n".join(marks) + "\n", encoding="utf-8")
    mwt_json.write_text(json.dumps([[[f, list(w)], n] for (f, w), n in expansions.items()]), encoding="utf-8")


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


# ------------------------------------------------------------------ word vectors

_WORD_RE = re.compile(r"\w+|[^\w\s]")


def conllu_forms(text: str) -> list[list[str]]:
    """The lowercased word forms of each sentence of a CoNLL-U text (range lines skipped)."""
    sents, cur = [], []
    for line in text.splitlines():
        if not line.strip():
            if cur:
                sents.append(cur)
            cur = []
        elif not line.startswith("#"):
            cols = line.split("\t")
            if cols[0].isdigit():
                cur.append(cols[1].lower())
    if cur:
        sents.append(cur)
    return sents


def random_indexing(sentences: list[list[str]], dim: int = DIM, window: int = 2, nonzero: int = 4,
                    max_types: int = 30000) -> tuple[list[str], np.ndarray]:
    """Word vectors by random indexing (Sahlgren 2005): v(w) = Σ over w's occurrences of the index vectors of the
    words within ``window`` of it, L2-normalised; an index vector has ``nonzero`` entries ±1 at positions drawn
    from a generator seeded by the word. Returns (word types by frequency, vectors [types, dim])."""
    counts: dict[str, int] = {}
    for s in sentences:
        for w in s:
            counts[w] = counts.get(w, 0) + 1
    types = sorted(counts, key=lambda w: (-counts[w], w))[:max_types]
    ids = {w: i for i, w in enumerate(types)}
    index = np.zeros((len(types), dim), dtype=np.float32)  # [types, dim]
    for w, i in ids.items():
        r = np.random.default_rng(zlib.crc32(w.encode("utf-8")))
        index[i, r.choice(dim, nonzero, replace=False)] = r.choice([-1.0, 1.0], nonzero)
    ctx = np.zeros_like(index)
    for s in sentences:
        seq = np.array([ids.get(w, -1) for w in s])  # [len]
        for d in range(1, window + 1):
            a, b = seq[:-d], seq[d:]
            ok = (a >= 0) & (b >= 0)
            np.add.at(ctx, a[ok], index[b[ok]])
            np.add.at(ctx, b[ok], index[a[ok]])
    ctx += 0.01 * index  # a word seen alone still gets its own direction
    ctx /= np.linalg.norm(ctx, axis=1, keepdims=True)
    return types, ctx


def write_vec(path: Path, types: list[str], vectors: np.ndarray) -> None:
    with open(path, "w", encoding="utf-8") as f:
        f.write(f"{len(types)} {vectors.shape[1]}\n")
        for w, v in zip(types, vectors):
            f.write(w + " " + " ".join(f"{x:.5f}" for x in v) + "\n")


def raw_sentences(path: Path, limit: int = 5000) -> list[list[str]]:
    """Lowercased word and punctuation tokens of the first ``limit`` lines of a raw text file."""
    with open(path, encoding="utf-8") as f:
        return [_WORD_RE.findall(line.lower()) for _, line in zip(range(limit), f)]


# ------------------------------------------------------------------ training


class BracketF1:
    """Stands in for stanza's EvalB scorer (a Java CoreNLP process, absent here): the labelled bracket F1 of the
    dev parses (PARSEVAL, Black et al. 1991: F1 = 2·matched / (gold brackets + predicted brackets), preterminals
    not counted), which picks the epoch stanza saves."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    @staticmethod
    def brackets(tree) -> list[tuple]:
        out, pos = [], [0]

        def walk(node):
            if node.is_leaf():
                pos[0] += 1
                return
            start = pos[0]
            for c in node.children:
                walk(c)
            if not node.is_preterminal():
                out.append((node.label, start, pos[0]))

        walk(tree)
        return out

    def process(self, results):
        hit = gold = pred = 0
        for r in results:
            g, p = self.brackets(r.gold), self.brackets(r.predictions[0].tree)
            gold, pred = gold + len(g), pred + len(p)
            rest = list(g)
            for b in p:
                if b in rest:
                    rest.remove(b)
                    hit += 1
        f1 = 2 * hit / (gold + pred) if gold + pred else 0.0
        response = EvaluateParserResponse()
        response.f1 = f1
        return response


@contextmanager
def timed(what: str, times: dict):
    t0 = time.time()
    yield
    times[what] = round(time.time() - t0, 2)
    print(f"built {what} in {times[what]:.1f} s", flush=True)


def build_language(res: Path, lang: str, conllu: str, trees: str, raw_text: list[list[str]], work: Path,
                   shorthand: str, times: dict, token_docs: list | None = None) -> None:
    """All models of ``lang`` into RES/lang/<processor>/<package>.pt."""
    pkg = PACKAGES[lang]
    name = f"{pkg}.pt"
    d = res / lang
    train, dev = work / f"{lang}.train.conllu", work / f"{lang}.dev.conllu"
    train.write_text(conllu, encoding="utf-8")  # the dictionaries (mwt, lemma): every sentence
    blocks = [b for b in conllu.split("\n\n") if b.strip()]
    small_train = work / f"{lang}.small.conllu"  # the networks (pos, depparse): the first MODEL_SENTENCES
    small_train.write_text("".join(b + "\n\n" for b in blocks[:MODEL_SENTENCES]), encoding="utf-8")
    dev.write_text("".join(b + "\n\n" for b in blocks[:40]), encoding="utf-8")  # dev ⊂ train: every label known
    mrg, dev_mrg = work / f"{lang}.train.mrg", work / f"{lang}.dev.mrg"
    mrg.write_text(trees, encoding="utf-8")  # stanza's reader reads a file; then the file keeps the first trees only
    model_trees = _read_trees(mrg)[:MODEL_SENTENCES]
    mrg.write_text("\n".join(str(t) for t in model_trees) + "\n", encoding="utf-8")

    with timed(f"{lang} pretrain", times):
        types, vectors = random_indexing(conllu_forms(conllu) + raw_text)
        vec = work / f"{lang}.vec"
        write_vec(vec, types, vectors)
        pretrain = d / "pretrain" / name
        Pretrain(str(pretrain), str(vec), max_vocab=-1).load()
    common = ["--cpu", "--seed", str(SEED), "--shorthand", shorthand]  # the lemmatizer takes lang from shorthand
    with_lang = [*common, "--lang", lang]
    pt = ["--wordvec_pretrain_file", str(pretrain)]
    if token_docs:
        with timed(f"{lang} tokenize", times):
            txt, labels, mwt_json = work / f"{lang}.tok.txt", work / f"{lang}.tok.labels", work / f"{lang}.mwt.json"
            tokenizer_files(token_docs, txt, labels, mwt_json)
            tokenizer.main(["--txt_file", str(txt), "--label_file", str(labels), "--mwt_json_file", str(mwt_json),
                            "--dev_txt_file", str(txt), "--dev_label_file", str(labels), "--lang", lang,
                            "--shorthand", shorthand, "--emb_dim", "16", "--hidden_dim", "16", "--steps", "200",
                            "--eval_steps", "1000", "--report_steps", "1000", "--batch_size", "16",
                            "--max_seqlen", "100", "--save_dir", str(d / "tokenize"), "--save_name", name,
                            "--seed", str(SEED), "--cpu"])
    with timed(f"{lang} mwt", times):
        mwt_expander.main(["--train_file", str(train), "--eval_file", str(dev), "--gold_file", str(dev),
                           "--dict_only", "--save_dir", str(d / "mwt"), "--save_name", name, *with_lang])
    small = ["--hidden_dim", "32", "--char_hidden_dim", "16", "--deep_biaff_hidden_dim", "32", "--word_emb_dim", "16",
             "--char_emb_dim", "8", "--tag_emb_dim", "8", "--transformed_dim", "16", "--num_layers", "1",
             "--augment_nopunct", "0.0"]
    with timed(f"{lang} pos", times):
        tagger.main([*pt, "--train_file", str(small_train), "--eval_file", str(dev), *small,
                     "--composite_deep_biaff_hidden_dim", "16", "--batch_size", "32", "--max_steps", "20",
                     "--eval_interval", "20", "--fix_eval_interval", "--save_dir", str(d / "pos"), "--save_name", name,
                     *with_lang])
    with timed(f"{lang} lemma", times):
        lemmatizer.main(["--train_file", str(train), "--eval_file", str(dev), "--dict_only",
                         "--save_dir", str(d / "lemma"), "--save_name", name, *common])
    with timed(f"{lang} depparse", times):
        parser.main([*pt, "--train_file", str(small_train), "--eval_file", str(dev), *small, "--model_type", "graph",
                     "--deep_biaff_output_dim", "16", "--batch_size", "1000", "--max_steps", "20",
                     "--eval_interval", "20", "--no_checkpoint", "--save_dir", str(d / "depparse"),
                     "--save_name", name, *with_lang])
    with timed(f"{lang} constituency", times):
        dev_mrg.write_text("\n".join(str(t) for t in model_trees[:30]) + "\n", encoding="utf-8")
        args = constituency_parser.parse_args([
            *pt, "--train_file", str(mrg), "--eval_file", str(dev_mrg), "--shorthand", shorthand, "--lang", lang,
            "--save_dir", str(d / "constituency"), "--save_name", name, "--no_checkpoint", "--no_multistage",
            "--epochs", "2", "--epoch_size", "40", "--train_batch_size", "30", "--eval_batch_size", "50",
            "--hidden_size", "32", "--transition_hidden_size", "16", "--transition_embedding_dim", "8",
            "--tag_embedding_dim", "8", "--delta_embedding_dim", "16", "--num_lstm_layers", "1",
            "--pattn_num_layers", "0", "--lattn_d_proj", "0", "--cpu", "--seed", str(SEED)])
        saved = parser_training.EvaluateParser
        parser_training.EvaluateParser = lambda **kw: BracketF1()  # no Java CoreNLP process
        try:
            parser_training.train(args, None, None)  # None: no retagging pipeline (it would download)
        finally:
            parser_training.EvaluateParser = saved


def _read_trees(path: Path):
    return tree_reader.read_treebank(str(path))


def write_resources(res: Path) -> None:
    """RES/resources.json as stanza.download writes it, for the models on disk (with their md5 sums)."""
    out = {}
    for lang, pkg in PACKAGES.items():
        entry = {"lang_name": LANG_NAMES[lang]}
        for proc in BUILT:
            if not (res / lang / proc / f"{pkg}.pt").is_file():
                continue
            item = {"md5": get_md5(str(res / lang / proc / f"{pkg}.pt"))}
            if proc in ("pos", "depparse", "constituency"):
                item["dependencies"] = [{"model": "pretrain", "package": pkg}]
            entry[proc] = {pkg: item}
        default = {proc: pkg for proc in BUILT if proc != "pretrain" and (res / lang / proc / f"{pkg}.pt").is_file()}
        entry["default_processors"] = dict(default)
        entry["packages"] = {"default": dict(default)}
        out[lang] = entry
        out[LANG_NAMES[lang].lower()] = {"alias": lang}
    (res / "resources.json").write_text(json.dumps(out, indent=2), encoding="utf-8")


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
        raw = raw_sentences(multi30k / f"train.{lang}") if multi30k and (multi30k / f"train.{lang}").exists() else []
        if lang == "en":
            build_language(res, "en", gum_conllu(gum), gum_trees(gum), raw, work, "en_gum", times, gum_tokens(gum))
        else:
            sents = german_sentences()
            build_language(res, "de", german_conllu(sents), german_trees(sents), raw, work, "de_gsd", times,
                           german_tokens(sents))
    write_resources(res)
    times["total"] = round(time.time() - t0, 2)
    return times


if __name__ == "__main__":
    if len(sys.argv) not in (3, 4):
        sys.exit("usage: python tests/stanza_models.py RES GUM [MULTI30K]")
    m30 = Path(sys.argv[3]) if len(sys.argv) == 4 else None
    print(json.dumps(build(Path(sys.argv[1]), Path(sys.argv[2]), m30)), flush=True)
