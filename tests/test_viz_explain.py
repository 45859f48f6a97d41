"""The step narrative, the distribution view and the node explanations (tooltips).

Steps with per-position data are built here by running the library's own acceptance rule
(``core.acceptance.sibling_schedule`` / ``first_accepted``) on hand-chosen p, q and uniform draws,
so every number in them is what a real run with those distributions and draws would record; the
real-trace tests at the end use tiny real models.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

import plotly.graph_objects as go
import pytest
import torch
from test_ui_support import read_hover

import specviz
from specviz.core.acceptance import first_accepted, sibling_schedule
from specviz.core.sampling import residual
from specviz.trace import CommittedToken, PositionRecord, RunTrace, StepRecord, TreeNode
from specviz.viz.distribution import NO_POSITIONS, distribution_figure
from specviz.viz.explain import StepIndex, not_reached_reason
from specviz.viz.narrative import informative_step, step_narrative
from specviz.viz.tree import tree_figure

TEXTS = ["a", " the", "\n", "x", "<b>", "cat", "dog", "ok"]


@dataclass
class Level:
    """One verified position: distributions over a vocabulary of 8, drafted candidates in draw
    order, and the uniform draws the run would take (one per test whose a is not 0 or 1)."""

    p: list[float]
    q: list[float]
    candidates: list[int]
    draws: list[float]


def build_step(
    levels: list[Level],
    replacement: bool = True,
    index: int = 0,
    v2: bool = True,
    extra_children: dict[int, list[int]] | None = None,
) -> StepRecord:
    """A step whose nodes follow the multi-candidate rule exactly. ``extra_children``: level ->
    tokens drafted under that level's *last* candidate (to get nodes below rejected/skipped ones)."""
    step = StepRecord(index, 0, target_calls=1, draft_calls=len(levels))
    parent: int | None = None
    depth = 0
    for li, lv in enumerate(levels):
        p, q = torch.tensor(lv.p), torch.tensor(lv.q)
        p, q = p / p.sum(), q / q.sum()
        sched = sibling_schedule(p, q, lv.candidates, replacement)
        it = iter(lv.draws)
        hit, draws = first_accepted(sched.accept_probs, lambda: next(it))
        ids = [int(i) for i in torch.argsort(p, descending=True) if p[i] > 0 or q[i] > 0]
        res = residual(p, q)
        kids = []
        for j, tok in enumerate(lv.candidates):
            n = TreeNode(len(step.forest), parent, depth, tok, TEXTS[tok], q=sched.draft_probs[j], p=float(p[tok]))
            if j < len(draws):
                n.accept_prob, n.draw = sched.accept_probs[j], draws[j]
                n.status = "accepted" if j == hit else "rejected"
                if v2:
                    n.p_residual = float(sched.residuals[j][tok])
            step.forest.append(n)
            kids.append(n)
        for tok in (extra_children or {}).get(li, []):
            step.forest.append(TreeNode(len(step.forest), kids[-1].id, depth + 1, tok, TEXTS[tok], q=0.3, p=0.2))
        pos = PositionRecord(
            parent,
            ids,
            [float(p[i]) for i in ids],
            [float(q[i]) for i in ids],
            [float(res[i]) for i in ids],
            float(torch.clamp(p - q, min=0).sum()),
        )
        if hit is None:
            final = sched.final_residual
            pos.final_residual = [float(final[i]) for i in ids]
            tok = int(final.argmax())
            step.forest.append(
                TreeNode(len(step.forest), parent, depth, tok, TEXTS[tok], p=float(p[tok]), status="resampled")
            )
            if v2:
                step.positions.append(pos)
            break
        if v2:
            step.positions.append(pos)
        parent, depth = kids[hit].id, depth + 1
    else:
        step.forest.append(TreeNode(len(step.forest), parent, depth, 7, TEXTS[7], p=0.5, status="bonus"))
        if v2:
            step.positions.append(PositionRecord(parent, [7, 0], [0.5, 0.5]))
    by_id = {n.id: n for n in step.forest}
    path = [n for n in step.forest if n.status in ("accepted", "resampled", "bonus")]
    for n in path:
        kind = {"accepted": "draft"}.get(n.status, n.status)
        step.committed.append(CommittedToken(n.token_id, n.token_text, kind, n.id))
    assert all(by_id[c.node_id] for c in step.committed)
    return step


