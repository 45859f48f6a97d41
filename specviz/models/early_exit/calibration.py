"""The file of Cali-TS's calibration head, saved beside an early-exit head (``calibration.safetensors``;
its sigma_M in ``early_exit.json``). The head itself (Liu et al. 2024, arXiv 2406.03853, Eq. 5) is
algorithm maths, defined in ``specviz.core.cali_ts`` (importable from here too). ``load_pair`` attaches
it (``pair.heads.calibration``); ``algorithms.early_exit_drafter.CalibratedTheta`` reads theta_M from it."""

from __future__ import annotations

import os
from pathlib import Path

import torch

from specviz.core.cali_ts import CalibrationHead
from specviz.models.early_exit.files import FORMAT, read_early_exit_config

CALIBRATION_WEIGHTS = "calibration.safetensors"


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
