"""A number box whose value reaches the app's handlers as the client sent it.

Gradio's ``gr.Number`` checks and rounds the value before any handler sees it: text (``"abc"``) raises a
``TypeError``, NaN a ``ValueError`` (``int(round(nan))`` with ``precision=0``), infinity an
``OverflowError``, and a value outside ``minimum``/``maximum`` an error that does not say which box it
came from; the page then shows Gradio's bare "Error" or a sentence without the field's name. The app
checks every number itself (``ui.validate.check_inputs`` for the sampling boxes, ``Param.validate`` for
an algorithm's parameters) with a sentence naming the field and its range, so ``NumberBox`` hands the
value over untouched: no rounding (a 2.5 seed is refused, not run as 2), no bound check (the range is
still the browser's ``min``/``max``). It is drawn by Gradio's own Number component.

Gradio writes a typing stub for a component class beside its module when it is imported
(``numberbox.pyi``, rewritten when the class changes); it is committed so that a checkout stays clean."""
from __future__ import annotations

from typing import Any

import gradio as gr

from gradio.events import Dependency

class NumberBox(gr.Number):
    is_template = True  # the page draws it as gradio's "number"

    def preprocess(self, payload: Any) -> Any:
        return payload
    from typing import Callable, Literal, Sequence, Any, TYPE_CHECKING
    from gradio.blocks import Block
    if TYPE_CHECKING:
        from gradio.components import Timer
        from gradio.components.base import Component
class SliderBox(gr.Slider):
    is_template = True  # the page draws it as gradio's "slider"

    def preprocess(self, payload: Any) -> Any:
        return payload
    from typing import Callable, Literal, Sequence, Any, TYPE_CHECKING
    from gradio.blocks import Block
    if TYPE_CHECKING:
        from gradio.components import Timer
        from gradio.components.base import Component

    
class SeedBox(gr.Textbox):
    is_template = True  # the page draws it as gradio's "textbox"

    def preprocess(self, payload: Any) -> Any:
        return payload
    from typing import Callable, Literal, Sequence, Any, TYPE_CHECKING
    from gradio.blocks import Block
    if TYPE_CHECKING:
        from gradio.components import Timer
        from gradio.components.base import Component

    