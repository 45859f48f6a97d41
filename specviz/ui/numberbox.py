"""A number box and a slider whose values reach the app's handlers as the client sent them.

Gradio's ``gr.Number`` checks and rounds the value before any handler sees it: text (``"abc"``) raises a
``TypeError``, NaN a ``ValueError`` (``int(round(nan))`` with ``precision=0``), infinity an
``OverflowError``, and a value outside ``minimum``/``maximum`` an error that does not say which box it
came from; the page then shows Gradio's bare "Error" or a sentence without the field's name. The app
checks every number itself (``ui.validate.check_inputs`` for the sampling boxes, ``Param.validate`` for
an algorithm's parameters) with a sentence naming the field and its range, so ``NumberBox`` hands the
value over untouched: no rounding (a 2.5 seed is refused, not run as 2), no bound check (the range is
still the browser's ``min``/``max``). It is drawn by Gradio's own Number component. ``SliderBox`` does
the same for ``gr.Slider`` (whose preprocessing raises the same errors: text sent through the API got the
bare "Error"); temperature and top-p are checked by ``SamplingConfig``, pace and an algorithm's slider
parameters by the app and ``Param.validate``, each naming the field.

``SeedBox`` is a text box (Gradio's ``gr.Textbox``) whose value likewise reaches the handler untouched:
the page sends the seed as the text typed, so every whole number up to 2^63 − 1 arrives exact (a number
box's JavaScript float rounds those above 2^53), and an API client's int or float arrives as that int or
float, not as its text, so ``ui.validate.check_seed`` can say which it refused.

Gradio writes a typing stub for a component class beside its module when it is imported
(``numberbox.pyi``, rewritten when the class changes); it is committed so that a checkout stays clean."""

from __future__ import annotations

from typing import Any

import gradio as gr


class NumberBox(gr.Number):
    is_template = True  # the page draws it as gradio's "number"

    def preprocess(self, payload: Any) -> Any:
        return payload


class SliderBox(gr.Slider):
    is_template = True  # the page draws it as gradio's "slider"

    def preprocess(self, payload: Any) -> Any:
        return payload


class SeedBox(gr.Textbox):
    is_template = True  # the page draws it as gradio's "textbox"

    def preprocess(self, payload: Any) -> Any:
        return payload
