#!/usr/bin/env bash
# Bugliarello & Okazaki 2020, Table 1: baseline, LISA, PASCAL, MULTI-TASK, S&H on NC11 en↔de, WMT18 en→tr, WMT16/17 en→de, WAT en→ja (--aspec-dir; RIBES too).
# Prepares the data, trains every system over the seeds, decodes with the paper's beam and length penalty, scores
# detokenized output with sacreBLEU and writes results/pascal_table1.md next to the paper's published numbers.
# Re-running resumes: finished steps are skipped. Options: syntrans-reproduce --help, e.g.
#   scripts/reproduce/pascal_table1.sh --smoke --raw-dir ../shared/data/multi30k     # minutes on CPU
#   scripts/reproduce/pascal_table1.sh --raw-dir downloads --seeds 1,2,3 --train-args "--fp16"
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
# the project's .venv when syntrans-reproduce is not on PATH (make install)
command -v syntrans-reproduce >/dev/null || PATH="$here/.venv/bin:$PATH"
exec syntrans-reproduce pascal_table1 "$@"
