#!/usr/bin/env bash
# Ours (no paper reports it): the five papers' systems on Multi30k en→de (29,000 captions, no length filter, a joint BPE
# of 4,000 merges) with one small recipe, a 2+2-layer Transformer with early stopping on the
# validation loss, at most 8 epochs (configs/multi30k/en_de.baseline.args). By default the first comparison (Transformer, distance-mask,
# PASCAL, LISA, DBSA), 2 seeds; BLEU and chrF++, each with the paired bootstrap against the Transformer and Holm's
# correction, training time and epochs. Writes results/multi30k.md and .png. Re-running resumes: finished steps are
# skipped. Options: syntrans-reproduce --help, e.g.
#   scripts/reproduce/multi30k.sh --raw-dir ../shared/data --parser-scores RES/scores.json   # reads ../shared/data/multi30k
#   scripts/reproduce/multi30k.sh --raw-dir ../shared/data --systems all                     # all fourteen systems
#   scripts/reproduce/multi30k.sh --smoke --synthetic                                        # minutes on CPU
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
# the project's .venv when syntrans-reproduce is not on PATH (make install)
command -v syntrans-reproduce >/dev/null || PATH="$here/.venv/bin:$PATH"
exec syntrans-reproduce multi30k "$@"
