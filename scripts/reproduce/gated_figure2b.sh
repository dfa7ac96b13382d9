#!/usr/bin/env bash
# Hou et al. (gated self-attention), Figure 2b: BLEU of the gated model by the soft mask's τ (our τ values), IWSLT14 de→en.
# Prepares the data, trains every system over the seeds, decodes and scores as the paper does, and writes
# results/gated_figure2b.md with the figure results/gated_figure2b.png: our points beside the paper's where it gives numbers.
# Re-running resumes: finished steps are skipped. Options: syntrans-reproduce --help, e.g.
#   scripts/reproduce/gated_figure2b.sh --smoke --raw-dir ../shared/data/multi30k     # minutes on CPU
#   scripts/reproduce/gated_figure2b.sh --raw-dir downloads --seeds 1,2,3 --train-args "--fp16"
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
# the project's .venv when syntrans-reproduce is not on PATH (make install)
command -v syntrans-reproduce >/dev/null || PATH="$here/.venv/bin:$PATH"
exec syntrans-reproduce gated_figure2b "$@"
