"""Figure builders on real traces of tiny real models: what the figure shows matches the trace."""

from __future__ import annotations

import copy
import json
import re

import plotly.graph_objects as go
import pytest
from test_golden_traces import path_of
from test_viz_controller import NARROWEST_PX, cut_title_lines, legend_problems
from tiny import tiny_pair

import specviz
from specviz import viz
from specviz.step_state import UnknownState, read_state
from specviz.trace import RunTrace, StepRecord, TreeNode
from specviz.viz.style import MESSAGE_CHARS, PATH_COLOR
from specviz.viz.tree import CONTEXT_ID, LEGEND_NAMES

TREE_ALGOS = [a for a in ("mcsd", "specinfer", "sequoia") if a in specviz.ALGORITHMS]


def _sequoia_params() -> dict:
    """A small fixed-acceptance Sequoia tree (no calibration), whatever its size/depth are called."""
    if "sequoia" not in specviz.ALGORITHMS:
        return {}
    names = {p.name for p in specviz.ALGORITHMS["sequoia"].params}
    out = {"acceptance": "0.6,0.2,0.1"} if "acceptance" in names else {}
    out.update({k: v for k, v in (("size", 12), ("n", 12), ("depth", 4), ("d", 4)) if k in names})
    return out


EXTRA = {"sequoia": _sequoia_params()}


@pytest.fixture(scope="module")
def pair():
    return tiny_pair(vocab=16, draft="noisy", noise=0.3)


@pytest.fixture(scope="module")
def traces(pair):
    out = {}
    for algo in ["ar", "sd", *TREE_ALGOS]:
        for temp in (0.0, 1.0):
            out[(algo, temp)] = specviz.decode(
                pair, algo, prompt=[1, 2, 3], max_new_tokens=24, temperature=temp, seed=3, **EXTRA.get(algo, {})
            )
    return out


def validated(fig: go.Figure) -> go.Figure:
    """Rebuild with plotly's validation on: the builders skip it for speed, so check it here."""
    assert isinstance(fig, go.Figure)
    return go.Figure(fig.to_dict())


def node_traces(fig: go.Figure) -> dict[str, object]:
    return {t.meta: t for t in fig.data if t.meta in specviz.trace.NODE_STATUSES}


def test_tree_nodes_and_statuses_match_the_trace(traces):
    for (algo, _), trace in traces.items():
        assert trace.steps, algo
        for step in trace.steps:
            fig = viz.tree_figure(step)
            if step.index < 2:  # plotly's validation is slow; the structure is the same for every step
                validated(fig)
            by_status = node_traces(fig)
            shown = {nid: status for status, t in by_status.items() for nid in t.customdata}
            assert len(shown) == len(step.forest), (algo, step.index)
            assert shown == {n.id: n.status for n in step.forest}, (algo, step.index)
            for status, t in by_status.items():  # colours and legend follow the status
                assert t.marker.color == viz.STATUS_COLORS[status]
                assert t.name == f"{LEGEND_NAMES[status]} ({len(t.customdata)})"
            # the step on the title line, its numbers under it, the legend under them: whole and clear
            # of each other in the narrowest column
            assert fig.layout.title.text == f"step {step.index + 1}", (algo, step.index)
            assert f"drafted {step.n_drafted} · accepted {step.n_accepted}" in fig.layout.title.subtitle.text
            assert cut_title_lines(fig) == [] and legend_problems(fig) == [], (algo, step.index)
            assert fig.layout.meta == {"svTop": True}  # the page draws the title and legend as HTML (ui.plotbox)


def test_accepted_path_is_highlighted(traces):
    checked = 0
    for (algo, _), trace in traces.items():
        for step in trace.steps:
            fig = viz.tree_figure(step)
            path = next(t for t in fig.data if t.meta == "path")
            committed = [c.node_id for c in step.committed]
            assert list(path.customdata) == [CONTEXT_ID, *committed]
            assert path.line.width >= 3 and path.line.color == PATH_COLOR
            # the committed nodes carry the dark outline, the others do not
            for t in node_traces(fig).values():
                for nid, color in zip(t.customdata, t.marker.line.color):
                    assert (color == PATH_COLOR) == (nid in committed)
            # every segment of the path joins a parent to its child: x (depth) grows by one per edge
            xs = [x for x in path.x if x is not None]
            assert xs == sorted(xs)
            checked += bool(step.n_accepted)
    assert checked > 0, "no step accepted anything: the test pair is too far apart"


