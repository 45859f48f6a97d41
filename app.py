"""specviz explorer: `python app.py` serves the app (on SmolLM2-135M-Instruct and its trained draft by
default); `--help` lists options.

Host/port: --host / --port, or GRADIO_SERVER_NAME / GRADIO_SERVER_PORT (Gradio's own variables;
127.0.0.1:7860 by default). Public mode (its limits) is on whenever the host is not loopback, on a
Hugging Face Space, or with --public / SPECVIZ_PUBLIC=1; only --unsafe-no-public-limits turns it off
there (docs/hosting.md). Other settings: see specviz/ui/config.py and docs/app.md.
"""

from __future__ import annotations

import argparse
import os

# as in specviz/ui/config.py (not imported: --help stays fast without torch and gradio)
UNSAFE_VAR = "SPECVIZ_UNSAFE_NO_PUBLIC_LIMITS"
UNSAFE_FLAG = "--unsafe-no-public-limits"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    from specviz.validation import Parser, whole  # plain Python: --help stays fast

    p = Parser(
        prog="python app.py",
        description="Serve the specviz explorer: run speculative decoding algorithms side by side, step by step.",
        epilog="Public mode is on whenever the app can be reached from other machines (a --host other than "
        "127.0.0.1/localhost/::1, a Hugging Face Space): preset pairs only, capped tokens, prompts, "
        "columns and uploads (docs/hosting.md). Every limit is also an environment variable "
        "(SPECVIZ_MAX_NEW_TOKENS, SPECVIZ_MAX_COLUMNS, ...): see docs/app.md.",
    )
    p.add_argument(
        "--host",
        help="address to serve on (default: GRADIO_SERVER_NAME or 127.0.0.1); anything but "
        "loopback turns public mode on",
    )
    p.add_argument("--port", type=whole(1, 65535), help="port (default: GRADIO_SERVER_PORT or 7860)")
    p.add_argument(
        "--target",
        help="target model to load at start: hub id or local directory "
        "(default: the first preset, smollm2-135m-offline)",
    )
    p.add_argument("--draft", help="draft model for --target")
    p.add_argument("--public", action="store_true", help="public-hosting limits even on loopback (as SPECVIZ_PUBLIC=1)")
    p.add_argument(
        UNSAFE_FLAG,
        action="store_true",
        dest="unsafe_no_public_limits",
        help=f"UNSAFE: serve a non-loopback --host (or a Space) WITHOUT public mode: every visitor may "
        f"load any model directory or hub repository the server can reach, uncapped "
        f"(as {UNSAFE_VAR}=1; logged as a warning). Only on a network you trust.",
    )
    return p.parse_args(argv)


def apply_args(args: argparse.Namespace) -> None:
    """Command-line options become the environment variables the app reads."""
    for value, name in (
        (args.host, "GRADIO_SERVER_NAME"),
        (args.port, "GRADIO_SERVER_PORT"),
        (args.target, "SPECVIZ_TARGET"),
        (args.draft, "SPECVIZ_DRAFT"),
        ("1" if args.public else None, "SPECVIZ_PUBLIC"),
        ("1" if args.unsafe_no_public_limits else None, UNSAFE_VAR),
    ):
        if value is not None:
            os.environ[name] = str(value)


def show_progress() -> None:
    """specviz's progress messages (loading, the first start's model conversion) on standard output."""
    import logging
    import sys

    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(logging.Formatter("specviz: %(message)s"))
    logger = logging.getLogger("specviz")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)


def exit_on_sigterm() -> None:
    """``docker stop`` and process managers send SIGTERM: exit normally, so the app's private temp
    directory is removed (atexit does not run on Python's default SIGTERM)."""
    import signal
    import sys

    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(0))


if __name__ == "__main__":
    apply_args(parse_args())
    show_progress()
    exit_on_sigterm()
    from specviz.ui import build_app, launch

    launch(build_app())
else:  # imported (e.g. `gradio app.py`): Gradio looks for `demo`
    from specviz.ui import build_app

    demo = build_app()
