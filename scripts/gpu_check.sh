#!/usr/bin/env bash
# Half precision on a CUDA machine (docs/half_precision.md): every syntax preset trained for a few hundred updates
# in float32 (the reference), under --fp16 and under --amp, each decoded with fairseq-generate (BLEU on the test
# split; --fp16 decodes in float16), then syntrans-benchmark on CUDA. Data: the built-in synthetic corpus with gold
# parses (syntrans-synth → joint BPE → syntrans-preprocess), model sizes from configs/demo.args.
#
# Usage: scripts/gpu_check.sh [--plumbing] OUT_DIR
#   OUT_DIR      logs (train.PRESET.PRECISION.log, generate.PRESET.PRECISION.txt, benchmark.*), checkpoints, the corpus,
#                summary.md / summary.tsv (the table printed at the end) are written here
#   --plumbing   test this script without a GPU: the same steps on CPU in float32 only (fairseq's --fp16 and --amp
#                cannot run on CPU: docs/half_precision.md), a tiny corpus, a few updates, the quick benchmark
# Environment (optional):
#   GPU_CHECK_PRESETS     presets to train (default: all below)   GPU_CHECK_PRECISIONS  default "fp32 fp16 amp"
#   GPU_CHECK_UPDATES     updates per run (default 300; plumbing 3) GPU_CHECK_TRAIN      training sentences (20000; 300)
#   GPU_CHECK_TIMEOUT     seconds per training/decoding run (1800) GPU_CHECK_NO_BENCH=1  skip the benchmark
#   GPU_CHECK_BENCH_ARGS  extra syntrans-benchmark flags (default none; plumbing "--quick --archs
#                         distance_transformer_iwslt_de_en --no-sidecars")
#   GPU_CHECK_DATA        an existing syntrans-preprocess data-bin (src→tgt, both sides parsed) instead of the corpus
# Exit status: 0 every run trained, validated to a finite loss and decoded (and the benchmark ran); 1 otherwise
# (the table says which); 2 usage, or no CUDA without --plumbing.
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
PY=python
for tool in "$PY" timeout awk fairseq-train fairseq-generate syntrans-synth syntrans-preprocess syntrans-benchmark subword-nmt; do
  command -v "$tool" > /dev/null || { echo "gpu_check.sh: $tool not found on PATH (run make install first)" >&2; exit 2; }
done
export PYTHONWARNINGS=ignore

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
read -r -a PRESETS <<< "${GPU_CHECK_PRESETS:-$ALL_PRESETS}"
for p in "${PRESETS[@]}"; do
  [[ -n ${FLAGS[$p]+x} ]] || { echo "gpu_check.sh: unknown preset '$p' (expected one of: $ALL_PRESETS)" >&2; exit 2; }
done
read -r -a ASKED <<< "${GPU_CHECK_PRECISIONS:-fp32 fp16 amp}"
for p in "${ASKED[@]}"; do
  case $p in fp32|fp16|amp) ;; *) echo "gpu_check.sh: unknown precision '$p' (expected fp32, fp16, amp)" >&2; exit 2 ;; esac
done

read -r TORCH CUDA < <("$PY" -c "import torch; print(torch.__version__, torch.cuda.device_count() if torch.cuda.is_available() else 0)" \
                         2>/dev/null || echo "? 0")
if [[ $PLUMBING == 1 ]]; then
  echo "== plumbing test on CPU (float32 only; CUDA devices visible: $CUDA)"
  export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
  PRECISIONS=fp32
  UPDATES=${GPU_CHECK_UPDATES:-3}
  NTRAIN=${GPU_CHECK_TRAIN:-300}
  NEVAL=40
  BENCH_ARGS=${GPU_CHECK_BENCH_ARGS:---quick --archs distance_transformer_iwslt_de_en --no-sidecars}
  DEVICE_FLAGS=(--cpu)
  GEN_FLAGS=(--beam 2 --max-len-a 1 --max-len-b 5)  # an untrained model decodes to the length limit: keep it short
  BENCH_DEVICE=cpu
