"""``prepare_corpus``: fetch → extract → tokenize → bpe → parse → binarize → reference, each step resumable.

Layout of OUT (``out_dir``)::

    raw/                      --raw-dir by default: archives, SHA256SUMS (synthetic: the generated corpus)
                              (licensed and local corpora: nothing is written into their --raw-dir)
    text/{split}.{lang}       raw parallel text (extract; IWSLT's valid is written by tokenize)
    tok/{split}.{lang}        Moses-tokenized text, training pairs cleaned (tokenize); with --no-moses the cleaned
                              raw text (whitespace made single spaces)
    bpe/codes, bpe/{split}.{lang}   BPE codes (codes.{lang} when separate) and segmented text (bpe)
    parse/{split}.{lang}.conllu     parses of tok/ (parse); with --no-moses stanza's own tokens, with their
                              character spans in MISC
    parse-import/             --parser imported: another parser's output for tok/ (syntrans.parsing.imported)
    multitask/{split}.{lang}  recipe multitask only: the +MULTI-TASK text (syntrans.prep.multitask; binarize)
    data-bin/                 fairseq binaries + syntax sidecars (binarize; multitask: of multitask/, no sidecars)
    ref/test.{lang}           raw test text, lowercased if the corpus is: sacreBLEU's reference (reference)
    .done/<step>.json         done-markers (settings, outputs, info); .done/raw-SHA256SUMS: first-use
                              sums of a licensed/local corpus's files; .done/recipe.json: the recipe
    prepared.json             the summary (:class:`Prepared`)

A finished step (its marker's settings equal the current ones and its outputs exist) is skipped with
"step X: done before, skipped"; a step whose settings changed, or every step under ``force``, is
redone, and so is every later step that reads its outputs (:data:`DEPENDS`: a new BPE size redoes
bpe and binarize but not the parses). Smoke runs (``smoke``) slice the extracted text to the first
``smoke_sizes`` pairs (train 2000, valid 200, test 200 by default; IWSLT14's valid, held out from the
train slice, is not capped), use 1000 BPE merges unless ``bpe_ops`` is given, and let ``parser="auto"``
fall back to right-branching without stanza models.

A ``recipe`` (:class:`~syntrans.prep.recipe.Recipe`: one paper's settings) is applied on top of the corpus'
settings; it is recorded in ``.done/recipe.json`` and ``prepared.json``, and OUT prepared under one recipe
(or none) is not reused under another: that is a PrepError unless ``force`` prepares it again. Smoke runs
keep their 1000 merges (per side) over a recipe's, unless ``bpe_ops`` is given; ``bpe_ops`` replaces a
recipe's merges too.
"""
from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..atomic_write import atomic_file, write_text
from ..data.parse_views import VIEWS, parse_views, side_views
from ..data.sidecar_format import kinds_of_views
from ..parsing.names import PREPARE_PARSERS
from . import markers
from .binarize import binary_outputs, run_binarize
from .bpe import codes_paths, copy_words, run_bpe
from .checksums import Digest, file_digest, read_sums
from .clean import LANGUAGE, REASONS
from .corpora import CORPORA, SPLITS, Corpus, PairData, Part
from .download import check_local_files, fetch_downloads, local_files
from .errors import PrepError
from .extract import extract_text, read_lines
from .langid_filter import check_languages
from .multitask import MULTITASK_SEED, TAGS, TARGET_VIEW, write_multitask
from .parse_step import IMPORT_DIR, IMPORTED, imported_files, resolve_parsers, run_parse, stanza_installed
from .prepare_text import tokenize_corpus
from .recipe import Recipe, apply_recipe, describe_settings, recipe_settings
from .segmentation import Segmentation, model_paths, run_segmentation

STEPS = ("fetch", "extract", "tokenize", "bpe", "parse", "binarize", "reference")
#: the steps whose outputs each step reads: redoing one redoes these dependants (and theirs)
DEPENDS = {"fetch": (), "extract": ("fetch",), "tokenize": ("extract",), "bpe": ("tokenize",), "parse": ("tokenize",),
           "binarize": ("bpe", "parse"), "reference": ("extract",)}
SMOKE_SIZES = {"train": 2000, "valid": 200, "test": 200}
SMOKE_BPE_OPS = 1000
SYNTHETIC_SEED = 1
LOCAL_SUMS = "raw-SHA256SUMS"  # first-use sums of a licensed/local corpus's files, in OUT/.done
PARSERS = PREPARE_PARSERS
RECIPE_FILE = "recipe.json"  # in OUT/.done: the recipe OUT is prepared under


