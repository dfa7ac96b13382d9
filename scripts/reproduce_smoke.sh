#!/usr/bin/env bash
# Every registered table and figure end to end (make reproduce-smoke): each table's first dataset, one seed, a tiny
# model trained SMOKE_UPDATES updates. The pipeline is the real one (data preparation, fairseq-train, averaging,
# fairseq-generate, sacreBLEU, RIBES, the paired bootstrap, the figures); the numbers are not comparable with the
# published ones. Results: $SMOKE_DIR/results/<table>.md (and the figures' PNGs beside them).
#
# The text: the built-in synthetic corpus (gold parses of every view on both sides), or, with SMOKE_RAW_DIR, the first
# lines of a Multi30k-style folder of raw text ({train,val,test_2016_flickr}.{en,de}), tokenized, BPE'd and parsed as a
# real run is (stanza where its models are installed, STANZA_RESOURCES_DIR; else the right-branching stand-in), each
# prepared folder into only the views its systems read.
#   SMOKE_DIR (default reproduce-smoke/), SMOKE_UPDATES (default 40), SMOKE_TABLES (default: every table),
#   SMOKE_RAW_DIR (default: none, the synthetic corpus), SMOKE_SIZES (default 300,40,40),
#   SMOKE_ARGS (more syntrans-reproduce flags, e.g. "--launcher submitit-local")
# A table that fails does not stop the others: its log is named, and the script exits 1 at the end naming every one.
set -uo pipefail
# tiny models: one thread each (torch's default, a thread per core, spins against anything else running: seen at
# 10 s per update of a smoke model on a busy 2-core machine); OMP_NUM_THREADS set by the caller is kept
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
here=$(cd "$(dirname "$0")/.." && pwd)
command -v syntrans-reproduce >/dev/null || PATH="$here/.venv/bin:$PATH"
py="$(dirname "$(command -v syntrans-reproduce)")/python"  # the Python that has syntrans
dir=${SMOKE_DIR:-reproduce-smoke}
updates=${SMOKE_UPDATES:-40}
sizes=${SMOKE_SIZES:-300,40,40}
tables=${SMOKE_TABLES:-$("$py" -c 'from syntrans.reproduce.tables import TABLES; print(" ".join(TABLES))')}
if [[ -n "${SMOKE_RAW_DIR:-}" ]]; then
  text=(--raw-dir "$SMOKE_RAW_DIR")
  echo "== text: the first lines of $SMOKE_RAW_DIR (parsed as a real run is)"
else
  text=(--synthetic)
  echo "== text: the synthetic corpus (gold parses)"
fi
# each table's first dataset, read once
firsts=$("$py" -c 'from syntrans.reproduce.tables import TABLES; print("\n".join(f"{k} {t.rows[0].dataset.key}" for k, t in TABLES.items()))')
failed=()
start=$SECONDS
mkdir -p "$dir"
for table in $tables; do
  first=$(grep -m1 "^$table " <<< "$firsts" | cut -d' ' -f2)
  [[ -n "$first" ]] || { echo "$table: not a table (the tables: $(cut -d' ' -f1 <<< "$firsts" | tr '\n' ' '))"; exit 2; }
  echo "== $table ($first)"
  t0=$SECONDS
  # shellcheck disable=SC2086  # SMOKE_ARGS is a list of flags
  if syntrans-reproduce "$table" --smoke "${text[@]}" --datasets "$first" --seeds 1 --smoke-updates "$updates" \
    --smoke-sizes "$sizes" --work-dir "$dir/work" --results-dir "$dir/results" ${SMOKE_ARGS:-} > "$dir/$table.log" 2>&1; then
    echo "   results: $dir/results/$table.md ($(( SECONDS - t0 )) s)"
  else
    echo "$table failed: see $dir/$table.log"
    tail -20 "$dir/$table.log"
    failed+=("$table")
  fi
done
echo "== $(( (SECONDS - start) / 60 )) min $(( (SECONDS - start) % 60 )) s for $(wc -w <<< "$tables") tables"
if (( ${#failed[@]} )); then
  echo "== failed: ${failed[*]} (each log: $dir/<table>.log)"
  exit 1
fi
