"""What ``syntrans-preprocess`` does: fairseq's binarization and, beside it, the syntax sidecars of every split.

The options are fairseq-preprocess's plus the parsed corpora of each split (:func:`add_syntax_args`):
``--trainparse P`` (and ``--validparse``/``--testparse``, comma-separated like ``--validpref``) where
``P.{lang}.conllu`` (or ``P.{lang}.ptb``) parses the tokenized text that ``--trainpref`` holds after BPE.
Sides with no parse file get no sidecars. :func:`preprocess` runs both phases on parsed options, every input checked
before anything is written into ``--destdir`` (a folder it creates is removed again when a phase fails);
:func:`parse_preprocess_args` builds those options from an argument list, raising :class:`SidecarError`
instead of exiting on a bad one.
"""
from __future__ import annotations

import argparse
import multiprocessing
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

import numpy as np

from fairseq import options

from ..syntax.text_files import check_utf8
from .build_sidecars import SidecarError, SidecarReport, build_side
from .destdir_lock import DestdirLock, remove_leftover_staging
from .piece_routes import SEGMENTATIONS, PieceRoute
from .preprocess_options import add_syntax_args
from .sidecars import binarized_sizes, side_prefix


def preprocessing_parser() -> argparse.ArgumentParser:
    """fairseq-preprocess's argument parser with the syntrans options (:func:`add_syntax_args`)."""
    parser = options.get_preprocessing_parser()
    add_syntax_args(parser)
    return parser


def parse_preprocess_args(argv: Sequence[str]) -> argparse.Namespace:
    """``syntrans-preprocess`` options from an argument list; a bad argument raises SidecarError (not SystemExit)."""
    parser = preprocessing_parser()

    def refuse(message: str):
        raise SidecarError(f"bad syntrans-preprocess arguments ({message}): {' '.join(argv)}")

    parser.error = refuse  # argparse reports every usage error through error(), which would exit
    return parser.parse_args(list(argv))


def check_usage(args: argparse.Namespace) -> None:
    """The option combinations syntrans-preprocess refuses (SidecarError)."""
    if not args.source_lang or not args.target_lang:
        raise SidecarError("syntrans-preprocess needs --source-lang and --target-lang")
    if args.dataset_impl != "mmap":
        raise SidecarError("syntax sidecars are written next to mmap datasets: use --dataset-impl mmap")
    piece_route(args)


def piece_route(args: argparse.Namespace) -> PieceRoute:
    """How the pieces of the text map to parse words: fairseq's ``--bpe`` (none: subword_nmt) with ``--bpe-marker`` and
    the gpt2 files; SidecarError for a segmentation the sidecars cannot follow."""
    bpe = getattr(args, "bpe", None) or "subword_nmt"
    if bpe not in SEGMENTATIONS:
        raise SidecarError(f"--bpe {bpe}: the syntax sidecars follow {', '.join(SEGMENTATIONS)} pieces only")
    try:
        return PieceRoute(bpe, args.bpe_marker, getattr(args, "gpt2_encoder_json", None),
                          getattr(args, "gpt2_vocab_bpe", None), bool(getattr(args, "char_spans", False)))
    except ValueError as e:
        raise SidecarError(str(e)) from None


def check_no_dictionaries(args: argparse.Namespace) -> None:
    """fairseq-preprocess's refusal to overwrite a dictionary of ``--destdir`` (it binarizes into a folder of its
    own here, so the check is made on ``--destdir`` first): FileExistsError naming the file and the ways out."""
    for lang, given in ((args.source_lang, args.srcdict), (args.target_lang, args.tgtdict)):
        path = os.path.join(args.destdir, f"dict.{lang}.txt")
        if not given and not (lang == args.target_lang and args.only_source) and os.path.exists(path):
            raise FileExistsError(f"{path} exists: syntrans-preprocess would write a new dictionary there (give it as "
                                  f"--{'src' if lang == args.source_lang else 'tgt'}dict, use --sidecars-only to add "
                                  "sidecars to this data-bin, or choose an empty --destdir)")


