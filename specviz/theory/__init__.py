"""The theory paper's simulations (arXiv 2411.00841, App. F): Markov-chain toy pairs, Monte Carlo of
Algorithms 1 and 4 and of relaxed acceptance, and the figures of Figs. 2-5 next to the exact theory
of ``specviz.core.theory``. ``python -m specviz theory --figures OUT`` writes them all."""
