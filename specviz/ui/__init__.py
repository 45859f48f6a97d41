"""The Gradio explorer app (layout and callbacks only; figures come from ``specviz.viz``)."""

from specviz.ui.app import Explorer, build_app, launch, launch_kwargs
from specviz.ui.config import AppConfig
from specviz.ui.runner import Column, Session

__all__ = ["AppConfig", "Column", "Explorer", "Session", "build_app", "launch", "launch_kwargs"]
