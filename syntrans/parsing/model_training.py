"""Training a stanza model set offline with stanza's own training code, in the layout ``stanza.download`` writes.

:func:`build_language` trains one language's models into ``RES/<lang>/<processor>/<package>.pt``:

* ``pretrain``: word vectors by random indexing (Sahlgren 2005, "An introduction to random indexing"): each word
  type gets a sparse random index vector; a word's vector is the sum of the index vectors of its neighbours (window
  2) over the text, L2-normalised (:func:`random_indexing`);
* ``tokenize``: stanza's character tagger of token and sentence ends (:func:`tokenizer_files` writes its training
  files), with the multi-word tokens' expansions;
* ``mwt`` and ``lemma``: stanza's dictionaries (``--dict_only``) of the training words;
* ``pos``: stanza's BiLSTM tagger (UPOS, XPOS, features); ``depparse``: its graph-based biaffine parser (Dozat and
  Manning 2017);
* ``constituency``: its in-order transition parser (Liu and Zhang 2017), when trees are given. stanza picks the
  epoch to keep by the dev trees' bracket F1, scored by a Java CoreNLP process (EvalB), absent here: :class:`BracketF1`
  scores it in Python instead.

The sizes, steps and epochs come from a :class:`Preset` (the tests' tiny models: ``tests/stanza_models.py``; the
real-size models of ``scripts/train_parsers.py``: :data:`REAL`). :func:`write_resources` writes the
``resources.json`` that lets ``stanza.Pipeline(lang, dir=RES, download_method=None)`` load them.

Each model is trained in a work folder and moved into RES when its training returns, so a model file in RES is
always a finished one: with ``force`` False a model whose file exists is kept (an interrupted build resumes).
stanza's training entry points re-seed the global random generators and set the ``stanza`` logger to DEBUG: run
a build in a process of its own. Importing this module imports torch and stanza.
"""
from __future__ import annotations

import json
import re
import shutil
import time
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from itertools import islice
from pathlib import Path

import numpy as np
from stanza.models import constituency_parser, lemmatizer, mwt_expander, parser, tagger, tokenizer
from stanza.models.common.pretrain import Pretrain
from stanza.models.constituency import parser_training, tree_reader
from stanza.protobuf import EvaluateParserResponse
from stanza.resources.common import get_md5

from .parser_scores import bracket_counts, brackets, read_conllu

#: the processors a model set may hold, in resources.json's order
BUILT = ("pretrain", "tokenize", "mwt", "pos", "lemma", "depparse", "constituency")
LANG_NAMES = {"en": "English", "de": "German"}
SEED = 7

# ------------------------------------------------------------------ sizes


@dataclass(frozen=True)
class TokenizerSize:
    """stanza tokenizer options (its option names)."""

    emb_dim: int
    hidden_dim: int
    steps: int
    eval_steps: int
    batch_size: int
    max_seqlen: int = 100


@dataclass(frozen=True)
class NetworkSize:
    """The sizes the tagger and the graph parser share (stanza's option names)."""

    hidden_dim: int
    char_hidden_dim: int
    deep_biaff_hidden_dim: int
    word_emb_dim: int
    char_emb_dim: int
    tag_emb_dim: int
    transformed_dim: int
    num_layers: int


@dataclass(frozen=True)
class ConstituencySize:
    """stanza constituency parser options (its option names): an epoch is ``epoch_size`` trees."""

    epochs: int
    epoch_size: int
    train_batch_size: int
    hidden_size: int
    transition_hidden_size: int
    transition_embedding_dim: int
    tag_embedding_dim: int
    delta_embedding_dim: int
    num_lstm_layers: int
    pattn_num_layers: int
    lattn_d_proj: int


