"""Cali-TS's calibration head: theta_M, the model's estimate that a draft token is accepted.

Liu et al. 2024, "Speculative Decoding via Early-exiting for Faster LLM Inference with Thompson
Sampling Control Mechanism" (arXiv 2406.03853), Eq. 5. ``core.thompson`` mixes theta_M with the
posterior's theta (Algorithm 3); ``algorithms.early_exit_drafter.CalibratedTheta`` feeds it the hidden
states of a run. Its weights are saved beside an early-exit head and read back by
``specviz.models.early_exit.calibration`` (``load_pair`` attaches it: ``pair.heads.calibration``);
``specviz.train.calibration`` fits it.
"""

from __future__ import annotations

import torch
from torch import nn


class CalibrationHead(nn.Module):
    """theta_M = softmax(W_p [W^j H^(T); H^(D)])[1] (EESD Eq. 5), ``j = min(i, 10)`` the 1-based index
    of the draft token in the round. ``W^1..W^10`` are d x d (identity at init), ``W_p`` is 2 x 2d; no
    biases. ``H^(T)``: the target's last-layer hidden state at the last committed position;
    ``H^(D)``: the draft's post-norm hidden state of draft token i (``EarlyExitLM.last_hidden``)."""

    def __init__(self, hidden_size: int, positions: int = 10):
        super().__init__()
        self.positions = positions
        self.w = nn.Parameter(torch.eye(hidden_size).repeat(positions, 1, 1))
        self.w_p = nn.Linear(2 * hidden_size, 2, bias=False)
        nn.init.zeros_(self.w_p.weight)  # theta_M = 0.5 before training

    def project_target(self, h_target: torch.Tensor) -> torch.Tensor:
        """``W^j H^(T)`` for j = 1..positions, ``[positions, d]``: computed once per round."""
        return torch.einsum("jde,e->jd", self.w, h_target.to(self.w.dtype))

    def forward(self, projected: torch.Tensor, h_draft: torch.Tensor, i: int) -> torch.Tensor:
        """theta_M for draft token ``i`` (1-based) from ``project_target(...)`` and its ``h_D``."""
        j = min(max(int(i), 1), self.positions)
        z = self.w_p(torch.cat([projected[j - 1], h_draft.to(self.w.dtype)], -1))
        return torch.softmax(z, -1)[..., 1]