P = [0.05, 0.4, 0.3, 0.1, 0.1, 0.05, 0.0, 0.0]
Q = [0.5, 0.1, 0.1, 0.2, 0.05, 0.05, 0.0, 0.0]


def all_rejected_step(v2: bool = True) -> StepRecord:
    """Two i.i.d. candidates at the root, both rejected: 'a' by its draw, 'x' with a = 0 after the residual."""
    return build_step([Level(P, Q, [0, 3], [0.62])], v2=v2, extra_children={0: [5]})


def skipped_sibling_step(v2: bool = True) -> StepRecord:
    """Root: 'a' rejected, ' the' accepted, 'cat' never tested; then '\\n' accepted, then 'x' rejected."""
    return build_step(
        [
            Level(P, Q, [0, 1, 5], [0.62, 0.3]),
            Level([0.1, 0.1, 0.6, 0.1, 0.1, 0, 0, 0], [0.1, 0.1, 0.5, 0.2, 0.1, 0, 0, 0], [2], []),
            Level([0.3, 0.3, 0.1, 0.00004, 0.3, 0, 0, 0], [0.2, 0.2, 0.2, 0.3, 0.1, 0, 0, 0], [3], [0.9]),
        ],
        v2=v2,
        extra_children={0: [6, 4]},
    )


def validated(fig: go.Figure) -> go.Figure:
    return go.Figure(fig.to_dict())


# ---------------------------------------------------------------- tooltips (tree hover, token titles)


def hover_of(step: StepRecord, node_id: int) -> str:
    for t in tree_figure(step).data:
        if t.customdata is not None and t.hovertext is not None and node_id in list(t.customdata):
            return read_hover(t.hovertext[list(t.customdata).index(node_id)])
    raise AssertionError(node_id)


def test_sibling_skipped_after_accepted_sibling_says_so():
    step = skipped_sibling_step()
    skipped = next(n for n in step.forest if n.token_text == "cat")
    assert skipped.status == "not_reached"
    hover = hover_of(step, skipped.id)
    assert "earlier sibling" in hover and "was accepted" in hover and '" the"' in hover
    assert "rejected" not in hover
    # its children are explained by the skipped ancestor, a rejected node's children by the rejection
    below_skipped = [n for n in step.forest if n.parent == skipped.id]
    assert below_skipped and all(
        "never tested" in not_reached_reason(n, StepIndex(step)) and '"cat"' in not_reached_reason(n, StepIndex(step))
        for n in below_skipped
    )
    chain = all_rejected_step()
    below_rejected = next(n for n in chain.forest if n.status == "not_reached")
    assert "was rejected" in hover_of(chain, below_rejected.id)


def test_second_candidate_shows_residual_p_next_to_a_and_original_p():
    step = all_rejected_step()
    second = step.forest[1]
    assert second.token_id == 3 and second.p_residual == 0.0 and second.p == pytest.approx(0.1)
    hover = hover_of(step, second.id)
    assert re.search(r"p target = 0\.1\b.*original", hover)
    assert "p residual = 0 (a uses this; after 1 earlier sibling rejected)" in hover
    assert "a = 0" in hover
    first = hover_of(step, step.forest[0].id)
    assert "first candidate" in first and "u = 0.62 ≥ a = 0.1" in first
    # a v1 trace has no p_residual: say the residual was used without inventing a value
    old = hover_of(all_rejected_step(v2=False), 1)
    assert "not recorded" in old and "p residual = " not in old


