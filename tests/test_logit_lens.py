"""The layer view (issue 38 point 3): a step's logit lens, read from the verify call's hidden states when
the run asks for it (``record_lens``), kept in the trace, checked on replay and drawn without a model."""

from __future__ import annotations

import copy
import json

import plotly.graph_objects as go
import pytest
import torch
from tiny import tiny_pair

import specviz
from specviz.errors import InvalidParameterError, TraceFormatError
from specviz.models.loading import attach_early_exit
from specviz.models.logit_lens import lens_top1, shown_layers
from specviz.trace import RunTrace
from specviz.viz.layers import agreement, layers_figure, layers_narrative

PROMPT = [1, 2, 3]


@pytest.fixture(scope="module")
def pair():
    return attach_early_exit(tiny_pair("llama", vocab=32, draft="noisy", init_range=0.2, hidden=16, layers=4), 2)


def test_the_last_layer_reads_the_targets_own_prediction_exactly(pair):
    model = pair.target
    out = model(input_ids=torch.tensor([PROMPT + [5, 6]]), output_hidden_states=True)
    ids, probs = lens_top1(model, out.hidden_states, [0, 2, 4], [1, 2, 3, 4], pair.vocab_size)
    own = torch.softmax(out.logits[0].float()[:, : pair.vocab_size], -1)[[0, 2, 4]].max(-1)
    assert ids[-1] == own.indices.tolist()  # same head, same vector: the same token
    # and the same probability up to float rounding: the head over 3 rows and over 5 may take different
    # matmul kernels (this differed in the 8th digit on one CPU and not on another)
    torch.testing.assert_close(torch.tensor(probs[-1]), own.values, rtol=1e-6, atol=0)
    # an earlier layer is its hidden state through the final norm and the same head
    norm = model.model.norm
    first = torch.softmax(model.lm_head(norm(out.hidden_states[1][0]))[:, : pair.vocab_size], -1)[[0, 2, 4]]
    assert ids[0] == first.argmax(-1).tolist()


def test_a_run_records_the_lens_only_when_asked_and_decodes_the_same(pair):
    kw = dict(max_new_tokens=12, temperature=0)
    plain = specviz.decode(pair, "eesd", PROMPT, **kw)
    lensed = specviz.decode(pair, "eesd", PROMPT, record_lens=True, **kw)
    assert lensed.output_ids == plain.output_ids
    assert all(s.lens is None for s in plain.steps) and '"lens"' not in plain.to_json()  # goldens unchanged
    for s in lensed.steps:
        lens = s.lens
        assert lens.layers == [1, 2, 3, 4] and lens.n_layers == 4 and lens.exit_layer == 2
        assert len(lens.reads) == len(s.committed)
        # greedy: every committed token is the target's argmax where it was produced, the lens's last layer
        assert lens.ids[-1] == [c.token_id for c in s.committed]
    with pytest.raises(InvalidParameterError):
        specviz.decode(pair, "sd", PROMPT, record_lens=1, **kw)


def test_every_tree_algorithm_can_record_it_and_a_forest_records_none(pair):
    for name in ("sd", "ar", "specinfer"):
        tr = specviz.decode(pair, name, PROMPT, max_new_tokens=6, temperature=0.8, seed=1, record_lens=True)
        assert all(s.lens is not None and len(s.lens.reads) == len(s.committed) for s in tr.steps), name
    dsbd = specviz.decode(pair, "dsbd", PROMPT, max_new_tokens=6, temperature=0.8, seed=1, record_lens=True)
    assert all(s.lens is None for s in dsbd.steps)


def test_the_lens_round_trips_and_is_checked_on_replay(pair):
    tr = specviz.decode(pair, "eesd", PROMPT, max_new_tokens=10, temperature=0.8, seed=3, record_lens=True)
    back = RunTrace.from_json(tr.to_json())
    assert [s.lens for s in back.steps] == [s.lens for s in tr.steps]
    assert back.to_json() == tr.to_json()
    data = json.loads(tr.to_json())
    bad = {
        "layers": lambda L: L.update(layers=[2, 1, 3, 4]),
        "probs": lambda L: L["probs"][0].__setitem__(0, 1.5),
        "reads": lambda L: L.update(reads=L["reads"] * 20),
        "exit_layer": lambda L: L.update(exit_layer=9),
        "ids": lambda L: L["ids"][1].__setitem__(0, 10**6),
        "texts": lambda L: L.update(texts=L["texts"][:-1]),
    }
    for field, spoil in bad.items():
        d = copy.deepcopy(data)
        spoil(d["steps"][0]["lens"])
        with pytest.raises(TraceFormatError, match=rf"steps\[0\]\.lens\.{field}"):
            RunTrace.from_dict(d)
    d = copy.deepcopy(data)
    d["steps"][0]["lens"]["depth"] = 1
    with pytest.raises(TraceFormatError, match="unknown field 'depth'"):
        RunTrace.from_dict(d)