@dataclass
class Prepared:
    """What a prepared corpus is made of (also written to ``OUT/prepared.json``).

    ``codes``: the joint BPE codes, or the source side's codes when separate (``codes_by_lang`` has
    both); None for word-level data (``word_vocab``: no BPE, a dictionary of that many entries per
    language). ``bpe_ops``: the merges (the source side's when separate; ``bpe_ops_by_lang`` has both;
    0 for word-level data). ``ref_test``/``src_test_raw``: raw test target/source text, one line per test
    pair, lowercased if the corpus lowercases. ``parsers``: {lang: parser used} ("gold" for synthetic).
    ``sizes``: pairs per split after cleaning; ``dropped``: training pairs dropped per filter (``language``
    too where the language filter is on). ``recipe``: the set fields of the recipe, or None. ``views``: {lang: the
    views of its parse asked for} (:mod:`syntrans.data.parse_views`; the sidecars built from them are in data-bin).
    """

    corpus: str
    src: str
    tgt: str
    out_dir: Path
    data_bin: Path
    codes: Path | None
    ref_test: Path
    src_test_raw: Path
    lowercase: bool
    bpe_ops: int
    joint: bool
    parsers: dict
    sizes: dict
    dropped: dict = field(default_factory=dict)
    codes_by_lang: dict = field(default_factory=dict)
    smoke: bool = False
    bpe_ops_by_lang: dict = field(default_factory=dict)
    word_vocab: int | None = None
    recipe: dict | None = None
    views: dict = field(default_factory=dict)  # {lang: views of its parse}
    ref_test_more: list = field(default_factory=list)  # the test set's further references (NIST: 3 more)
    segmentation: str = "subword_nmt"  # --bpe: subword_nmt, sentencepiece or gpt2 (codes: its model file)
    #: what the pieces are of: "moses" (the Moses-tokenized text) or "raw" (--no-moses: the raw text, parsed by
    #: stanza's own tokenizer with character spans); syntrans-translate checks it against its own flags
    text_route: str = "moses"
    crossing: dict = field(default_factory=dict)  # {split.lang: pieces crossing a word boundary} (not subword_nmt)
    #: {split.lang: {"words": n, "lines": [...], "merged_sentences": n}}: words without a piece of their own, joined
    #: to the word whose piece holds them (not subword_nmt)
    joined: dict = field(default_factory=dict)
    #: {split.lang: {fallback: {"count": n, "lines": [...]}}}: every per-line fault of the sidecar build that was
    #: counted and worked around (syntrans.data.build_sidecars.SidecarReport.fallbacks; --strict stops at them)
    fallbacks: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        d = asdict(self)
        for k in ("out_dir", "data_bin", "codes", "ref_test", "src_test_raw"):
            d[k] = None if d[k] is None else str(d[k])
        d["ref_test_more"] = [str(x) for x in self.ref_test_more]
        d["codes_by_lang"] = {k: str(v) for k, v in self.codes_by_lang.items()}
        d["paths"] = {"data_bin": d["data_bin"], "codes": d["codes"], "ref": d["ref_test"], "src_test_raw": d["src_test_raw"]}
        return d

    def summary(self) -> str:
        sizes = ", ".join(f"{s} {self.sizes[s]}" for s in SPLITS)
        dropped = ", ".join(f"{k} {v}" for k, v in self.dropped.items())
        parsers = ", ".join(f"{lang}={p}" for lang, p in self.parsers.items())
        if self.word_vocab is not None:
            bpe = f"no BPE (words, vocabulary {self.word_vocab} per language)"
        elif self.segmentation == "gpt2":
            bpe = f"gpt2 byte-level BPE ({self.codes})"
        elif self.segmentation == "sentencepiece":
            bpe = f"SentencePiece {self.codes} ({'one model' if self.joint else 'a model per side'})"
        elif len(set(self.bpe_ops_by_lang.values())) > 1:
            bpe = "BPE " + ", ".join(f"{lang} {n}" for lang, n in self.bpe_ops_by_lang.items()) + " separate"
        else:
            bpe = f"BPE {self.bpe_ops} {'joint' if self.joint else 'separate'}"
        recipe = f"; recipe: {describe_settings(self.recipe)}" if self.recipe else ""
        views = ", ".join(f"{lang} {','.join(v) or 'none'}" for lang, v in self.views.items()) or "none"
        if self.text_route == "raw":
            bpe += " on the raw text (no Moses step)"
        if self.segmentation != "subword_nmt":
            crossing = ", ".join(f"{k} {n}" for k, n in self.crossing.items()) or "none built"
            bpe += f" (pieces crossing a word boundary, aligned by characters: {crossing})"
            joined = ", ".join(f"{k} {j['words']} in {len(j['lines'])} lines" for k, j in self.joined.items())
            bpe += f" (words without a piece of their own, joined to the word whose piece holds them: {joined or 'none built'})"
        return (f"prepared {self.corpus} {self.src}->{self.tgt}{' (smoke)' if self.smoke else ''}: {sizes} pairs "
                f"(train dropped: {dropped or 'no filters'}); {bpe}; "
                f"parsers {parsers} (views {views}); data-bin {self.data_bin}; reference {self.ref_test}{recipe}")


@dataclass
class _Run:
    """The settings of one prepare_corpus call, resolved."""

    corpus: Corpus
    pair: PairData
    src: str
    tgt: str
    out: Path
    raw: Path
    smoke: bool
    sizes: dict
    parser: str
    ops: dict  # {lang: BPE merges}
    workers: int
    force: bool
    log: Callable[[str], None]
    known: list  # [(sums, label)] from --checksums
    parse_shards: int
    recipe: dict | None = None  # recipe_settings(recipe)
    views: dict = field(default_factory=dict)  # {lang: the views of its parse} (syntrans.data.parse_views)
    launch: object = None  # a syntrans.jobs.launcher.LaunchOptions for the parse shards; None: here
    segmentation: Segmentation = field(default_factory=Segmentation)  # --bpe and its model files
    strict: bool = False  # --strict: a per-line fault of the sidecar build stops it (syntrans-preprocess --strict)

    @property
    def direction(self) -> str:
        return f"{self.src}-{self.tgt}"

    @property
    def limits(self) -> dict:
        return dict(self.sizes) if self.smoke else dict.fromkeys(SPLITS)


