"""``python -m specviz papers``: each paper's headline claims rerun on the closest setting specviz can
run (``report``), one module per paper (``theory``, ``sequoia``, ``mcsd``, ``eesd``, ``dsbd``), with
what they share in ``rows`` (the claim rows) and ``measure`` (budgets, pairs, round-robin runs)."""
