#!/usr/bin/env bash
# Train with a configs/*.args file: train_with_config.sh CONFIG DATA_BIN SAVE_DIR [extra fairseq-train flags…]
# CONFIG is a path or a name under the installed configs (pascal/wmt16_en_de.args), so a wheel install needs no clone.
# The config's "# tokens per update:" batch is kept on any number of GPUs: --max-tokens and --update-freq are derived
# from the visible CUDA devices (or WORLD_SIZE=N), and said on stderr. Extra flags come last and win.
set -euo pipefail
[ $# -ge 3 ] || { echo "usage: $0 CONFIG DATA_BIN SAVE_DIR [extra fairseq-train flags…]" >&2; exit 2; }
config=$1 data=$2 save=$3; shift 3
user_dir=$(python -c "import os, syntrans; print(os.path.dirname(syntrans.__file__))")
mapfile -t flags < <(python -m syntrans.reproduce.config_file "$config" ${WORLD_SIZE:+--world-size "$WORLD_SIZE"})
[ ${#flags[@]} -gt 0 ] || { echo "$0: no flags read from $config" >&2; exit 2; }
exec fairseq-train "$data" --user-dir "$user_dir" "${flags[@]}" --save-dir "$save" "$@"
