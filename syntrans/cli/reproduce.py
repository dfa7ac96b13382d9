"""``syntrans-reproduce TABLE``: rebuild a published table (scripts/reproduce/<table>.sh call it).

    syntrans-reproduce distance_table1 [--raw-dir DOWNLOADS] [--seeds 1,2,3] [--average-last 5] [--datasets iwslt14_de_en]
    syntrans-reproduce distance_table1 --smoke --raw-dir ../shared/data/multi30k     # minutes on CPU, real text
    syntrans-reproduce distance_table1 --smoke --synthetic                             # the built-in synthetic corpus
    syntrans-reproduce multi30k --raw-dir ../shared/data --parser-scores RES/scores.json  # ours: Multi30k, 5 systems

Steps per dataset: prepare the corpus (syntrans-prepare: download or --raw-dir, Moses, cleaning, BPE, parse, binarize),
then per system and seed fairseq-train with the config file, optional checkpoint averaging, fairseq-generate with the
paper's beam and length penalty, sacreBLEU on detokenized output; finally results/<table>.md with our mean ± sd next to
the published BLEU. Re-running skips what finished (and says so).
"""
from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path
from typing import List, Optional

from ..jobs.launcher import LaunchError, LaunchOptions
from ..prep.errors import PrepError
from ..reproduce.config_file import CONFIG_DIR, ConfigError
from ..reproduce.runner import Options, RunError, TableIncomplete, reproduce
from ..reproduce.tables import TABLES
from .argtypes import positive_int
from .clean_exit import clean_main
from .cluster_args import add_cluster_args
from .cluster_args import launch_options as cluster_launch_options

PROG = "syntrans-reproduce"


def _ints(text: str) -> List[int]:
    try:
        values = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, found {text!r}") from None
    if not values:
        raise argparse.ArgumentTypeError("expected at least one value")
    return values


def _names(text: str) -> List[str]:
    return [x.strip() for x in text.split(",") if x.strip()]


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROG, description="Rebuild a published table of test BLEU with our numbers beside the "
                                "published ones.", epilog="tables: " + "; ".join(f"{k}: {t.paper}" for k, t in TABLES.items()))
    p.add_argument("table", choices=sorted(TABLES), metavar="TABLE", help="one of: " + ", ".join(TABLES))
    p.add_argument("--work-dir", type=Path, default=Path("work"), help="checkpoints, logs, outputs (default: work/)")
    p.add_argument("--results-dir", type=Path, default=None, help="where <table>.md goes (default: results/, "
                   "with --smoke results/smoke/)")
    p.add_argument("--data-root", type=Path, default=None, help="prepared corpora, shared by tables (default: WORK_DIR/data)")
    p.add_argument("--raw-dir", type=Path, default=None,
                   help="downloads, one folder per corpus (RAW_DIR/wmt14, …); with --smoke: a folder of raw parallel text "
                        "named like Multi30k (train.{de,en}, val.{de,en}, test_2016_flickr.{de,en})")
    p.add_argument("--aspec-dir", type=Path, default=None, help="your copy of ASPEC (licensed)")
    p.add_argument("--ldc-dir", type=Path, default=None, help="your copy of the LDC corpus (licensed)")
    p.add_argument("--smoke", action="store_true", help="every step end to end on a tiny slice with a tiny model, minutes on CPU")
    p.add_argument("--synthetic", action="store_true", help="with --smoke: the built-in synthetic corpus (gold parses)")
    p.add_argument("--smoke-updates", type=int, default=300, help="with --smoke: updates per training (default 300)")
    p.add_argument("--smoke-sizes", type=_ints, default=None, metavar="TRAIN,VALID,TEST",
                   help="with --smoke: sentence pairs per split (default: syntrans-prepare's smoke slice)")
    p.add_argument("--seeds", type=_ints, default=None,
                   help="comma-separated training seeds (default: 1…n, n the paper's number of runs, e.g. 5 for Hou et al.; "
                        "1 with --smoke)")
    p.add_argument("--average-last", type=int, default=None, metavar="N",
                   help="decode the average of the last N epoch checkpoints (default: the paper's selection, e.g. the last 5 for "
                        "Hou et al. 2022's WMT14 row; else checkpoint_best.pt, the smallest validation loss)")
    p.add_argument("--datasets", type=_names, default=None, help="only these datasets (keys as in the table, e.g. nc11_de_en)")
    p.add_argument("--systems", type=_names, default=None,
                   help="only these systems (e.g. baseline,PASCAL); all: every system (default: every system, or the "
                        "table's own default where it has one: multi30k runs its first comparison)")
    p.add_argument("--parser", default="auto", help="syntrans-prepare's parser (default auto: stanza, or right-branching "
                   "in a smoke run without stanza models; imported: the paper's parser's output, see docs/reproduce.md)")
    p.add_argument("--train-args", default="", help="extra fairseq-train flags, e.g. \"--fp16 --update-freq 8\"")
    p.add_argument("--generate-args", default="", help="extra fairseq-generate flags")
    p.add_argument("--config-dir", type=Path, default=None, help="the configs/ folder (default: the project's)")
    p.add_argument("--workers", type=int, default=1, help="workers for preprocessing (and parser processes on CPU)")
    p.add_argument("--parse-shards", type=positive_int, default=1, metavar="N",
                   help="parse each file in N shards: with --launcher slurm or submitit-local, one job each (default 1). "
                        "Only the views of the parse the selected systems read are parsed")
    p.add_argument("--parser-scores", type=Path, default=None, metavar="FILE",
                   help="a JSON file of the parsers' own scores per language (uas, las, upos, bracket_f1, test_file, "
                        "train_files), printed under the table with the file named (docs/reproduce.md)")
    add_cluster_args(p, "each (dataset, system, seed), and each shard of a parse (--parse-shards),", "WORK_DIR/jobs")
    return p