def test_token_titles_keep_small_numbers():
    step = skipped_sibling_step()
    trace = RunTrace("mcsd", {}, {}, {}, 0, [0], "p", output_ids=[c.token_id for c in step.committed], steps=[step])
    html = specviz.viz.tokens_html(trace)
    rejected_x = next(n for n in step.forest if n.token_id == 3 and n.status == "rejected")
    assert rejected_x.p == pytest.approx(4e-5, rel=1e-3)
    assert "p=4e-5" in html and "0.000" not in html
    # ' the' was accepted against the residual left by the rejected 'a': 0.3 / 0.55, not its p = 0.4
    assert "p=0.4 · p_res=0.545" in html
    assert "a=0.1 · u=0.62" in html


def test_lossy_divergence_is_not_flagged_as_a_bug():
    step = skipped_sibling_step()
    trace = RunTrace(
        "biased_sd",
        {},
        {},
        {"temperature": 0.0},
        0,
        [0],
        "p",
        output_ids=[c.token_id for c in step.committed],
        steps=[step],
        lossless=False,
    )
    lossy = specviz.viz.tokens_html(trace, diverge_at=1)
    assert "sv-diverge-lossy" in lossy and "not lossless by design" in lossy and "sv-diverge " not in lossy
    trace.lossless = True
    assert 'sv-diverge"' in specviz.viz.tokens_html(trace, diverge_at=1)


# ---------------------------------------------------------------- narrative


def test_narrative_tells_each_test_the_residual_and_what_the_step_bought():
    text = step_narrative(all_rejected_step(), "mcsd")
    assert "**Drafted** a tree: 3 nodes over 2 levels (widths 2, 1; 2 roots) in 1 draft call." in text
    assert '(1) "a": u = 0.62 ≥ a = 0.1 = min(1, p/q) with p = 0.05, q = 0.5 → rejected' in text
    assert '(2) "x": a = min(1, p_res/q) = 0 with p_res = 0, q = 0.2: rejected with no draw' in text
    assert "**Accepted** none of the 3 drafted." in text
    assert "final residual after 2 rejections" in text and "TV(p, q) = 0.55" in text
    assert 'top of the final residual: " the" 0.594' in text  # 0.445 / 0.75 after the second update
    assert text.rstrip().endswith("**Bought** +1 token for 1 target call and 1 draft call.")


def test_narrative_names_skipped_siblings_and_accepted_tokens():
    text = step_narrative(skipped_sibling_step(), "mcsd")
    assert 'Never tested: "cat" (an earlier sibling was accepted' in text
    assert '(2) " the": a = min(1, p_res/q) = 1 with p_res = 0.545, q = 0.1: accepted with no draw' in text
    assert '**Accepted** 2 of 7 drafted: " the" "↵".' in text
    assert "u = 0.9 ≥ a = 1.33e-4 = min(1, p/q) with p = 4e-5, q = 0.3 → rejected" in text
    assert "2 more drafted nodes never verified" in text
    # a token "<b>" is shown as text, not as HTML, in the Markdown
    assert '"&lt;b&gt;"' in text and "<b>" not in text
    assert "+3 tokens for 1 target call and 3 draft calls" in text


def test_narrative_of_a_v1_step_has_no_invented_numbers():
    text = step_narrative(all_rejected_step(v2=False), "mcsd")
    assert "p_res not recorded in this trace" in text
    assert "TV(p, q)" not in text and "**Resampled**" in text


def test_narrative_names_ids_through_decode():
    step = all_rejected_step()
    assert "id 2 0.352" in step_narrative(step, "mcsd")
    assert '"two" 0.352' in step_narrative(step, "mcsd", decode=lambda i: {2: "two"}.get(i, "?"))


