"""Pure figure builders: a trace or a step in, a ``plotly.graph_objects.Figure`` (or HTML) out.

No Gradio here and no model: everything is computed from ``RunTrace`` / ``StepRecord`` data, so the
same functions draw a live run, a replayed JSON trace or a benchmark result.
"""

from specviz.viz.compare import (
    acceptance_histogram_figure,
    cumulative_figure,
    time_breakdown_figure,
    tokens_per_step_figure,
)
from specviz.viz.controller import CONTROLLER_VIEWS, controller_figure, controller_kind, register_view, thompson_figures
from specviz.viz.distribution import distribution_figure
from specviz.viz.narrative import informative_step, step_narrative
from specviz.viz.race import race_figure
from specviz.viz.serving import acceptance_per_position_figure, step_latency_figure
from specviz.viz.style import STATUS_COLORS, STATUS_LABELS, algorithm_color, message_figure
from specviz.viz.table import TABLE_CSS, comparison_rows, comparison_table_html, first_divergence, greedy_check
from specviz.viz.tokens import TOKENS_CSS, legend_html, text_parts, text_upto, tokens_html
from specviz.viz.tree import tree_figure, tree_layout

CSS = TOKENS_CSS + TABLE_CSS

__all__ = [
    "CONTROLLER_VIEWS",
    "CSS",
    "STATUS_COLORS",
    "STATUS_LABELS",
    "TABLE_CSS",
    "TOKENS_CSS",
    "acceptance_histogram_figure",
    "acceptance_per_position_figure",
    "algorithm_color",
    "comparison_rows",
    "comparison_table_html",
    "controller_figure",
    "controller_kind",
    "cumulative_figure",
    "distribution_figure",
    "first_divergence",
    "greedy_check",
    "informative_step",
    "legend_html",
    "message_figure",
    "race_figure",
    "register_view",
    "step_latency_figure",
    "step_narrative",
    "step_tree_figure",
    "text_parts",
    "text_upto",
    "thompson_figures",
    "time_breakdown_figure",
    "tokens_html",
    "tokens_per_step_figure",
    "tree_figure",
    "tree_layout",
]


def step_tree_figure(trace, step: int, **kwargs):
    """``tree_figure`` of step ``step`` (0-based, clamped) of ``trace`` with its context text."""
    if trace is None or not trace.steps:
        return tree_figure(None, **kwargs)
    step = max(0, min(step, len(trace.steps) - 1))
    feature = (trace.drafter or {}).get("kind") == "feature"
    return tree_figure(trace.steps[step], context=trace.prompt_text + text_upto(trace, step), feature=feature, **kwargs)
