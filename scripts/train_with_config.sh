#!/usr/bin/env bash
# Train with a configs/*.args file: train_with_config.sh CONFIG DATA_BIN SAVE_DIR [extra fairseq-train flags…]
set -euo pipefail
[ $# -ge 3 ] || { echo "usage: $0 CONFIG DATA_BIN SAVE_DIR [extra fairseq-train flags…]" >&2; exit 2; }
config=$1 data=$2 save=$3; shift 3
[ -f "$config" ] || { echo "$0: config $config does not exist" >&2; exit 2; }
user_dir=$(python -c "import os, syntrans; print(os.path.dirname(syntrans.__file__))")
mapfile -t flags < <(grep -v '^\s*#' "$config" | grep -v '^\s*$' | xargs -n1)
exec fairseq-train "$data" --user-dir "$user_dir" "${flags[@]}" --save-dir "$save" "$@"
