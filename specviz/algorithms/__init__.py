"""One module per algorithm; importing this package registers them all in ``ALGORITHMS``."""
from specviz.algorithms import ar, sd  # noqa: F401  (registration side effects)
from specviz.algorithms import dyntree, mcsd, pld, sequoia, specinfer  # noqa: F401
from specviz.algorithms import beam, dsbd  # noqa: F401
from specviz.algorithms import batch_sd, biased_sd  # noqa: F401
from specviz.algorithms import eesd  # noqa: F401
from specviz.algorithms.registry import ALGORITHMS, AlgorithmSpec, Param, get_algorithm, register

__all__ = ["ALGORITHMS", "AlgorithmSpec", "Param", "get_algorithm", "register"]
