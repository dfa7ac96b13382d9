#!/usr/bin/env bash
# Hou et al. 2022, Table 2: the soft mask in 1, 2, 3 or 4 heads of encoder layer 1 on IWSLT14 and NC11 de↔en.
# Prepares the data, trains every system over the seeds, decodes with the paper's beam and length penalty, scores
# detokenized output with sacreBLEU and writes results/distance_table2.md next to the paper's published numbers.
# Re-running resumes: finished steps are skipped. Options: syntrans-reproduce --help, e.g.
#   scripts/reproduce/distance_table2.sh --smoke --raw-dir ../shared/data/multi30k     # minutes on CPU
#   scripts/reproduce/distance_table2.sh --raw-dir downloads --seeds 1,2,3 --train-args "--fp16"
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
# the project's .venv when syntrans-reproduce is not on PATH (make install)
command -v syntrans-reproduce >/dev/null || PATH="$here/.venv/bin:$PATH"
exec syntrans-reproduce distance_table2 "$@"
