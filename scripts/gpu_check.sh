#!/usr/bin/env bash
# The GPU check (docs/half_precision.md): what no CPU can show, in four stages by priority. The table is written after
# every stage (OUT_DIR/summary.md), so a run cut short still reports every stage it finished. On a machine with a
# GPU, run this before anything else.
#
# Stages, each with its estimated time on one H100. ESTIMATES, not measurements: no GPU has run this script yet. They
# are derived from the plumbing run on a 2-core CPU (its startup costs: about 15 s per fairseq command), the work each
# stage does, and about 20 s for inductor to compile one flex attention kernel, forward and backward:
#   a. layers (~150 s): one preset per mechanism, its layers on CUDA against CPU, forward and backward, float32 and
#      float16, with the tolerances stated in the table (python -m syntrans.cli.device_check): about 7 kernel compiles
#      (PASCAL, LISA, DBSA × 2 dtypes, block masks) and 16 small training steps on each device
#   b. by length (~90 s): syntrans-benchmark --device cuda --lengths 128,512,1024 --layer-dtype float16 over the same
#      presets: speed and peak memory against fairseq's stock layer, and the compiles over 50 batches of random
#      lengths (--recompile-batches; kernels compiled once already come from inductor's cache)
#   c. training (~200 s): the corpus (~20 s), then 100 --fp16 updates of four presets (distance, gated, PASCAL, DBSA:
#      SDPA with a bias, the gate's mix, flex attention's score modification, the parse loss from flex attention's
#      log-sum-exp), attention dropout 0 so that the fused kernels are what trains; each run validated and decoded
#      (fairseq-generate --fp16): ~45 s each
#   d. parsing (~30 s): stanza's parse rate on CUDA (syntrans-parse over 500 lines of the synthetic corpus)
# In all about 470 s. Every command is cut at GPU_CHECK_BUDGET seconds after the start (default 480): a stage that
# cannot start or finish in time is reported as such, and the stages before it are in the table already.
#
# Usage: scripts/gpu_check.sh [--plumbing] OUT_DIR
#   OUT_DIR      summary.md (the table), summary.tsv (the trainings), every stage's log and result are written here
#   --plumbing   test this script without a GPU, every stage on CPU: a. CPU against CPU (the kernels the attention
#                picks against every head's scores formed), float32; b. the quick benchmark by length (lengths 16,48);
#                c. a tiny corpus, 3 updates in float32 (fairseq's --fp16 cannot run on CPU: docs/half_precision.md);
#                d. the trivial right-branching parser instead of stanza
# Environment (optional):
#   GPU_CHECK_STAGES      stages to run (default "a b c d")      GPU_CHECK_BUDGET   seconds before no stage starts (480)
#   GPU_CHECK_PRESETS     stage c's presets (default "distance gated pascal dbsa"; also: vanilla lisa_ce lisa_l2
#                         dbsa_2heads syncattn nsd)
#   GPU_CHECK_PRECISIONS  stage c's precisions (default fp16; of fp32 fp16 amp)
#   GPU_CHECK_UPDATES     updates per training (100; plumbing 3)   GPU_CHECK_TRAIN   training sentences (4000; 300)
#   GPU_CHECK_TIMEOUT     seconds per command (300)                GPU_CHECK_DATA    an existing data-bin for stage c
#   GPU_CHECK_LENGTHS     stage b's lengths (128,512,1024)         GPU_CHECK_BENCH_ARGS  more syntrans-benchmark flags
#   GPU_CHECK_PARSE_TEXT  stage d's input (default: the synthetic corpus)   GPU_CHECK_PARSE_LINES  its lines (500)
#   GPU_CHECK_NO_BENCH=1  leave out stage b
#   SYNTRANS_BIN          a folder whose commands (fairseq-train, syntrans-benchmark, python, …) come first on PATH,
#                         before this checkout's .venv/bin (as in syntrans-reproduce: wrappers, another installation)
# Exit status: 0 every stage asked for ran and passed (a: every layer within its tolerance; b: the benchmark ran; c:
# every run trained to a finite loss and decoded; d: parsed, or no stanza models installed, which the table says); 1
# otherwise (a stage failed or was given up for the budget); 2 usage, or no CUDA without --plumbing.
set -euo pipefail

