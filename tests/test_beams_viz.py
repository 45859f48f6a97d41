"""Beam views (``specviz.viz.beams``) on real ``beam`` and ``dsbd`` traces of a tiny pair."""

from __future__ import annotations

from collections import Counter

import plotly.graph_objects as go
import pytest
from test_viz_controller import cut_title_lines, legend_problems
from tiny import tiny_pair

import specviz
from specviz.viz import beams as V
from specviz.viz.style import STATUS_LABELS, fmt_prob


@pytest.fixture(scope="module")
def pair():
    return tiny_pair("llama", vocab=64, draft="noisy", init_range=0.05, hidden=32, noise=0.1)


@pytest.fixture(scope="module")
def dsbd_trace(pair):
    return specviz.decode(
        pair, "dsbd", [1, 2, 3], max_new_tokens=24, temperature=1, width=4, min_width=1, threshold=0.6, gamma=3, seed=2
    )


@pytest.fixture(scope="module")
def beam_trace(pair):
    return specviz.decode(pair, "beam", [1, 2, 3], max_new_tokens=12, temperature=1, width=3, seed=2)


def validated(fig: go.Figure) -> go.Figure:
    return go.Figure(fig.to_dict())  # plotly validates every property here


def stars(fig: go.Figure) -> list[int]:
    """The ids of the forest's nodes drawn as stars (kept)."""
    return sorted(
        i
        for t in fig.data
        if t.customdata is not None
        for i, symbol in zip(t.customdata, t.marker.symbol)
        if symbol == "star"
    )


def test_best_beam_rows_rebuild_the_output(dsbd_trace, beam_trace):
    for trace in (dsbd_trace, beam_trace):
        rows = V.beam_rows(trace, len(trace.steps) - 1)
        best = [r for r in rows if r["best"]]
        assert len(best) == 1 and best[0]["tokens"] == trace.output_ids
        assert all(len(r["tokens"]) == len(trace.output_ids) for r in rows)
        html = V.beams_html(trace, len(trace.steps) - 1)
        assert html.count("<tr>") == len(rows) + 1 and "best" in html


def test_forest_has_one_tree_per_beam_and_marks_kept(dsbd_trace):
    step = next(s for s in dsbd_trace.steps if len({n.root for n in s.forest}) > 1)
    prev = V.beam_rows(dsbd_trace, step.index - 1)
    carried = dsbd_trace.steps[step.index - 1].controller.to_json()["carried"]
    fig = validated(V.forest_figure(step, [prev[i]["text"] for i in carried]))
    names = [t.name for t in fig.data]
    assert sum(1 for n in names if n and n.startswith("beam ") and n != "kept beams") >= len(carried)
    assert stars(fig) == sorted(step.controller.to_json()["kept"])
    # the kept nodes are drawn as stars in their own places: the legend's entry has no point
    assert next(t for t in fig.data if t.name == "kept beams").x == (None,)
    # every drafted node is drawn in its beam's colour
    colours = {t.marker.color for t in fig.data if t.mode == "markers+text" and t.meta != "beam"}
    assert len(colours) == len({n.root for n in step.forest})
    # each beam named beside its square, not in the legend: it keeps one row however many beams
    # beams are named beside their squares; the legend names the kept star and what each outline says,
    # with the nodes of that status counted (at most six entries, however many beams)
    counts = Counter(n.status for n in step.forest)
    assert [t.name for t in fig.data if t.showlegend is not False] == ["kept beams"] + [
        f"{label} ({counts[status]})" for status, label in STATUS_LABELS.items() if counts[status]
    ]
    assert all(t.text[0] == t.name for t in fig.data if t.meta == "beam")


@pytest.mark.parametrize("algo", ["dsbd", "beam"])
def test_beam_figures_titles_and_legends_fit_the_narrowest_column(dsbd_trace, beam_trace, algo):
    """The forest's and the widths' titles, subtitles and legends: whole, and the legend under the
    title, at every step, in a column at phone width (and so at two columns and one)."""
    trace = dsbd_trace if algo == "dsbd" else beam_trace
    for k in range(len(trace.steps)):
        for fig in (V.step_forest_figure(trace, k), V.width_figure(trace, k)):
            assert cut_title_lines(fig) == [] and legend_problems(fig) == [], (k, fig.layout.title.text)
        assert V.step_forest_figure(trace, k).layout.title.text == f"Beam forest · step {k + 1}"