elif [[ $CUDA == 0 ]]; then
  echo "gpu_check.sh: no CUDA device: torch $TORCH reports torch.cuda.is_available() False. fairseq's --fp16 and --amp" >&2
  echo "  need CUDA (on CPU --fp16 fails building its optimizer and --amp silently trains in float32;" >&2
  echo "  docs/half_precision.md). Run this on a CUDA machine, or add --plumbing to test the script on CPU in float32." >&2
  exit 2
else
  echo "== CUDA: $CUDA device(s), torch $TORCH: $("$PY" -c "import torch; print(torch.cuda.get_device_name(0))")"
  PRECISIONS=${GPU_CHECK_PRECISIONS:-fp32 fp16 amp}
  UPDATES=${GPU_CHECK_UPDATES:-300}
  NTRAIN=${GPU_CHECK_TRAIN:-20000}
  NEVAL=500
  BENCH_ARGS=${GPU_CHECK_BENCH_ARGS:-}
  DEVICE_FLAGS=()
  GEN_FLAGS=(--beam 5)
  BENCH_DEVICE=cuda
fi
TIMEOUT=${GPU_CHECK_TIMEOUT:-1800}
read -r -a PRECISIONS <<< "$PRECISIONS"

mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
trap 'echo "gpu_check.sh: stopped at line $LINENO: $BASH_COMMAND failed (logs in $OUT)" >&2' ERR
cd "$ROOT"
USER_DIR=$("$PY" -c "import os, syntrans; print(os.path.dirname(syntrans.__file__))" 2>/dev/null)
start=$(date +%s)

run_logged() {  # log file, command…: runs it under the timeout; its status, never stopping the script
  local log=$1; shift
  local rc=0
  timeout "$TIMEOUT" "$@" > "$log" 2>&1 || rc=$?
  return $rc
}

if [[ -n ${GPU_CHECK_DATA:-} ]]; then
  BIN=$GPU_CHECK_DATA
  [[ -f $BIN/dict.src.txt && -f $BIN/test.src-tgt.src.bin ]] || {
    echo "gpu_check.sh: GPU_CHECK_DATA=$BIN is not a syntrans-preprocess data-bin of src→tgt with a test split" >&2; exit 2; }
  echo "== 1. corpus: $BIN (GPU_CHECK_DATA)"
else
  echo "== 1. synthetic corpus ($NTRAIN training sentences) with gold parses, joint BPE, syntrans-preprocess"
  DATA=$OUT/data
  BIN=$DATA/bin
  rm -rf "$DATA"
  mkdir -p "$DATA"
  syntrans-synth --out-dir "$DATA/raw" --train "$NTRAIN" --valid "$NEVAL" --test "$NEVAL" --seed 1 > "$OUT/prepare.log" 2>&1
  cat "$DATA/raw/train.src" "$DATA/raw/train.tgt" | subword-nmt learn-bpe -s 500 > "$DATA/codes" 2>> "$OUT/prepare.log"
  for split in train valid test; do
    for lang in src tgt; do
      subword-nmt apply-bpe -c "$DATA/codes" < "$DATA/raw/$split.$lang" > "$DATA/$split.bpe.$lang"
    done
  done
  syntrans-preprocess -s src -t tgt --joined-dictionary --workers 2 \
    --trainpref "$DATA/train.bpe" --validpref "$DATA/valid.bpe" --testpref "$DATA/test.bpe" \
    --trainparse "$DATA/raw/train" --validparse "$DATA/raw/valid" --testparse "$DATA/raw/test" \
    --destdir "$BIN" >> "$OUT/prepare.log" 2>&1
fi

mapfile -t MODEL_FLAGS < <(grep -v '^\s*#' configs/demo.args | grep -v '^\s*$' | xargs -n1)