def _path(out: Path, p: Path) -> str:
    return p.relative_to(out).as_posix()


# --------------------------------------------------------------------------------------------
# steps: each is (settings, run) -> (outputs relative to OUT, info)


def _digest_cache(out: Path) -> dict[str, Digest]:
    m = markers.load(out, "fetch")
    cache = {}
    for name, d in ((m or {}).get("info", {}).get("digests") or {}).items():
        try:
            cache[name] = Digest(**d)
        except TypeError:
            pass
    return cache


def _current_digests(r: _Run) -> dict:
    """{file: sha256 or None} of the raw files now (hashing only files whose size or mtime changed)."""
    if r.corpus.kind == "download":
        names = [d.name for d in r.corpus.downloads if _needed(r, d.name)]
    else:
        names = []
        for cands in local_files([p for s in SPLITS for p in r.pair.splits[r.direction][s]] + _reference_parts(r)):
            hit = next((n for n in cands if (r.raw / n).is_file()), cands[0])
            names.append(hit)
    cache = _digest_cache(r.out)
    out = {}
    for name in names:
        path = r.raw / name
        if not path.is_file():
            out[name] = None
            continue
        st = os.stat(path)
        c = cache.get(name)
        out[name] = c.sha256 if c and (c.size, c.mtime_ns) == (st.st_size, st.st_mtime_ns) else file_digest(path).sha256
    return out


def _reference_parts(r: _Run) -> list[Part]:
    """The test set's further references of this direction's target (local files in --raw-dir), as parts."""
    return [Part("plain", ((r.tgt, (name,)),)) for name in r.pair.reference_files(r.tgt)]


def _needed(r: _Run, archive: str) -> bool:
    return any(p.archive == archive for s in SPLITS for p in r.pair.splits[r.direction][s])


def _fetch_settings(r: _Run, info: dict | None = None) -> dict:
    """The fetch step's settings: the sha256 of every raw file (None: missing), so a changed file redoes it.

    Without a fetch marker (or under force) the step runs anyway: nothing is hashed here then.
    After a run, ``info`` (its digests) gives the settings without hashing again. New ``--checksums``
    sums also redo the step (they are checked), but only changed files redo the steps after it
    (:func:`_fetch_id`).
    """
    if r.corpus.kind == "synthetic":
        return {"kind": "synthetic", "seed": SYNTHETIC_SEED, "sizes": r.sizes}
    if info is not None:
        files = {name: d["sha256"] for name, d in info["digests"].items()}
    elif r.force or markers.load(r.out, "fetch") is None:
        files = None
    else:
        files = _current_digests(r)
    return {"kind": r.corpus.kind, "raw_dir": str(r.raw), "files": files,
            "checksums": {label: sums for sums, label in r.known}}


def _fetch_id(settings: dict) -> str:
    """The fetch marker's id: a digest of what the raw files are, so re-verifying the same files redoes nothing after."""
    what = {k: v for k, v in settings.items() if k not in ("checksums", "after")}
    return hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest()[:32]


def _fetch(r: _Run) -> tuple[list[str], dict]:
    if r.corpus.kind == "synthetic":
        from ..synth import write_corpus  # lazy: syntrans.synth imports stanza (and torch)

        r.raw.mkdir(parents=True, exist_ok=True)
        write_corpus(str(r.raw), r.sizes, SYNTHETIC_SEED, *r.pair.langs)
        r.log(f"fetch: generated the synthetic corpus (seed {SYNTHETIC_SEED}, {r.sizes}) in {r.raw}")
        outs = [f"{s}.{lang}{ext}" for s in SPLITS for lang in r.pair.langs for ext in ("", ".conllu")]
        return [_path(r.out, r.raw / o) for o in outs], {}
    cache = {} if r.force else _digest_cache(r.out)
    if r.corpus.kind == "download":
        downloads = [d for d in r.corpus.downloads if _needed(r, d.name)]
        digests = fetch_downloads(r.corpus, downloads, r.raw, r.known, cache, r.log)
    else:
        parts = [p for s in SPLITS for p in r.pair.splits[r.direction][s]] + _reference_parts(r)
        digests = check_local_files(r.corpus, parts, r.raw, r.out / markers.DONE_DIR / LOCAL_SUMS, r.known, cache, r.log)
    return [], {"digests": {k: asdict(v) for k, v in digests.items()}}


def _extract_settings(r: _Run) -> dict:
    return {"raw_dir": str(r.raw), "langs": r.pair.langs,
            "parts": {s: [asdict(p) for p in r.pair.splits[r.direction][s]] for s in SPLITS}}


def _extract(r: _Run) -> tuple[list[str], dict]:
    sizes = extract_text(r.pair, r.direction, r.raw, r.out / "text", r.log)
    outs = [f"text/{s}.{lang}" for s in sizes for lang in r.pair.langs]
    return outs, {"lines": sizes}


