"""The parts of the GPU check (``specviz.bench.gpu_check``, ``scripts/gpu_check.sh``): what it runs and
under what budgets (``plan``), its sections (``environment``, ``greedy``, ``timings``, ``default_pair``) run by
``worker``, the parent that supervises the worker (``supervise``) and the device tests (``device_tests``),
and the Markdown report (``report``)."""
