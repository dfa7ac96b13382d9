"""All of Multi30k (29,000 / 1,014 / 1,000 captions, en→de) through the three routes of syntrans-prepare, with the
data settings of ``syntrans-reproduce multi30k`` (no length or ratio filter, 10,000 joint merges or pieces) and both
sides parsed by stanza into dependencies and constituency trees:

* ``moses-bpe``: subword-nmt BPE on Moses tokens, into ``WORK/data/multi30k.en-de.<recipe digest>``: the folder the
  table itself prepares, so that ``syntrans-reproduce multi30k --work-dir WORK`` finds it parsed;
* ``moses-sp``: SentencePiece on the same Moses tokens, in ``WORK/routes/moses-sp``: a copy of the first folder (its
  tokens and parses; another ``--bpe`` redoes only the bpe and binarize steps);
* ``raw-sp``: SentencePiece on the raw text (``--no-moses``), parsed by stanza's own tokenizer, in
  ``WORK/routes/raw-sp``: exactly docs/commands.md's worked example, ``syntrans-prepare multi30k --pair en-de
  --bpe sentencepiece --bpe-ops 10000 --ratio off --max-len off --no-moses --parser stanza``.

Each folder's prepared.json holds its sizes, each step's own time and every per-line fallback with its lines;
``WORK/routes/routes.md`` sums them up (scripts/routes_summary.py). Re-running resumes: finished steps are skipped.

    STANZA_RESOURCES_DIR=RES python scripts/multi30k_routes.py WORK [--raw-dir DIR] [--workers N] [--routes a,b]
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROUTES = ("moses-bpe", "moses-sp", "raw-sp")
VIEWS = {"source": ("deps", "trees"), "target": ("deps", "trees")}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("work", type=Path, help="the work folder of syntrans-reproduce multi30k (--work-dir)")
    p.add_argument("--raw-dir", type=Path, default=HERE.parents[1] / "shared" / "data" / "multi30k",
                   help="Multi30k's raw files (train, val, test_2016_flickr .en/.de)")
    p.add_argument("--workers", type=int, default=2, help="parser processes")
    p.add_argument("--routes", default=",".join(ROUTES), help=f"some of {', '.join(ROUTES)}")
    args = p.parse_args(argv)
    routes = [x.strip() for x in args.routes.split(",") if x.strip()]
    unknown = [x for x in routes if x not in ROUTES]
    if unknown or not routes:
        p.error(f"--routes: expected some of {', '.join(ROUTES)} (comma-separated), found {args.routes!r}")
    if args.workers < 1:
        p.error(f"--workers: expected 1 or more parser processes, found {args.workers}")
    from syntrans.prep import prepare_corpus
    from syntrans.prep.recipe import Recipe
    from syntrans.prep.segmentation import Segmentation
    from syntrans.reproduce.published_data import data_settings

    table_recipe = data_settings("multi30k", "multi30k_en_de").recipe  # the table's: its folder, reused by it
    # the worked example's command line (--ratio off --max-len off; its --bpe-ops is not a recipe setting)
    recipes = {"moses-bpe": table_recipe, "moses-sp": table_recipe, "raw-sp": Recipe(max_len="off", ratio="off")}
    folders = {"moses-bpe": args.work / "data" / f"multi30k.en-de.{table_recipe.digest()}",
               "moses-sp": args.work / "routes" / "moses-sp", "raw-sp": args.work / "routes" / "raw-sp"}
    segmentations = {"moses-bpe": Segmentation(), "moses-sp": Segmentation("sentencepiece"),
                     "raw-sp": Segmentation("sentencepiece", raw_text=True)}
    (args.work / "routes").mkdir(parents=True, exist_ok=True)
    for name in routes:
        out = folders[name]
        if name == "moses-sp" and not (out / ".done").exists():  # the Moses tokens and their parses, copied
            src = folders["moses-bpe"]
            out.mkdir(parents=True, exist_ok=True)
            for part in (".done", "text", "tok", "parse", "ref"):
                if (src / part).exists():
                    shutil.copytree(src / part, out / part, dirs_exist_ok=True)
        print(f"== {name}: {out}", flush=True)
        with open(args.work / "routes" / f"{name}.log", "a", encoding="utf-8") as log:
            prepare_corpus("multi30k", "en", "de", out, raw_dir=args.raw_dir, parser="stanza", recipe=recipes[name],
                           bpe_ops=10000, views=VIEWS, workers=args.workers, segmentation=segmentations[name],
                           log=lambda m: print(m, file=log, flush=True))
        link = args.work / "routes" / name
        if name == "moses-bpe" and not link.exists():  # the routes side by side, for the summary
            link.symlink_to(out.resolve())
    names = [n for n in ROUTES if (args.work / "routes" / n / "prepared.json").exists()]
    table = subprocess.run([sys.executable, str(HERE / "routes_summary.py"), str(args.work / "routes"), *names],
                           capture_output=True, text=True, check=True).stdout
    (args.work / "routes" / "routes.md").write_text(table, encoding="utf-8")
    print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
