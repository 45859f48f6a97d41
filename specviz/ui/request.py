"""A visitor's request checked on the server before anything runs: the columns, the prompt, the
sampling settings, the session's pair, the number boxes against the pair's context and this app's cap
(``ui.validate``), and the cost of a run (``ui.budget``). Whatever the page or an API client sends,
a request is either refused with one sentence for the status line or handed on as checked values.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import gradio as gr

from specviz.algorithms.registry import AlgorithmSpec
from specviz.core.sampling import SamplingConfig
from specviz.errors import SpecvizError
from specviz.models.chat import encode_prompt
from specviz.models.loading import ModelPair
from specviz.ui.budget import cost_refusal
from specviz.ui.columns import check_columns
from specviz.ui.config import AppConfig
from specviz.ui.layout import View
from specviz.ui.pair_loading import PairLoader
from specviz.ui.runner import Session, parse_prompt
from specviz.ui.safe_text import md_text
from specviz.ui.validate import Checked, check_inputs


def input_markdown(checked: Checked | None) -> str:
    """The line under the sampling inputs: the problems, or the prompt's size and the token limit."""
    if checked is None:
        return ""
    if checked.problems:
        return "\n".join(f"⚠️ **{md_text(p)}**" for p in checked.problems)  # they quote the visitor's input
    if checked.prompt_tokens is None:
        return ""
    return (
        f"prompt: {checked.prompt_tokens} tokens · max new tokens can be up to {checked.max_new_limit} "
        "for this prompt and pair"
    )


def input_view(checked: Checked | None) -> View:
    """The line under the sampling inputs, as a view."""
    return {"input_msg": gr.Markdown(value=input_markdown(checked), visible=True)}


@dataclass
class Request:
    """A run's or a measurement's request: the pair, the checked number boxes and the columns as
    ``(algorithm, settings)``, or the sentence refusing it (then whatever was checked before it)."""

    pair: ModelPair | None = None
    checked: Checked | None = None
    columns: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    refusal: str | None = None


def over_budget(
    chosen: list[tuple[str, dict[str, Any]]], max_new_tokens: int, config: AppConfig, measure: bool = False
) -> str | None:
    """The sentence refusing a request over this app's cost cap (``AppConfig.max_run_cost``) or,
    for Measure, over ``max_measure_columns``; None if it fits."""
    if measure and len(chosen) > config.max_measure_columns:
        return (
            f"Measure times at most {config.max_measure_columns} columns here (each a warm-up and "
            f"{config.measure_repeats} timed runs); you have {len(chosen)}."
        )
    for i, (algo, params) in enumerate(chosen, 1):
        refusal = cost_refusal(algo, params, max_new_tokens, config.max_run_cost)
        if refusal:  # which column, when an algorithm may fill several
            return refusal if len(chosen) == 1 else f"Column {i}: {refusal}"
    return None


def deadline(limit_s: float | None, clock: Callable[[], float]) -> Callable[[], bool]:
    """Whether a run's time (``limit_s`` from now, by ``clock``) is up; never without a limit."""
    if limit_s is None:
        return lambda: False
    end = clock() + limit_s
    return lambda: clock() >= end


class RequestChecker:
    """Checks requests against this app's configuration, algorithms and the visitors' pairs."""

    def __init__(self, config: AppConfig, algorithms: Mapping[str, AlgorithmSpec], n_slots: int, pairs: PairLoader):
        self.config = config
        self.algorithms = algorithms
        self.n_slots = n_slots
        self.pairs = pairs

    def check_inputs(
        self, pair: ModelPair | None, prompt: str, max_new_tokens: Any, top_k: Any, seed: Any, chat: Any = False
    ) -> Checked:
        """The sampling inputs checked against the app's cap and, with a pair, its context and the prompt
        (as the models will read it: in the chat template when ``chat``)."""
        prompt_tokens: int | None = None
        context = None
        if pair is not None and isinstance(prompt, str) and prompt.strip():
            try:
                prompt_tokens = len(encode_prompt(pair, parse_prompt(pair, prompt), chat is True)[0])
                context = pair.context_length
            except SpecvizError:
                pass
        return check_inputs(
            max_new_tokens,
            top_k,
            seed,
            cap=self.config.max_new_tokens_cap,
            context_length=context,
            prompt_tokens=prompt_tokens,
        )

    def input_message(
        self, session: Session, prompt: str, max_new_tokens: Any, top_k: Any, seed: Any, chat: Any = False
    ) -> View:
        """The message under the sampling inputs, updated as they are typed."""
        return input_view(self.check_inputs(self.pairs.loaded(session), prompt, max_new_tokens, top_k, seed, chat))

    def check(
        self,
        session: Session,
        prompt: str,
        max_new_tokens: Any,
        top_k: Any,
        seed: Any,
        columns: Any,
        chat: Any = False,
        temperature: Any = 0.0,
        top_p: Any = 1.0,
    ) -> Request:
        """The request, or its refusal: a sentence for the status line. ``columns`` is ``ui.columns``'
        value, checked here whoever sent it."""
        if not isinstance(chat, bool):
            return Request(refusal=f"chat must be on or off (true or false), got {type(chat).__name__}.")
        chosen, problem = check_columns(columns, self.algorithms, self.n_slots)
        if problem:
            return Request(refusal=problem)
        if not isinstance(prompt, str) or not prompt.strip():
            return Request(columns=chosen, refusal="The prompt is empty: type some text or pick an example.")
        if len(prompt) > self.config.max_prompt_chars:
            return Request(
                columns=chosen,
                refusal=(f"The prompt is {len(prompt)} characters; the limit here is {self.config.max_prompt_chars}."),
            )
        try:  # the sampling settings, as decode will check them (NaN, inf, text: a sentence, not torch's error)
            SamplingConfig(temperature, 0, top_p)
        except SpecvizError as exc:
            return Request(columns=chosen, refusal=str(exc))
        pair, problem = self.pairs.session_pair(session)
        if pair is None:
            return Request(columns=chosen, refusal=problem)
        if chat and not pair.has_chat_template:
            return Request(
                pair,
                columns=chosen,
                refusal="This pair has no chat template: turn chat off to run the prompt as it is.",
            )
        checked = self.check_inputs(pair, prompt, max_new_tokens, top_k, seed, chat)
        if not checked.ok:
            return Request(pair, checked, chosen, " ".join(checked.problems))
        return Request(pair, checked, chosen)
