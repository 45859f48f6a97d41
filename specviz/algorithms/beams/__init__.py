"""Beams and forests: ``beam`` (beam sampling / search with the target alone) and ``dsbd`` (Dynamic-Width
Speculative Beam Decoding, arXiv 2409.16560), on the one step loop like every algorithm.

* ``beam``, ``dsbd``: the two registrations and their assembly;
* ``state``: the run's beams (``BeamState``: each beam's tokens, score and slot in the target's cache)
  and the bookkeeping both share (feeding, keeping slots, log-probabilities, the trace's beam rows);
* ``forest``: DSBD's drafter, beam-sampling a draft forest of W_S beams per layer (``DraftForest``);
* ``beam_verifier``: ``beam``'s step, nothing drafted; ``layer_verifier``: DSBD's layer-by-layer walk
  of the forest (Algorithm 1, corrected) and its rule;
* ``width``: DSBD's ``WidthController`` (the width and the per-layer rule W_L^(l), Eqs 2-7);
* ``positions``: the trace's position records of a beam step.

The maths with no model is ``core.beams``; the typed step states ``step_state.BeamSearchState`` and
``DsbdState``. Importing this package registers ``beam`` and ``dsbd``.
"""

from specviz.algorithms.beams import beam, dsbd  # noqa: F401  (registration side effects)
