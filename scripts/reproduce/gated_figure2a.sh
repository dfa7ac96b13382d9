#!/usr/bin/env bash
# Hou et al. (gated self-attention), Figure 2a: BLEU by the layer of the constituency syntax, from gated_table4's runs.
# Prepares the data, trains every system over the seeds, decodes and scores as the paper does, and writes
# results/gated_figure2a.md with the figure results/gated_figure2a.png: our points beside the paper's where it gives numbers.
# Re-running resumes: finished steps are skipped. Options: syntrans-reproduce --help, e.g.
#   scripts/reproduce/gated_figure2a.sh --smoke --raw-dir ../shared/data/multi30k     # minutes on CPU
#   scripts/reproduce/gated_figure2a.sh --raw-dir downloads --seeds 1,2,3 --train-args "--fp16"
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
# the project's .venv when syntrans-reproduce is not on PATH (make install)
command -v syntrans-reproduce >/dev/null || PATH="$here/.venv/bin:$PATH"
exec syntrans-reproduce gated_figure2a "$@"
