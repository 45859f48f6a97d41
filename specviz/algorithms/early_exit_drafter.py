"""The early-exit drafter of EESD and the calibration head's theta_M, on the engine's interfaces.

Liu et al. 2024, "Speculative Decoding via Early-exiting for Faster LLM Inference with Thompson
Sampling Control Mechanism" (arXiv 2406.03853), Sec. 3.1 and Eq. 5. The draft is the target cut
short (``specviz.models.early_exit.EarlyExitLM``: its first N layers plus the exit head) reading the
target's committed trunk KV. ``EarlyExitDrafter`` drafts exactly as a draft model does
(``ModelDrafter``: chain or tree, each token drawn from the exit head's warped q); its forwards are its
own ``fed`` log, so the engine counts them as draft calls, never as target calls.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from specviz.algorithms.drafters import ModelDrafter
from specviz.algorithms.length_controllers import ThetaModel
from specviz.core.trees import ROOT
from specviz.models.early_exit import CalibrationHead, EarlyExitHead, EarlyExitLM, final_norm

if TYPE_CHECKING:
    from specviz.algorithms.decoder import Decoder
    from specviz.algorithms.step_types import StepResult


class EarlyExitDrafter(ModelDrafter):
    """``ModelDrafter`` over ``EarlyExitLM(head, share=dec.target)``; ``lm.last_hidden[-1]`` is the
    exit hidden state h_D that produced the token just drawn."""

    def __init__(self, head: EarlyExitHead, dec: "Decoder"):
        super().__init__(EarlyExitLM(head, dec.pair.vocab_size, share=dec.target))


class CalibratedTheta(ThetaModel):
    """theta_M = softmax(W_p [W^j H^(T); H^(D)])[1] (Eq. 5). ``H^(T)``: the target's last-layer hidden
    state (final-norm output) at the last accepted position of the previous verification (zeros before
    the first); ``H^(D)``: the exit hidden state that drew draft token i. Hooks the target's final norm
    until ``close()``."""

    source = "calibration head"

    def __init__(self, cal: CalibrationHead, drafter: EarlyExitDrafter, target: torch.nn.Module):
        self.cal, self.drafter = cal, drafter
        self.seen: list[torch.Tensor] = []
        self.h_target = torch.zeros(cal.w.shape[-1])
        self.projected: torch.Tensor | None = None
        self.handle = final_norm(target).register_forward_hook(self._capture)

    def _capture(self, _module, _args, out) -> None:
        self.seen = [out[0] if isinstance(out, tuple) else out]

    def close(self) -> None:
        self.handle.remove()

    def verified(self, result: "StepResult") -> None:
        if not self.seen:
            return
        hidden = self.seen[0][0]  # [context + nodes, d] of the verification call
        k = hidden.shape[0] - len(result.tree.tokens)
        last = result.path[-1] if result.path else ROOT
        self.h_target = hidden[k - 1 if last == ROOT else k + last].float().cpu()

    def round_start(self) -> None:
        with torch.inference_mode():
            self.projected = self.cal.project_target(self.h_target.to(self.cal.w.device))

    def theta_m(self, i: int) -> float:
        h_d = self.drafter.lm.last_hidden
        if h_d is None or self.projected is None:
            return 0.5
        with torch.inference_mode():
            return float(self.cal(self.projected, h_d[-1].to(self.cal.w.device), i))
