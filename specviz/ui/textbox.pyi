"""``TextBox``: a column's coloured text, to which a live run appends each new step (issue 34).

A ``gr.HTML`` text was re-sent whole on every update that changed it, and a live run changes it every
step: the new step's tokens, and the current-step outline moving onto them. So the live page's update
grew with the whole text (four columns' texts were 27 kB of a 71 kB step) and the browser parsed the
whole text again each time. A ``TextBox``'s value is the text as its parts (``viz.tokens.text_parts``:
the prompt, each step's element unmarked, in order) with the current step apart (``cur``), and the
notes around a long run's window of steps (``before``, ``after``); a live run sends its value on
every update, and Gradio's stream sends each value as its difference from the one before
(``gradio.utils.diff``): the new steps' elements and the new ``cur``, whatever the text's length.
The page's script (``TEXT_JS``) appends the new steps' elements to the ones it has drawn, redraws a
step whose element changed, and marks the current step and those after it by their ``data-step``;
anything else that changed (another run, another window, the text pinned at the end of a run) is
drawn again in full. ``text_html`` is the HTML the script draws for a value (the tests compare).

A plain HTML string is drawn as it is.
"""

from __future__ import annotations

from typing import Any

import gradio as gr

from specviz.viz.tokens import text_from_parts

TextValue = dict[str, Any]


def text_value(
    parts: dict[str, Any], current: int | None, *, before: str = "", after: str = "", pinned: bool = False
) -> TextValue:
    """A ``TextBox``'s value: a text's parts (``viz.tokens.text_parts``), its current step (0-based;
    ``None``: none marked), the notes before and after it (a long run's window) and whether it is
    ``pinned`` (each column on its own step after a run: the slider's script leaves it alone)."""
    return {**parts, "cur": current, "before": before, "after": after, "pinned": pinned}


def text_html(value: TextValue | str | None) -> str:
    """The HTML the page shows for a ``TextBox`` value (what ``TEXT_JS`` draws, appending or not)."""
    if not isinstance(value, dict):
        return value or ""
    out = value["before"] + text_from_parts(value, value["cur"]) + value["after"]
    return f'<div class="sv-pinned">{out}</div>' if value["pinned"] else out


# Runs once per TextBox when the page mounts it (gr.HTML's js_on_load: ``element``, ``props``, ``watch``).
# ``shown`` is what is drawn: the frame (everything but the steps and the current step) and the steps'
# elements, as their HTML. The watcher may see several values at once (only the latest): it compares the
# latest with what is drawn, never with the value before.
TEXT_JS = r"""
const root = element.querySelector(".sv-textroot");
let shown = null;
const frame = (v) => JSON.stringify([v.pinned, v.before, v.head, v.tail, v.after]);
const whole = (v) => {
  const text = '<div class="sv-text">' + v.head + v.steps.join("") + v.tail + "</div>";
  const out = v.before + text + v.after;
  return v.pinned ? '<div class="sv-pinned">' + out + "</div>" : out;
};
const mark = (text, cur) => {
  for (const s of text.querySelectorAll(":scope > .sv-step")) {
    const d = Number(s.dataset.step) - 1;
    s.classList.toggle("sv-cur", cur !== null && d === cur);
    s.classList.toggle("sv-future", cur !== null && d > cur);
  }
};
const draw = () => {
  const v = props.value;
  if (!v || typeof v !== "object" || !Array.isArray(v.steps)) {
    root.innerHTML = typeof v === "string" ? v : "";
    shown = null;
    return;
  }
  const f = frame(v);
  let text = root.querySelector(".sv-text");
  if (!shown || !text || shown.frame !== f || v.tail || v.steps.length < shown.steps.length) {
    root.innerHTML = whole(v);
    text = root.querySelector(".sv-text");
  } else {
    const els = text.querySelectorAll(":scope > .sv-step");
    for (let j = 0; j < shown.steps.length; j++) if (shown.steps[j] !== v.steps[j]) els[j].outerHTML = v.steps[j];
    if (v.steps.length > shown.steps.length) text.insertAdjacentHTML("beforeend", v.steps.slice(shown.steps.length).join(""));
  }
  shown = {frame: f, steps: v.steps.slice()};
  mark(text, v.cur === undefined ? null : v.cur);
};
watch("value", draw);
draw();
"""

from gradio.events import Dependency

class TextBox(gr.HTML):
    """A column's coloured text on an element that stays (module docstring). Its value: a text's parts
    (``text_value``), or an HTML string."""

    def __init__(self, value: Any = "", **kwargs: Any):
        super().__init__(value=value, html_template='<div class="sv-textroot"></div>', js_on_load=TEXT_JS, **kwargs)

    def postprocess(self, value: Any) -> TextValue | str:  # type: ignore[override]
        """The value as it is (parts or HTML); ``None`` as no text."""
        return "" if value is None else value

    def api_info(self) -> dict[str, Any]:
        return {"type": "object", "description": "a coloured text as its parts (specviz.ui.textbox)"}
    from typing import Callable, Literal, Sequence, Any, TYPE_CHECKING
    from gradio.blocks import Block
    if TYPE_CHECKING:
        from gradio.components import Timer
        from gradio.components.base import Component