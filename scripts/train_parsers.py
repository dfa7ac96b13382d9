"""Real-size stanza parsers for English and German, trained offline on the UD treebanks at hand, and their scores.

``python scripts/train_parsers.py RES --data DATA [--multi30k DIR] [--langs en,de] [--preset real] [--force]``
trains into RES, in stanza.download's layout (``stanza.Pipeline(lang, dir=RES, download_method=None)`` loads them;
``STANZA_RESOURCES_DIR=RES syntrans-parse …`` uses them), with the training code of
:mod:`syntrans.parsing.model_training`:

* English (package ``ewt``): tokenizer, mwt (dictionary), pos, lemma (dictionary) and depparse trained on UD
  English-EWT dev plus all of GUM's ``dep/*.conllu``, scored on UD English-EWT test; constituency trained on GUM's
  ``const/*.ptb`` trees except the documents of :data:`GUM_HELD_OUT` (GUM's own test split), scored on those.
* German (package ``gsd``): tokenizer, mwt (dictionary), pos, lemma (dictionary) and depparse trained on UD
  German-GSD dev, scored on GSD test. No German constituency treebank is at hand, so the constituency parser trains
  on GSD dev's dependency trees converted to phrase structure (:mod:`syntrans.syntax.dependency_phrases`: Xia &
  Palmer 2001's flattest conversion, UPOS preterminals) and is scored on GSD test's converted trees: it learns the
  bracketing the dependency annotation implies, not a constituency treebank's.
* Word vectors: random indexing (Sahlgren 2005) over the training treebank text plus all Multi30k training captions
  of the language (``--multi30k``).

The dev sets that pick the step (epoch) stanza keeps are samples of the training sentences (trees): the only
held-out data are the test sets, which score. Sizes: :data:`syntrans.parsing.model_training.REAL` (``--preset``).

Resumable: a model whose file is in RES is kept (``--force`` rebuilds them all). After each language is built,
RES/scores.json gets its scores (:func:`score_language`), and a markdown table of them is printed at the end.
Run it with ``OMP_NUM_THREADS=1`` on a shared machine: the build and the parse rates use that many torch threads.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

#: GUM's test-split documents among the shared data's (bio and news): the constituency parser's test trees
GUM_HELD_OUT = ("GUM_bio_dvorak", "GUM_bio_jespersen", "GUM_news_nasa", "GUM_news_sensitive")
PACKAGES = {"en": "ewt", "de": "gsd"}
SHORTHANDS = {"en": "en_ewt", "de": "de_gsd"}
RATE_LINES = 500  # Multi30k training captions parsed for the parse rate


def read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def sample(items: list, n: int) -> list:
    """``n`` items spread evenly over ``items`` (all when fewer)."""
    if len(items) <= n:
        return list(items)
    return [items[k * len(items) // n] for k in range(n)]


def treebank(lang: str, data: Path) -> dict:
    """The training and test material of ``lang``: the training CoNLL-U documents as read (MISC kept: the tokenizer
    learns SpaceAfter=No from it), the test CoNLL-U text, trees."""
    from syntrans.parsing.model_training import documents

    if lang == "en":
        ewt, gum = data / "ud_ewt", data / "gum"
        raw_docs = documents(read(ewt / "en_ewt-ud-dev.conllu")) + [read(p) for p in sorted((gum / "dep").glob("*.conllu"))]
        const = sorted((gum / "const").glob("*.ptb"))
        trees = {p.stem: [t for t in read(p).split("\n\n") if t.strip()] for p in const}
        return {"raw_docs": raw_docs, "test": read(ewt / "en_ewt-ud-test.conllu"), "test_name": "UD EWT test",
                "train_name": "UD EWT dev + GUM dep (44 documents)",
                "trees": [t for d, ts in trees.items() if d not in GUM_HELD_OUT for t in ts],
                "test_trees": [t for d in GUM_HELD_OUT for t in trees[d]],
                "trees_name": f"GUM const minus {len(GUM_HELD_OUT)} documents",
                "test_trees_name": "GUM " + ", ".join(GUM_HELD_OUT)}
    gsd = data / "ud_gsd"
    dev, test = read(gsd / "de_gsd-ud-dev.conllu"), read(gsd / "de_gsd-ud-test.conllu")
    return {"raw_docs": documents(dev), "test": test, "test_name": "UD GSD test", "train_name": "UD GSD dev",
            "trees": converted_trees(dev), "test_trees": converted_trees(test),
            "trees_name": "UD GSD dev, dependencies converted to phrase structure (Xia & Palmer 2001)",
            "test_trees_name": "UD GSD test, dependencies converted to phrase structure (Xia & Palmer 2001)"}


def converted_trees(conllu: str) -> list[str]:
    """The phrase-structure tree of each sentence of a CoNLL-U text (multi-word-token and empty-node lines skipped):
    :func:`syntrans.syntax.dependency_phrases.phrase_tree`."""
    from syntrans.parsing.parser_scores import read_conllu
    from syntrans.syntax.dependency_phrases import phrase_tree

    return [phrase_tree([w.form for w in s], [w.head for w in s], [w.upos for w in s], [w.deprel for w in s])[0]
            for s in read_conllu(conllu)]


def build(lang: str, res: Path, data: Path, multi30k: Path | None, preset, force: bool, times: dict) -> dict:
    """Train ``lang``'s models into RES; returns the treebank material."""
    from syntrans.parsing.model_training import build_language, clean_conllu, conllu_blocks, raw_sentences, token_sentences

    tb = treebank(lang, data)
    train = "".join(clean_conllu(d) for d in tb["raw_docs"])
    blocks = conllu_blocks(train)
    dev = "".join(b + "\n\n" for b in sample(blocks, preset.dev_sentences))
    token_docs = [token_sentences(d) for d in tb["raw_docs"]]
    captions = multi30k / f"train.{lang}" if multi30k else None
    vector_text = raw_sentences(captions) if captions and captions.is_file() else []
    trees = dev_trees = None
    if tb["trees"]:
        trees = "\n\n".join(tb["trees"]) + "\n"
        dev_trees = "\n\n".join(sample(tb["trees"], preset.dev_trees)) + "\n"
    tb["sizes"] = {"train_sentences": len(blocks), "train_words": sum(len(s) for s in _forms(train)),
                   "vector_sentences": len(vector_text), "train_trees": len(tb["trees"] or ()),
                   "test_trees": len(tb["test_trees"] or ())}
    build_language(res, lang, PACKAGES[lang], SHORTHANDS[lang], preset, res.parent / f"{res.name}_work" / lang, times,
                   train_conllu=train, dev_conllu=dev, trees=trees, dev_trees=dev_trees, vector_text=vector_text,
                   token_docs=token_docs, token_dev_docs=sample(token_docs, max(1, len(token_docs) // 10)),
                   force=force)
    return tb


def _forms(conllu: str) -> list:
    from syntrans.parsing.model_training import conllu_forms
    return conllu_forms(conllu)


# ------------------------------------------------------------------ scores


def pipeline(lang: str, res: Path, processors: str, pretokenized: bool = True):
    import stanza
    return stanza.Pipeline(lang, dir=str(res), processors=processors, tokenize_pretokenized=pretokenized,
                           download_method=None, logging_level="WARN", use_gpu=False,
                           pos_batch_size=500, depparse_batch_size=5000, constituency_batch_size=64)


def dependency_scores(lang: str, res: Path, test: str) -> dict:
    """UAS, LAS (universal relations), UPOS of the test sentences' gold words parsed pretokenized, punctuation
    counted."""
    from syntrans.parsing.parser_scores import Word, attachment_scores, read_conllu

    gold = read_conllu(test)
    t0 = time.time()
    doc = pipeline(lang, res, "tokenize,pos,lemma,depparse")([[w.form for w in s] for s in gold])
    pred = [[Word(w.text, w.upos, int(w.head), w.deprel) for w in s.words] for s in doc.sentences]
    out = attachment_scores(gold, pred)
    out.update(sentences=len(gold), punct="counted", labels="universal part (CoNLL 2018)",
               seconds=round(time.time() - t0, 1))
    return out


def tree_scores(lang: str, res: Path, trees: list[str]) -> dict:
    """Labelled bracket F1 (PARSEVAL; preterminals and the root node not counted) of the held-out trees' words
    parsed pretokenized against the trees (function tags stripped by stanza's reader)."""
    from stanza.models.constituency import tree_reader

    from syntrans.parsing.parser_scores import bracket_scores

    gold = tree_reader.read_trees("\n".join(trees), use_tqdm=False)
    t0 = time.time()
    doc = pipeline(lang, res, "tokenize,pos,constituency")([list(t.leaf_labels()) for t in gold])
    out = bracket_scores(zip(gold, [s.constituency for s in doc.sentences]), root=False)
    out.update(seconds=round(time.time() - t0, 1), counted="labelled brackets, no preterminals, no root node")
    return out


def tokenizer_scores(lang: str, res: Path, test: str) -> dict:
    """Token and sentence F1 of stanza's tokenizer on the test file's ``# text`` lines: a document (``# newdoc``, else
    20 sentences) is one paragraph, its sentences joined by spaces; tokens are surface tokens (a multi-word token is
    one)."""
    from syntrans.parsing.model_training import documents
    from syntrans.parsing.parser_scores import read_conllu_tokens, span_f1, text_spans, token_spans

    docs = [read_conllu_tokens(d) for d in documents(test)]
    text = "\n\n".join(" ".join(t for t, _ in d) for d in docs)
    t0 = time.time()
    got = pipeline(lang, res, "tokenize", pretokenized=False)(text)
    gold_tokens = token_spans(tok for d in docs for _, toks in d for tok in toks)
    gold_sents = token_spans("".join(toks) for d in docs for _, toks in d)
    pred_tokens = text_spans(text, [(t.start_char, t.end_char) for s in got.sentences for t in s.tokens])
    pred_sents = text_spans(text, [(s.tokens[0].start_char, s.tokens[-1].end_char) for s in got.sentences])
    return {"token_f1": span_f1(gold_tokens, pred_tokens), "sentence_f1": span_f1(gold_sents, pred_sents),
            "gold_tokens": len(gold_tokens), "gold_sentences": len(gold_sents), "seconds": round(time.time() - t0, 1)}


def parse_rates(lang: str, res: Path, captions: Path, lines: int = RATE_LINES) -> dict:
    """Sentences per second of syntrans's StanzaParser (its CPU batches: 64 lines a call) on the first ``lines``
    Multi30k training captions, words split on spaces: dependencies, and for English dependencies and trees."""
    from syntrans.parsing.stanza_parser import DEFAULT_LINES_PER_CALL, StanzaParser

    with open(captions, encoding="utf-8") as f:
        sents = [line.split() for line, _ in zip(f, range(lines))]
    step = DEFAULT_LINES_PER_CALL["cpu"]
    out = {"sentences": len(sents), "threads": _threads()}
    for views in (("deps",), ("deps", "trees")):
        parser = StanzaParser(lang, views=views, device="cpu")
        parser.parse_batch(sents[:8])  # warm up
        t0 = time.time()
        for k in range(0, len(sents), step):
            parser.parse_batch(sents[k:k + step])
        out["+".join(views)] = round(len(sents) / (time.time() - t0), 1)
    return out


def _threads() -> int:
    return int(os.environ.get("OMP_NUM_THREADS", "1"))


def score_language(lang: str, res: Path, tb: dict, multi30k: Path | None) -> dict:
    os.environ["STANZA_RESOURCES_DIR"] = str(res)  # StanzaParser's pipeline reads it
    out = {"package": PACKAGES[lang], "train": tb["train_name"], "test": tb["test_name"], "sizes": tb["sizes"]}
    out["depparse"] = dependency_scores(lang, res, tb["test"])
    out["tokenize"] = tokenizer_scores(lang, res, tb["test"])
    out["constituency"] = tree_scores(lang, res, tb["test_trees"])
    out["constituency"].update(train=tb["trees_name"], test=tb["test_trees_name"])
    captions = multi30k / f"train.{lang}" if multi30k else None
    if captions and captions.is_file():
        out["parse_rate"] = parse_rates(lang, res, captions)
    return out


def table(scores: dict) -> str:
    rows = ["| lang | UAS | LAS | UPOS | bracket F1 | token F1 | sentence F1 | deps sent/s | deps+trees sent/s | "
            "build s |", "|---|---|---|---|---|---|---|---|---|---|"]
    for lang, s in scores.items():
        if not isinstance(s, dict) or "depparse" not in s:
            continue
        d, c, t, r = s["depparse"], s["constituency"], s["tokenize"], s.get("parse_rate", {})
        f1 = c["f1"] if isinstance(c, dict) else "–"
        build_s = sum(v for v in s.get("times", {}).values() if isinstance(v, (int, float)))
        rows.append(f"| {lang} | {d['uas']} | {d['las']} | {d['upos']} | {f1} | {t['token_f1']} | {t['sentence_f1']} "
                    f"| {r.get('deps', '–')} | {r.get('deps+trees', '–')} | {build_s:.0f} |")
    return "\n".join(rows)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("res", type=Path, help="stanza resources folder to train into")
    ap.add_argument("--data", type=Path, required=True, help="the shared data folder (ud_ewt/, ud_gsd/, gum/)")
    ap.add_argument("--multi30k", type=Path, help="Multi30k raw captions (train.en, train.de): word vectors, rates")
    ap.add_argument("--langs", default="en,de")
    ap.add_argument("--preset", default="real")
    ap.add_argument("--force", action="store_true", help="rebuild models that exist")
    ap.add_argument("--no-scores", action="store_true", help="build only")
    args = ap.parse_args(argv)

    import torch

    from syntrans.parsing.model_training import PRESETS, write_resources

    torch.set_num_threads(_threads())
    preset = PRESETS[args.preset]
    langs = [x for x in args.langs.split(",") if x]
    unknown = [x for x in langs if x not in PACKAGES]
    if unknown:
        ap.error(f"--langs: unknown {unknown}; known: {', '.join(PACKAGES)}")
    res = args.res.resolve()
    res.mkdir(parents=True, exist_ok=True)
    scores_path = res / "scores.json"
    scores = json.loads(read(scores_path)) if scores_path.is_file() else {}
    for lang in langs:
        times: dict = {}
        t0 = time.time()
        tb = build(lang, res, args.data, args.multi30k, preset, args.force, times)
        write_resources(res, {x: PACKAGES[x] for x in PACKAGES if (res / x).is_dir()})
        entry = scores.get(lang, {})
        entry["times"] = {**entry.get("times", {}), **times}  # a resumed build keeps the times of the models it kept
        entry["build_seconds_this_run"] = round(time.time() - t0, 1)
        entry["preset"] = preset.name
        if not args.no_scores:
            t1 = time.time()
            entry.update(score_language(lang, res, tb, args.multi30k))
            entry["score_seconds"] = round(time.time() - t1, 1)
        scores[lang] = entry
        scores_path.write_text(json.dumps(scores, indent=2) + "\n", encoding="utf-8")
        print(f"{lang}: done in {time.time() - t0:.0f} s", flush=True)
    print(table(scores), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
