"""``SkipBlocks``: ``gr.Blocks`` whose outputs left unchanged with ``gr.skip()`` cost nothing on the server.

The app's run streams one update a step to about forty outputs, most of them unchanged
(``gr.skip()``). Gradio 6 treats a skip as a property update: for each one it builds a new
component from the old one's constructor arguments and computes its config twice, to send back
``{"__type__": "update"}``, the skip itself. That was about half of a one-token run's server time,
paid again on every step of every visitor's live run. ``SkipBlocks.postprocess_data`` hands Gradio
only the outputs that change and puts the skips back in their places: the client receives exactly
what Gradio would have sent (``tests/test_skip_blocks.py`` compares the two, so a Gradio that
changes what a skip means fails there) and the session's component state is the one a skip leaves.
"""

from __future__ import annotations

import copy
from typing import Any

import gradio as gr
from gradio.blocks import Block, convert_component_dict_to_list

SKIP = gr.skip()  # {"__type__": "update"}: what a skipped output is, and what the client receives for it


def is_skip(value: Any) -> bool:
    """Whether ``value`` is ``gr.skip()`` (equally ``gr.update()`` with no arguments): no change."""
    return type(value) is dict and value == SKIP


class SkipBlocks(gr.Blocks):
    """``gr.Blocks`` with skipped outputs passed through unprocessed (module docstring)."""

    async def postprocess_data(self, block_fn: Any, predictions: Any, state: Any) -> list[Any]:
        outputs = block_fn.outputs
        if isinstance(predictions, dict) and predictions and all(isinstance(k, Block) for k in predictions):
            predictions = convert_component_dict_to_list(outputs, predictions)  # {component: value}, the rest skipped
        if (
            block_fn.batch
            or block_fn.is_validator_function
            or len(outputs) < 2
            or not isinstance(predictions, (list, tuple))
            or len(predictions) != len(outputs)
        ):
            return await super().postprocess_data(block_fn, predictions, state)
        changed = [i for i, value in enumerate(predictions) if outputs[i].stateful or not is_skip(value)]
        if len(changed) == len(outputs):
            return await super().postprocess_data(block_fn, predictions, state)
        result: list[Any] = [dict(SKIP) for _ in outputs]
        if not changed:
            return result
        if len(changed) == 1:  # Gradio reads a one-output function's value unlisted: keep two outputs
            changed = sorted({changed[0], 0 if changed[0] else 1})
        lean = copy.copy(block_fn)
        lean.outputs = [outputs[i] for i in changed]
        data = await super().postprocess_data(lean, [predictions[i] for i in changed], state)
        for i, item in zip(changed, data):
            result[i] = item
        return result