usage() { echo "usage: $0 [--plumbing] OUT_DIR   (see the head of this script)" >&2; exit 2; }

PLUMBING=0
OUT=""
for arg in "$@"; do
  case $arg in
    --plumbing) PLUMBING=1 ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    -*) echo "gpu_check.sh: unknown option $arg" >&2; usage ;;
    *) [[ -z $OUT ]] || usage; OUT=$arg ;;
  esac
done
[[ -n $OUT ]] || usage

ROOT=$(cd "$(dirname "$0")/.." && pwd)
if [[ -x $ROOT/.venv/bin/python ]]; then export PATH="$ROOT/.venv/bin:$PATH"; fi
if [[ -n ${SYNTRANS_BIN:-} ]]; then
  [[ -d $SYNTRANS_BIN ]] || { echo "gpu_check.sh: SYNTRANS_BIN=$SYNTRANS_BIN is not a folder" >&2; exit 2; }
  export PATH="$SYNTRANS_BIN:$PATH"
fi
PY=python
for tool in "$PY" timeout awk fairseq-train fairseq-generate syntrans-synth syntrans-preprocess syntrans-benchmark \
            syntrans-parse subword-nmt; do
  command -v "$tool" > /dev/null || { echo "gpu_check.sh: $tool not found on PATH (run make install first)" >&2; exit 2; }
done
# library warnings are not this script's business; syntrans's own (a compiled kernel given up) stay visible
export PYTHONWARNINGS="ignore,default:syntrans"

# preset name → fairseq-train flags (the gate learns from the first update: its pre-warm-up would freeze it)
declare -A FLAGS=(
  [vanilla]="--arch transformer"
  [distance]="--arch distance_transformer_iwslt_de_en"
  [gated]="--arch gated_distance_transformer_iwslt_de_en --gate-warmup-epochs 0"
  [pascal]="--arch pascal_transformer_iwslt_de_en"
  [lisa_ce]="--arch lisa_transformer_iwslt_de_en"
  [lisa_l2]="--arch lisa_transformer_iwslt_de_en --lisa-loss l2"
  [dbsa]="--arch dbsa_transformer_wmt_en_de"
  [dbsa_2heads]="--arch dbsa_transformer_wmt_en_de --dbsa-heads 2"
  [syncattn]="--arch syncattn_transformer_wmt_en_de"
  [nsd]="--arch nsd_transformer_base"
)
ALL_PRESETS="vanilla distance gated pascal lisa_ce lisa_l2 dbsa dbsa_2heads syncattn nsd"
read -r -a PRESETS <<< "${GPU_CHECK_PRESETS:-distance gated pascal dbsa}"
for p in "${PRESETS[@]}"; do
  [[ -n ${FLAGS[$p]+x} ]] || { echo "gpu_check.sh: unknown preset '$p' (expected one of: $ALL_PRESETS)" >&2; exit 2; }
done
read -r -a ASKED <<< "${GPU_CHECK_PRECISIONS:-fp16}"
for p in "${ASKED[@]}"; do
  case $p in fp32|fp16|amp) ;; *) echo "gpu_check.sh: unknown precision '$p' (expected fp32, fp16, amp)" >&2; exit 2 ;; esac
done
read -r -a STAGES <<< "${GPU_CHECK_STAGES:-a b c d}"
for s in "${STAGES[@]}"; do
  case $s in a|b|c|d) ;; *) echo "gpu_check.sh: unknown stage '$s' (expected a, b, c, d)" >&2; exit 2 ;; esac