def _tokenize_settings(r: _Run) -> dict:
    p = r.pair
    settings = {"limits": r.limits, "langs": p.langs, "lowercase": p.lowercase, "aggressive_dashes": p.aggressive_dashes,
                "segmented": p.segmented, "tokenize": p.tokenize, "valid_every": p.valid_every,
                "clean": asdict(p.clean) if p.clean else None}
    # a recipe's settings, named only when set: a folder prepared before they existed keeps its markers
    for name in ("normalize_punctuation", "remove_non_printing", "langid"):
        if getattr(p, name):
            settings[name] = True
    if p.train_limit is not None:
        settings["train_limit"] = p.train_limit
    if r.segmentation.raw_text:  # named only when set: a folder prepared before keeps its marker
        settings["moses"] = False
    return settings


def _tokenize(r: _Run) -> tuple[list[str], dict]:
    info = tokenize_corpus(r.pair, r.out / "text", r.out / "tok", r.limits, r.workers, r.log,
                           moses=not r.segmentation.raw_text)
    return [f"tok/{s}.{lang}" for s in SPLITS for lang in r.pair.langs], info


def _bpe_settings(r: _Run) -> dict:
    if r.pair.word_vocab is not None:
        return {"words": True, "langs": r.pair.langs}
    ops = set(r.ops.values())
    settings = {"ops": ops.pop() if len(ops) == 1 else r.ops, "joint": r.pair.joint, "langs": r.pair.langs}
    if not r.segmentation.default:  # named only when not subword_nmt: a folder prepared before keeps its marker
        settings["segmentation"] = r.segmentation.settings()
    return settings


def _bpe(r: _Run) -> tuple[list[str], dict]:
    if r.pair.word_vocab is not None:
        copy_words(r.out / "tok", r.out / "bpe", r.pair.langs, r.log)
        return [f"bpe/{s}.{lang}" for s in SPLITS for lang in r.pair.langs], {}
    if not r.segmentation.default:
        models = run_segmentation(r.segmentation, r.out / "tok", r.out / "bpe", r.pair.langs, r.ops, r.pair.joint,
                                  r.workers, r.log)
        inside = sorted({_path(r.out, m) for m in models.values() if r.out in m.parents})
        return inside + [f"bpe/{s}.{lang}" for s in SPLITS for lang in r.pair.langs], {}
    codes = run_bpe(r.out / "tok", r.out / "bpe", r.pair.langs, r.ops, r.pair.joint, r.workers, r.log)
    outs = sorted({_path(r.out, c) for c in codes.values()}) + [f"bpe/{s}.{lang}" for s in SPLITS for lang in r.pair.langs]
    return outs, {}


def _lang_views(r: _Run) -> dict:
    """{lang: the views its parse holds}: those asked for, both for gold parses."""
    return dict.fromkeys(r.pair.langs, VIEWS) if r.pair.gold_parses else dict(r.views)


def _parse_settings(r: _Run) -> dict:
    views = _lang_views(r)
    if not any(views.values()):
        return {"views": {}}  # nothing to parse
    parsers, _ = resolve_parsers(r.parser, r.pair.langs, r.smoke, r.pair.gold_parses)
    settings = {"requested": r.parser, "parsers": parsers}
    if any(tuple(v) != VIEWS for v in views.values()):  # named only when not both on both sides: a folder prepared
        settings["views"] = {lang: list(v) for lang, v in views.items()}  # before views existed keeps its marker
    if IMPORTED in parsers.values():  # new or changed files to import redo the step
        settings["imported"] = imported_files(r.out / IMPORT_DIR)
    if r.segmentation.raw_text:  # named only when set: a folder prepared before keeps its marker
        settings["char_spans"] = True
    return settings


def _parse(r: _Run) -> tuple[list[str], dict]:
    views = _lang_views(r)
    if not any(views.values()):
        r.log("parse: no view asked for (the systems read no parse): nothing parsed, no sidecars")
        return [], {"parsers": dict.fromkeys(r.pair.langs, "none")}
    parsers, notes = resolve_parsers(r.parser, r.pair.langs, r.smoke, r.pair.gold_parses)
    for note in notes:
        r.log(note)
    used = run_parse(r.out / "tok", r.out / "parse", r.pair.langs, parsers, r.parser, r.smoke, r.parse_shards,
                     r.workers, gold_dir=r.raw, views=views, launch=r.launch, log=r.log,
                     char_spans=r.segmentation.raw_text)
    return [f"parse/{s}.{lang}.conllu" for s in SPLITS for lang in r.pair.langs if views[lang]], {"parsers": used}


def _sidecar_kinds(r: _Run) -> dict:
    """{lang: the sidecars the binarize step writes}: the word index, and those of the side's views (none without a
    view; all four for gold parses)."""
    return {lang: kinds_of_views(views) if views else ()
            for lang, views in _lang_views(r).items()}


def _binarize_settings(r: _Run) -> dict:
    # the sidecar kinds: a folder binarized before a kind was added is binarized again (its marker lacks it)
    kinds = _sidecar_kinds(r)
    same = len(set(kinds.values())) == 1  # one list when both sides have the same: earlier folders keep their marker
    settings = {"src": r.src, "tgt": r.tgt, "joint": r.pair.joint,
                "sidecars": list(kinds[r.src]) if same else {lang: list(k) for lang, k in kinds.items()}}
    if r.pair.word_vocab is not None:
        settings["nwords"] = r.pair.word_vocab
    if not r.segmentation.default:  # named only when not subword_nmt: a folder prepared before keeps its marker
        settings["segmentation"] = r.segmentation.bpe
    if r.segmentation.raw_text:  # named only when set
        settings["char_spans"] = True
    if r.pair.multitask:  # named only when set: a folder prepared before it existed keeps its marker
        settings["multitask"] = {"seed": MULTITASK_SEED, "tags": list(TAGS), "target": r.pair.multitask_target}
    if r.strict:  # named only when set: a folder built without it is built again, and checked
        settings["strict"] = True
    return settings