def test_the_width_chosen_for_each_layer_is_under_the_title(dsbd_trace):
    j = next(i for i, s in enumerate(dsbd_trace.steps) if "p_accept" in s.controller.to_json()["levels"][0])
    fig = V.width_figure(dsbd_trace, j)
    assert fig.layout.title.text == f"Beam widths · step {j + 1}"
    levels = [lv for lv in dsbd_trace.steps[j].controller.to_json()["levels"] if "p_accept" in lv]
    sub = fig.layout.title.subtitle.text.replace("<br>", " · ")
    assert sub == " · ".join(f"L{lv['layer']}: W_L = {lv['width']}" for lv in levels)
    assert [t.name for t in fig.data if t.showlegend is not False] == [
        n for lv in levels for n in (f"L{lv['layer']} P(m = k)", f"L{lv['layer']} P(m ≥ K)")
    ]


def test_width_view_shows_widths_law_and_threshold(dsbd_trace):
    z = V.width_matrix(dsbd_trace)
    for j, s in enumerate(dsbd_trace.steps):
        levels = s.controller.to_json()["levels"]
        assert [z[i][j] for i in range(len(levels))] == [lv["kept"] for lv in levels]
        assert all(z[i][j] is None for i in range(len(levels), len(z)))
    j = next(i for i, s in enumerate(dsbd_trace.steps) if "p_accept" in s.controller.to_json()["levels"][0])
    fig = validated(V.width_figure(dsbd_trace, j))
    bars = [t for t in fig.data if t.type == "bar"]
    assert len(bars) == sum("p_accept" in lv for lv in dsbd_trace.steps[j].controller.to_json()["levels"])
    assert abs(sum(bars[0].y) - 1) < 1e-4
    assert any(sh.y0 == 0.6 and sh.y1 == 0.6 for sh in fig.layout.shapes)


def test_beam_trace_views(beam_trace):
    assert V.width_matrix(beam_trace) == [[3] * len(beam_trace.steps)]
    validated(V.width_figure(beam_trace, 2))
    fig = validated(V.forest_figure(beam_trace.steps[3], [r["text"] for r in V.beam_rows(beam_trace, 2)]))
    assert len(stars(fig)) == len(beam_trace.steps[3].forest) == 3  # a beam step keeps every node


def test_other_traces_get_a_message(pair):
    trace = specviz.decode(pair, "sd", [1, 2, 3], max_new_tokens=5, temperature=1.0)
    assert not V.is_beam_trace(trace)
    assert "not a beam algorithm" in V.beams_html(trace, 0)
    validated(V.width_figure(trace, 0))


def test_app_column_shows_the_beam_panels(dsbd_trace):
    from specviz.ui.render import slot_view
    from specviz.ui.runner import Column

    col = Column(label="dsbd", algorithm="dsbd", trace=dsbd_trace, done=True)
    k = next(s.index for s in dsbd_trace.steps if len({n.root for n in s.forest}) > 1)
    view = slot_view(col, 0, k)
    assert view.tree.layout.title.text.startswith("Beam forest")
    roots = [t for t in view.tree.data if t.meta == "beam"]
    assert len(roots) == len(dsbd_trace.steps[k - 1].controller.to_json()["carried"]) > 1
    assert view.controller.layout.title.text.startswith("Beam widths") and "<table" in view.beams
    assert view.narrative.startswith(f"**Step {k + 1}** · `dsbd`")  # told layer by layer (viz.beam_story)


def _statuses_the_page_clicks() -> list[str]:
    """The node statuses a click on a tree plot reports (``ui.style.PAGE_JS``)."""
    import re

    from specviz.ui.style import PAGE_JS

    return re.findall(r'"(\w+)"', re.search(r"const STATUSES = \[(.*?)\]", PAGE_JS).group(1))


