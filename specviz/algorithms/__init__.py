"""One module per algorithm; importing this package registers them all in ``ALGORITHMS``.

The algorithms below register in this order (the page's and the command line's); then every other
module of the package is imported, so a new algorithm's module registers itself, after them, without
an edit here (``docs/architecture.md``, "Adding an algorithm")."""
import importlib
import pkgutil

from specviz.algorithms import ar, sd  # noqa: F401  (registration side effects)
from specviz.algorithms import dyntree, mcsd, pld, sequoia, specinfer  # noqa: F401
from specviz.algorithms.beams import beam, dsbd  # noqa: F401
from specviz.algorithms import batch_sd, biased_sd  # noqa: F401
from specviz.algorithms import eesd  # noqa: F401
from specviz.algorithms.registry import ALGORITHMS, AlgorithmSpec, Param, get_algorithm, register

for _module in pkgutil.iter_modules(__path__):  # sorted by name
    importlib.import_module(f"{__name__}.{_module.name}")

__all__ = ["ALGORITHMS", "AlgorithmSpec", "Param", "get_algorithm", "register"]
