#!/usr/bin/env bash
# ASPEC Japanese-English or Chinese-Japanese (licensed, never downloaded): reads ASPEC-JE/ or ASPEC-JC/
# from --raw-dir (ja/zh already word-segmented; the layout is printed when files are missing), tokenizes
# English with Moses, cleans train, BPE, parses, binarizes.
# Usage: scripts/prepare/aspec.sh --pair ja-en|zh-ja --raw-dir /path/to/ASPEC --out data/aspec.ja-en
set -euo pipefail
exec syntrans-prepare aspec "$@"
