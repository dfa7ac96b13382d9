#!/usr/bin/env bash
# Hou et al. (gated self-attention), Table 8: parameters and GPU-hours of the gated model, from gated_table3's runs.
# Reads the training logs of the runs it draws on (training those not finished yet) and writes
# results/gated_table8.md: our training time and parameters next to the paper's.
# Re-running resumes: finished steps are skipped. Options: syntrans-reproduce --help, e.g.
#   scripts/reproduce/gated_table8.sh --smoke --raw-dir ../shared/data/multi30k     # minutes on CPU
#   scripts/reproduce/gated_table8.sh --raw-dir downloads --seeds 1,2,3 --train-args "--fp16"
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
# the project's .venv when syntrans-reproduce is not on PATH (make install)
command -v syntrans-reproduce >/dev/null || PATH="$here/.venv/bin:$PATH"
exec syntrans-reproduce gated_table8 "$@"