def test_narrative_of_a_forest_names_its_trees():
    nodes = [
        TreeNode(0, None, 0, 0, "a", q=0.5, p=0.4, accept_prob=0.8, draw=0.3, status="accepted", root=0),
        TreeNode(1, 0, 1, 1, "b", q=0.4, p=0.2, accept_prob=0.5, draw=0.7, status="rejected", root=0),
        TreeNode(2, None, 0, 3, "x", q=0.5, p=0.1, accept_prob=0.2, draw=0.9, status="rejected", root=1),
        TreeNode(3, 2, 1, 5, "cat", q=0.3, p=0.3, root=1),
        TreeNode(4, 0, 1, 6, "dog", p=0.3, status="resampled", root=0),
    ]
    step = StepRecord(
        4,
        10,
        forest=nodes,
        committed=[CommittedToken(0, "a", "draft", 0), CommittedToken(6, "dog", "resampled", 4)],
        draft_calls=2,
    )
    text = step_narrative(step, "batch_sd")
    assert "**Drafted** a forest of 2 trees: 4 nodes over 2 levels (widths 2, 2; 2 roots) in 2 draft calls." in text
    assert '- At the committed text (tree 0): "a": u = 0.3 < a = 0.8' in text
    assert '- At the committed text (tree 1): "x": u = 0.9 ≥ a = 0.2' in text
    assert '- After "a" (node 0): "b"' in text
    assert "1 more drafted node never verified" in text
    assert 'the token "x" on its path was rejected' in hover_of(step, 3)
    assert "+2 tokens for 1 target call and 2 draft calls" in text


def _trivial_step(index: int) -> StepRecord:
    return StepRecord(
        index,
        0,
        forest=[TreeNode(0, None, 0, 7, "ok", p=0.5, status="bonus")],
        committed=[CommittedToken(7, "ok", "bonus", 0)],
    )


def test_informative_step_prefers_a_rejection_then_size_never_a_trivial_end():
    big = skipped_sibling_step()
    for n in big.forest:  # a big step with no rejection
        if n.status == "rejected":
            n.status = "not_reached"
    small_rejection = all_rejected_step()
    small_rejection.index = 1
    steps = [big, small_rejection, _trivial_step(2)]
    trace = RunTrace("mcsd", {}, {}, {}, 0, [0], "p", steps=steps)
    assert informative_step(trace) == 1
    trace.steps = [big, _trivial_step(1)]
    assert informative_step(trace) == 0
    trace.steps = [_trivial_step(0), _trivial_step(1)]
    assert informative_step(trace) == 1
    trace.steps = []
    assert informative_step(trace) == 0


# ---------------------------------------------------------------- distribution view


def bars(fig: go.Figure) -> dict[str, object]:
    return {t.meta: t for t in fig.data if t.type == "bar"}


def test_distribution_bars_are_the_positions_p_q_and_residuals():
    step = all_rejected_step()
    pos = step.positions[0]
    fig = validated(distribution_figure(step, 0))
    b = bars(fig)
    assert set(b) == {"p", "q", "residual", "final_residual"}
    for key in ("p", "q", "residual", "final_residual"):
        assert list(b[key].y) == pytest.approx(getattr(pos, key))
        assert list(b[key].customdata) == pos.ids
    assert sum(pos.residual) == pytest.approx(1.0, abs=1e-6)  # normalised
    # the candidates at this position are marked in draw order, the resampled token too
    cands = next(t for t in fig.data if t.meta == "candidates")
    assert list(cands.customdata) == [0, 1, 3]
    assert list(cands.text) == ["1st", "2nd", "resampled"]
    assert [list(fig.layout.xaxis.tickvals)[int(x)] for x in cands.x] == [pos.ids.index(t) for t in (0, 3, 1)]
    # u against a, red because the node was rejected
    u = next(t for t in fig.data if t.meta == "u")
    assert u.x[0] == 0.62 and u.marker.color == specviz.viz.STATUS_COLORS["rejected"]
    assert fig.layout.meta["a"] == pytest.approx(0.1) and fig.layout.meta["status"] == "rejected"
    assert any(s.x0 == pytest.approx(0.1) and s.x1 == pytest.approx(0.1) for s in fig.layout.shapes)
    assert "TV(p, q) = 0.55" in fig.layout.title.text
    assert bars(fig)["final_residual"].name == "final residual (resampled from)"
    assert bars(fig)["residual"].name == "residual"
    # labels: spaces and newlines made visible, HTML escaped, unknown ids named or decoded
    ticks = list(fig.layout.xaxis.ticktext)
    assert ticks[pos.ids.index(1)] == "·the" and ticks[pos.ids.index(2)] == "id 2"
    decoded = distribution_figure(step, 0, decode=lambda i: TEXTS[i])
    assert list(decoded.layout.xaxis.ticktext)[pos.ids.index(2)] == "↵"
    assert list(decoded.layout.xaxis.ticktext)[pos.ids.index(4)] == "&lt;b&gt;"


