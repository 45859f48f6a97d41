"""DSBD's output width switch (``dsbd`` parameter ``output_width``): the paper's W_L (Algorithm 1,
"sample W_L beams": the width of the layer the iteration ended in) is the default; the official
code's W_S fills a failed layer up to W_S and samples W_S beams in the bonus layer."""

from __future__ import annotations

import pytest
from tiny import tiny_pair

import specviz
from specviz.errors import SpecvizError

KW = dict(max_new_tokens=30, temperature=1, width=4, min_width=1, threshold=0.9, gamma=3, seed=3)


@pytest.fixture(scope="module")
def pair():
    return tiny_pair("llama", vocab=64, draft="noisy", init_range=0.05, hidden=32, noise=0.1)


def outputs(trace) -> list[tuple[int, int]]:
    """Per step: (output beams, W_L of the last drafted layer walked; W_min when the budget left no draft
    layer, only the bonus one)."""
    out = []
    for step in trace.steps:
        c = step.controller.to_json()
        drafted = [lv for lv in c["levels"] if not lv.get("bonus")]
        out.append((len(c["kept"]), drafted[-1]["width"] if drafted else KW["min_width"]))
    return out


def test_paper_width_is_the_default_and_outputs_w_l(pair):
    default = specviz.decode(pair, "dsbd", [1, 2, 3], **KW)
    paper = specviz.decode(pair, "dsbd", [1, 2, 3], output_width="paper", **KW)
    assert default.output_ids == paper.output_ids and default.params["output_width"] == "paper"
    got = outputs(paper)
    assert all(n == w for n, w in got)  # as many beams out as the last layer's W_L
    assert any(w < KW["width"] for _, w in got)  # and W_L < W_S somewhere, or the test could not tell


def test_code_width_outputs_w_s(pair):
    code = specviz.decode(pair, "dsbd", [1, 2, 3], output_width="code", **KW)
    got = outputs(code)
    assert all(n == KW["width"] for n, _ in got)  # always W_S beams out, whatever the layer's W_L
    assert any(w < KW["width"] for _, w in got)
    assert len(code.output_ids) == KW["max_new_tokens"]


def test_unknown_output_width_is_refused(pair):
    with pytest.raises(SpecvizError, match="output_width"):
        specviz.decode(pair, "dsbd", [1, 2, 3], output_width="both", **KW)
