#!/usr/bin/env bash
# Ma et al. 2019, Table 1: baseline and NSD rows on ASPEC en↔ja and LDC en↔zh (licensed: --aspec-dir, --ldc-dir).
# Prepares the data, trains every system over the seeds, decodes with the paper's beam and length penalty, scores
# detokenized output with sacreBLEU and writes results/nsd_table1.md next to the paper's published numbers.
# Re-running resumes: finished steps are skipped. Options: syntrans-reproduce --help, e.g.
#   scripts/reproduce/nsd_table1.sh --smoke --raw-dir ../shared/data/multi30k     # minutes on CPU
#   scripts/reproduce/nsd_table1.sh --raw-dir downloads --seeds 1,2,3 --train-args "--fp16"
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
# the project's .venv when syntrans-reproduce is not on PATH (make install)
command -v syntrans-reproduce >/dev/null || PATH="$here/.venv/bin:$PATH"
exec syntrans-reproduce nsd_table1 "$@"
