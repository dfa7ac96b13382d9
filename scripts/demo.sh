#!/usr/bin/env bash
# make demo: the whole pipeline on the built-in synthetic corpus, on CPU, in minutes.
#   synthetic corpus with gold parses → BPE → syntrans-preprocess (fairseq binarization + sidecars)
#   → fairseq-train: vanilla Transformer and distance-mask model, identical settings
#   → fairseq-generate on the test set → a table of sacreBLEU and validation loss.
# Environment knobs: DEMO_DIR (default demo/), DEMO_UPDATES (default 600), DEMO_TRAIN (default 12000), DEMO_EVAL
#   (validation and test sentences, default 500),
#   DEMO_METHODS (default "vanilla distance"; also "pascal", "lisa", "dbsa", "syncattn", "nsd", "nsd_src", "nsd_tgt":
#   several minutes more each;
#   dbsa and syncattn use the target parses too). Every method takes its size from configs/demo.args: explicit
#   flags override a preset's defaults (so syncattn's --sync-layer -2 is decoder layer 1 of the demo's 3).
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=${DEMO_DIR:-demo}
UPDATES=${DEMO_UPDATES:-600}
NTRAIN=${DEMO_TRAIN:-12000}
NEVAL=${DEMO_EVAL:-500}
read -r -a METHODS <<< "${DEMO_METHODS:-vanilla distance}"
USER_DIR=$(python -c "import os, syntrans; print(os.path.dirname(syntrans.__file__))")
mkdir -p "$DIR"
start=$(date +%s)

echo "== 1. synthetic corpus with gold constituency and dependency parses"
syntrans-synth --out-dir "$DIR/raw" --train "$NTRAIN" --valid "$NEVAL" --test "$NEVAL" --seed 1

echo "== 2. joint BPE (subword-nmt, 500 merges)"
cat "$DIR/raw/train.src" "$DIR/raw/train.tgt" | subword-nmt learn-bpe -s 500 > "$DIR/codes" 2>/dev/null
for split in train valid test; do
  for lang in src tgt; do
    subword-nmt apply-bpe -c "$DIR/codes" < "$DIR/raw/$split.$lang" > "$DIR/$split.bpe.$lang"
  done
done

echo "== 3. syntrans-preprocess: fairseq binarization + syntax sidecars"
rm -rf "$DIR/data-bin"
syntrans-preprocess -s src -t tgt --joined-dictionary --workers 2 \
  --trainpref "$DIR/train.bpe" --validpref "$DIR/valid.bpe" --testpref "$DIR/test.bpe" \
  --trainparse "$DIR/raw/train" --validparse "$DIR/raw/valid" --testparse "$DIR/raw/test" \
  --destdir "$DIR/data-bin" 2>&1 | grep -v "INFO"

# the shared model and optimizer settings live in configs/demo.args (one flag per line)
mapfile -t MODEL_FLAGS < <(grep -v '^\s*#' configs/demo.args | grep -v '^\s*$' | xargs -n1)
COMMON=(--user-dir "$USER_DIR" --task syntax_translation "${MODEL_FLAGS[@]}" --max-update "$UPDATES"
  --no-epoch-checkpoints --log-format simple --log-interval 100 --num-workers 0)

train() {  # name, arch flags…
  local name=$1; shift
  echo "== 4. fairseq-train $name"
  local t0=$(date +%s)
  # progress on the terminal (a line per logged interval and per epoch), fairseq's whole output in the log
  fairseq-train "$DIR/data-bin" "${COMMON[@]}" "$@" --save-dir "$DIR/ckpt/$name" 2>&1 \
    | python scripts/demo_progress.py "$name" "$UPDATES" "$DIR/train.$name.log" \
    || { tail -30 "$DIR/train.$name.log"; exit 1; }
  grep -E "\| valid on|done training" "$DIR/train.$name.log" | tail -2 | cut -c1-160
  echo "   ($name trained in $(( $(date +%s) - t0 ))s)"
  echo "== 5. fairseq-generate $name"
  fairseq-generate "$DIR/data-bin" --user-dir "$USER_DIR" --task syntax_translation --gen-subset test \
    --path "$DIR/ckpt/$name/checkpoint_best.pt" --beam 5 --batch-size 64 --remove-bpe --num-workers 0 \
    > "$DIR/gen.$name.txt" 2> "$DIR/gen.$name.log" || { tail -30 "$DIR/gen.$name.log"; exit 1; }
  tail -1 "$DIR/gen.$name.txt"
}

for method in "${METHODS[@]}"; do
  case $method in
    vanilla)  train vanilla --arch transformer ;;
    distance) train distance --arch distance_transformer_iwslt_de_en --distance-layers 0 --distance-heads 2 --distance-tau 10 ;;
    pascal)   train pascal --arch pascal_transformer_iwslt_de_en --pascal-layers 0 --pascal-heads 2 ;;
    lisa)     train lisa --arch lisa_transformer_iwslt_de_en --lisa-layers 0 ;;
    dbsa)     train dbsa --arch dbsa_transformer_wmt_en_de --dbsa-encoder-layers 0 --dbsa-decoder-layers 0 ;;
    syncattn) train syncattn --arch syncattn_transformer_wmt_en_de --dbsa-encoder-layers 0 --dbsa-decoder-layers 0 \
                --sync-attn --sync-weight 0.5 --sync-layer -2 ;;
    nsd)      train nsd --arch nsd_transformer_base ;;
    nsd_src)  train nsd_src --arch nsd_src_transformer_base ;;
    nsd_tgt)  train nsd_tgt --arch nsd_tgt_transformer_base ;;
    *) echo "DEMO_METHODS: unknown method '$method' (expected vanilla, distance, pascal, lisa, dbsa, syncattn, nsd, nsd_src, nsd_tgt)"
       exit 2 ;;
  esac
done

echo "== 6. results"
python scripts/demo_table.py --dir "$DIR" "${METHODS[@]}"
echo "demo finished in $(( $(date +%s) - start ))s"