def test_rejected_then_resampled_is_drawn_as_siblings(traces):
    trace = traces[("sd", 1.0)]
    step = next(s for s in trace.steps if any(n.status == "rejected" for n in s.forest))
    g, pos, _ = viz.tree_layout(step.forest)
    rejected = next(n for n in step.forest if n.status == "rejected")
    resampled = next(n for n in step.forest if n.status == "resampled")
    assert rejected.parent == resampled.parent
    assert pos[rejected.id][0] == pos[resampled.id][0]  # same depth column
    assert pos[rejected.id][1] != pos[resampled.id][1]  # different rows
    hover = next(t for t in viz.tree_figure(step).data if t.meta == "rejected").hovertext[0]
    assert "u = " in hover and "→ rejected" in hover and "q draft" in hover and "p target" in hover


def test_forest_with_several_roots_and_malformed_parents():
    nodes = [
        TreeNode(0, None, 0, 5, "a", status="accepted", root=0),
        TreeNode(1, None, 0, 6, "b", status="rejected", root=1),
        TreeNode(2, 0, 1, 7, "c", status="bonus"),
        TreeNode(3, 99, 1, 8, "d", status="not_reached"),
    ]
    step = StepRecord(
        0,
        0,
        forest=nodes,
        committed=[specviz.CommittedToken(5, "a", "draft", 0), specviz.CommittedToken(7, "c", "bonus", 2)],
    )
    fig = validated(viz.tree_figure(step))
    assert sum(len(t.customdata) for t in node_traces(fig).values()) == 4
    cyclic = [TreeNode(0, 1, 0, 5, "a"), TreeNode(1, 0, 1, 6, "b")]
    validated(viz.tree_figure(StepRecord(0, 0, forest=cyclic)))


@pytest.mark.parametrize("max_new", [None, 1])
def test_empty_and_one_token_runs_render(pair, max_new):
    if max_new is None:  # a run that has not produced a step yet
        trace = specviz.stream(pair, "sd", prompt=[1, 2], max_new_tokens=4, temperature=1.0).trace
    else:
        trace = specviz.decode(pair, "sd", prompt=[1, 2], max_new_tokens=1, temperature=0.0)
        assert len(trace.output_ids) == 1 and len(trace.steps) == 1
    runs = [("sd", trace)]
    validated(viz.step_tree_figure(trace, 0))
    validated(viz.tree_figure(None))
    for fig in (
        viz.tokens_per_step_figure(runs, 0),
        viz.cumulative_figure(runs, 0),
        viz.acceptance_histogram_figure(runs),
        viz.time_breakdown_figure(runs),
    ):
        validated(fig)
    assert viz.controller_figure(trace, 0) is None
    html = viz.tokens_html(trace, 0)
    assert html.count('class="sv-tok ') == len(trace.output_ids)
    assert "<table" in viz.comparison_table_html(runs)


def test_tokens_html_colours_every_token_and_strikes_rejected(traces):
    trace = traces[("sd", 1.0)]
    html = viz.tokens_html(trace)
    committed = [t for s in trace.steps for t in s.committed]
    for kind in ("draft", "resampled", "bonus"):
        assert html.count(f'class="sv-tok sv-{kind}"') == sum(t.kind == kind for t in committed)
    rejected = sum(n.status == "rejected" for s in trace.steps for n in s.forest)
    assert rejected > 0 and html.count('class="sv-tok sv-rejected"') == rejected
    assert html.count('class="sv-step') == len(trace.steps)
    # a selected step is outlined and the later ones fade
    sel = viz.tokens_html(trace, current_step=2)
    assert sel.count("sv-cur") == 1 and sel.count("sv-future") == len(trace.steps) - 3
    assert "&lt;" in html and "<1>" not in html  # token text "<id>" is escaped


def test_tokens_html_escapes_and_marks_newlines():
    step = StepRecord(
        0,
        0,
        forest=[TreeNode(0, None, 0, 1, "<b>x</b>", status="accepted"), TreeNode(1, 0, 1, 2, "\n", status="bonus")],
        committed=[specviz.CommittedToken(1, "<b>x</b>", "draft", 0), specviz.CommittedToken(2, "\n", "bonus", 1)],
    )
    trace = RunTrace("sd", {}, {}, {}, 0, [0], "p", output_ids=[1, 2], steps=[step])
    html = viz.tokens_html(trace)
    assert "<b>x</b>" not in html and "&lt;b&gt;x&lt;/b&gt;" in html
    assert "↵" in html


