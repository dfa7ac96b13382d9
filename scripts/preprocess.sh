#!/usr/bin/env bash
# Thin wrapper: fairseq-preprocess + syntax sidecars. Takes every fairseq-preprocess flag plus
# --trainparse/--validparse/--testparse (see `syntrans-preprocess --help`).
set -euo pipefail
exec syntrans-preprocess "$@"
