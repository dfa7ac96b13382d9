#!/usr/bin/env bash
# Bugliarello & Okazaki 2020, Table 5: validation BLEU adding data filtering, PASCAL and parent ignoring.
# Prepares the data, trains every system over the seeds, decodes with the paper's beam and length penalty, scores
# detokenized output with sacreBLEU and writes results/pascal_table5.md next to the paper's published numbers.
# Re-running resumes: finished steps are skipped. Options: syntrans-reproduce --help, e.g.
#   scripts/reproduce/pascal_table5.sh --smoke --raw-dir ../shared/data/multi30k     # minutes on CPU
#   scripts/reproduce/pascal_table5.sh --raw-dir downloads --seeds 1,2,3 --train-args "--fp16"
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
# the project's .venv when syntrans-reproduce is not on PATH (make install)
command -v syntrans-reproduce >/dev/null || PATH="$here/.venv/bin:$PATH"
exec syntrans-reproduce pascal_table5 "$@"
