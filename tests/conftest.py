import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
torch.set_num_threads(1)


def pytest_collection_modifyitems(config, items):
    """Slow tests (``slow``: the statistical ones; ``e2e``: the browser ones) first, in their order:
    with ``-n`` workers xdist hands them out round-robin before the quick ones, so the run does not
    end with one worker busy on a long test while the other idles. ``-m "not slow and not e2e"``
    is the quick loop."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None and item.get_closest_marker("e2e") is None)