def test_distribution_of_an_accepted_node_and_a_one_candidate_rejection():
    step = skipped_sibling_step()
    fig = validated(distribution_figure(step, 1))
    assert "final_residual" not in bars(fig) and fig.layout.meta["status"] == "accepted"
    assert not [t for t in fig.data if t.meta == "u"]  # a = 1: no draw to place
    x = next(n for n in step.forest if n.token_id == 3 and n.status == "rejected")
    fig = validated(distribution_figure(step, x.id))
    # one candidate rejected: the final residual is the residual, drawn once and named as resampled from
    assert "final_residual" not in bars(fig) and bars(fig)["residual"].name == "residual (resampled from)"
    assert next(t for t in fig.data if t.meta == "u").x[0] == 0.9


def test_distribution_without_data_says_why():
    fig = distribution_figure(all_rejected_step(v2=False), 0)
    assert fig.layout.annotations[0].text == NO_POSITIONS and not fig.data
    step = all_rejected_step()
    assert "no node 99" in distribution_figure(step, 99).layout.annotations[0].text
    below = next(n for n in step.forest if n.status == "not_reached")
    text = distribution_figure(step, below.id).layout.annotations[0].text
    assert "never verified" in text and "was rejected" in text


# ---------------------------------------------------------------- real traces of tiny real models

REAL = [
    ("ar", {}),
    ("sd", {}),
    ("mcsd", {"k_config": "3x2"}),
    ("sequoia", {"size": 12, "depth": 4, "acceptance": "0.6,0.2,0.1"}),
]


@pytest.fixture(scope="module")
def real_traces():
    from tiny import tiny_pair

    pair = tiny_pair(vocab=16, draft="noisy", noise=0.3)
    return {
        (algo, temp): specviz.decode(pair, algo, prompt=[1, 2, 3], max_new_tokens=20, temperature=temp, seed=3, **kw)
        for algo, kw in REAL
        if algo in specviz.ALGORITHMS
        for temp in (0.0, 1.0)
    }


def test_narrative_on_real_traces(real_traces):
    seen = set()
    for (algo, temp), trace in real_traces.items():
        for step in trace.steps:
            text = step_narrative(step, algo)
            n = len(step.committed)
            assert f"**Bought** +{n} token{'s' if n != 1 else ''} for {step.target_calls} target call" in text
            assert f"{step.draft_calls} draft call" in text
            tested = [x for x in step.forest if x.status in ("accepted", "rejected")]
            # every tested node's test is told once: an exact match at T = 0, else u against a (or a certain a)
            told = (
                text.count("exact match at T = 0")
                if temp == 0
                else text.count(" → rejected") + text.count(" → accepted") + text.count("with no draw")
            )
            assert told == len(tested), (algo, temp, step.index, text)
            if any(x.status == "resampled" for x in step.forest):
                assert "**Resampled**" in text
                if temp > 0:  # the residual's top tokens are named by the texts the trace recorded
                    assert "top of the" in text and not re.search(r"\bid \d+ ", text), text
                seen.add("resampled")
            if algo == "ar":
                assert "**Drew**" in text and "**Drafted** nothing" in text
            elif any(x.status == "bonus" for x in step.forest) and step.n_drafted:
                assert "**Bonus**" in text
                seen.add("bonus")
            if "Never tested" in text:
                seen.add("skipped")
    assert seen == {"resampled", "bonus", "skipped"}