field() {  # log, tag (train|valid), metric → the metric in the tag's last line of a simple-format log, or "-"
  awk -v tag="| $2 |" -v name="$3" '
    index($0, tag) { v = "-"; n = split($0, parts, / \| /)
                     for (i = 1; i <= n; i++) { split(parts[i], kv, " "); if (kv[1] == name) v = kv[2] }
                     last = v }
    END { print (last == "" ? "-" : last) }' "$1"
}
finite() { [[ $1 =~ ^-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$ ]]; }

SUMMARY=$OUT/summary.tsv
printf "preset\tprecision\tupdates\ttrain_loss\tvalid_loss\tloss_scale\toverflows\tdecode\tBLEU\tstatus\n" > "$SUMMARY"
failed=0
for preset in "${PRESETS[@]}"; do
  read -r -a ARCH_FLAGS <<< "${FLAGS[$preset]}"
  for prec in "${PRECISIONS[@]}"; do
    case $prec in fp16) PFLAGS=(--fp16) ;; amp) PFLAGS=(--amp) ;; *) PFLAGS=() ;; esac
    name=$preset.$prec
    save=$OUT/ckpt/$name
    rm -rf "$save"
    echo "== 2. fairseq-train $name ($UPDATES updates)"
    status=ok
    # ${A[@]+"${A[@]}"}: an empty array expands to nothing under set -u in every bash
    if ! run_logged "$OUT/train.$name.log" fairseq-train "$BIN" --user-dir "$USER_DIR" --task syntax_translation \
        ${MODEL_FLAGS[@]+"${MODEL_FLAGS[@]}"} ${ARCH_FLAGS[@]+"${ARCH_FLAGS[@]}"} ${PFLAGS[@]+"${PFLAGS[@]}"} \
        ${DEVICE_FLAGS[@]+"${DEVICE_FLAGS[@]}"} --max-update "$UPDATES" --save-dir "$save" --no-epoch-checkpoints \
        --log-format simple --log-interval 50 --num-workers 0; then
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
      echo "== 3. fairseq-generate $name"
      GFLAGS=()
      if [[ $prec == fp16 ]]; then GFLAGS=(--fp16); fi
      if run_logged "$OUT/generate.$name.txt" fairseq-generate "$BIN" --user-dir "$USER_DIR" \
          --task syntax_translation --gen-subset test --path "$save/checkpoint_last.pt" "${GEN_FLAGS[@]}" --batch-size 64 \
          --remove-bpe --num-workers 0 ${DEVICE_FLAGS[@]+"${DEVICE_FLAGS[@]}"} ${GFLAGS[@]+"${GFLAGS[@]}"}; then
        decode=yes
        bleu=$(awk '/BLEU4 = / { for (i = 1; i <= NF; i++) if ($i == "BLEU4") v = $(i + 2) } END { sub(",", "", v); print (v == "" ? "-" : v) }' \
               "$OUT/generate.$name.txt")
        finite "$bleu" || status=no-bleu
      else
        status=decode-failed
        tail -5 "$OUT/generate.$name.txt" | sed 's/^/   | /'
      fi
    fi
    [[ $status == ok ]] || failed=1
    echo "   $name: updates $updates, train loss $train_loss, valid loss $valid_loss, BLEU $bleu: $status"
    printf "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n" "$preset" "$prec" "$updates" "$train_loss" "$valid_loss" \
      "$scale" "$overflows" "$decode" "$bleu" "$status" >> "$SUMMARY"
  done
done

bench=skipped
if [[ ${GPU_CHECK_NO_BENCH:-0} != 1 ]]; then
  echo "== 4. syntrans-benchmark --device $BENCH_DEVICE $BENCH_ARGS"
  read -r -a BARGS <<< "$BENCH_ARGS"
  if run_logged "$OUT/benchmark.log" syntrans-benchmark --device "$BENCH_DEVICE" --work-dir "$OUT/bench" \
      --out "$OUT/benchmark.md" --json "$OUT/benchmark.json" ${BARGS[@]+"${BARGS[@]}"}; then
    bench="ran: $OUT/benchmark.md"
  else
    bench="FAILED: $OUT/benchmark.log"
    failed=1
    tail -5 "$OUT/benchmark.log" | sed 's/^/   | /'
  fi