def find_parse(prefix: str, lang: str) -> Optional[str]:
    """The parsed corpus ``prefix.lang.conllu`` or ``prefix.lang.ptb`` that exists, else None."""
    for ext in ("conllu", "ptb"):
        p = f"{prefix}.{lang}.{ext}"
        if os.path.exists(p):
            return p
    return None


def split_jobs(args: argparse.Namespace) -> Iterator[Tuple[str, str, str]]:
    """(split name, text prefix, parse prefix) for every split that has parses."""
    for kind in ("train", "valid", "test"):
        text, parse = getattr(args, f"{kind}pref"), getattr(args, f"{kind}parse")
        if not parse:
            continue
        if not text:
            raise SidecarError(f"--{kind}parse is given but --{kind}pref is not")
        texts, parses = text.split(","), parse.split(",")
        if len(texts) != len(parses):
            raise SidecarError(f"--{kind}pref names {len(texts)} prefixes but --{kind}parse {len(parses)}")
        for k, (t, p) in enumerate(zip(texts, parses)):
            yield (kind if k == 0 else f"{kind}{k}"), t, p


def fairseq_binarize(args: argparse.Namespace) -> None:
    """fairseq-preprocess itself (``fairseq_cli.preprocess.main``) on the same options."""
    from fairseq_cli import preprocess as fairseq_preprocess  # lazy: fairseq_cli is needed only when binarizing

    fairseq_preprocess.main(args)


def _quiet(message: str) -> None:
    pass


def die_with_parent(parent: int) -> None:
    """Have the kernel kill this process when its parent dies (Linux's ``PR_SET_PDEATHSIG``; elsewhere nothing), and
    exit now if the parent ``parent`` is already gone: a killed syntrans-preprocess leaves no binarization running."""
    try:
        import ctypes
        import signal

        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL))  # 1: PR_SET_PDEATHSIG
    except (OSError, AttributeError, TypeError):  # no prctl (not Linux)
        pass
    if os.getppid() != parent:
        os._exit(1)


def _binarize_into(args: argparse.Namespace, folder: str, conn, parent: Optional[int] = None) -> None:
    """The child process of :class:`_Binarizing`: fairseq's binarization into ``folder``; sends None, or the
    exception that stopped it. It dies with ``parent`` (:func:`die_with_parent`)."""
    if parent is not None:
        die_with_parent(parent)
    try:
        _binarize_into_here(args, folder)
        conn.send(None)
    except BaseException as e:  # noqa: BLE001 (handed to the parent, which raises it)
        try:
            conn.send(e)
        except Exception:  # an exception that does not pickle
            conn.send(RuntimeError(f"fairseq's binarization failed: {e!r}"))
    finally:
        conn.close()


class _Binarizing:
    """fairseq's binarization into the staging folder ``folder``, in a forked process while this one builds the
    sidecars (the two phases read different files and write different ones), or here in :meth:`wait` where fork is
    unavailable. :meth:`wait` raises what stopped it; :meth:`stop` ends it early."""

    def __init__(self, args: argparse.Namespace, folder: str):
        self.args, self.folder, self.child = args, folder, None
        self.t0 = time.perf_counter()
        if "fork" in multiprocessing.get_all_start_methods():
            context = multiprocessing.get_context("fork")
            self.conn, child_end = context.Pipe(duplex=False)
            # not a daemon: with --workers N > 1, fairseq's binarizer starts processes of its own
            self.child = context.Process(target=_binarize_into, args=(args, folder, child_end, os.getpid()))
            self.child.start()
            child_end.close()

    def wait(self) -> float:
        """Seconds from the start to the end of the binarization (after it ended without error)."""
        if self.child is None:
            _binarize_into_here(self.args, self.folder)
            return time.perf_counter() - self.t0
        try:
            error = self.conn.recv()
        except EOFError:  # the process died without a word (killed, out of memory)
            self.child.join()
            raise SidecarError(f"fairseq's binarization stopped (exit code {self.child.exitcode}) before it ended; "
                               f"nothing was written into {self.args.destdir}") from None
        self.child.join()
        if error is not None:
            raise error
        return time.perf_counter() - self.t0

    def stop(self) -> None:
        if self.child is not None and self.child.is_alive():
            self.child.terminate()
            self.child.join()


