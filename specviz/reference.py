"""Chain speculative sampling on one screen: the reference decoder to read next to the papers.

Leviathan et al. 2023, "Fast Inference from Transformers via Speculative Decoding", Algorithm 1
(SpeculativeDecodingStep); Chen et al. 2023, "Accelerating Large Language Model Decoding with
Speculative Sampling" (arXiv 2302.01318), Algorithm 2; Yin et al. 2024, "A Theoretical Perspective for
Speculative Decoding Algorithm" (arXiv 2411.00841), Algorithm 1. Per step: the draft samples
x_1..x_gamma from q; the target scores every prefix in one call (p_1..p_gamma+1); x_i is accepted if
u_i < min(1, p_i(x_i) / q_i(x_i)); at the first rejection a token is drawn from
norm(max(0, p_i - q_i)), and if all are accepted a bonus from p_gamma+1. The output is distributed
exactly as the target's (Leviathan et al. Theorem 1). Temperature 0 is the same code: p and q are
one-hots, so a token is accepted iff it is the target's argmax.

No engine, no tree, no KV cache: every distribution is a full forward over the whole sequence
(clarity over speed). Only the sampling primitives are shared with the engine (``core.sampling``:
the warp, the inverse-CDF draw, the uniform, the residual), and the seeded generator is consumed in
the engine's order, so ``speculative_sampling(...)`` returns the same tokens, p, q, coins and
decisions as ``specviz.decode(pair, "sd", ...)`` on the same seed (``tests/test_reference.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Collection

import torch

from specviz.core.sampling import SamplingConfig, residual, sample, uniform, warp


@dataclass
class Step:
    """One draft-then-verify round. ``p``/``q``: each drafted token's target / draft probability
    (warped, as the rule uses them); ``coins[i]``: the u_i token i was tested with (None where
    min(1, p/q) is 0 or 1: the decision is certain and no coin is drawn); ``accepted[i]`` for each
    tested token (the test stops at the first rejection); ``extra``: the resampled or bonus token."""

    drafted: list[int] = field(default_factory=list)
    q: list[float] = field(default_factory=list)
    p: list[float] = field(default_factory=list)
    coins: list[float | None] = field(default_factory=list)
    accepted: list[bool] = field(default_factory=list)
    extra: int = -1
    kind: str = ""  # "resampled" (drawn from the residual) or "bonus" (drawn from p_gamma+1)


def laws(model, ids: list[int], last: int, cfg: SamplingConfig, vocab: int | None) -> torch.Tensor:
    """Warped next-token distributions after each of the ``last`` final prefixes of ``ids``, ``[last, V]``."""
    logits = model(torch.tensor([ids], device=next(model.parameters()).device)).logits[0, -last:, :vocab]
    return warp(logits, cfg).cpu()


@torch.inference_mode()
def speculative_sampling(
    target,
    draft,
    prompt: list[int],
    gamma: int,
    cfg: SamplingConfig,
    seed: int,
    max_new_tokens: int,
    eos: Collection[int] = (),
    vocab: int | None = None,
) -> tuple[list[int], list[Step]]:
    """The generated tokens and the steps that made them (``vocab``: the logit columns that are tokens)."""
    gen = torch.Generator().manual_seed(seed)
    # at temperature 0 every law is a one-hot: its draw is its argmax, and the generator is not used
    draw = (lambda probs: int(probs.argmax())) if cfg.greedy else (lambda probs: sample(probs, gen))
    out: list[int] = []
    steps: list[Step] = []
    while len(out) < max_new_tokens and not (out and out[-1] in eos):
        ctx, step, qs = prompt + out, Step(), []
        # Draft only what can still be output (one token is always the target's): the tokens cut could
        # never be committed, so the output law is unchanged; it keeps the generator in the engine's order.
        for _ in range(min(gamma, max_new_tokens - len(out) - 1)):
            qs.append(laws(draft, ctx + step.drafted, 1, cfg, vocab)[0])  # q_i = q(. | ctx, x_1..x_i-1)
            step.drafted.append(draw(qs[-1]))
            step.q.append(float(qs[-1][step.drafted[-1]]))
            if step.drafted[-1] in eos:  # nothing after an EOS is ever output: stop drafting (law unchanged)
                break
        ps = laws(target, ctx + step.drafted, len(step.drafted) + 1, cfg, vocab)  # p_1..p_gamma+1, one call
        step.p = [float(ps[i, x]) for i, x in enumerate(step.drafted)]
        for i in range(len(step.drafted)):
            a = min(1.0, step.p[i] / step.q[i])
            u = uniform(gen) if 0.0 < a < 1.0 else None  # a certain outcome needs no coin (law unchanged)
            step.coins.append(u)
            step.accepted.append(a == 1.0 if u is None else u < a)
            if not step.accepted[-1]:  # first rejection: draw from norm(max(0, p_i - q_i))
                step.extra, step.kind = draw(residual(ps[i], qs[i])), "resampled"
                break
        else:  # every drafted token accepted: a bonus token from the next target distribution
            step.extra, step.kind = draw(ps[len(step.drafted)]), "bonus"
        for token in step.drafted[: sum(step.accepted)] + [step.extra]:
            out.append(token)
            if token in eos:  # the run ends at EOS; later tokens of the step are dropped
                break
        steps.append(step)
    return out, steps