def test_informative_step_on_real_traces(real_traces):
    for (algo, _), trace in real_traces.items():
        k = informative_step(trace)
        chosen = trace.steps[k]
        with_rejection = [s for s in trace.steps if any(n.status == "rejected" for n in s.forest)]
        if with_rejection:
            assert chosen in with_rejection and chosen.n_drafted == max(s.n_drafted for s in with_rejection)
        else:
            assert chosen.n_drafted == max(s.n_drafted for s in trace.steps)
        if algo != "ar" and trace.steps[-1].n_drafted == 0:
            assert k != len(trace.steps) - 1


def test_tree_hover_on_real_trees_explains_skipped_siblings(real_traces):
    found = 0
    for (algo, temp), trace in real_traces.items():
        for step in trace.steps:
            idx = StepIndex(step)
            for n in step.forest:
                if n.status != "not_reached":
                    continue
                acc = idx.accepted_sibling(n)
                parent = idx.nodes.get(n.parent)
                if acc is not None and (parent is None or parent.status == "accepted"):
                    hover = hover_of(step, n.id)
                    assert "earlier sibling" in hover and "was rejected" not in hover
                    found += 1
    assert found > 0


def test_token_titles_on_real_traces_never_round_to_zero(real_traces):
    for trace in real_traces.values():
        html = specviz.viz.tokens_html(trace)
        assert "=0.000" not in html
        for m in re.finditer(r"\b[pqa]=([0-9.e\-]+)", html):
            assert float(m.group(1)) > 0 or m.group(1) == "0"


def test_distribution_on_a_real_trace(real_traces):
    trace = real_traces[("mcsd", 1.0)]
    assert trace.steps[0].positions, "the engine records per-position distributions (trace v2)"
    checked = 0
    for step in trace.steps:
        for n in step.forest:
            pos = next((r for r in step.positions if r.parent == n.parent), None)
            fig = distribution_figure(step, n.id)
            if pos is None:
                assert not fig.data
                continue
            b = bars(fig)
            assert list(b["p"].y) == pytest.approx(pos.p) and list(b["p"].customdata) == pos.ids
            cands = list(next(t for t in fig.data if t.meta == "candidates").customdata)
            if n.status != "not_reached":  # the record holds every tested and produced token
                assert n.token_id in pos.ids and n.id in cands
            elif n.token_id not in pos.ids:
                assert any("outside the recorded tokens" in a.text for a in fig.layout.annotations)
            if n.draw is not None:
                assert next(t for t in fig.data if t.meta == "u").x[0] == n.draw
            checked += 1
        if step.index < 2:
            validated(distribution_figure(step, step.forest[0].id))
    assert checked
    json.loads(distribution_figure(trace.steps[0], 0).to_json())
    replayed = specviz.RunTrace.from_json(trace.to_json())  # no tokenizer: labels come from the trace
    labels = list(bars(distribution_figure(replayed.steps[0], 0))["p"].x)
    assert labels and not any(str(x).startswith("id ") for x in labels)


# ---------------------------------------------------------------- colours follow the algorithm


def test_algorithm_colours_are_stable_and_distinct():
    from specviz.viz.style import ALGORITHM_COLORS, algorithm_color

    names = ["ar", "sd", "pld", "mcsd", "specinfer", "sequoia", "eesd", "dsbd", "beam", "batch_sd", "biased_sd"]
    colours = [algorithm_color(a) for a in names]
    assert len(set(colours)) == len(names) and set(names) <= set(ALGORITHM_COLORS)
    assert not set(colours) & set(specviz.viz.STATUS_COLORS.values())
    assert algorithm_color("my_new_algo") == algorithm_color("my_new_algo") and algorithm_color("SD") == colours[1]
    for a in specviz.ALGORITHMS:
        assert a in ALGORITHM_COLORS, f"{a} has no fixed colour"


