#!/usr/bin/env bash
# The GPU check in one command (issue 36): on a machine with a CUDA GPU and PyTorch, offline, in at most
# 8 minutes, from a copy of the repository with or without assets/. Writes one Markdown report to paste
# into docs/gpu.md. Installs nothing, downloads nothing.
#   bash scripts/gpu_check.sh                          # --device cuda, report gpu-check-cuda.md
#   bash scripts/gpu_check.sh --out /tmp/gpu-check.md
#   bash scripts/gpu_check.sh --device cpu --quick     # about 1-2 minutes: what the test suite runs
# Options: python -m specviz.bench.gpu_check --help. Exit status 0 unless a section failed, errored or timed out.
set -euo pipefail
cd "$(dirname "$0")/.."
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false PYTHONUNBUFFERED=1
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"   # a bare copy of the repository: specviz need not be installed
PY="${PYTHON:-$(command -v python3 || command -v python)}"
exec "$PY" -m specviz.bench.gpu_check "$@"