def _binarize(r: _Run) -> tuple[list[str], dict]:
    if r.pair.multitask:
        sizes = write_multitask(r.out / "bpe", r.out / "parse", r.out / "multitask", r.src, r.tgt,
                                words=r.pair.word_vocab is not None, log=r.log, target=r.pair.multitask_target)
        run_binarize(r.out / "multitask", None, r.out / "data-bin", r.src, r.tgt, r.pair.joint, r.workers, r.log,
                     nwords=r.pair.word_vocab)
        outs = [f"multitask/{s}.{lang}" for s in SPLITS for lang in (r.src, r.tgt)]
        return outs + [f"data-bin/{p}" for p in binary_outputs(r.src, r.tgt, sidecars=False)], {"multitask": sizes}
    kinds = _sidecar_kinds(r)
    any_kinds = any(kinds.values())
    report = run_binarize(r.out / "bpe", r.out / "parse" if any_kinds else None, r.out / "data-bin", r.src, r.tgt,
                          r.pair.joint, r.workers, r.log, nwords=r.pair.word_vocab, kinds=kinds,
                          extra=r.segmentation.preprocess_argv() + ["--strict"] * r.strict)
    info = {}
    if report is not None:  # every per-line fallback of every side built, with its lines
        info["fallbacks"] = falls = {f"{split}.{lang}": rep.fallbacks() for split, lang, rep in report.sides}
        if not r.segmentation.default:  # the crossing pieces and joined words of every side built, read from them
            info["crossing"] = {side: f["crossing_pieces"]["count"] for side, f in falls.items()}
            info["joined"] = {side: {"words": f["joined_words"]["count"], "lines": f["joined_words"]["lines"],
                                     "merged_sentences": f["merged_sentences"]["count"]} for side, f in falls.items()}
    return [f"data-bin/{p}" for p in binary_outputs(r.src, r.tgt, sidecars=any_kinds, kinds=kinds)], info


def _reference_settings(r: _Run) -> dict:
    settings = {"src": r.src, "tgt": r.tgt, "lowercase": r.pair.lowercase, "limits": [r.limits[s] for s in REF_SPLITS],
                "splits": list(REF_SPLITS)}
    if r.pair.reference_files(r.tgt):  # named only when there are some: other folders keep their markers
        settings["more_refs"] = list(r.pair.reference_files(r.tgt))
    return settings


#: the splits whose raw text is kept as references (ref/<split>.<lang>): validation BLEU and test BLEU
REF_SPLITS = ("valid", "test")


def _reference(r: _Run) -> tuple[list[str], dict]:
    ref = r.out / "ref"
    ref.mkdir(parents=True, exist_ok=True)
    counts = {}
    for split in REF_SPLITS:
        for lang in (r.src, r.tgt):
            out = ref / f"{split}.{lang}"
            n = 0
            with atomic_file(out) as f:
                for line in read_lines(r.out / "text" / f"{split}.{lang}"):
                    if r.limits[split] is not None and n >= r.limits[split]:
                        break
                    line = line.rstrip("\r\n")
                    f.write((line.lower() if r.pair.lowercase else line) + "\n")
                    n += 1
            counts[f"{split}.{lang}"] = n
    r.log(f"reference: {ref}/{{valid,test}}.{{{r.src},{r.tgt}}}: {counts['valid.' + r.tgt]} and "
          f"{counts['test.' + r.tgt]} lines" + (" (lowercased)" if r.pair.lowercase else ""))
    more = []
    for k, name in enumerate(r.pair.reference_files(r.tgt), 2):  # the test set's further references
        lines = list(read_lines(r.raw / name))
        if r.limits["test"] is not None:
            lines = lines[:r.limits["test"]]
        if len(lines) != counts[f"test.{r.tgt}"]:
            raise PrepError(f"{r.raw / name}: {len(lines)} lines, but the test set has {counts['test.' + r.tgt]} "
                            f"segments; expected reference {k} of every test segment, line by line (the "
                            f"layout of corpus {r.corpus.name!r} in syntrans.prep.corpora)")
        out = ref / f"test.{r.tgt}.{k}"
        write_text(out, "".join((x.rstrip("\r\n").lower() if r.pair.lowercase else x.rstrip("\r\n")) + "\n"
                                for x in lines))
        more.append(f"ref/test.{r.tgt}.{k}")
    if more:
        r.log(f"reference: {len(more) + 1} references of the test set: {ref}/test.{r.tgt} and {', '.join(more)}")
    return [f"ref/{s}.{lang}" for s in REF_SPLITS for lang in (r.src, r.tgt)] + more, {"lines": counts}


_STEP_FUNCS = {
    "fetch": (_fetch_settings, _fetch),
    "extract": (_extract_settings, _extract),
    "tokenize": (_tokenize_settings, _tokenize),
    "bpe": (_bpe_settings, _bpe),
    "parse": (_parse_settings, _parse),
    "binarize": (_binarize_settings, _binarize),
    "reference": (_reference_settings, _reference),
}


