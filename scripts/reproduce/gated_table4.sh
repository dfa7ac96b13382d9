#!/usr/bin/env bash
# Hou et al. (gated self-attention), Table 4: constituency (distance mask) vs dependency (PASCAL) syntax by encoder layer, IWSLT14 de→en.
# Prepares the data, trains every system over the seeds, decodes with the paper's beam and length penalty, scores
# detokenized output with sacreBLEU and writes results/gated_table4.md next to the paper's published numbers.
# Re-running resumes: finished steps are skipped. Options: syntrans-reproduce --help, e.g.
#   scripts/reproduce/gated_table4.sh --smoke --raw-dir ../shared/data/multi30k     # minutes on CPU
#   scripts/reproduce/gated_table4.sh --raw-dir downloads --seeds 1,2,3 --train-args "--fp16"
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
# the project's .venv when syntrans-reproduce is not on PATH (make install)
command -v syntrans-reproduce >/dev/null || PATH="$here/.venv/bin:$PATH"
exec syntrans-reproduce gated_table4 "$@"
