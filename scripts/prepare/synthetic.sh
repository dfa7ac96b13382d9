#!/usr/bin/env bash
# The project's synthetic corpus with gold parses (generated, seed 1; smoke runs): BPE and binarization
# with the gold parses as sidecars; sizes from --smoke-train/--smoke-valid/--smoke-test (default 2000/200/200).
# Usage: scripts/prepare/synthetic.sh --out data/synthetic --smoke
set -euo pipefail
exec syntrans-prepare synthetic "$@"