done
if [[ ${GPU_CHECK_NO_BENCH:-0} == 1 ]]; then
  kept=(); for s in "${STAGES[@]}"; do [[ $s == b ]] || kept+=("$s"); done; STAGES=(${kept[@]+"${kept[@]}"})
fi

read -r TORCH CUDA < <("$PY" -c "import torch; print(torch.__version__, torch.cuda.device_count() if torch.cuda.is_available() else 0)" \
                         2>/dev/null || echo "? 0")
# one preset per mechanism (those without attention dropout where a preset has none: flex attention runs there)
BENCH_ARCHS=distance_transformer_wmt_en_de,gated_distance_transformer_iwslt_de_en,pascal_transformer_wmt_en_de
BENCH_ARCHS=$BENCH_ARCHS,lisa_transformer_wmt_en_de,dbsa_transformer_wmt_en_de,sla_transformer_iwslt_de_en
if [[ $PLUMBING == 1 ]]; then
  echo "== plumbing test on CPU (float32 only; CUDA devices visible: $CUDA)"
  export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
  WHERE="plumbing test on CPU, float32"
  PRECISIONS=fp32
  UPDATES=${GPU_CHECK_UPDATES:-3}
  NTRAIN=${GPU_CHECK_TRAIN:-300}
  NEVAL=40
  DEVICE_FLAGS=(--cpu)
  GEN_FLAGS=(--beam 2 --max-len-a 1 --max-len-b 5)  # an untrained model decodes to the length limit: keep it short
  CHECK_ARGS=(--device cpu --archs pascal_transformer_wmt_en_de,dbsa_transformer_wmt_en_de --length 40 --tokens 160)
  BENCH_ARGS=(--device cpu --quick --lengths "${GPU_CHECK_LENGTHS:-16,48}" --layer-tokens 96 --reps 1
              --recompile-batches 4 --archs pascal_transformer_wmt_en_de,dbsa_transformer_wmt_en_de)
  PARSE_LINES=${GPU_CHECK_PARSE_LINES:-50}
  PARSER=(--parser right-branching)
elif [[ $CUDA == 0 ]]; then
  echo "gpu_check.sh: no CUDA device: torch $TORCH reports torch.cuda.is_available() False. fairseq's --fp16 and --amp" >&2
  echo "  need CUDA (on CPU --fp16 fails building its optimizer and --amp silently trains in float32;" >&2
  echo "  docs/half_precision.md). Run this on a CUDA machine, or add --plumbing to test the script on CPU in float32." >&2
  exit 2
else
  WHERE="CUDA, $CUDA device(s): $("$PY" -c "import torch; print(torch.cuda.get_device_name(0))")"
  echo "== $WHERE, torch $TORCH"
  PRECISIONS=${GPU_CHECK_PRECISIONS:-fp16}
  UPDATES=${GPU_CHECK_UPDATES:-100}
  NTRAIN=${GPU_CHECK_TRAIN:-4000}
  NEVAL=200
  DEVICE_FLAGS=()
  GEN_FLAGS=(--beam 4)
  CHECK_ARGS=(--device cuda --archs "$BENCH_ARCHS,syncattn_transformer_wmt_en_de")
  BENCH_ARGS=(--device cuda --lengths "${GPU_CHECK_LENGTHS:-128,512,1024}" --layer-dtype float16 --reps 3
              --recompile-batches 50 --archs "$BENCH_ARCHS")
  PARSE_LINES=${GPU_CHECK_PARSE_LINES:-500}
  PARSER=()
fi
read -r -a EXTRA_BENCH <<< "${GPU_CHECK_BENCH_ARGS:-}"
TIMEOUT=${GPU_CHECK_TIMEOUT:-300}
BUDGET=${GPU_CHECK_BUDGET:-480}
read -r -a PRECISIONS <<< "$PRECISIONS"

mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
trap 'echo "gpu_check.sh: stopped at line $LINENO: $BASH_COMMAND failed (logs in $OUT)" >&2' ERR
cd "$ROOT"
USER_DIR=$("$PY" -c "import os, syntrans; print(os.path.dirname(syntrans.__file__))" 2>/dev/null)
start=$(date +%s)
failed=0

run_logged() {  # log file, command…: runs it under the timeout, cut at the budget; its status, never stopping the script
  local log=$1; shift
  local rc=0 left=$(( BUDGET - ($(date +%s) - start) ))
  if (( left <= 0 )); then echo "gpu_check.sh: not started: the budget of ${BUDGET}s was spent" > "$log"; return 124; fi
  timeout "$(( left < TIMEOUT ? left : TIMEOUT ))" "$@" > "$log" 2>&1 || rc=$?
  if (( rc == 124 )); then echo "gpu_check.sh: stopped by its timeout or the budget of ${BUDGET}s" >> "$log"; fi
  return $rc
}
finite() { [[ $1 =~ ^-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$ ]]; }

# ------------------------------------------------------------------------------------------------- the table
declare -A STATUS=([a]="not run" [b]="not run" [c]="not run" [d]="not run")
declare -A SECONDS_TAKEN=([a]="-" [b]="-" [c]="-" [d]="-")
declare -A ESTIMATE=([a]="~150" [b]="~90" [c]="~200" [d]="~30")
declare -A TITLE=([a]="a. layers, CUDA against CPU" [b]="b. by length, float16" [c]="c. --fp16 trainings, decoded"
                  [d]="d. parse rate")
if [[ $PLUMBING == 1 ]]; then
  TITLE=([a]="a. layers, CPU against CPU (plumbing)" [b]="b. by length (plumbing)" [c]="c. trainings in float32 (plumbing)"
         [d]="d. parse rate, trivial parser (plumbing)")
fi
SUMMARY=$OUT/summary.tsv
printf "preset\tprecision\tupdates\ttrain_loss\tvalid_loss\tloss_scale\toverflows\tdecode\tBLEU\tkernels_given_up\tstatus\n" > "$SUMMARY"

write_table() {  # OUT_DIR/summary.md from everything finished so far
  {
    echo "# gpu_check.sh: $WHERE"
    echo
    echo "torch $TORCH; $(( $(date +%s) - start ))s so far; the stages' estimated seconds are the script head's (full mode, one H100)"
    echo
    echo "commands from $(dirname "$(command -v fairseq-train)")"
    echo
    echo "| stage | status | seconds | estimated | output |"
    echo "|---|---|---:|---:|---|"
    for s in a b c d; do
      local file=-
      case $s in a) file=layers.md ;; b) file=by_length.md ;; c) file=summary.tsv ;; d) file=parse.md ;; esac
      echo "| ${TITLE[$s]} | ${STATUS[$s]} | ${SECONDS_TAKEN[$s]} | ${ESTIMATE[$s]} | $file |"
    done
    if [[ -f $OUT/layers.md ]]; then echo; cat "$OUT/layers.md"; fi
    if [[ -f $OUT/by_length.md ]]; then echo; cat "$OUT/by_length.md"; fi
    if [[ $(wc -l < "$SUMMARY") -gt 1 ]]; then
      echo
      echo "## c. trainings: $UPDATES updates, $NTRAIN training sentences, model sizes configs/demo.args, attention dropout 0"
      echo
      awk -F'\t' 'NR == 1 { h = "|"; s = "|"; for (i = 1; i <= NF; i++) { h = h " " $i " |"; s = s "---|" } print h; print s; next }
                  { r = "|"; for (i = 1; i <= NF; i++) r = r " " $i " |"; print r }' "$SUMMARY"
    fi
    if [[ -f $OUT/parse.md ]]; then echo; cat "$OUT/parse.md"; fi
  } > "$OUT/summary.md"
}

