#!/usr/bin/env bash
# Set up a fresh machine and start the explorer app on the bundled offline pair (http://127.0.0.1:7860).
set -euo pipefail
cd "$(dirname "$0")/.."
python -m pip install --quiet torch==2.13.0 || python -m pip install --quiet torch   # CPU build where available
python -m pip install --quiet -e .
exec python app.py "$@"