def _binarize_into_here(args: argparse.Namespace, folder: str) -> None:
    """fairseq's binarization with ``folder`` as its ``--destdir``."""
    fairseq_binarize(argparse.Namespace(**{**vars(args), "destdir": folder}))


def text_prefixes(args: argparse.Namespace) -> Iterator[Tuple[str, str, str]]:
    """(``--{kind}pref``'s kind, the split fairseq names its binarized files by, the prefix) of every text prefix given
    (``train``, ``train1``, … for comma-separated prefixes)."""
    for kind in ("train", "valid", "test"):
        for k, prefix in enumerate((getattr(args, f"{kind}pref") or "").split(",")):
            if prefix:
                yield kind, (kind if k == 0 else f"{kind}{k}"), prefix


def text_files(args: argparse.Namespace) -> Iterator[Tuple[str, str]]:
    """(path, what it is) of every text file fairseq's binarization reads (``--{split}pref`` prefix + ``.{lang}``)."""
    for kind, _, prefix in text_prefixes(args):
        for lang in (args.source_lang, args.target_lang):
            path = f"{prefix}.{lang}"
            if os.path.exists(path):
                yield path, f"text of --{kind}pref"


def build_sidecars(args: argparse.Namespace, jobs: Sequence[Tuple[str, str, str]],
                   log: Callable[[str], None] = _quiet, out_dir: Optional[str] = None) -> List[Tuple[str, str, SidecarReport]]:
    """The sidecars of every (split, text prefix, parse prefix) job and side with a parse, into ``out_dir`` (default
    ``args.destdir``); (split, lang, report) per side built, each also logged. With ``--workers`` N > 1 the sides are
    built by N processes at once (each side's file by one of them)."""
    src, tgt = args.source_lang, args.target_lang
    out_dir = args.destdir if out_dir is None else out_dir
    route = piece_route(args)
    sides = []
    for split, text, parse in jobs:
        found = False
        for lang in (src, tgt):
            pfile = find_parse(parse, lang)
            if pfile is None:
                continue
            found = True
            tfile = f"{text}.{lang}"
            if not os.path.exists(tfile):
                raise SidecarError(f"{tfile} does not exist (text of --{split.rstrip('0123456789')}pref for {lang})")
            sides.append((split, lang, (tfile, pfile, side_prefix(out_dir, split, src, tgt, lang),
                                        args.bpe_marker, args.binarize_trees, args.strict, route)))
        if not found:
            raise SidecarError(f"no parsed corpus {parse}.{{{src},{tgt}}}.{{conllu,ptb}} for split {split}")
    workers = min(max(1, int(args.workers or 1)), len(sides))
    if workers > 1:
        context = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn")
        with context.Pool(workers) as pool:
            reports = pool.starmap(build_side, [side[2] for side in sides], chunksize=1)
    else:
        reports = (build_side(*side[2]) for side in sides)
    built = []
    for (split, lang, _), rep in zip(sides, reports):
        log(f"[syntrans] {split}.{lang}: {rep.summary()}")
        built.append((split, lang, rep))
    return built


@dataclass
class PreprocessReport:
    """What :func:`preprocess` did: the sidecars built and the time of each phase (``fairseq_seconds`` None when
    fairseq's binarization was skipped)."""

    sides: List[Tuple[str, str, SidecarReport]] = field(default_factory=list)
    fairseq_seconds: Optional[float] = None
    sidecar_seconds: float = 0.0
    #: (split, lang) → the subwords binarized as the unknown word, of how many, and the lines (1-based) holding them
    unknown: Dict[Tuple[str, str], "Unknown"] = field(default_factory=dict)