def run_steps(r: _Run) -> dict[str, dict]:
    """Run or skip every step in order (rules: module docs and :mod:`.markers`); returns {step: info}."""
    infos, ids = {}, {}  # ids: marker id of each step, finished now or before
    for step in STEPS:
        settings_fn, run_fn = _STEP_FUNCS[step]
        after = {dep: ids[dep] for dep in DEPENDS[step]}
        settings = dict(settings_fn(r), after=after)
        done, why = markers.check(r.out, step, settings)
        if done and not r.force:
            r.log(f"step {step}: done before, skipped")
            m = markers.load(r.out, step)
            infos[step], ids[step] = m["info"], m["id"]
            continue
        r.log(f"step {step}: running ({'--force' if r.force else why or 'first run'})")
        markers.clear(r.out, step)
        t0 = time.time()
        outputs, info = run_fn(r)
        info = dict(info, seconds=round(time.time() - t0, 1))  # the step's own time (of its last run)
        if step == "fetch":
            settings = dict(_fetch_settings(r, info), after=after)  # the digests of what is there now
        ids[step] = markers.save(r.out, step, settings, outputs, info,
                                 run_id=_fetch_id(settings) if step == "fetch" else None)
        r.log(f"step {step}: finished in {time.time() - t0:.1f}s")
        infos[step] = markers.normalise(info)
    return infos


# --------------------------------------------------------------------------------------------
# the API


def warn_not_applying(corpus: str, parser: str, views, log: Callable[[str], None], parse_shards: int = 1) -> None:
    """Say which flags a corpus with gold parses does not use: ``--parser`` (its gold parses are used), ``--views``
    (the gold parses hold every view, all written) and ``--parse-shards`` (nothing is parsed)."""
    if parse_shards != 1:
        log(f"warning: {corpus}: --parse-shards {parse_shards} does not apply: the corpus comes with gold parses, "
            "nothing is parsed")
    if parser != "auto":
        log(f"warning: {corpus}: --parser {parser} does not apply: the corpus comes with gold parses, which are used "
            "(leave out --parser)")
    if views is not None:
        try:
            asked = side_views(views)
        except ValueError:
            return
        if any(tuple(v) != tuple(VIEWS) for v in asked.values()):
            log(f"warning: {corpus}: --views does not apply: the gold parses hold every view ({', '.join(VIEWS)}), all "
                "written on both sides (leave out --views)")


def _resolve(corpus: str, src: str, tgt: str, out_dir: Path, raw_dir: Path | None, smoke: bool, parser: str,
             bpe_ops: int | None, workers: int, force: bool, log: Callable[[str], None], smoke_sizes: dict | None,
             checksums: Path | None, parse_shards: int, recipe: Recipe | None = None, views=None,
             launch=None, segmentation: Segmentation | None = None) -> _Run:
    if corpus not in CORPORA:
        raise PrepError(f"unknown corpus {corpus!r}; expected one of: {', '.join(CORPORA)}")
    c = CORPORA[corpus]
    if recipe is not None and not isinstance(recipe, Recipe):
        raise PrepError(f"recipe: expected a syntrans.prep.recipe.Recipe or None, found {type(recipe).__name__}")
    pair = apply_recipe(c.find_pair(src, tgt), recipe)
    if parser not in PARSERS:
        raise PrepError(f"unknown parser {parser!r}; expected one of: {', '.join(PARSERS)}")
    sizes = dict(SMOKE_SIZES)
    for k, v in (smoke_sizes or {}).items():
        if k not in SMOKE_SIZES:
            raise PrepError(f"smoke_sizes: unknown split {k!r}; expected train, valid, test")
        if v is not None:
            if int(v) < 1:
                raise PrepError(f"smoke_sizes: {k} must be at least 1, found {v}")
            sizes[k] = int(v)
    if bpe_ops is not None and bpe_ops < 1:
        raise PrepError(f"--bpe-ops must be at least 1, found {bpe_ops}")
    if bpe_ops is not None and pair.word_vocab is not None:
        raise PrepError(f"--bpe-ops {bpe_ops}: the recipe asks for word-level data without BPE (word_vocab "
                        f"{pair.word_vocab}); expected no --bpe-ops with it")
    segmentation = segmentation or Segmentation()
    if not segmentation.default and pair.word_vocab is not None:
        raise PrepError(f"--bpe {segmentation.bpe}: the recipe asks for word-level data without BPE (word_vocab "
                        f"{pair.word_vocab}); expected --bpe subword_nmt or no --word-vocab")
    if not segmentation.default and pair.multitask:
        raise PrepError(f"--bpe {segmentation.bpe}: the +MULTI-TASK data is built from subword-nmt pieces; expected "
                        "--bpe subword_nmt with --multitask")
    if segmentation.raw_text and (pair.gold_parses or not pair.tokenize):
        raise PrepError(f"--no-moses: corpus {corpus!r} comes tokenized with gold parses (no character spans to align "
                        "raw text by); expected a corpus of raw text, or no --no-moses")
    if segmentation.raw_text and parser == IMPORTED:
        raise PrepError(f"--no-moses: --parser {IMPORTED} reads another parser's output for the Moses-tokenized text; "
                        "expected stanza (or a model-free parser) to parse the raw text")
    if pair.langid:
        check_languages(pair.langs)
    if workers < 1 or parse_shards < 1:
        raise PrepError(f"--workers and --parse-shards must be at least 1, found {workers} and {parse_shards}")
    out = Path(out_dir).resolve()
    raw = out / "raw" if (raw_dir is None or c.kind == "synthetic") else Path(raw_dir).resolve()
    if c.kind == "synthetic" and raw_dir is not None:
        log(f"synthetic: --raw-dir {raw_dir} is not used (the corpus is generated into {raw})")
    user_file = Path(checksums).resolve() if checksums else None
    if user_file is not None and not user_file.is_file():
        raise PrepError(f"--checksums {user_file}: expected a sha256sum-format file, found nothing")
    known = [(read_sums(user_file), f"--checksums {user_file}")] if user_file else []
    if bpe_ops is not None:
        ops = dict.fromkeys(pair.langs, bpe_ops)
    elif smoke:
        ops = dict.fromkeys(pair.langs, SMOKE_BPE_OPS)
    else:
        ops = pair.merges()
    try:
        sides = side_views(views)
    except ValueError as e:
        raise PrepError(f"views: {e}") from None
    if pair.multitask:  # the +MULTI-TASK text linearises the source's parse: the view its parse target is written from
        sides["source"] = parse_views(list(sides["source"]) + [TARGET_VIEW[pair.multitask_target]])
    views = {src: sides["source"], tgt: sides["target"]}
    return _Run(c, pair, src, tgt, out, raw, smoke, sizes, parser, ops, workers, force, log, known, parse_shards,
                recipe_settings(recipe), views, launch, segmentation)


