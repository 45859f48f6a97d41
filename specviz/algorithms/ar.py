"""``ar``: plain autoregressive sampling (or greedy) with the target: the reference every lossless
algorithm must match (theory paper Algorithm 3). One target call per token, tau = 1 by definition."""
from __future__ import annotations

from typing import Iterator

from specviz.algorithms.decoder import Decoder
from specviz.algorithms.registry import register
from specviz.trace import StepRecord, TreeNode


@register("ar", description="Autoregressive decoding with the target alone (the reference).",
          paper="Theory paper, Algorithm 3", needs_draft=False)
def run_ar(dec: Decoder) -> Iterator[StepRecord]:
    index = 0
    while not dec.finished:
        step = dec.new_step(index)
        with dec.timed("verify_ms"):
            p = dec.probs(dec.target.extend(dec.context(dec.target))[0])
        token = dec.sample(p)
        step.forest = [TreeNode(0, None, 0, token, dec.text(token), p=float(p[token]), status="bonus")]
        dec.emit(step, [(token, "bonus", 0)])
        step.timings = dec.timings
        yield step
        index += 1