def test_comparison_figures_mark_the_current_step(traces):
    runs = [("ar", traces[("ar", 0.0)]), ("sd", traces[("sd", 0.0)]), *[(a, traces[(a, 0.0)]) for a in TREE_ALGOS]]
    per_step = validated(viz.tokens_per_step_figure(runs, current_step=4))
    assert [t.name for t in per_step.data] == [name for name, _ in runs]
    assert per_step.layout.shapes[0].x0 == 5
    for (name, trace), t in zip(runs, per_step.data):
        assert list(t.y) == specviz.metrics.tokens_per_step(trace)
    cumulative = validated(viz.cumulative_figure(runs, current_step=4))
    lines = [t for t in cumulative.data if t.name in dict(runs)]
    for (name, trace), t in zip(runs, lines):
        assert t.y[-1] == len(trace.output_ids)
    markers = [t for t in cumulative.data if t.meta == "current"]
    assert len(markers) == len(runs)
    assert markers[0].y[0] == specviz.metrics.cumulative_tokens(runs[0][1])[4]
    hist = validated(viz.acceptance_histogram_figure(runs))
    for (name, trace), t in zip(runs, hist.data):
        h = specviz.metrics.acceptance_histogram(trace)
        assert list(t.x) == sorted(h) and list(t.customdata) == [h[k] for k in sorted(h)]
    timing = validated(viz.time_breakdown_figure(runs))
    assert len(timing.data) == 3 and list(timing.data[0].y) == [name for name, _ in runs]


