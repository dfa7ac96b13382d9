#!/usr/bin/env bash
# WMT14 English-German: downloads Europarl v7, CommonCrawl, News Commentary v9 and newstest2013/2014,
# Moses-tokenizes (aggressive hyphen splits, as fairseq), cleans train, joint BPE 40k, parses, binarizes.
# Usage: scripts/prepare/wmt14.sh --pair en-de --out data/wmt14.en-de [--raw-dir DIR] [--smoke] [--force]
set -euo pipefail
exec syntrans-prepare wmt14 "$@"
