"""Step 6 (binarize): ``syntrans-preprocess`` (fairseq-preprocess plus syntax sidecars) into ``OUT/data-bin``.

The only place ``syntrans.prep`` reaches fairseq: :func:`syntrans.data.binarization.preprocess` is imported
when the step runs. Its inputs are ``OUT/bpe/{split}`` (text prefixes) and ``OUT/parse/{split}``
(parse prefixes); ``--joined-dictionary`` when the BPE is joint; ``--nwordssrc N --nwordstgt N`` for
word-level data with a vocabulary of N (each dictionary keeps its N most frequent entries, fairseq's four
special symbols included, the rest becoming ``<unk>``). An existing ``OUT/data-bin`` is removed first
(fairseq refuses to overwrite its dictionaries). With ``parse_dir`` None (the +MULTI-TASK data of
:mod:`syntrans.prep.multitask`) no sidecars are written: fairseq's binaries and dictionaries only.
"""
from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from ..data.sidecar_format import KINDS
from .corpora import SPLITS
from .errors import PrepError


def preprocess_argv(bpe_dir: Path, parse_dir: Path | None, data_bin: Path, src: str, tgt: str, joint: bool,
                    workers: int = 1, nwords: int | None = None) -> list[str]:
    """The syntrans-preprocess arguments of the step (no ``--{split}parse`` when ``parse_dir`` is None)."""
    argv = ["--source-lang", src, "--target-lang", tgt, "--destdir", str(data_bin), "--workers", str(workers)]
    if joint:
        argv.append("--joined-dictionary")
    if nwords is not None:
        argv += ["--nwordssrc", str(nwords), "--nwordstgt", str(nwords)]
    for split in SPLITS:
        argv += [f"--{split}pref", str(bpe_dir / split)]
        if parse_dir is not None:
            argv += [f"--{split}parse", str(parse_dir / split)]
    return argv


def binary_outputs(src: str, tgt: str, sidecars: bool = True, kinds=KINDS) -> list[str]:
    """Files (relative to data-bin) the step must leave: dictionaries, binaries and (``sidecars``) the sidecars
    ``kinds`` of every split (a tuple for both sides, or {lang: kinds}; default: all, as a parse holding both views
    gives them)."""
    out = [f"dict.{src}.txt", f"dict.{tgt}.txt"]
    for split in SPLITS:
        for lang in (src, tgt):
            base = f"{split}.{src}-{tgt}.{lang}"
            out += [f"{base}.bin", f"{base}.idx"]
            if sidecars:
                side = kinds.get(lang, ()) if isinstance(kinds, dict) else kinds
                out += [f"{base}.{kind}.{ext}" for kind in side for ext in ("bin", "idx")]
    return out


def run_binarize(bpe_dir: Path, parse_dir: Path | None, data_bin: Path, src: str, tgt: str, joint: bool, workers: int = 1,
                 log: Callable[[str], None] = print, nwords: int | None = None, kinds=KINDS, extra=()):
    """syntrans-preprocess (fairseq-preprocess alone when ``parse_dir`` is None) into ``data_bin``; ``extra``: more of
    its flags (the segmentation's ``--bpe``); returns its PreprocessReport (None without sidecars)."""
    from ..data.binarization import check_usage, fairseq_binarize, parse_preprocess_args, preprocess  # lazy: fairseq

    if data_bin.exists():
        shutil.rmtree(data_bin)
    argv = preprocess_argv(bpe_dir, parse_dir, data_bin, src, tgt, joint, workers, nwords) + list(extra)
    report = None
    log(f"binarize: {'fairseq-preprocess' if parse_dir is None else 'syntrans-preprocess'} " + " ".join(argv))
    try:
        args = parse_preprocess_args(argv)
        if parse_dir is None:  # fairseq-preprocess alone: no sidecars
            check_usage(args)
            fairseq_binarize(args)
        else:
            report = preprocess(args, log=log)
    except (ValueError, FileNotFoundError) as e:  # SidecarError included
        parses = "" if parse_dir is None else f" and {parse_dir}/{{split}}.{{{src},{tgt}}}.conllu"
        # a fault in a line of the inputs comes back with --force: that advice only for a file gone missing
        again = "; run again with --force to redo every step" if isinstance(e, FileNotFoundError) else ""
        raise PrepError(f"syntrans-preprocess failed: {e}; inputs: {bpe_dir}/{{split}}.{{{src},{tgt}}}{parses}"
                        f"{again}") from None
    missing = [p for p in binary_outputs(src, tgt, sidecars=parse_dir is not None, kinds=kinds)
               if not (data_bin / p).exists()]
    if missing:
        raise PrepError(f"syntrans-preprocess finished but {data_bin / missing[0]} is missing "
                        f"({len(missing)} expected files missing); run again with --force")
    return report