wanted() { local s; for s in "${STAGES[@]}"; do [[ $s == "$1" ]] && return 0; done; return 1; }
begin() {  # stage: 0 when it may start (asked for, and the budget not spent)
  if ! wanted "$1"; then STATUS[$1]="left out (GPU_CHECK_STAGES)"; return 1; fi
  if (( $(date +%s) - start >= BUDGET )); then
    STATUS[$1]="given up: the budget of ${BUDGET}s was spent"; failed=1; write_table; return 1
  fi
  echo "== ${TITLE[$1]}"
  stage_start=$(date +%s)
}
finish() {  # stage, status
  STATUS[$1]=$2
  SECONDS_TAKEN[$1]=$(( $(date +%s) - stage_start ))
  [[ $2 == ok* ]] || failed=1
  echo "   ${TITLE[$1]}: $2 (${SECONDS_TAKEN[$1]}s)"
  write_table
}
given_up() {  # log → the syntrans warnings of compiled kernels given up, as "kernel (caller)" names, or "none"
  local found
  found=$(grep -o "syntrans: [^:]*: [a-z ]* compiled by torch.compile" "$1" 2>/dev/null \
          | sed 's/^syntrans: \([^:]*\): \(.*\) compiled by torch.compile$/\2 (\1)/' | sort -u | paste -sd, - || true)
  echo "${found:-none}"
}
write_table

# ------------------------------------------------------------------------------------------ a. layers
if begin a; then
  if run_logged "$OUT/layers.log" "$PY" -m syntrans.cli.device_check "${CHECK_ARGS[@]}" --out "$OUT/layers.md" \
      --json "$OUT/layers.json"; then
    finish a "ok: every layer within its tolerance"
  else
    rc=$?
    [[ -f $OUT/layers.md ]] || { tail -5 "$OUT/layers.log" | sed 's/^/   | /'; }
    finish a "FAILED (exit $rc): $( [[ -f $OUT/layers.md ]] && echo "rows marked NO in layers.md" || echo "see layers.log")"
  fi
fi

# ---------------------------------------------------------------------------------------- b. by length
if begin b; then
  if run_logged "$OUT/by_length.log" syntrans-benchmark "${BENCH_ARGS[@]}" ${EXTRA_BENCH[@]+"${EXTRA_BENCH[@]}"} \
      --out "$OUT/by_length.md" --json "$OUT/by_length.json"; then
    finish b "ok; kernels given up: $(given_up "$OUT/by_length.log")"
  else
    rc=$?
    tail -5 "$OUT/by_length.log" | sed 's/^/   | /'
    finish b "FAILED (exit $rc): see by_length.log"
  fi
fi

# --------------------------------------------------------------------- the corpus (stages c and d)
prepare_corpus() {
  if [[ -n ${GPU_CHECK_DATA:-} ]]; then
    BIN=$GPU_CHECK_DATA
    [[ -f $BIN/dict.src.txt && -f $BIN/test.src-tgt.src.bin ]] || {
      echo "gpu_check.sh: GPU_CHECK_DATA=$BIN is not a syntrans-preprocess data-bin of src→tgt with a test split" >&2
      return 1; }
    RAW=""
    return 0
  fi
  DATA=$OUT/data
  BIN=$DATA/bin
  RAW=$DATA/raw
  [[ -f $BIN/test.src-tgt.src.bin ]] && return 0
  echo "   synthetic corpus ($NTRAIN training sentences) with gold parses, joint BPE, syntrans-preprocess"
  rm -rf "$DATA"
  mkdir -p "$DATA"
  syntrans-synth --out-dir "$RAW" --train "$NTRAIN" --valid "$NEVAL" --test "$NEVAL" --seed 1 > "$OUT/prepare.log" 2>&1
  cat "$RAW/train.src" "$RAW/train.tgt" | subword-nmt learn-bpe -s 500 > "$DATA/codes" 2>> "$OUT/prepare.log"
  for split in train valid test; do
    for lang in src tgt; do
      subword-nmt apply-bpe -c "$DATA/codes" < "$RAW/$split.$lang" > "$DATA/$split.bpe.$lang"
    done
  done
  syntrans-preprocess -s src -t tgt --joined-dictionary --workers 2 \
    --trainpref "$DATA/train.bpe" --validpref "$DATA/valid.bpe" --testpref "$DATA/test.bpe" \
    --trainparse "$RAW/train" --validparse "$RAW/valid" --testparse "$RAW/test" \
    --destdir "$BIN" >> "$OUT/prepare.log" 2>&1
}