@dataclass(frozen=True)
class Preset:
    """The sizes of one model set. ``model_sentences``: the networks (pos, depparse, constituency) train on the first
    that many sentences or trees (None: all; the dictionaries always see all). Without a dev file, the dev set is the
    first ``dev_sentences`` training sentences (``dev_trees`` trees). Batches: pos in sentences, depparse in words,
    constituency in trees; ``eval_interval``: steps between dev evaluations (pos, depparse)."""

    name: str
    vector_dim: int
    model_sentences: int | None
    dev_sentences: int
    dev_trees: int
    tokenize: TokenizerSize
    network: NetworkSize
    pos_steps: int
    pos_batch: int
    pos_biaff_dim: int  # --composite_deep_biaff_hidden_dim
    dep_steps: int
    dep_batch: int
    dep_biaff_output_dim: int  # --deep_biaff_output_dim
    eval_interval: int
    constituency: ConstituencySize
    augment_nopunct: float | None = None  # None: stanza's default (copies of sentences without final punctuation)
    dropout: float | None = None  # pos and depparse; None: stanza's default (0.5)
    word_dropout: float | None = None  # pos and depparse; None: stanza's default (0.33)
    pos_lr: float | None = None  # the tagger's Adam learning rate; None: stanza's default (0.003)


def options(size) -> list[str]:
    """``--name value`` for each field of a size dataclass."""
    return [x for k, v in asdict(size).items() for x in (f"--{k}", str(v))]


#: real-size models for 2 CPU cores (scripts/train_parsers.py), each language's build about 25 minutes on one thread.
#: Measured there (one thread, English: 3,537 training sentences): a tagger or parser step costs about 0.5 s at these
#: sizes, nearly linear in the batch (128 sentences: 2.2 s a step), so the budget is a number of training words,
#: about 5 epochs for the tagger and 15 for the parser; smaller layers saved little (one layer and half-size
#: classifiers: 0.37 s a step). Lower dropout and a higher tagger learning rate learn far more in that budget (200
#: steps: UPOS 68 → 85 on a training sample, parser LAS 69 → 74). The tokenizer's dev score stopped rising at
#: 1,000–1,500 steps; the constituency parser takes about 35 s an epoch of 1,000 trees
REAL = Preset(
    name="real", vector_dim=100, model_sentences=None, dev_sentences=200, dev_trees=100,
    tokenize=TokenizerSize(emb_dim=32, hidden_dim=64, steps=1500, eval_steps=500, batch_size=32),
    network=NetworkSize(hidden_dim=128, char_hidden_dim=64, deep_biaff_hidden_dim=128, word_emb_dim=75,
                        char_emb_dim=32, tag_emb_dim=32, transformed_dim=75, num_layers=2),
    pos_steps=600, pos_batch=32, pos_biaff_dim=64, dep_steps=900, dep_batch=1000, dep_biaff_output_dim=64,
    eval_interval=100, dropout=0.3, word_dropout=0.2, pos_lr=0.005,
    constituency=ConstituencySize(epochs=10, epoch_size=1000, train_batch_size=30, hidden_size=128,
                                  transition_hidden_size=20, transition_embedding_dim=20, tag_embedding_dim=20,
                                  delta_embedding_dim=50, num_lstm_layers=1, pattn_num_layers=0, lattn_d_proj=0),
)
PRESETS = {"real": REAL}

# ------------------------------------------------------------------ CoNLL-U and text


def clean_conllu(text: str) -> str:
    """A CoNLL-U text as stanza's trainers read it: comments other than ``sent_id`` and ``text`` dropped, empty
    nodes dropped, DEPS and MISC blanked (MISC may hold long entity strings), multi-word token lines kept."""
    out, block = [], []
    for line in text.splitlines():
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


def conllu_blocks(text: str) -> list[str]:
    """The sentences of a CoNLL-U text, one string each (no trailing blank line)."""
    return [b for b in text.split("\n\n") if b.strip()]


def token_sentences(text: str) -> list[list[tuple]]:
    """A CoNLL-U text as tokenizer data: its sentences, a sentence its tokens, a token (its text, whether a space
    follows it (MISC ``SpaceAfter=No``), the words of a multi-word token or None)."""
    sents, cur, mwt_end, mwt = [], [], 0, None
    for line in text.splitlines():
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
    return [[tuple(t) for t in s] for s in sents]