@dataclass
class Unknown:
    """The subwords of one binarized side that its dictionary lacks (fairseq's binarizer writes them as ``<unk>``)."""

    count: int
    subwords: int  # all subwords of the side, EOS excluded
    lines: List[int]  # 1-based, each once

    def describe(self, what: str, dictionary: str) -> str:
        shown = ", ".join(map(str, self.lines[:5])) + (", …" if len(self.lines) > 5 else "")
        share = 100 * self.count / max(self.subwords, 1)
        return (f"[syntrans] unknown subwords, {what}: {self.count:,} of {self.subwords:,} subwords ({share:.2f}%) are "
                f"not in {dictionary} and are binarized as <unk>, in {len(self.lines):,} lines ({shown})")


def unknown_subwords(data: str, unk: int) -> Unknown:
    """How many tokens of the binarized text ``data`` (``.idx``/``.bin``, every sentence ending in EOS) are ``unk``,
    and on which lines."""
    from fairseq.data import indexed_dataset

    sizes = binarized_sizes(data)  # (n,) tokens per sentence, EOS included; both files checked whole
    if not sizes.size:  # an empty split: an empty .bin, which cannot be mapped
        return Unknown(0, 0, [])
    flat = np.memmap(f"{data}.bin", dtype=indexed_dataset.MMapIndexedDataset.Index(f"{data}.idx").dtype, mode="r")
    hits = np.flatnonzero(flat == unk)
    lines = np.unique(np.searchsorted(np.cumsum(sizes), hits, side="right")) + 1
    return Unknown(int(len(hits)), int(sizes.sum() - len(sizes)), [int(i) for i in lines])


def count_unknown(args: argparse.Namespace, text: str) -> Dict[Tuple[str, str], Unknown]:
    """:func:`unknown_subwords` of every binarized side in ``text`` (each with its own dictionary's unknown word)."""
    from fairseq.data import Dictionary

    out, unk = {}, {}
    for _, split, _ in text_prefixes(args):
        for lang in filter(None, (args.source_lang, args.target_lang)):
            data = side_prefix(text, split, args.source_lang, args.target_lang, lang)
            if os.path.exists(f"{data}.idx"):
                if lang not in unk:
                    unk[lang] = Dictionary.load(os.path.join(text, f"dict.{lang}.txt")).unk()
                out[split, lang] = unknown_subwords(data, unk[lang])
    return out


def check_binarized(args: argparse.Namespace, sides: Sequence[Tuple[str, str, SidecarReport]], staged: str,
                    text: Optional[str] = None) -> None:
    """The binarized text in ``text`` (default ``args.destdir``) has, per side built, the lines and the subwords of
    each line that the sidecars staged in ``staged`` were built from (SidecarError naming both files, the line and
    both counts)."""
    src, tgt = args.source_lang, args.target_lang
    for split, lang, rep in sides:
        data = side_prefix(text or args.destdir, split, src, tgt, lang)
        words = binarized_sizes(f"{side_prefix(staged, split, src, tgt, lang)}.word")
        if not os.path.exists(f"{data}.idx"):
            raise SidecarError(f"--sidecars-only: {args.destdir} has no binarized {split} text for {lang} ({data}.idx "
                               f"is missing); binarize {rep.text_file} first (leave out --sidecars-only)")
        tokens = binarized_sizes(data) - 1  # EOS
        if len(tokens) != len(words):
            raise SidecarError(f"{rep.text_file} has {len(words)} lines but the binarized {data}.bin holds {len(tokens)} "
                               "sentences: the sidecars must be built from the text that was binarized")
        differ = (tokens != words).nonzero()[0]
        if len(differ):
            i = int(differ[0])
            raise SidecarError(f"{rep.text_file}, line {i + 1}: {words[i]} subwords, but sentence {i} of the binarized "
                               f"{data}.bin has {tokens[i]} tokens before EOS ({len(differ)} of {len(words)} lines "
                               "differ): the sidecars must be built from the text that was binarized")
        if args.sidecars_only:
            check_spelling(rep.text_file, data, os.path.join(text or args.destdir, f"dict.{lang}.txt"))


