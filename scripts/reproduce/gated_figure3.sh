#!/usr/bin/env bash
# Hou et al. (gated self-attention), Figure 3: the gate heat maps of gated_table7's four models.
# Reads the gate values of the runs it draws on (training those not finished yet) and writes
# results/gated_figure3.md with a heat map per model.
# Re-running resumes: finished steps are skipped. Options: syntrans-reproduce --help, e.g.
#   scripts/reproduce/gated_figure3.sh --smoke --raw-dir ../shared/data/multi30k     # minutes on CPU
#   scripts/reproduce/gated_figure3.sh --raw-dir downloads --seeds 1,2,3 --train-args "--fp16"
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
# the project's .venv when syntrans-reproduce is not on PATH (make install)
command -v syntrans-reproduce >/dev/null || PATH="$here/.venv/bin:$PATH"
exec syntrans-reproduce gated_figure3 "$@"