def launch_options(args: argparse.Namespace) -> LaunchOptions:
    """The LaunchOptions of the cluster flags (jobs' files in WORK_DIR/jobs); LaunchError when they do not fit."""
    return cluster_launch_options(args, args.work_dir / "jobs")


@clean_main("syntrans-reproduce")
def main(argv: Optional[List[str]] = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser().parse_args(argv)
    if args.synthetic and not args.smoke:
        print(f"{PROG}: error: --synthetic goes with --smoke (the synthetic corpus is for smoke runs)", file=sys.stderr)
        return 2
    sizes = None
    if args.smoke_sizes is not None:
        if len(args.smoke_sizes) != 3:
            print(f"{PROG}: error: --smoke-sizes wants TRAIN,VALID,TEST, found {args.smoke_sizes}", file=sys.stderr)
            return 2
        sizes = dict(zip(("train", "valid", "test"), args.smoke_sizes))
    try:
        launch_opts = launch_options(args)
    except LaunchError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    opts = Options(table=args.table, work_dir=args.work_dir,
                   results_dir=args.results_dir or (Path("results/smoke") if args.smoke else Path("results")),
                   data_root=args.data_root, raw_dir=args.raw_dir, aspec_dir=args.aspec_dir, ldc_dir=args.ldc_dir,
                   smoke=args.smoke, synthetic=args.synthetic, smoke_updates=args.smoke_updates, smoke_sizes=sizes,
                   seeds=args.seeds, average_last=args.average_last, datasets=args.datasets, systems=args.systems,
                   parser=args.parser, train_args=shlex.split(args.train_args), generate_args=shlex.split(args.generate_args),
                   config_dir=args.config_dir or CONFIG_DIR, workers=args.workers, launch=launch_opts,
                   parse_shards=args.parse_shards, parser_scores=args.parser_scores,
                   command=" ".join([PROG, *map(shlex.quote, argv)]))
    try:
        reproduce(opts, log=lambda message: print(message, flush=True))  # flushed: progress shows in a piped log
    except TableIncomplete as e:  # the table was written; some of its systems failed, each row says why
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 1
    except (RunError, ConfigError, PrepError, LaunchError) as e:  # the preparation's errors (PrepError) carry their own message
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