def check_spelling(text_file: str, data: str, dictionary: str) -> None:
    """Each line of ``text_file`` is, subword for subword, the sentence the binarized ``data`` holds for it (through
    the data-bin's ``dictionary``, as fairseq's binarizer encodes it: a subword the dictionary lacks is its unknown
    word). SidecarError naming the file, the first line that differs, the first subword that differs and how many
    lines differ: sidecars built from another text of the same lengths (its words reversed, another corpus) would
    describe words the data-bin does not hold."""
    from fairseq.data import Dictionary, indexed_dataset

    if not os.path.exists(dictionary):
        raise SidecarError(f"--sidecars-only: {dictionary} is missing: the binarized text cannot be read")
    vocab = Dictionary.load(dictionary)
    binarized = indexed_dataset.MMapIndexedDataset(data)
    first, count = None, 0
    with open(text_file, encoding="utf-8") as f:
        for i, line in enumerate(f):
            pieces = line.split()
            ids = [vocab.index(p) for p in pieces]
            held = binarized[i].tolist()[:-1]  # without EOS
            if ids != held:
                count += 1
                if first is None:
                    j = next((j for j, (a, b) in enumerate(zip(ids, held)) if a != b), min(len(ids), len(held)))
                    here = pieces[j] if j < len(pieces) else "(the end of the line)"
                    there = vocab[held[j]] if j < len(held) else "(the end of the sentence)"
                    first = (i, j, here, there)
    if first is not None:
        i, j, here, there = first
        raise SidecarError(f"{text_file}, line {i + 1}: subword {j + 1} is {here!r}, but sentence {i} of the binarized "
                           f"{data}.bin has {there!r} there ({count} lines differ): the sidecars must be built from the "
                           "text that was binarized (the same subwords, not only as many)")


def _run_phases(args: argparse.Namespace, jobs, log: Callable[[str], None], report: PreprocessReport) -> None:
    """Both phases into staging folders of ``--destdir``, moved into it when the sidecars match the binarized text;
    the staging folders are removed whatever happens."""
    staged = tempfile.mkdtemp(prefix=".sidecars-", dir=args.destdir)
    text = args.destdir if args.sidecars_only else tempfile.mkdtemp(prefix=".binarized-", dir=args.destdir)
    binarizing = None
    try:
        if not args.sidecars_only:
            binarizing = _Binarizing(args, text)  # beside the sidecars, in a process of its own
        t1 = time.perf_counter()
        report.sides = build_sidecars(args, jobs, log, out_dir=staged)
        report.sidecar_seconds = time.perf_counter() - t1
        if binarizing is not None:
            report.fairseq_seconds = binarizing.wait()
        check_binarized(args, report.sides, staged, text)
        if not args.sidecars_only:
            report.unknown = count_unknown(args, text)
        moves = [(os.path.join(folder, name), os.path.join(args.destdir, name))  # fairseq's files, then the sidecars
                 for folder in (text, staged) if folder != args.destdir for name in sorted(os.listdir(folder))]
        check_not_inputs(args, jobs, [target for _, target in moves])
        for source, target in moves:
            os.replace(source, target)
    finally:
        if binarizing is not None:
            binarizing.stop()
        for folder in (text, staged):
            if folder != args.destdir:
                shutil.rmtree(folder, ignore_errors=True)


