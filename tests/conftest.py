import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
torch.set_num_threads(1)


def pytest_collection_modifyitems(config, items):
    """Slow tests (``slow``: the statistical ones; ``e2e``: the browser ones) first, in their order.
    Under ``-n`` with ``--dist worksteal`` (``scripts/test.sh``) a worker that runs out takes half of
    the other's unstarted tests, so with the long ones gone first the run ends on quick tests on both
    workers instead of one long test on one. ``-m "not slow and not e2e"`` is the quick loop."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None and item.get_closest_marker("e2e") is None)
