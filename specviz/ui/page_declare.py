"""The page, declared once (no handler here): the sidebar (pair, columns, sampling, replay), the prompt
and its examples, the step controls, the columns, the comparison and Measure. Components are made in
the order the page shows them (Gradio numbers them so); ``ui.events`` wires them."""

from __future__ import annotations

import html
from dataclasses import fields
from typing import Any

import gradio as gr

from specviz import defaults
from specviz.algorithms.registry import AlgorithmSpec
from specviz.ui import papers_view, render
from specviz.ui.config import AppConfig, public_notice
from specviz.ui.editor import ColumnEditor
from specviz.ui.examples import CHAT_PROMPTS, CODE_PROMPTS, example_prompts
from specviz.ui.layers_view import LayersView
from specviz.ui.layout import SLIDER_RANGES, Controls, Page, Slot, declare_figures
from specviz.ui.measure import measurements_html
from specviz.ui.numberbox import NumberBox, SeedBox, SliderBox
from specviz.ui.pair_loading import PairLoader
from specviz.ui.runner import Session
from specviz.ui.style import HEADER_HTML
from specviz.ui.validate import max_new_limit
from specviz.viz import legend_html


def declare_page(
    cfg: AppConfig,
    session: gr.State,
    pairs: PairLoader,
    algorithms: dict[str, AlgorithmSpec],
    n_slots: int,
    default_algos: list[str],
    layers: LayersView,
) -> tuple[Page, Controls, tuple]:
    """Every component of the page, top to bottom; returns the outputs (``Page``), the other components
    the events read (``Controls``) and the layer view's parts (wired last: fn_index is part of the API)."""
    default_pair = pairs.registry.get(pairs.default_key)
    chat_on = default_pair is not None and default_pair.has_chat_template
    limit = max_new_limit(default_pair.context_length if default_pair is not None else None, 0, cfg.max_new_tokens_cap)
    gr.HTML(HEADER_HTML, elem_id="sv-header")
    with gr.Sidebar(width=370, open=True, label="Settings", elem_id="sv-sidebar"):
        parts: dict[str, Any] = {
            **pair_section(pairs),
            "editor": columns_section(algorithms, default_algos, n_slots),
            **sampling_section(cfg, limit),
            **replay_section(cfg),
        }
    parts.update(prompt_area(cfg, chat_on))
    parts["status"] = gr.HTML(render.status_html(Session(), html.escape(pairs.startup_message)), elem_id="sv-status")
    parts.update(step_controls())
    with gr.Row(equal_height=False, elem_id="sv-columns"):
        parts["slots"] = [Slot.declare(i) for i in range(n_slots)]
    parts.update(comparison_and_measure(cfg))
    papers_view.declare()  # the shipped papers report (python -m specviz papers), static
    layer_parts = layers.declare()
    notice = public_notice(cfg)  # the page's footer says public mode is on, and its limits
    gr.Markdown(notice, elem_id="sv-footer", elem_classes=["sv-note"], visible=bool(notice))
    parts["session"] = session
    page = Page(**{f.name: parts[f.name] for f in fields(Page)})
    return page, Controls(**{f.name: parts[f.name] for f in fields(Controls)}), layer_parts


def pair_section(pairs: PairLoader) -> dict[str, Any]:
    """The preset chooser, its note, the custom pair's two boxes, Load pair and the loaded pair's line."""
    default_choice = pairs.default_key or pairs.presets[0].key
    gr.Markdown("### Model pair")
    pair_choice = gr.Dropdown(
        choices=pairs.choices(), value=default_choice, label="preset", show_label=False, elem_id="sv-pair-choice"
    )
    note = next((p.note for p in pairs.presets if p.key == default_choice), "")  # the chosen preset's
    pair_note = gr.Markdown(note, elem_classes=["sv-note"])
    with gr.Group(visible=False) as custom_group:
        custom_target = gr.Textbox(
            label="target (hub id or local directory)",
            placeholder="e.g. HuggingFaceTB/SmolLM2-1.7B",
            elem_id="sv-target",
        )
        custom_draft = gr.Textbox(
            label="draft (same tokenizer)",
            placeholder="e.g. HuggingFaceTB/SmolLM2-135M",
            elem_id="sv-draft",
        )
    load_btn = gr.Button("Load pair", size="sm", elem_id="sv-load")
    pair_md = gr.Markdown(pairs.pair_markdown(pairs.default_key), elem_id="sv-pair-status", elem_classes=["sv-note"])
    return dict(
        pair_choice=pair_choice,
        pair_note=pair_note,
        custom_group=custom_group,
        custom_target=custom_target,
        custom_draft=custom_draft,
        load_btn=load_btn,
        pair_md=pair_md,
    )