def test_the_figure_and_narrative_build_from_a_trace_without_a_model(pair):
    tr = RunTrace.from_json(
        specviz.decode(pair, "eesd", PROMPT, max_new_tokens=10, temperature=0, record_lens=True).to_json()
    )
    step = max(tr.steps, key=lambda s: len(s.committed))
    fig = layers_figure(step, "eesd")
    go.Figure(fig.to_dict())  # valid under plotly's own validation
    heat = fig.data[0]
    assert list(heat.y) == ["L1", "L2", "L3", "L4"] and len(heat.x) == len(step.committed)
    assert any(s["y0"] == 0.5 for s in fig.layout.shapes)  # the exit layer's row (L2, row 1) is framed
    assert all(agreement(step.lens)[-1])
    words = layers_narrative(step)
    assert "exit layer 2" in words and f"of {len(step.committed)} position" in words
    without = specviz.decode(pair, "eesd", PROMPT, max_new_tokens=4, temperature=0).steps[0]
    assert "no layer view" in layers_figure(without).layout.annotations[0].text
    assert "Turn it on" in layers_narrative(without)


def test_a_deep_target_shows_a_bounded_set_of_layers():
    assert shown_layers(6) == [1, 2, 3, 4, 5, 6]
    many = shown_layers(200)
    assert len(many) <= 48 and many[-1] == 200 and many == sorted(set(many))


def test_the_page_view_draws_a_recorded_lens_or_computes_it_on_request(pair):
    from specviz.ui.layers_view import LayersView
    from specviz.ui.runner import Column, Session

    kw = dict(max_new_tokens=10, temperature=0)
    recorded = specviz.decode(pair, "eesd", PROMPT, record_lens=True, **kw)
    live = specviz.decode(pair, "eesd", PROMPT, **kw)
    session = Session(
        columns=[
            Column("eesd", "eesd", trace=live, done=True),
            Column("eesd", "eesd", trace=RunTrace.from_json(live.to_json()), done=True, replayed=True),
            Column("eesd", "eesd", trace=recorded, done=True),
        ],
        step=1,
    )
    view = LayersView(3, lambda s: (pair, None))
    fig, words = view.show(session, 0)  # a live run keeps no states: one target call on request
    want = recorded.steps[1].lens
    heat = fig.data[0]
    assert list(heat.text[-1]) == [t[:6] for t in want.texts[-1]] and "exit layer 2" in words
    from specviz.algorithms.lens import lens_of_step

    asked = lens_of_step(pair, live, 1)
    assert asked.ids[-1] == want.ids[-1] and asked.reads == want.reads
    assert sum(asked.probs, []) == pytest.approx(
        sum(want.probs, []), abs=1e-4
    )  # the verify call's states, up to float rounding
    fig, _ = view.show(session, 1)
    assert "recorded no layers" in fig.layout.annotations[0].text
    blind = LayersView(3, lambda s: (_ for _ in ()).throw(AssertionError("no model for a recorded lens")))
    fig, words = blind.show(session, 2)
    assert fig.data[0].type == "heatmap" and "exit layer 2" in words
    for bad in (5, -1, "0", True, None):
        fig, _ = view.show(session, bad)
        assert "Choose a column" in fig.layout.annotations[0].text
    assert "Run or replay first" in view.show(Session(), 0)[0].layout.annotations[0].text
    assert "Run or replay first" in view.show("not a session", 0)[0].layout.annotations[0].text
    other = copy.deepcopy(live)
    other.pair["target"] = "another model"
    with pytest.raises(specviz.SpecvizError, match="another target"):
        lens_of_step(pair, other, 0)
