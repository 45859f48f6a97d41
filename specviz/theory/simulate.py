"""Monte Carlo of the theory paper's algorithms on Markov-chain pairs, vectorised over runs (numpy).

``simulate_batch_sd`` follows Algorithm 4 round by round (``num_drafts=1`` is Algorithm 1, SD):
every round drafts M continuations i.i.d. from the draft chain up to the horizon (lookahead K = T, no
bonus token; one oracle call), tries the roots against the residual chain of the target, verifies
the accepted branch against the unmodified target, and starts a new round after each rejection.
specviz's letters: ``p`` = target, ``q`` = draft (the paper's q and p).

``simulate_token`` draws single tokens of Algorithm 2 with acceptance ``b`` and a rejection law, for
the relaxed (biased) rules of Sec. 4. These simulators exist to check the theory; the decoding
algorithms on real models live in ``specviz.algorithms``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from specviz.core.theory import Fallback
from specviz.theory.chains import MarkovPair


@dataclass
class BatchRuns:
    """Per run: ``rejections`` (N_rej), ``calls`` (oracle calls = rounds), ``tokens`` ``[runs, T + 1]``
    (``x_0`` .. ``x_T``) and ``rejected`` ``[runs, T]`` (R_n)."""

    rejections: np.ndarray
    calls: np.ndarray
    tokens: np.ndarray
    rejected: np.ndarray

    def mean_and_halfwidth(self, z: float = 1.96) -> tuple[float, float]:
        """Mean rejections and ``z`` standard errors of it."""
        r = self.rejections.astype(np.float64)
        return float(r.mean()), z * float(r.std(ddof=1)) / np.sqrt(len(r)) if len(r) > 1 else float("inf")


def _draw(law: np.ndarray | None, rng: np.random.Generator, cdf: np.ndarray | None = None) -> np.ndarray:
    """One draw per row of ``law`` (``[..., V]``) by inversion (``cdf``: its cumulative sums, if known)."""
    cdf = law.cumsum(-1) if cdf is None else cdf
    u = rng.random(cdf.shape[:-1])
    tok = (u[..., None] >= cdf).sum(-1)
    return np.minimum(tok, cdf.shape[-1] - 1)


def _residual(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Rows of ``norm(max(0, p - q))``; ``p`` where the mass is 0 (as ``core.theory.residual``)."""
    h = np.clip(p - q, 0.0, None)
    s = h.sum(-1, keepdims=True)
    return np.where(s > 0, h / np.where(s > 0, s, 1.0), p)


def _draft_continuations(
    Qc: np.ndarray, x: np.ndarray, active: np.ndarray, n0: np.ndarray, M: int, rng: np.random.Generator
) -> np.ndarray:
    """One oracle call's drafts: ``M`` continuations of each active run from ``x_{n0-1}`` to the horizon,
    each token drawn from the draft chain (``Qc``: its cumulative rows); ``[k, M, T + 1]``, 0 before n0."""
    T = Qc.shape[0]
    drafts = np.zeros((active.size, M, T + 1), dtype=np.int64)
    for t in range(int(n0.min()), T + 1):
        prev = np.where((t == n0)[:, None], x[active, t - 1][:, None], drafts[:, :, t - 1])
        drafts[:, :, t] = np.where((t >= n0)[:, None], _draw(None, rng, Qc[t - 1][prev]), 0)
    return drafts


def _test_roots(
    pair: MarkovPair,
    drafts: np.ndarray,
    x: np.ndarray,
    active: np.ndarray,
    n0: np.ndarray,
    tried: int,
    fallback: Fallback,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray]:
    """Algorithm 4's roots: candidate m tested against the residual chain p^m of the target (the first
    accepted one's branch is kept); where every root was rejected, the law to resample from (p^{M+1},
    or a literal reading's). Returns (the accepted candidate per run, -1 for none; that law's rows)."""
    k = active.size
    prev = x[active, n0 - 1]
    p_root, q_root = pair.target[n0 - 1, prev], pair.draft[n0 - 1, prev]
    cur = p_root.copy()
    branch = np.full(k, -1)
    rows = np.arange(k)
    for m in range(tried):
        open_ = branch < 0
        tok = drafts[rows, m, n0]
        acc = open_ & (rng.random(k) * q_root[rows, tok] <= cur[rows, tok])
        branch[acc] = m
        upd = open_ & ~acc
        cur[upd] = _residual(cur[upd], q_root[upd])
    none = branch < 0
    if fallback != "corrected":
        cur[none] = _residual(cur[none], q_root[none])
    return branch, cur


