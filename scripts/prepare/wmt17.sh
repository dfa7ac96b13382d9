#!/usr/bin/env bash
# WMT17 English-German: Europarl v7, CommonCrawl, NC v12, Rapid 2016; newstest2016 valid, newstest2017
# test: download, extract, Moses-tokenize, clean train, joint BPE 32k, parse, binarize.
# Usage: scripts/prepare/wmt17.sh --pair en-de --out data/wmt17.en-de [--raw-dir DIR] [--smoke] [--force]
set -euo pipefail
exec syntrans-prepare wmt17 "$@"
