#!/usr/bin/env bash
# News Commentary v11 German-English: downloads NC v11 and the WMT15/16 test sets, extracts train and
# newstest2015 (valid) / newstest2016 (test), Moses-tokenizes, cleans train, joint BPE 16k, parses, binarizes.
# Usage: scripts/prepare/nc11.sh --pair de-en --out data/nc11.de-en [--raw-dir DIR] [--smoke] [--force]
set -euo pipefail
exec syntrans-prepare nc11 "$@"