field() {  # log, tag (train|valid), metric → the metric in the tag's last line of a simple-format log, or "-"
  awk -v tag="| $2 |" -v name="$3" '
    index($0, tag) { v = "-"; n = split($0, parts, / \| /)
                     for (i = 1; i <= n; i++) { split(parts[i], kv, " "); if (kv[1] == name) v = kv[2] }
                     last = v }
    END { print (last == "" ? "-" : last) }' "$1"
}

# --------------------------------------------------------------------------------------- c. trainings
if begin c; then
  if ! prepare_corpus; then
    finish c "FAILED: no corpus (see prepare.log)"
  else
    mapfile -t MODEL_FLAGS < <(grep -v '^\s*#' configs/demo.args | grep -v '^\s*$' | xargs -n1)
    runs_ok=1
    for preset in "${PRESETS[@]}"; do
      read -r -a ARCH_FLAGS <<< "${FLAGS[$preset]}"
      for prec in "${PRECISIONS[@]}"; do
        case $prec in fp16) PFLAGS=(--fp16) ;; amp) PFLAGS=(--amp) ;; *) PFLAGS=() ;; esac
        name=$preset.$prec
        save=$OUT/ckpt/$name
        rm -rf "$save"
        echo "   fairseq-train $name ($UPDATES updates)"
        status=ok
        # ${A[@]+"${A[@]}"}: an empty array expands to nothing under set -u in every bash
        if ! run_logged "$OUT/train.$name.log" fairseq-train "$BIN" --user-dir "$USER_DIR" --task syntax_translation \
            ${MODEL_FLAGS[@]+"${MODEL_FLAGS[@]}"} ${ARCH_FLAGS[@]+"${ARCH_FLAGS[@]}"} --attention-dropout 0 \
            ${PFLAGS[@]+"${PFLAGS[@]}"} ${DEVICE_FLAGS[@]+"${DEVICE_FLAGS[@]}"} --max-update "$UPDATES" \
            --save-dir "$save" --no-epoch-checkpoints --log-format simple --log-interval 50 --num-workers 0; then
          status=train-failed
          tail -5 "$OUT/train.$name.log" | sed 's/^/   | /'
        fi
        log=$OUT/train.$name.log
        updates=$(field "$log" train num_updates)
        train_loss=$(field "$log" train loss)
        valid_loss=$(field "$log" valid loss)
        scale=$(field "$log" train loss_scale)
        overflows=$(grep -c -E "overflow detected" "$log" || true)  # fp16: fairseq's trainer; amp: its AMP optimizer
        if [[ $status == ok ]] && ! { finite "$train_loss" && finite "$valid_loss"; }; then status=no-finite-loss; fi
        decode=no
        bleu=-
        if [[ $status == ok ]]; then
          GFLAGS=()
          if [[ $prec == fp16 ]]; then GFLAGS=(--fp16); fi
          if run_logged "$OUT/generate.$name.txt" fairseq-generate "$BIN" --user-dir "$USER_DIR" \
              --task syntax_translation --gen-subset test --path "$save/checkpoint_last.pt" "${GEN_FLAGS[@]}" \
              --batch-size 64 --remove-bpe --num-workers 0 ${DEVICE_FLAGS[@]+"${DEVICE_FLAGS[@]}"} \
              ${GFLAGS[@]+"${GFLAGS[@]}"}; then
            decode=yes
            bleu=$(awk '/BLEU4 = / { for (i = 1; i <= NF; i++) if ($i == "BLEU4") v = $(i + 2) } END { sub(",", "", v); print (v == "" ? "-" : v) }' \
                   "$OUT/generate.$name.txt")
            finite "$bleu" || status=no-bleu
          else
            status=decode-failed
            tail -5 "$OUT/generate.$name.txt" | sed 's/^/   | /'
          fi
        fi
        kernels=$(given_up "$log")
        [[ $status == ok ]] || runs_ok=0
        echo "   $name: updates $updates, train loss $train_loss, valid loss $valid_loss, BLEU $bleu, kernels given up: $kernels: $status"
        printf "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n" "$preset" "$prec" "$updates" "$train_loss" "$valid_loss" \
          "$scale" "$overflows" "$decode" "$bleu" "$kernels" "$status" >> "$SUMMARY"
        write_table
      done
    done
    if [[ $runs_ok == 1 ]]; then finish c "ok: every run trained, validated and decoded"
    else finish c "FAILED: see the status column"; fi
  fi