def check_not_inputs(args: argparse.Namespace, jobs, targets: Sequence[str]) -> None:
    """Refuse (SidecarError) to write a file of the data-bin over one of the run's inputs (a text or a parse that lies
    in ``--destdir`` under the name of an output)."""
    inputs = {os.path.realpath(path): what for path, what in text_files(args)}
    for split, _, parse in jobs:
        for lang in (args.source_lang, args.target_lang):
            found = find_parse(parse, lang)
            if found:
                inputs[os.path.realpath(found)] = f"the parsed corpus of {split}"
    for target in targets:
        what = inputs.get(os.path.realpath(target))
        if what:
            raise SidecarError(f"{target}: {what} is this file, and syntrans-preprocess would write its output there; "
                               "it never writes over one of its inputs: choose another --destdir")


def remove_empty_folders(folder: str, top: str) -> None:
    """Remove ``folder`` and its parents up to ``top`` (the outermost folder this run created) while they are empty:
    another run may have written into a folder this one created (it is then kept, with what it holds)."""
    folder, top = os.path.abspath(folder), os.path.abspath(top)
    while True:
        try:
            os.rmdir(folder)
        except OSError:  # not empty (another run's files), or gone
            return
        if folder == top or not folder.startswith(top + os.sep):
            return
        folder = os.path.dirname(folder)


def preprocess(args: argparse.Namespace, log: Callable[[str], None] = _quiet) -> PreprocessReport:
    """fairseq's binarization (unless ``--sidecars-only``) and the sidecars of every split with parses.

    Every input is checked before anything is written into ``--destdir``: the text files fairseq reads are UTF-8 and
    no dictionary would be overwritten. fairseq's binarization runs in a process of its own (where fork is available)
    while this one builds the sidecars, each into a staging folder of its own inside ``--destdir``; both are moved
    into ``--destdir`` when the sidecars match the binarized text, line for line and subword for subword (with
    ``--sidecars-only``, the text binarized before, whose subwords the parses must spell). A folder this call created is
    removed again when a phase fails, unless another run wrote into it. One run at a time writes into a data-bin (a
    lock file naming the running process, :mod:`.destdir_lock`; the dictionaries are checked again once it is held);
    the staging folders of a killed run are removed by the next, which says so, and the binarization process dies
    with its parent. No output is written over an input.
    ``log`` gets a summary line per side and the phases' times. Raises SidecarError for bad options or inputs
    (ValueError, FileNotFoundError and FileExistsError may also come from fairseq's binarization).
    """
    check_usage(args)
    jobs = list(split_jobs(args))
    if not jobs:
        raise SidecarError("no parsed corpora given: pass --trainparse/--validparse/--testparse")
    if not args.sidecars_only:
        for path, what in text_files(args):
            check_utf8(path, what)  # fairseq's binarizer names no file for a byte that is not UTF-8
        check_no_dictionaries(args)
    report = PreprocessReport()
    created = None  # the outermost folder this call creates, removed again if it fails
    folder = os.path.abspath(args.destdir)
    while not os.path.exists(folder):
        created, folder = folder, os.path.dirname(folder)
    os.makedirs(args.destdir, exist_ok=True)
    done = False
    try:
        with DestdirLock(args.destdir, log):  # one writer per data-bin
            if not args.sidecars_only:
                check_no_dictionaries(args)  # again: a run that held the lock may have ended since the first check
            remove_leftover_staging(args.destdir, log)  # a killed run's: no other run writes them
            _run_phases(args, jobs, log, report)
            done = True
    finally:
        if not done and created:
            remove_empty_folders(args.destdir, created)
    for (split, lang), unknown in sorted(report.unknown.items()):
        if unknown.count:
            log(unknown.describe(f"{split}.{lang}", os.path.join(args.destdir, f"dict.{lang}.txt")))
    if report.fairseq_seconds is not None:
        log(f"[syntrans] fairseq binarization {report.fairseq_seconds:.2f}s (a process of its own), syntax sidecars "
            f"{report.sidecar_seconds:.2f}s beside it")
    return report
