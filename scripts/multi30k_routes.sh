#!/usr/bin/env bash
# All of Multi30k (29,000 / 1,014 / 1,000 captions, en→de, no length or ratio filter) through the three routes of
# syntrans-prepare, each parsed by stanza into the views the systems read (English: dependencies and constituency
# trees; German: dependencies):
#   moses-bpe  subword-nmt BPE (10,000 joint merges) on Moses tokens
#   moses-sp   SentencePiece (10,000 pieces) on the same Moses tokens: the parses of moses-bpe are reused (the folder
#              is copied first: another --bpe redoes the bpe and binarize steps only)
#   raw-sp     SentencePiece (10,000 pieces) on the raw text (--no-moses), parsed by stanza's own tokenizer
# Each route's prepared.json holds its sizes, each step's time and every per-line fallback with its lines;
# OUT/routes.md sums them up (scripts/routes_summary.py). Re-running resumes: finished steps are skipped.
#   STANZA_RESOURCES_DIR=RES scripts/multi30k_routes.sh OUT [MULTI30K_DIR]     (WORKERS: parser processes, default 2)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
command -v syntrans-prepare >/dev/null || PATH="$here/.venv/bin:$PATH"
out=${1:?usage: scripts/multi30k_routes.sh OUT [MULTI30K_DIR]}
raw=${2:-$here/../shared/data/multi30k}
mkdir -p "$out"
common=(multi30k --pair en-de --raw-dir "$raw" --ratio off --max-len off --parser stanza --workers "${WORKERS:-2}"
        --for-config distance_mask/iwslt14_en_de.args --for-config dbsa/wmt14_en_de.args)
route() {  # NAME FLAGS…: one route into OUT/NAME, its output in OUT/NAME.log
  local name=$1; shift
  echo "== $name: syntrans-prepare ${common[*]} --out $out/$name $*"
  syntrans-prepare "${common[@]}" --out "$out/$name" "$@" >> "$out/$name.log" 2>&1 \
    || { echo "$name failed: see $out/$name.log"; tail -3 "$out/$name.log"; exit 1; }
  tail -1 "$out/$name.log"
}
route moses-bpe --bpe-ops 10000
if [ ! -e "$out/moses-sp/.done" ]; then  # the Moses tokens and their parses, copied (data-bin is built anew)
  rm -rf "$out/moses-sp" && mkdir -p "$out/moses-sp"
  (cd "$out/moses-bpe" && for d in .done text tok parse ref; do [ ! -e "$d" ] || cp -a "$d" "$out/moses-sp/"; done)
fi
route moses-sp --bpe sentencepiece --bpe-ops 10000
route raw-sp --bpe sentencepiece --bpe-ops 10000 --no-moses
python "$here/scripts/routes_summary.py" "$out" moses-bpe moses-sp raw-sp > "$out/routes.md"
cat "$out/routes.md"
