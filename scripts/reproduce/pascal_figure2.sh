#!/usr/bin/env bash
# Bugliarello & Okazaki 2020, Figure 2: ΔBLEU of PASCAL against the baseline by source length, from pascal_table1's runs.
# Decodes and scores the runs it draws on (training those not finished yet) by source length and writes
# results/pascal_figure2.md with the figure results/pascal_figure2.png.
# Re-running resumes: finished steps are skipped. Options: syntrans-reproduce --help, e.g.
#   scripts/reproduce/pascal_figure2.sh --smoke --raw-dir ../shared/data/multi30k     # minutes on CPU
#   scripts/reproduce/pascal_figure2.sh --raw-dir downloads --seeds 1,2,3 --train-args "--fp16"
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
# the project's .venv when syntrans-reproduce is not on PATH (make install)
command -v syntrans-reproduce >/dev/null || PATH="$here/.venv/bin:$PATH"
exec syntrans-reproduce pascal_figure2 "$@"
