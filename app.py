"""specviz explorer: `python app.py` serves the app (on the bundled pair by default).

Host/port: GRADIO_SERVER_NAME / GRADIO_SERVER_PORT (Gradio's own variables; 127.0.0.1:7860 by
default). Public hosting: SPECVIZ_PUBLIC=1. Other settings: see specviz/ui/config.py and docs/app.md.
"""
from specviz.ui import build_app, launch

demo = build_app()

if __name__ == "__main__":
    launch(demo)