@pytest.mark.parametrize("algo", ["dsbd", "beam"])
def test_every_forest_node_is_clickable_and_opens_its_view(dsbd_trace, beam_trace, algo):
    """Issue #23 point 2: a click on a forest node opens the node's view: its distribution (p_beam,
    q_beam on its row, u against a) and, over the narrative, its beam, test, layer law and fate."""
    from specviz.ui.render import slot_view
    from specviz.ui.runner import Column

    trace = dsbd_trace if algo == "dsbd" else beam_trace
    statuses = _statuses_the_page_clicks()
    col = Column(label=algo, algorithm=algo, trace=trace, done=True)
    for k in (0, len(trace.steps) // 2):
        step = trace.steps[k]
        fig = V.step_forest_figure(trace, k)
        clickable = [i for t in fig.data if t.meta in statuses for i in t.customdata]
        assert sorted(clickable) == sorted(n.id for n in step.forest)  # every node, once
        for t in fig.data:
            if t.meta in statuses:  # a trace's nodes have its status
                assert {n.status for n in step.forest if n.id in t.customdata} == {t.meta}
        node = next(n for n in step.forest if n.status in ("rejected", "accepted", "bonus"))
        col.selected = node.id
        view = slot_view(col, 0, k)
        assert view.distribution is not None and view.distribution.layout.meta["node"] == node.id
        assert view.narrative.startswith(f"**Selected: node {node.id}**")
        head = view.narrative.split("---")[0]
        assert "p_beam = " in head and ("Kept" in head or "Not kept" in head)
        if node.q is not None:
            assert "q_beam = " in head
        if algo == "dsbd" and node.status in ("accepted", "rejected"):
            lv = step.controller.to_json()["levels"][node.depth]
            assert f"**W_L = {lv['width']}**" in head and "P(m = k)" in head
        col.selected = None


def test_the_dsbd_narrative_tells_each_layer(dsbd_trace):
    """Every verified layer: the law P(m = k) and its tail, the threshold and W_L (Eqs 2-7), each test
    in the rule's own sentence, passed or failed; the bonus layer; each kept beam and why."""
    import html as _html

    from specviz.viz.beam_story import beam_narrative
    from specviz.viz.explain import StepIndex, describe_test

    failed = passed = 0
    for k, step in enumerate(dsbd_trace.steps):
        story = _html.unescape(beam_narrative(dsbd_trace, k))
        idx = StepIndex(step)
        for n in step.forest:
            if n.status in ("accepted", "rejected"):
                assert describe_test(n, idx) in story, (k, n.id)
            parent = idx.nodes.get(n.parent)
            if n.status == "rejected" and not n.p_residual and parent is not None and parent.status != "accepted":
                assert f"(its parent, node {parent.id}, was not accepted: p_beam is 0 on its row)" in story
        for lv in step.controller.to_json()["levels"]:
            if lv.get("bonus"):
                assert f"**Bonus layer {lv['layer']}**" in story
                continue
            assert f"**Layer {lv['layer']}**" in story and f"**W_L = {lv['width']}**" in story
            assert "[" + ", ".join(fmt_prob(v) for v in lv["p_accept"]) + "]" in story
            assert f"t = {lv['threshold']:g}" in story
            if lv["passed"]:
                passed += 1
                assert f"Accepted {lv['accepted']} of the {lv['width']} needed: **passed**" in story
            else:
                failed += 1
                assert f"Accepted {lv['accepted']} of the {lv['width']} needed: **failed**" in story
        kept = step.controller.to_json()["kept"]
        assert f"**Kept** {len(kept)} beam" in story
        assert story.count("extending input beam") == len(kept)
        assert f"**Bought** +{len(step.committed)} token" in story
    assert passed and failed  # both outcomes told


def test_plain_beam_has_a_narrative_and_no_solid_width_bar(beam_trace):
    """Plain ``beam`` keeps W beams every step and verifies no layer: its widths view would be one
    solid bar, so it has none; its narrative names the draws from p_beam."""
    from specviz.ui.render import slot_view
    from specviz.ui.runner import Column

    view = slot_view(Column(label="beam", algorithm="beam", trace=beam_trace, done=True), 0, 1)
    assert view.controller is None and "<table" in view.beams
    step = beam_trace.steps[1]
    assert "**Drew** 3 beams i.i.d." in view.narrative and "p_beam" in view.narrative
    assert all(f"p_beam = {fmt_prob(n.p)}" in view.narrative for n in step.forest)


def test_app_column_of_other_algorithms_has_no_beam_panel(pair):
    from specviz.ui.render import slot_view
    from specviz.ui.runner import Column

    trace = specviz.decode(pair, "sd", [1, 2, 3], max_new_tokens=6, temperature=1.0)
    view = slot_view(Column(label="sd", algorithm="sd", trace=trace, done=True), 0, 0)
    assert view.beams is None and not view.tree.layout.title.text.startswith("Beam forest")


def test_the_heat_map_writes_a_width_only_in_cells_wide_enough(dsbd_trace, beam_trace):
    """Up to CELL_TEXT_STEPS steps each cell says its width; more, and the cells of a narrow column are
    too narrow for them (the numbers ran together), so the hover says it."""
    shown = {}
    for trace in (dsbd_trace, beam_trace):
        heat = V.width_figure(trace, 0).data[0]
        shown[len(trace.steps) <= V.CELL_TEXT_STEPS] = heat.texttemplate
        assert "kept width %{z}" in heat.hovertemplate
    assert shown == {True: "%{z}", False: None}


def test_every_algorithm_column_at_t_above_0_has_a_narrative(pair):
    """Issue #23 point 2: every registered algorithm's column explains its steps when sampled."""
    from specviz.algorithms.registry import ALGORITHMS
    from specviz.models.loading import attach_early_exit
    from specviz.ui.render import slot_view
    from specviz.ui.runner import Column

    extra = {"sequoia": {"size": 8, "depth": 3, "calibration_steps": 8}}
    for name in ALGORITHMS:
        use = attach_early_exit(pair, 1) if name == "eesd" else pair
        trace = specviz.decode(use, name, [1, 2, 3], max_new_tokens=6, temperature=1, seed=1, **extra.get(name, {}))
        for k in range(len(trace.steps)):
            story = slot_view(Column(label=name, algorithm=name, trace=trace, done=True), 0, k).narrative
            assert story and story.startswith(f"**Step {k + 1}** · `{name}`") and "**Bought**" in story, (name, k)


def test_a_dsbd_node_never_tested_says_why_by_its_layer(dsbd_trace):
    """A dsbd layer is tested as a whole: a draft is skipped once its layer has its W_L acceptances,
    and the layers after a failed one are never verified (not the tree walk's sibling reasons)."""
    from specviz.viz.distribution import distribution_figure
    from specviz.viz.explain import StepIndex, node_decision

    seen = set()
    for step in dsbd_trace.steps:
        levels = [lv for lv in step.controller.to_json()["levels"] if not lv.get("bonus")]
        idx = StepIndex(step)
        for n in step.forest:
            if n.status != "not_reached":
                continue
            why = node_decision(n, idx)
            if n.depth < len(levels) and levels[n.depth]["passed"]:
                assert why.startswith(
                    f"never tested: layer {n.depth + 1} had already accepted the W_L = {levels[n.depth]['width']}"
                ), why
                seen.add("skipped")
            else:
                assert n.depth >= len(levels) and f"the step ended at layer {len(levels)}, which failed" in why, why
                seen.add("unverified")
            shown = " ".join(a.text.replace("<br>", " ") for a in distribution_figure(step, n.id).layout.annotations)
            assert " ".join(why.split()[:6]) in " ".join(shown.split()), (why, shown)  # the caption says the same
    assert "unverified" in seen


def test_forest_labels_show_quotes_as_quotes(dsbd_trace):
    """A token with a quote is labelled with the quote: plotly shows only a few named entities, so
    ``html.escape``'s ``&quot;`` was drawn as those six characters ("·&quot;" in a dsbd forest at
    400 px); ``<``, ``>`` and ``&`` are still escaped (plotly reads its text as HTML)."""
    import copy

    trace = copy.deepcopy(dsbd_trace)
    step = trace.steps[0]
    step.forest[0].token_text, step.forest[-1].token_text = '"x', "<b>"
    fig = V.step_forest_figure(trace, 0)
    labels = [s for t in fig.data if t.mode == "markers+text" and t.meta != "beam" for s in t.text]
    hovers = " ".join(s for t in fig.data if t.hovertext for s in t.hovertext)
    assert '"x' in labels and "&lt;b&gt;" in labels
    assert "&quot;" not in " ".join(labels) + hovers and "<b>" not in labels
