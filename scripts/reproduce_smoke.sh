#!/usr/bin/env bash
# Every registered table and figure end to end on the synthetic corpus (make reproduce-smoke): each table's first
# dataset, one seed, a tiny model trained SMOKE_UPDATES updates. The pipeline is the real one (data preparation,
# fairseq-train, averaging, fairseq-generate, sacreBLEU, RIBES, the paired bootstrap, the figures); the numbers are not
# comparable with the published ones. Results: $SMOKE_DIR/results/<table>.md (and the figures' PNGs beside them).
#   SMOKE_DIR (default reproduce-smoke/), SMOKE_UPDATES (default 40), SMOKE_TABLES (default: every table),
#   SMOKE_ARGS (more syntrans-reproduce flags, e.g. "--launcher submitit-local")
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
command -v syntrans-reproduce >/dev/null || PATH="$here/.venv/bin:$PATH"
py="$(dirname "$(command -v syntrans-reproduce)")/python"  # the Python that has syntrans
dir=${SMOKE_DIR:-reproduce-smoke}
updates=${SMOKE_UPDATES:-40}
tables=${SMOKE_TABLES:-$("$py" -c 'from syntrans.reproduce.tables import TABLES; print(" ".join(TABLES))')}
for table in $tables; do
  first=$("$py" -c "import sys; from syntrans.reproduce.tables import TABLES; print(TABLES[sys.argv[1]].rows[0].dataset.key)" "$table")
  echo "== $table ($first)"
  mkdir -p "$dir"
  # shellcheck disable=SC2086  # SMOKE_ARGS is a list of flags
  syntrans-reproduce "$table" --smoke --synthetic --datasets "$first" --seeds 1 --smoke-updates "$updates" \
    --smoke-sizes 300,40,40 --work-dir "$dir/work" --results-dir "$dir/results" ${SMOKE_ARGS:-} > "$dir/$table.log" 2>&1 \
    || { echo "$table failed: see $dir/$table.log"; tail -20 "$dir/$table.log"; exit 1; }
  echo "   results: $dir/results/$table.md"
done
