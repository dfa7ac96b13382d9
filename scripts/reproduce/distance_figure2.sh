#!/usr/bin/env bash
# Hou et al. 2022, Figure 2: the soft mask in 3 heads of encoder layer x (x = 1..6) vs the baseline, IWSLT14 de→en.
# Prepares the data, trains every system over the seeds, decodes and scores as the paper does, and writes
# results/distance_figure2.md with the figure results/distance_figure2.png: our points beside the paper's where it gives numbers.
# Re-running resumes: finished steps are skipped. Options: syntrans-reproduce --help, e.g.
#   scripts/reproduce/distance_figure2.sh --smoke --raw-dir ../shared/data/multi30k     # minutes on CPU
#   scripts/reproduce/distance_figure2.sh --raw-dir downloads --seeds 1,2,3 --train-args "--fp16"
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
# the project's .venv when syntrans-reproduce is not on PATH (make install)
command -v syntrans-reproduce >/dev/null || PATH="$here/.venv/bin:$PATH"
exec syntrans-reproduce distance_figure2 "$@"
