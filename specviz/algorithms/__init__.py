"""One module per algorithm; importing this package registers them all in ``ALGORITHMS``.

The algorithms below register in this order (the page's and the command line's); then every other
module of the package is imported, so a new algorithm's module registers itself, after them, without
an edit here (``docs/architecture.md``, "Adding an algorithm")."""

import importlib
import pkgutil

from specviz.algorithms.registry import ALGORITHMS, AlgorithmSpec, Param, get_algorithm, register

# The page's order (an explicit list, so no import sorter can reorder the registrations).
_ORDER = (
    "ar",
    "sd",
    "dyntree",
    "mcsd",
    "pld",
    "sequoia",
    "specinfer",
    "beams.beam",
    "beams.dsbd",
    "batch_sd",
    "biased_sd",
    "eesd",
)
for _name in _ORDER:
    importlib.import_module(f"{__name__}.{_name}")
for _module in pkgutil.iter_modules(__path__):  # sorted by name
    importlib.import_module(f"{__name__}.{_module.name}")

__all__ = ["ALGORITHMS", "AlgorithmSpec", "Param", "get_algorithm", "register"]
