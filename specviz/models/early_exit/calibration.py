"""Cali-TS's calibration head (Liu et al. 2024, arXiv 2406.03853, Eq. 5), saved beside an early-exit
head (``calibration.safetensors``; its sigma_M in ``early_exit.json``). ``load_pair`` attaches it
(``pair.extras["calibration"]``); ``algorithms.early_exit_drafter.CalibratedTheta`` reads theta_M from it."""
from __future__ import annotations

import os
from pathlib import Path

import torch
from torch import nn

from specviz.models.early_exit.files import FORMAT, read_early_exit_config

CALIBRATION_WEIGHTS = "calibration.safetensors"


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


def save_calibration(cal: CalibrationHead, path: str | os.PathLike, dtype: torch.dtype = torch.float32) -> Path:
    """Write a calibration head (in ``dtype``) into an early-exit head directory."""
    from safetensors.torch import save_file

    path = Path(path)
    state = {k: v.detach().to("cpu", dtype).contiguous() for k, v in cal.state_dict().items()}
    save_file(state, str(path / CALIBRATION_WEIGHTS), metadata={"format": FORMAT + "-calibration"})
    return path


def load_calibration(path: str | os.PathLike, like: torch.Tensor | None = None) -> tuple[CalibrationHead, float] | None:
    """The calibration head saved in an early-exit head directory and its ``sigma_m`` (RMS error on
    held-out data, Cali-TS's sigma_M), or None when the directory has none. ``like``: a tensor whose
    device the head is moved to."""
    from safetensors.torch import load_file

    path = Path(path)
    if not (path / CALIBRATION_WEIGHTS).is_file():
        return None
    state = {k: v.float() for k, v in load_file(str(path / CALIBRATION_WEIGHTS)).items()}
    positions, hidden = state["w"].shape[:2]
    cal = CalibrationHead(hidden, positions)
    cal.load_state_dict(state, strict=True)
    if like is not None:
        cal.to(like.device)
    sigma_m = float(read_early_exit_config(path).get("calibration", {}).get("sigma_m", 0.3))
    return cal.eval(), sigma_m
