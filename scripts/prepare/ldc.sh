#!/usr/bin/env bash
# LDC Chinese-English (licensed, never downloaded): reads plain parallel text train/valid/test.{zh,en}
# from --raw-dir (zh already word-segmented), tokenizes English with Moses, cleans train, BPE, parses, binarizes.
# Usage: scripts/prepare/ldc.sh --pair zh-en --raw-dir /path/to/ldc-text --out data/ldc.zh-en
set -euo pipefail
exec syntrans-prepare ldc "$@"