def columns_section(algorithms: dict[str, AlgorithmSpec], default_algos: list[str], n_slots: int) -> ColumnEditor:
    """The column editor (a column is an algorithm with its settings; one algorithm may fill several,
    ``ui.editor``) and the guide to the algorithms."""
    gr.Markdown("### Columns")
    editor = ColumnEditor.declare(algorithms, default_algos, n_slots)
    with gr.Accordion("What each algorithm does", open=False):
        gr.Markdown(algorithm_guide(algorithms))
    return editor


def algorithm_guide(algorithms: dict[str, AlgorithmSpec]) -> str:
    """The sidebar's "What each algorithm does": one line per registered algorithm."""
    lines = []
    for name, spec in algorithms.items():
        tags = ["lossless" if spec.lossless else "not lossless"]
        if not spec.needs_draft:
            tags.append("no draft")
        lines.append(f"- **{name}**: {spec.description} _({'; '.join(tags)}; {spec.paper})_")
    return "\n".join(lines)


def sampling_section(cfg: AppConfig, limit: int) -> dict[str, Any]:
    """Max new tokens, seed, temperature, top-p, top-k, the inputs' message and the pace. NumberBox: every
    value, text and NaN included, reaches the server's check, whose message names the box and says what
    is allowed (Gradio's own checks show a bare "Error")."""
    gr.Markdown("### Sampling")
    with gr.Row():
        max_new = NumberBox(
            min(cfg.default_max_new_tokens, limit),
            label="max new tokens",
            precision=0,
            info=f"at most {limit} minus the prompt's tokens",
            elem_id="sv-max-new",
        )
        # text, not a number: a JavaScript number rounds whole numbers above 2^53 (validate.check_seed)
        seed = SeedBox(
            str(defaults.SEED),
            label="seed",
            info="0 to 2^63 − 1",
            max_lines=1,
            max_length=64,
            elem_id="sv-seed",
        )
    with gr.Row():
        temperature = SliderBox(
            *SLIDER_RANGES["temperature"],
            value=defaults.TEMPERATURE,
            step=0.05,
            label="temperature",
            info="0 = greedy",
            elem_id="sv-temperature",
        )
        top_p = SliderBox(*SLIDER_RANGES["top_p"], value=defaults.TOP_P, step=0.01, label="top-p", elem_id="sv-top-p")
    top_k = NumberBox(defaults.TOP_K, label="top-k", info="0 = off", precision=0, elem_id="sv-top-k")
    input_msg = gr.Markdown("", elem_id="sv-input-msg", elem_classes=["sv-note"])
    paced_for = (
        f" Here a run is paced for at most {cfg.max_wait_s} s in all, then goes at full speed."
        if cfg.max_wait_s is not None
        else ""
    )
    pace = SliderBox(
        0,
        cfg.max_step_delay_s,
        value=min(cfg.default_pace_s, cfg.max_step_delay_s),
        step=0.05,
        label="pace (seconds per step, live)",
        info="a live run takes at least this long per step so you can watch it; "
        "0 = as fast as it goes. Measure is never paced." + paced_for,
        elem_id="sv-pace",
    )
    return dict(
        max_new=max_new, seed=seed, temperature=temperature, top_p=top_p, top_k=top_k, input_msg=input_msg, pace=pace
    )


def replay_section(cfg: AppConfig) -> dict[str, Any]:
    """The upload box of saved traces."""
    gr.Markdown("### Replay a saved trace")
    upload = gr.File(
        label=f"trace .json or .json.gz (up to {cfg.max_upload_bytes // 2**20} MB each)",
        file_count="multiple",
        file_types=[".json", ".gz"],
        type="filepath",
        elem_id="sv-upload",
        height=110,
    )
    return dict(upload=upload)