def recipe_from_settings(settings: dict | None) -> Recipe | None:
    """The Recipe whose :meth:`~syntrans.prep.recipe.Recipe.settings` are ``settings`` (None for none)."""
    if not settings:
        return None
    values = dict(settings)
    if values.get("train_parts") is not None:
        from .corpora import Part

        values["train_parts"] = tuple(Part(fmt=d["fmt"], files=tuple((k, tuple(v)) for k, v in d["files"]),
                                           archive=d.get("archive"), columns=tuple(d.get("columns", ())))
                                      for d in values["train_parts"])
    return Recipe(**values)


def again_call(out_dir: Path) -> dict:
    """The arguments of :func:`prepare_corpus` that prepared ``out_dir`` (its ``prepared.json``, key ``again``): what
    ``syntrans-prepare --again OUT`` runs with, other views given; a PrepError when OUT holds no such record."""
    path = Path(out_dir) / "prepared.json"
    try:
        again = json.loads(path.read_text(encoding="utf-8"))["again"]
    except (OSError, ValueError, KeyError, TypeError):
        raise PrepError(f"{path}: expected the summary of a folder syntrans-prepare made (with its 'again' record), "
                        "found none; prepare it with syntrans-prepare CORPUS --pair SRC-TGT --out DIR") from None
    call = {k: again[k] for k in ("corpus", "src", "tgt", "smoke", "parser", "bpe_ops", "smoke_sizes", "parse_shards")}
    call["views"] = again.get("views")
    call["raw_dir"] = None if again.get("raw_dir") is None else Path(again["raw_dir"])
    call["recipe"] = recipe_from_settings(again.get("recipe"))
    if again.get("segmentation"):  # named only when not subword_nmt
        call["segmentation"] = Segmentation(**again["segmentation"])
    call["out_dir"] = Path(out_dir)
    return call


def _stored_recipe(out: Path) -> tuple[bool, dict | None]:
    """(whether OUT says which recipe it was prepared under, that recipe's settings or None)."""
    for path in (out / markers.DONE_DIR / RECIPE_FILE, out / "prepared.json"):
        if path.is_file():
            try:
                return True, json.loads(path.read_text(encoding="utf-8")).get("recipe")
            except (OSError, ValueError, AttributeError):
                raise PrepError(f"{path}: expected JSON with a \"recipe\" entry, found something unreadable; "
                                f"run again with --force to prepare {out} again") from None
    return False, None


def _check_recipe(r: _Run) -> None:
    """PrepError when OUT was prepared under another recipe (unless force); then record this run's recipe."""
    known, stored = _stored_recipe(r.out)
    now = markers.normalise(r.recipe)
    if known and markers.normalise(stored) != now and not r.force:
        def said(x):
            return json.dumps(x, sort_keys=True) if x else "no recipe (the corpus settings)"
        raise PrepError(f"{r.out} was prepared under {said(stored)}; this run asks for {said(now)}. Expected the "
                        f"same recipe: use another --out, or pass --force to prepare {r.out} again under the new one")
    path = r.out / markers.DONE_DIR / RECIPE_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text(path, json.dumps({"recipe": now}, indent=1, sort_keys=True) + "\n")


def _warn_missing_models(r: _Run) -> None:
    """Say at the start (not hours later, at the parse step) when stanza models the run will need are missing."""
    if r.parser not in ("auto", "stanza") or r.pair.gold_parses or (r.smoke and r.parser == "auto"):
        return
    missing = [lang for lang in r.pair.langs if not stanza_installed(lang)]
    if missing:
        from ..parsing.stanza_parser import download_command  # lazy: syntrans.parsing imports stanza and torch

        r.log(f"warning: no stanza models for {', '.join(missing)} are installed: the parse step will stop with an "
              f"error. Install them now (needs internet access): "
              + "; ".join(download_command(lang) for lang in missing)
              + " (or pass --parser right-branching)")