fi

# ------------------------------------------------------------------------------------------ d. parsing
if begin d; then
  TEXT=${GPU_CHECK_PARSE_TEXT:-}
  if [[ -z $TEXT ]]; then
    if [[ -z ${RAW:-} || ! -f ${RAW:-}/train.src ]]; then
      RAW=$OUT/parse_corpus
      syntrans-synth --out-dir "$RAW" --train "$PARSE_LINES" --valid 1 --test 1 --seed 2 > "$OUT/parse_prepare.log" 2>&1
    fi
    TEXT=$RAW/train.src
  fi
  head -n "$PARSE_LINES" "$TEXT" > "$OUT/parse_input.txt"
  lines=$(wc -l < "$OUT/parse_input.txt")
  tokens=$(wc -w < "$OUT/parse_input.txt")
  t0=$(date +%s.%N)
  if run_logged "$OUT/parse.log" syntrans-parse ${PARSER[@]+"${PARSER[@]}"} --lang en --tokenized --batch-size 64 \
      --force -o "$OUT/parse.conllu" "$OUT/parse_input.txt"; then
    secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
    rate=$(awk -v n="$lines" -v t="$tokens" -v s="$secs" 'BEGIN { printf "%.1f lines/s, %.0f tokens/s", n / s, t / s }')
    parser=$( [[ $PLUMBING == 1 ]] && echo "right-branching (trivial)" || echo "stanza" )
    { echo "## d. parse rate: syntrans-parse, $parser, on $( [[ $PLUMBING == 1 ]] && echo cpu || echo cuda )"
      echo
      echo "$lines lines, $tokens tokens in ${secs}s (model loading included): $rate"; } > "$OUT/parse.md"
    finish d "ok: $rate"
  elif grep -q "STANZA_RESOURCES_DIR" "$OUT/parse.log"; then
    { echo "## d. parse rate: not measured"; echo; echo "No stanza models installed on this machine:"; echo
      grep -m1 "cannot load the stanza models" "$OUT/parse.log" || true; } > "$OUT/parse.md"
    finish d "ok: not measured, no stanza models (parse.log)"
  else
    tail -5 "$OUT/parse.log" | sed 's/^/   | /'
    finish d "FAILED: see parse.log"
  fi
fi

write_table
echo
echo "== summary ($OUT/summary.md)"
for s in a b c d; do printf "%-45s %s\n" "${TITLE[$s]}" "${STATUS[$s]}"; done
echo "gpu_check finished in $(( $(date +%s) - start ))s: $( [[ $failed == 0 ]] && echo "every stage asked for passed" || echo "SOME STAGES FAILED OR WERE GIVEN UP" )"
exit $failed
