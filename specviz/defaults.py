"""The decoding defaults, stated once: ``decode``/``stream``, the command line (``run``, ``compare``;
each ``--help`` shows them) and the app's sampling boxes all start from these. Plain Python (no torch)."""

from __future__ import annotations

MAX_NEW_TOKENS = 64
TEMPERATURE = 0.0  # greedy: every lossless algorithm then writes the target's own greedy text
TOP_P = 1.0  # 1 disables it
TOP_K = 0  # 0 disables it
SEED = 0