def test_comparison_figures_colour_runs_by_algorithm_not_position(real_traces):
    from specviz.viz.style import algorithm_color

    ar, sd, mcsd = real_traces[("ar", 0.0)], real_traces[("sd", 0.0)], real_traces[("mcsd", 0.0)]
    for runs in ([("ar", ar), ("sd", sd), ("mcsd", mcsd)], [("mcsd", mcsd), ("sd", sd), ("ar", ar)]):
        for build in (specviz.viz.tokens_per_step_figure, specviz.viz.cumulative_figure):
            fig = build(runs)
            for label, trace in runs:
                line = next(t for t in fig.data if t.name == label)
                assert line.line.color == algorithm_color(trace.algorithm)
        hist = specviz.viz.acceptance_histogram_figure(runs)
        for label, trace in runs:
            assert next(t for t in hist.data if t.name == label).marker.color == algorithm_color(trace.algorithm)
    # a second run of the same algorithm keeps the colour and is told apart by its dash
    fig = validated(specviz.viz.cumulative_figure([("sd γ=4", sd), ("sd γ=2", real_traces[("sd", 1.0)])]))
    a, b = fig.data[0], next(t for t in fig.data if t.name == "sd γ=2")
    assert a.line.color == b.line.color and a.line.dash != b.line.dash


def test_probabilities_keep_significant_digits():
    from specviz.viz.style import fmt_prob

    assert [fmt_prob(x) for x in (0.156, 0.5, 1.0, 0.0, None)] == ["0.156", "0.5", "1", "0", "–"]
    assert fmt_prob(4.213e-4) == "4.21e-4" and fmt_prob(1.2e-7) == "1.2e-7" and fmt_prob(0.0012345) == "0.00123"
    assert fmt_prob(0.9999996) == "1−4e-7"  # an uncertain a never reads as a certain 1


def test_greedy_specinfer_copies_are_told_one_way_in_the_text_and_the_narrative():
    """Issue 35 point 2: greedy ``specinfer`` draws its roots with replacement from a point mass, so it
    drafts copies. The trace decides their fate: after an accepted first copy they are never tested
    (``not_reached``: not struck in the text, "Never tested" in the narrative, counted in the accepted
    token's tooltip); after a rejected one each is rejected (struck, and called a copy, in both). The
    narrative says why copies are drafted."""
    from html import escape

    from tiny import tiny_pair

    from specviz.viz.explain import copies
    from specviz.viz.tokens import step_html

    pair = tiny_pair("llama", vocab=64, draft="noisy", init_range=0.05, hidden=32)
    trace = specviz.decode(pair, "specinfer", [1, 2, 3, 4], max_new_tokens=24, temperature=0, seed=1)
    fates = set()
    for step in trace.steps:
        copy = copies(step)
        roots = [n for n in step.forest if n.parent is None and n.id in copy]
        if not roots:
            continue
        first = step.forest[copy[roots[0].id]]
        text, html = step_narrative(step, "specinfer"), step_html(step)
        assert (
            "at T = 0 the draft's warped law is a point mass on its argmax, so every i.i.d. draw is the same "
            "token" in text
        ), text
        struck = re.findall(r'sv-rejected" title="([^"]*)">([^<]*)<', html)
        copied = [t for t, tok in struck if tok == escape(first.token_text) and "a copy of the rejected draft" in t]
        if first.status == "accepted":
            assert {n.status for n in roots} == {"not_reached"}
            assert (
                not copied
                and f"Never tested: {', '.join([_q(first)] * len(roots))} (copies of the accepted draft" in text
            ), text
            assert f"accepted draft ({len(roots)} copies of it after it never tested)" in html
        else:
            assert first.status == "rejected" and {n.status for n in roots} == {"rejected"}
            assert len(copied) == len(roots) and "Never tested" not in text.split("**Tests**")[1].split("\n- ")[1]
            assert text.count(", a copy of (1)") == len(roots), text
        fates.add(first.status)
    assert fates == {"accepted", "rejected"}  # both fates met on this trace


def _q(node: TreeNode) -> str:
    """A token as the narrative quotes it (the tiny pair's tokens are ``<id>``, escaped for Markdown)."""
    return '"' + node.token_text.replace("<", "&lt;").replace(">", "&gt;") + '"'