def _walk_branches(
    pair: MarkovPair,
    drafts: np.ndarray,
    branch: np.ndarray,
    hit: np.ndarray,
    x: np.ndarray,
    rejected: np.ndarray,
    active: np.ndarray,
    n0: np.ndarray,
    rng: np.random.Generator,
) -> np.ndarray:
    """An accepted root's branch walked against the unmodified target (Algorithm 1's test) until a
    rejection, which resamples from the residual; writes the tokens and rejections, returns each run's
    next output position."""
    T = pair.horizon
    P, Q = pair.target, pair.draft
    x[active[hit], n0[hit]] = drafts[hit, branch[hit], n0[hit]]
    going = np.ones(hit.size, dtype=bool)
    pos = n0[hit] + 1
    for t in range(int(pos.min()) if hit.size else T + 1, T + 1):
        live = going & (pos == t)
        if not live.any():
            continue
        i = hit[live]
        run = active[i]
        tok = drafts[i, branch[i], t]
        prev = x[run, t - 1]
        p_row, q_row = P[t - 1, prev], Q[t - 1, prev]
        ok = rng.random(i.size) * q_row[np.arange(i.size), tok] <= p_row[np.arange(i.size), tok]
        x[run[ok], t] = tok[ok]
        bad = ~ok
        x[run[bad], t] = _draw(_residual(p_row[bad], q_row[bad]), rng)
        rejected[run[bad], t - 1] = True
        idx = np.nonzero(live)[0]
        going[idx[bad]] = False
        pos[idx[ok]] += 1
        pos[idx[bad]] = t + 1
    return pos


def simulate_batch_sd(
    pair: MarkovPair, num_drafts: int, runs: int, seed: int = 0, fallback: Fallback = "corrected"
) -> BatchRuns:
    """``runs`` independent runs of Algorithm 4 (M = ``num_drafts``; M = 1 is Algorithm 1).

    ``fallback`` as in ``core.theory.batch_root_law``: ``"corrected"`` samples ``p^{M+1}`` after all
    roots are rejected (unbiased); ``"literal_line28"`` and ``"literal_inside_loop"`` are the printed
    pseudo-code read literally and are BIASED (kept to show that they are).
    """
    if num_drafts < 1 or runs < 1:
        raise ValueError("num_drafts and runs must be >= 1.")
    rng = np.random.default_rng(seed)
    T, V, M = pair.horizon, pair.vocab, num_drafts
    Qc = pair.draft.cumsum(-1)
    x = np.zeros((runs, T + 1), dtype=np.int64)
    x[:, 0] = _draw(np.broadcast_to(pair.prompt, (runs, V)), rng)
    rejected = np.zeros((runs, T), dtype=bool)
    calls = np.zeros(runs, dtype=np.int64)
    n = np.ones(runs, dtype=np.int64)  # next output position, 1-based; its matrices are P[n - 1]
    tried = 1 if fallback == "literal_inside_loop" else M
    while (active := np.nonzero(n <= T)[0]).size:
        n0 = n[active]
        calls[active] += 1
        drafts = _draft_continuations(Qc, x, active, n0, M, rng)
        branch, cur = _test_roots(pair, drafts, x, active, n0, tried, fallback, rng)
        none = branch < 0  # every root rejected: resample the position
        x[active[none], n0[none]] = _draw(cur[none], rng)
        rejected[active[none], n0[none] - 1] = True
        n[active[none]] = n0[none] + 1
        hit = np.nonzero(~none)[0]
        n[active[hit]] = _walk_branches(pair, drafts, branch, hit, x, rejected, active, n0, rng)
    return BatchRuns(rejections=rejected.sum(1), calls=calls, tokens=x, rejected=rejected)


def simulate_token(b: np.ndarray, q: np.ndarray, law: np.ndarray, draws: int, seed: int = 0) -> np.ndarray:
    """Empirical law of one token of Algorithm 2 from ``draws`` samples: draft ``x ~ q``, accept with
    probability ``b(x)``, else draw from ``law``. Returns ``(counts / draws, rejection frequency)``
    stacked as ``[V + 1]``."""
    rng = np.random.default_rng(seed)
    x = _draw(np.broadcast_to(q, (draws, q.shape[-1])), rng)
    rej = rng.random(draws) >= b[x]
    x[rej] = _draw(np.broadcast_to(law, (int(rej.sum()), q.shape[-1])), rng)
    freq = np.bincount(x, minlength=q.shape[-1]) / draws
    return np.concatenate([freq, [rej.mean()]])