def prepare_corpus(corpus: str, src: str, tgt: str, out_dir: Path, raw_dir: Path | None = None, smoke: bool = False,
                   parser: str = "auto", bpe_ops: int | None = None, workers: int = 1, force: bool = False,
                   log: Callable[[str], None] = print, smoke_sizes: dict | None = None,
                   checksums: Path | None = None, parse_shards: int = 1, recipe: Recipe | None = None,
                   views=None, launch=None, segmentation: Segmentation | None = None, strict: bool = False) -> Prepared:
    """Prepare ``corpus`` for direction src→tgt into ``out_dir`` (layout: module docs); returns its summary.

    ``recipe``: a paper's settings on top of the corpus' (:mod:`syntrans.prep.recipe`); an ``out_dir``
    prepared under another recipe is refused unless ``force``. ``views``: the views to parse
    (:func:`syntrans.data.parse_views.side_views`: None both; a list, those on both sides; ``{"source": …, "target":
    …}`` each side's; a side with none is not parsed and gets no sidecars); ``launch``: the launcher options of the parse shards
    (:class:`~syntrans.jobs.launcher.LaunchOptions`; None: here), :class:`~syntrans.prep.parse_step.PrepPending`
    when they are left running. ``segmentation``: ``--bpe`` and its model files
    (:class:`~syntrans.prep.segmentation.Segmentation`; default subword_nmt). ``strict``: the sidecar build's per-line
    faults stop it (``syntrans-preprocess --strict``) instead of being counted. Raises :class:`~syntrans.prep.errors.PrepError`
    for anything the user can fix (missing files, network errors, checksum mismatches, a pair the corpus
    lacks, missing stanza models, a recipe that does not fit the pair or the folder).
    """
    r = _resolve(corpus, src, tgt, out_dir, raw_dir, smoke, parser, bpe_ops, workers, force, log, smoke_sizes,
                 checksums, parse_shards, recipe, views, launch, segmentation)
    r.strict = strict
    r.out.mkdir(parents=True, exist_ok=True)
    _check_recipe(r)
    if r.recipe:
        log(f"recipe: {recipe.describe()}")
    _warn_missing_models(r)
    t0 = time.time()
    infos = run_steps(r)
    words = r.pair.word_vocab is not None
    if words:
        codes = {}
    elif r.segmentation.bpe == "sentencepiece":
        codes = model_paths(r.out / "bpe", r.pair.langs, r.pair.joint, bool(r.segmentation.sentencepiece_model))
    elif r.segmentation.bpe == "gpt2":
        codes = dict.fromkeys(r.pair.langs, Path(r.segmentation.gpt2_encoder_json).resolve())
    else:
        codes = codes_paths(r.out / "bpe", r.pair.langs, r.pair.joint)
    tok = infos["tokenize"]
    reasons = REASONS + ((LANGUAGE,) if r.pair.langid else ())
    p = Prepared(
        corpus=r.corpus.name, src=r.src, tgt=r.tgt, out_dir=r.out, data_bin=r.out / "data-bin", codes=codes.get(r.src),
        ref_test=r.out / "ref" / f"test.{r.tgt}", src_test_raw=r.out / "ref" / f"test.{r.src}",
        lowercase=r.pair.lowercase, bpe_ops=0 if words else r.ops[r.src], joint=r.pair.joint,
        parsers=dict(infos["parse"]["parsers"]), sizes={s: tok["sizes"][s] for s in SPLITS},
        dropped={k: tok["dropped"][k] for k in reasons} if (r.pair.clean or r.pair.langid) else {},
        codes_by_lang=codes, smoke=r.smoke, bpe_ops_by_lang={} if words else dict(r.ops),
        word_vocab=r.pair.word_vocab, recipe=r.recipe, views={lang: list(v) for lang, v in _lang_views(r).items()},
        ref_test_more=[r.out / "ref" / f"test.{r.tgt}.{k}" for k in range(2, 2 + len(r.pair.reference_files(r.tgt)))],
        segmentation=r.segmentation.bpe, crossing=dict(infos["binarize"].get("crossing", {})),
        joined=dict(infos["binarize"].get("joined", {})), fallbacks=dict(infos["binarize"].get("fallbacks", {})),
        text_route=r.segmentation.text_route)
    summary = p.to_json()
    summary["seconds"] = round(time.time() - t0, 1)
    # each step's own time, when it ran (this call or an earlier one): a resumed preparation keeps the first ones'
    summary["step_seconds"] = {step: infos[step].get("seconds") for step in STEPS}
    # what `syntrans-prepare --again OUT` calls prepare_corpus with (all but the views, workers and launcher)
    summary["again"] = {"corpus": corpus, "src": src, "tgt": tgt, "raw_dir": None if raw_dir is None else str(r.raw),
                        "smoke": smoke, "parser": parser, "bpe_ops": bpe_ops, "smoke_sizes": smoke_sizes,
                        "parse_shards": parse_shards, "recipe": r.recipe,
                        "views": {"source": list(r.views[r.src]), "target": list(r.views[r.tgt])}}
    if not r.segmentation.default:  # named only when not subword_nmt
        summary["again"]["segmentation"] = r.segmentation.record()
    write_text(r.out / "prepared.json", json.dumps(summary, indent=1) + "\n")
    log(p.summary())
    return p