def prompt_area(cfg: AppConfig, chat_on: bool) -> dict[str, Any]:
    """The prompt, Run, Stop, the chat switch and the two example pickers (gr.Dataset as gr.Examples draws
    it, with a handler of ours that checks the index: gr.Examples' own load_example raised a raw TypeError
    on a hostile one)."""
    with gr.Row(equal_height=True, elem_id="sv-prompt-row"):
        prompt = gr.Textbox(
            label="prompt",
            lines=3,
            max_lines=8,
            scale=6,
            elem_id="sv-prompt",
            value=example_prompts(chat_on)[0],
            max_length=cfg.max_prompt_chars,
        )
        with gr.Column(scale=1, min_width=130):
            run_btn = gr.Button("Run ▶", variant="primary", elem_id="sv-run")
            stop_btn = gr.Button("Stop ■", variant="stop", size="sm", interactive=False, elem_id="sv-stop")
            chat = gr.Checkbox(
                chat_on, label="chat", elem_id="sv-chat", info="as a user turn in the pair's chat template"
            )
    chat_examples = gr.Dataset(
        components=[prompt, chat],
        samples=[[p, True] for p in CHAT_PROMPTS],
        type="index",
        label="questions (chat on; a click loads a chat pair if need be)",
        elem_id="sv-examples-chat",
    )
    code_examples = gr.Dataset(
        components=[prompt, chat],
        samples=[[p, False] for p in CODE_PROMPTS],
        type="index",
        label="code (chat off; a click loads bundled-stdlib-pair if need be)",
        elem_id="sv-examples-code",
    )
    return dict(
        prompt=prompt,
        run_btn=run_btn,
        stop_btn=stop_btn,
        chat=chat,
        chat_examples=chat_examples,
        code_examples=code_examples,
    )


def step_controls() -> dict[str, Any]:
    """The step slider and its buttons, the step's label, the legend, and the two hidden boxes the page
    writes into: a click on a tree node ("column:node:nonce", NODE_CLICK_JS) and the step it has drawn
    ("step:nonce", the live run's back-pressure)."""
    with gr.Row(equal_height=True, elem_id="sv-scrub"):
        prev_btn = gr.Button("◀ prev", size="sm", min_width=70, scale=0, elem_id="sv-prev")
        slider = gr.Slider(1, 2, value=1, step=1, label="step", interactive=False, scale=8, elem_id="sv-step")
        next_btn = gr.Button("next ▶", size="sm", min_width=70, scale=0, elem_id="sv-next")
        play_btn = gr.Button("▶ play", size="sm", min_width=70, scale=0, elem_id="sv-play")
        pause_btn = gr.Button("❚❚", size="sm", min_width=50, scale=0, elem_id="sv-pause")
        latest_btn = gr.Button("latest ⏭", size="sm", min_width=80, scale=0, elem_id="sv-latest")
    step_label = gr.Markdown("no steps yet", elem_id="sv-step-label", elem_classes=["sv-note"])
    gr.HTML(legend_html(), elem_id="sv-legend")
    node_pick = gr.Textbox(elem_id="sv-node-pick", elem_classes=["sv-hidden"], show_label=False, container=False)
    page_report = gr.Textbox(elem_id="sv-shown", elem_classes=["sv-hidden"], show_label=False, container=False)
    return dict(
        prev_btn=prev_btn,
        slider=slider,
        next_btn=next_btn,
        play_btn=play_btn,
        pause_btn=pause_btn,
        latest_btn=latest_btn,
        step_label=step_label,
        node_pick=node_pick,
        page_report=page_report,
    )


def comparison_and_measure(cfg: AppConfig) -> dict[str, Any]:
    """The comparison table and figures, then Measure's button, its explanation and its results."""
    gr.Markdown("## Comparison", elem_id="sv-compare-title")
    table = gr.HTML(render.table_html(Session()), elem_id="sv-table")
    figures = declare_figures()
    gr.Markdown("## Measure", elem_id="sv-measure-title")
    with gr.Row(equal_height=True):
        measure_btn = gr.Button("Measure ⏱", size="sm", scale=0, min_width=120, elem_id="sv-measure-btn")
        gr.Markdown(
            f"Times the columns on this prompt and settings, unpaced and interleaved: a "
            f"warm-up round, then {cfg.measure_repeats} timed rounds; medians, what they ran under "
            "and a verdict. Use these numbers, not a live run's, to compare speed.",
            elem_classes=["sv-note"],
        )
    measurements = gr.HTML(measurements_html([]), elem_id="sv-measure")
    return dict(table=table, figures=figures, measure_btn=measure_btn, measurements=measurements)