def documents(text: str, size: int = 20) -> list[str]:
    """A CoNLL-U text cut into documents at its ``# newdoc`` comments, or into runs of ``size`` sentences when it has
    none."""
    blocks = [b + "\n\n" for b in conllu_blocks(text)]
    if any("# newdoc" in b for b in blocks):
        docs: list[list[str]] = []
        for b in blocks:
            if "# newdoc" in b or not docs:
                docs.append([])
            docs[-1].append(b)
    else:
        docs = [blocks[i:i + size] for i in range(0, len(blocks), size)]
    return ["".join(d) for d in docs]


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


# ------------------------------------------------------------------ word vectors

_WORD_RE = re.compile(r"\w+|[^\w\s]")


def conllu_forms(text: str) -> list[list[str]]:
    """The lowercased word forms of each sentence of a CoNLL-U text (range lines skipped)."""
    return [[w.form.lower() for w in sent] for sent in read_conllu(text)]


def raw_sentences(path: Path, limit: int | None = None) -> list[list[str]]:
    """Lowercased word and punctuation tokens of the first ``limit`` lines (None: all) of a raw text file."""
    with open(path, encoding="utf-8") as f:
        return [_WORD_RE.findall(line.lower()) for line in islice(f, limit)]


def random_indexing(sentences: list[list[str]], dim: int, window: int = 2, nonzero: int = 4,
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
    """Word vectors in the word2vec text format stanza's Pretrain reads (a header line: types, dim)."""
    with open(path, "w", encoding="utf-8") as f:
        f.write(f"{len(types)} {vectors.shape[1]}\n")
        for w, v in zip(types, vectors):
            f.write(w + " " + " ".join(f"{x:.5f}" for x in v) + "\n")


# ------------------------------------------------------------------ training


class BracketF1:
    """Stands in for stanza's EvalB scorer (a Java CoreNLP process, absent here): the labelled bracket F1 of the
    dev parses (PARSEVAL, Black et al. 1991: F1 = 2·matched / (gold brackets + predicted brackets), preterminals
    not counted: :func:`syntrans.parsing.parser_scores.brackets`), which picks the epoch stanza saves."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def process(self, results):
        hit = gold = pred = 0
        for r in results:
            h, g, p = bracket_counts(brackets(r.gold), brackets(r.predictions[0].tree))
            hit, gold, pred = hit + h, gold + g, pred + p
        response = EvaluateParserResponse()
        response.f1 = 2 * hit / (gold + pred) if gold + pred else 0.0
        return response


@contextmanager
def timed(what: str, times: dict) -> Iterator[None]:
    """Records the seconds the block took in ``times[what]`` and prints them."""
    t0 = time.time()
    yield
    times[what] = round(time.time() - t0, 2)
    print(f"built {what} in {times[what]:.1f} s", flush=True)


def read_trees(path: Path) -> list:
    """The trees of a bracketed-tree file, read by stanza's reader (function tags such as NP-SBJ stripped)."""
    return tree_reader.read_treebank(str(path))


def _write_trees(path: Path, trees) -> None:
    path.write_text("\n".join(str(t) for t in trees) + "\n", encoding="utf-8")


class _Models:
    """Where ``lang``'s models go, and which to (re)build: a model trains into the work folder and moves into RES
    when done; with ``force`` False a model already in RES is kept."""

    def __init__(self, res: Path, lang: str, package: str, work: Path, times: dict, force: bool):
        self.res, self.lang, self.name, self.times, self.force = res / lang, lang, f"{package}.pt", times, force
        self.work = work / "training" / lang

    def final(self, proc: str) -> Path:
        return self.res / proc / self.name

    @contextmanager
    def build(self, proc: str) -> Iterator[Path | None]:
        """Yields the folder to train ``proc`` into (its file named ``<package>.pt``), None when it is kept."""
        what = f"{self.lang} {proc}"
        if self.final(proc).is_file() and not self.force:
            print(f"kept {what}: {self.final(proc)} exists", flush=True)
            yield None
            return
        folder = self.work / proc
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        with timed(what, self.times):
            yield folder
            self.final(proc).parent.mkdir(parents=True, exist_ok=True)
            shutil.move(str(folder / self.name), str(self.final(proc)))
        shutil.rmtree(folder, ignore_errors=True)  # what else the trainer left there


def build_language(res: Path, lang: str, package: str, shorthand: str, preset: Preset, work: Path, times: dict, *,
                   train_conllu: str, dev_conllu: str | None = None, trees: str | None = None,
                   dev_trees: str | None = None, vector_text: list[list[str]] = (), token_docs: list | None = None,
                   token_dev_docs: list | None = None, force: bool = False) -> None:
    """All models of ``lang`` into RES/lang/<processor>/<package>.pt (module docstring), sizes from ``preset``.

    ``train_conllu``: the training CoNLL-U (:func:`clean_conllu` form); ``dev_conllu``: the dev set that picks the
    step stanza keeps (None: the first ``preset.dev_sentences`` training sentences). ``trees``/``dev_trees``: the
    constituency treebank, bracketed (None: no constituency model). ``vector_text``: more tokenized text for the word
    vectors besides the training words. ``token_docs``/``token_dev_docs``: tokenizer data (documents of
    :func:`token_sentences`; None: no tokenizer; no dev documents: the training ones). ``times`` gets each model's
    seconds."""
    models = _Models(res, lang, package, work, times, force)
    work.mkdir(parents=True, exist_ok=True)
    train, dev = work / f"{lang}.train.conllu", work / f"{lang}.dev.conllu"
    train.write_text(train_conllu, encoding="utf-8")  # the dictionaries (mwt, lemma): every sentence
    blocks = conllu_blocks(train_conllu)
    small_train = work / f"{lang}.small.conllu"  # the networks (pos, depparse): the first model_sentences
    small_train.write_text("".join(b + "\n\n" for b in blocks[:preset.model_sentences]), encoding="utf-8")
    if dev_conllu is None:  # dev ⊂ train: every label known
        dev_conllu = "".join(b + "\n\n" for b in blocks[:preset.dev_sentences])
    dev.write_text(dev_conllu, encoding="utf-8")

    pretrain = models.final("pretrain")
    with models.build("pretrain") as folder:
        if folder is not None:
            types, vectors = random_indexing(conllu_forms(train_conllu) + list(vector_text), preset.vector_dim)
            vec = work / f"{lang}.vec"
            write_vec(vec, types, vectors)
            Pretrain(str(folder / models.name), str(vec), max_vocab=-1).load()  # writes the .pt
    common = ["--cpu", "--seed", str(SEED), "--shorthand", shorthand]  # the lemmatizer takes lang from shorthand
    with_lang = [*common, "--lang", lang]
    pt = ["--wordvec_pretrain_file", str(pretrain)]
    save = lambda folder: ["--save_dir", str(folder), "--save_name", models.name]  # noqa: E731
    if token_docs:
        with models.build("tokenize") as folder:
            if folder is not None:
                txt, labels, mwt_json = work / f"{lang}.tok.txt", work / f"{lang}.tok.labels", work / f"{lang}.mwt.json"
                tokenizer_files(token_docs, txt, labels, mwt_json)
                if token_dev_docs:
                    dev_txt, dev_labels = work / f"{lang}.tok.dev.txt", work / f"{lang}.tok.dev.labels"
                    tokenizer_files(token_dev_docs, dev_txt, dev_labels, work / f"{lang}.mwt.dev.json")
                else:
                    dev_txt, dev_labels = txt, labels
                tok = preset.tokenize
                tokenizer.main(["--txt_file", str(txt), "--label_file", str(labels), "--mwt_json_file", str(mwt_json),
                                "--dev_txt_file", str(dev_txt), "--dev_label_file", str(dev_labels), "--lang", lang,
                                "--shorthand", shorthand, "--emb_dim", str(tok.emb_dim), "--hidden_dim",
                                str(tok.hidden_dim), "--steps", str(tok.steps), "--eval_steps", str(tok.eval_steps),
                                "--report_steps", "1000", "--batch_size", str(tok.batch_size),
                                "--max_seqlen", str(tok.max_seqlen), *save(folder), "--seed", str(SEED), "--cpu"])
    with models.build("mwt") as folder:
        if folder is not None:
            mwt_expander.main(["--train_file", str(train), "--eval_file", str(dev), "--gold_file", str(dev),
                               "--dict_only", *save(folder), *with_lang])
    net = options(preset.network)
    for flag in ("augment_nopunct", "dropout", "word_dropout"):
        if getattr(preset, flag) is not None:
            net += [f"--{flag}", str(getattr(preset, flag))]
    pos_lr = [] if preset.pos_lr is None else ["--lr", str(preset.pos_lr)]
    with models.build("pos") as folder:
        if folder is not None:
            tagger.main([*pt, "--train_file", str(small_train), "--eval_file", str(dev), *net,
                         "--composite_deep_biaff_hidden_dim", str(preset.pos_biaff_dim),
                         "--batch_size", str(preset.pos_batch), "--max_steps", str(preset.pos_steps), *pos_lr,
                         "--eval_interval", str(preset.eval_interval), "--fix_eval_interval", *save(folder),
                         *with_lang])
    with models.build("lemma") as folder:
        if folder is not None:
            lemmatizer.main(["--train_file", str(train), "--eval_file", str(dev), "--dict_only", *save(folder),
                             *common])
    with models.build("depparse") as folder:
        if folder is not None:
            parser.main([*pt, "--train_file", str(small_train), "--eval_file", str(dev), *net, "--model_type", "graph",
                         "--deep_biaff_output_dim", str(preset.dep_biaff_output_dim),
                         "--batch_size", str(preset.dep_batch), "--max_steps", str(preset.dep_steps),
                         "--eval_interval", str(preset.eval_interval), "--no_checkpoint", *save(folder), *with_lang])
    if trees is not None:
        with models.build("constituency") as folder:
            if folder is not None:
                _train_constituency(folder, models.name, work, lang, shorthand, preset, pt, trees, dev_trees)


def _train_constituency(folder: Path, name: str, work: Path, lang: str, shorthand: str, preset: Preset, pt: list,
                        trees: str, dev_trees: str | None) -> None:
    mrg, dev_mrg = work / f"{lang}.train.mrg", work / f"{lang}.dev.mrg"
    mrg.write_text(trees, encoding="utf-8")  # stanza's reader reads a file; then the file keeps the model trees only
    model_trees = read_trees(mrg)[:preset.model_sentences]
    _write_trees(mrg, model_trees)
    if dev_trees is None:
        _write_trees(dev_mrg, model_trees[:preset.dev_trees])
    else:
        dev_mrg.write_text(dev_trees, encoding="utf-8")
        _write_trees(dev_mrg, read_trees(dev_mrg))
    args = constituency_parser.parse_args([
        *pt, "--train_file", str(mrg), "--eval_file", str(dev_mrg), "--shorthand", shorthand, "--lang", lang,
        "--save_dir", str(folder), "--save_name", name, "--no_checkpoint", "--no_multistage",
        "--eval_batch_size", "50", *options(preset.constituency), "--cpu", "--seed", str(SEED)])
    saved = parser_training.EvaluateParser
    parser_training.EvaluateParser = lambda **kw: BracketF1()  # no Java CoreNLP process
    try:
        parser_training.train(args, None, None)  # None: no retagging pipeline (it would download)
    finally:
        parser_training.EvaluateParser = saved


def write_resources(res: Path, packages: dict[str, str]) -> None:
    """RES/resources.json as stanza.download writes it, for the models on disk (with their md5 sums), ``packages``:
    the package name of each language's models."""
    out = {}
    for lang, pkg in packages.items():
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