fi

# 5. one layer per mechanism against the stock one by length (speed, peak memory), float32 and float16 (--fp16's
#    layers); 6. the kernel tests that need CUDA (flex attention's backward: PASCAL, the distance mask, the parse
#    losses from the log-sum-exp) with the rest of the kernel tests
bylength=skipped
kernels=skipped
if [[ ${GPU_CHECK_NO_BENCH:-0} != 1 ]]; then
  bylength=""
  if [[ $PLUMBING == 1 ]]; then LARGS=(--quick --lengths "${GPU_CHECK_LENGTHS:-32,64}"); DTYPES=float32
  else LARGS=(--lengths "${GPU_CHECK_LENGTHS:-32,64,128,256,512}"); DTYPES="float32 float16"; fi
  for dtype in $DTYPES; do
    echo "== 5. syntrans-benchmark --device $BENCH_DEVICE ${LARGS[*]} --layer-dtype $dtype"
    if run_logged "$OUT/by_length.$dtype.log" syntrans-benchmark --device "$BENCH_DEVICE" "${LARGS[@]}" \
        --layer-dtype "$dtype" --out "$OUT/by_length.$dtype.md" --json "$OUT/by_length.$dtype.json"; then
      bylength="$bylength $OUT/by_length.$dtype.md"
    else
      bylength="$bylength FAILED: $OUT/by_length.$dtype.log"
      failed=1
      tail -5 "$OUT/by_length.$dtype.log" | sed 's/^/   | /'
    fi
  done
fi
if [[ $PLUMBING == 0 ]]; then
  echo "== 6. the attention kernel tests on CUDA"
  if run_logged "$OUT/kernels.log" "$PY" -m pytest -q -p no:cacheprovider "$ROOT/tests/test_attention_kernels.py" -rs; then
    kernels="passed: $(tail -1 "$OUT/kernels.log")"
  else
    kernels="FAILED: $OUT/kernels.log"
    failed=1
    tail -15 "$OUT/kernels.log" | sed 's/^/   | /'
  fi
fi

{
  echo "# gpu_check.sh: $( [[ $PLUMBING == 1 ]] && echo "plumbing test on CPU, float32" || echo "CUDA, $CUDA device(s)" )"
  echo
  echo "torch $TORCH; $UPDATES updates per run; $NTRAIN training sentences; model sizes configs/demo.args; $(( $(date +%s) - start ))s"
  echo
  awk -F'\t' 'NR == 1 { h = "|"; s = "|"; for (i = 1; i <= NF; i++) { h = h " " $i " |"; s = s "---|" } print h; print s; next }
              { r = "|"; for (i = 1; i <= NF; i++) r = r " " $i " |"; print r }' "$SUMMARY"
  echo
  echo "benchmark: $bench"
  echo "benchmark by length:$bylength"
  echo "kernel tests: $kernels"
  for f in $bylength; do [[ -f $f ]] && { echo; cat "$f"; }; done
} > "$OUT/summary.md"
echo
echo "== summary ($OUT/summary.md)"
awk -F'\t' '{ printf "%-12s %-9s %7s %10s %10s %10s %9s %6s %7s  %s\n", $1, $2, $3, $4, $5, $6, $7, $8, $9, $10 }' "$SUMMARY"
echo "benchmark: $bench"
echo "benchmark by length:$bylength"
echo "kernel tests: $kernels"
echo "gpu_check finished in $(( $(date +%s) - start ))s: $( [[ $failed == 0 ]] && echo "every run ok" || echo "SOME RUNS FAILED" )"
exit $failed
