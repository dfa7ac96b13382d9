#!/usr/bin/env bash
# WMT18 English-Turkish: SETIMES2 (OPUS); newstest2016 valid, newstest2017 test: download, extract,
# Moses-tokenize, clean train, joint BPE 16k, parse, binarize.
# Usage: scripts/prepare/wmt18.sh --pair en-tr --out data/wmt18.en-tr [--raw-dir DIR] [--smoke] [--force]
set -euo pipefail
exec syntrans-prepare wmt18 "$@"