def test_comparison_figures_lay_out_their_top_from_their_content(traces):
    """Issue #23 point 4: each comparison figure's top is its title lines and its legend rows, counted
    from the names (two entries a row where every name fits half a phone's plot, else one), not a fixed
    70 px under which plotly wrapped a legend of four runs into the title at 1000 px."""
    from specviz.viz.style import GAP_PX, LEGEND_CHARS, LEGEND_PAD_PX, LEGEND_ROW_PX, SUBTITLE_LINE_PX, TITLE_PX, TOP_PX

    short = [(a, traces[(a, 0.0)]) for a in ("ar", "sd", *TREE_ALGOS)]
    long = [(f"{a} (a long label)", t) for a, t in short]
    for runs in (short, long):
        for fig in (
            viz.tokens_per_step_figure(runs, 0),
            viz.cumulative_figure(runs, 0),
            viz.acceptance_histogram_figure(runs),
            viz.time_breakdown_figure(runs),
        ):
            lay = fig.layout
            names = [t.name for t in fig.data if t.showlegend is not False]
            columns = 2 if all(len(n) <= LEGEND_CHARS for n in names) else 1
            assert lay.legend.entrywidthmode == "fraction" and lay.legend.entrywidth == 1 / columns
            subtitle = lay.title.subtitle.text.count("<br>") + 1 if lay.title.subtitle.text else 0
            assert len(lay.title.text) <= 40  # one line at phone width
            rows = -(-len(names) // columns)
            assert lay.margin.t == (
                TOP_PX + TITLE_PX + SUBTITLE_LINE_PX * subtitle + GAP_PX + rows * LEGEND_ROW_PX + LEGEND_PAD_PX
            ), (lay.title.text, runs[0][0])


def test_table_shows_metrics_definitions_and_greedy_check(traces):
    ar, sd = traces[("ar", 0.0)], traces[("sd", 0.0)]
    html = viz.comparison_table_html([("ar", ar), ("sd", sd)])
    assert "✓ identical" in html and "reference" in html
    for definition in specviz.metrics.DEFINITIONS.values():
        if (
            definition != specviz.metrics.DEFINITIONS["drafted"]
            and definition != specviz.metrics.DEFINITIONS["accepted"]
            and definition != specviz.metrics.DEFINITIONS["steps"]
        ):
            assert definition in html
    bad = copy.deepcopy(sd)
    bad.output_ids[3] = (bad.output_ids[3] + 1) % 16
    differs = viz.comparison_table_html([("ar", ar), ("sd", bad)])
    assert "✗ differs at token 4" in differs
    # the long divergence sentence wraps inside its cell rather than widening the table past its column
    assert '<td class="sv-bad sv-wrap">✗ differs' in differs and "td.sv-wrap { white-space: normal" in viz.TABLE_CSS
    assert '<th title="one row per column' in html  # rows are the page's columns (configurations), not algorithms
    sampled = viz.comparison_table_html([("ar", traces[("ar", 1.0)]), ("sd", traces[("sd", 1.0)])])
    assert "n/a (T &gt; 0)" in sampled
    rows = viz.comparison_rows([("ar", ar), ("sd", sd)])
    assert rows[0]["speedup"] == pytest.approx(1.0)
    assert rows[1]["tau"] == pytest.approx(len(sd.output_ids) / len(sd.steps))
    assert "run ar too" in viz.comparison_table_html([("sd", sd)])


def _with_controller(trace: RunTrace, make) -> RunTrace:
    """``trace`` with step i's controller state read from the JSON object ``make(i)`` as a replay of a
    schema-5 trace reads it (a layout this version cannot type is kept raw, ``step_state.UnknownState``)."""
    t = copy.deepcopy(trace)
    for i, s in enumerate(t.steps):
        s.controller = read_state(make(i), f"steps[{i}].controller", legacy=True)
    return t


def _stored(case: str):
    """Step i's controller object of the stored golden trace ``case`` at T = 1 (cycled)."""
    steps = json.loads(path_of(case, 1.0).read_text(encoding="utf-8"))["steps"]
    states = [s["controller"] for s in steps if s["controller"] is not None]
    return lambda i: {**states[i % len(states)], **({"setup_ms": 0.0} if case == "sequoia" else {})}


CONTROLLERS = {
    "beta_ts": _stored("sd_beta_ts"),
    "cali_ts": _stored("sd_cali_ts"),
    "dsbd": _stored("dsbd"),
    "sequoia": _stored("sequoia"),
    "mystery": lambda i: {"kind": "mystery", "temperature_like": 0.1 * i, "budget": 7, "hist": [1, 2, 3]},
}
TITLES = {
    "beta_ts": "Thompson sampling",
    "cali_ts": "Thompson sampling",
    "dsbd": "Beam widths",
    "sequoia": "Sequoia",
    "mystery": "Controller state: mystery",
}


@pytest.mark.parametrize("kind", sorted(CONTROLLERS))
def test_controller_view_is_chosen_by_kind(traces, kind):
    trace = _with_controller(traces[("sd", 1.0)], CONTROLLERS[kind])
    assert viz.controller_kind(trace) == kind
    for step in (0, len(trace.steps) - 1, 10_000):
        fig = validated(viz.controller_figure(trace, step))
        assert TITLES[kind] in fig.layout.title.text
        assert cut_title_lines(fig) == [], kind
        assert fig.data
    assert viz.controller_figure(traces[("sd", 1.0)], 0) is None  # no controller state, no view


def test_an_older_state_of_unexpected_shape_is_drawn_by_the_generic_view(traces):
    """A schema-5 trace's state this version cannot type (read as ``UnknownState``): the generic view,
    saying why. A real bug in a view is no longer hidden: the views get typed states only."""
    trace = _with_controller(traces[("sd", 1.0)], lambda i: {"kind": "beta_ts", "alpha": "oops", "n": i})
    fig = validated(viz.controller_figure(trace, 1))
    assert "Controller state: beta_ts" in fig.layout.title.text and "an older layout" in fig.layout.title.subtitle.text


def test_a_state_with_nothing_to_plot_is_said_on_lines_that_fit_the_narrowest_column(traces):
    """The generic view of a state with no numbers shows it as text: on lines a column at phone width
    shows whole (a line centred on the plot, 13 px, about 7.2 px a character), the first 200
    characters of it, the rest cut with "…"; a value with HTML in it is shown as text."""
    words = " ".join(f"word{i}" for i in range(60))
    trace = _with_controller(
        traces[("sd", 1.0)],
        lambda i: {
            "kind": "chatty",
            "note": words,
            "tag": "<b>x</b>",
            "path": "/a/very/long/path/with/no/spaces/in/it/at/all",
        },
    )
    fig = validated(viz.controller_figure(trace, 1))
    text = fig.layout.annotations[0].text
    lines = text.split("<br>")
    assert len(lines) > 1
    lay = fig.layout
    centre = lay.margin.l + (NARROWEST_PX - lay.margin.l - lay.margin.r) / 2
    assert all(7.2 * len(re.sub("&[a-z]+;", "x", line)) <= 2 * min(centre, NARROWEST_PX - centre) for line in lines)
    assert all(len(line) <= MESSAGE_CHARS for line in lines)
    flat = " ".join(lines)
    assert flat.startswith("controller chatty: note=word0 word1") and flat.endswith("…")
    assert "<b>" not in text and lay.height >= 100 + 18 * len(lines)


def test_register_view_adds_a_view(traces):
    class CustomState(UnknownState):
        pass

    trace = copy.deepcopy(traces[("sd", 1.0)])
    for i, s in enumerate(trace.steps):
        s.controller = CustomState({"kind": "custom_test_kind", "x": i})

    @viz.register_view(CustomState)
    def view(t, step):
        return viz.message_figure(f"custom view at {step}")

    try:
        fig = viz.controller_figure(trace, 2)
        assert fig.layout.annotations[0].text == "custom view at 2"
    finally:
        viz.CONTROLLER_VIEWS.pop((CustomState, "controller"))


def test_real_sequoia_trace_gets_its_view(traces):
    trace = traces[("sequoia", 0.0)]
    assert viz.controller_kind(trace) == "sequoia"
    fig = validated(viz.controller_figure(trace, 0))
    assert "Sequoia" in fig.layout.title.text


def test_replayed_trace_renders_like_the_live_one(traces):
    trace = traces[("sd", 1.0)]
    again = RunTrace.from_json(trace.to_json())
    a, b = viz.step_tree_figure(trace, 2), viz.step_tree_figure(again, 2)
    assert a.to_json() == b.to_json()
    assert viz.tokens_html(trace, 2) == viz.tokens_html(again, 2)


def test_64_node_tree_is_drawn_whole_and_readable(pair):
    """A dense tree (64+ nodes) shows every node at its own position, labels the verified nodes and
    keeps the unreached ones as hover-only markers. Its build time is measured by
    ``python -m specviz.bench.figure_timing`` (a ratio to the decoding step), not asserted here."""
    trace = specviz.decode(pair, "mcsd", prompt=[1, 2, 3], max_new_tokens=12, temperature=1.0, seed=0, k_config="4x3x4")
    step = max(trace.steps, key=lambda s: len(s.forest))
    assert len(step.forest) >= 64
    fig = viz.tree_figure(step)
    by_status = node_traces(fig)
    points = [(x, y) for t in by_status.values() for x, y in zip(t.x, t.y)]
    assert len(points) == len(step.forest) == len(set(points))
    for status, t in by_status.items():
        if status == "not_reached":
            assert t.text is None and len(t.hovertext) == len(t.x)
        else:
            assert len(t.text) == len(t.x)


def test_visible_labels():
    from specviz.viz.style import visible_text

    assert visible_text("  x\n") == "··x↵"
    assert visible_text("") == "∅"
    assert len(visible_text("a" * 40)) == 14
    assert re.match(r"^a+…$", visible_text("a" * 40))


def test_fast_json_matches_plotly(traces):
    import json

    trace = traces[("sd", 1.0)]
    runs = [("sd", trace), ("ar", traces[("ar", 1.0)])]
    for fig in (
        viz.step_tree_figure(trace, 1),
        viz.cumulative_figure(runs, 2),
        viz.tokens_per_step_figure(runs, 0),
        viz.acceptance_histogram_figure(runs),
        viz.time_breakdown_figure(runs),
        viz.message_figure("x"),
    ):
        assert json.loads(fig.to_json()) == json.loads(go.Figure.to_json(fig))


def test_long_lists_are_not_deep_copied_and_the_figure_is_the_same():
    """``style.figure`` hands a trace's long lists to the figure as they are (issue #23): the figure's
    JSON, its plotly dict and its key order are those of plotly's own (deep-copying) build with the same
    (slim) template."""
    import json

    from specviz.viz import style

    n = style.LONG_LIST + 5
    x, y = list(range(n)), [i / n for i in range(n)]

    def build():
        return (
            [
                {"type": "scatter", "x": x, "y": y, "mode": "lines", "customdata": list(x), "name": "a"},
                {"type": "bar", "x": [1, 2], "y": [3, 4]},
            ],
            {"height": 300, "xaxis": {"title": {"text": "t"}}},
        )

    fast = style.figure(*build())
    slow = style.Figure({"data": build()[0], "layout": {**build()[1], "template": style.TEMPLATE}}, _validate=False)
    assert fast.to_json() == go.Figure.to_json(slow) == slow.to_json()
    assert fast.to_plotly_json() == slow.to_plotly_json()
    assert [list(d) for d in fast._data] == [list(d) for d in slow._data]
    assert fast._data[0]["x"] is x  # not a copy
    assert fast.data[0].y == tuple(y)
    assert json.loads(fast.to_json()) == json.loads(go.Figure(fast.to_dict()).to_json())  # validates


def test_every_tree_hover_line_fits_a_narrow_column(traces):
    """Issue 35 point 8: a node's hover box is cut off at its figure's edges, so every line of it holds at
    most ``HOVER_CHARS`` visible characters (a single longer word excepted), whatever the node says."""
    import re

    from specviz.viz.style import HOVER_CHARS

    checked = 0
    for trace in traces.values():
        for step in trace.steps:
            for t in viz.tree_figure(step).data:
                for hover in t.hovertext or ():
                    for line in hover.split("<br>"):
                        shown = re.sub(r"<[^>]+>", "", line)
                        assert len(shown) <= HOVER_CHARS or " " not in shown.strip(), line
                        checked += 1
    assert checked > 100
