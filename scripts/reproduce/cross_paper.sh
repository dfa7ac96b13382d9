#!/usr/bin/env bash
# Ours (no paper reports it): the Transformer, the seven methods and the three baselines of the five papers, and three
# combinations no paper tried, side by side on IWSLT14 de→en and NC11 de→en with one preparation, one model size and
# one training budget (Hou et al. 2022's IWSLT14 recipe); 5 seeds, the paired bootstrap against the Transformer with
# Holm's correction, training time and peak memory, and a figure. Writes results/cross_paper.md and .png beside the
# published numbers. Re-running resumes: finished steps are skipped. Options: syntrans-reproduce --help, e.g.
#   scripts/reproduce/cross_paper.sh --smoke --synthetic                            # minutes on CPU
#   scripts/reproduce/cross_paper.sh --raw-dir downloads --launcher slurm --slurm-partition gpu --gpus-per-job 1
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
# the project's .venv when syntrans-reproduce is not on PATH (make install)
command -v syntrans-reproduce >/dev/null || PATH="$here/.venv/bin:$PATH"
exec syntrans-reproduce cross_paper "$@"
