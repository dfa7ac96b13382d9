#!/usr/bin/env bash
# Hou et al. 2022, Table 4: training time (minutes) of the baseline and distance-mask, from distance_table1's runs.
# Reads the training logs of the runs it draws on (training those not finished yet) and writes
# results/distance_table4.md: our training time and parameters next to the paper's.
# Re-running resumes: finished steps are skipped. Options: syntrans-reproduce --help, e.g.
#   scripts/reproduce/distance_table4.sh --smoke --raw-dir ../shared/data/multi30k     # minutes on CPU
#   scripts/reproduce/distance_table4.sh --raw-dir downloads --seeds 1,2,3 --train-args "--fp16"
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
# the project's .venv when syntrans-reproduce is not on PATH (make install)
command -v syntrans-reproduce >/dev/null || PATH="$here/.venv/bin:$PATH"
exec syntrans-reproduce distance_table4 "$@"
