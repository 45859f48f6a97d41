"""The server side of a live run's updates, without a browser (issue 34): ``python -m specviz.bench.live_updates``.

Builds the app on one pair, runs Run's event handler (the wired generator the page's Run button calls)
paced, on a clock moved only by the pacing, so every step is sent as the page's default pace sends it,
and passes each update through Gradio's own postprocessing (``Blocks.postprocess_data``) and the
stream's difference from the update before (``Blocks.handle_streaming_diffs``), as a live run's
updates go out. It prints per step the bytes sent (UTF-8 JSON, as Gradio sends them) by kind of
output (the coloured texts, the trees, the other panels, the rest), the time to build the update
(the run loop's view, decoding left out) and Gradio's postprocessing time. ``specviz.bench.live``
times the same in a browser.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import time
from typing import Any

from specviz.bench.live import COLUMNS, PAIRS
from specviz.validation import Parser, one_of, real, whole


class PacedClock:
    """The run's time: moved only by its pauses (the pacing), so every paced step is sent."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def pause(self, control: Any, seconds: float) -> bool:
        self.now += max(0.0, seconds)
        return control.stopped()


def kind(elem_id: str) -> str:
    """An output's kind in the breakdown: ``text``, ``tree``, ``panel`` (a column's other panels), ``rest``."""
    if elem_id.startswith("sv-text-"):
        return "text"
    if elem_id.startswith("sv-tree-"):
        return "tree"
    if elem_id.startswith(("sv-dist-", "sv-ctrl-", "sv-lengths-", "sv-theory-", "sv-story-", "sv-beams-", "sv-head-")):
        return "panel"
    return "rest"


def measure(pair: str, n_cols: int, max_new: int, pace: float, ascii_json: bool = False) -> list[dict[str, Any]]:
    """One run's live updates (not its opening and final views): per update, its bytes by kind (UTF-8
    JSON; ``ascii_json``: ASCII JSON, as ``specviz.bench.live`` reports its "bytes"), the run loop's
    build time and Gradio's postprocessing time (seconds)."""
    os.environ.update({"SPECVIZ_PRESETS": PAIRS[pair], "HF_HUB_OFFLINE": "1"})
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    from gradio.state_holder import SessionState

    from specviz.ui.app import Explorer
    from specviz.ui.examples import example_prompts
    from specviz.ui.runner import Session

    clock = PacedClock()
    ex = Explorer(clock=clock, pause=clock.pause)
    if ex.startup_message:
        raise SystemExit(f"the pair {pair} did not load: {ex.startup_message}")
    demo = ex.build()
    block_fn = next(f for f in demo.fns.values() if f.api_name == "run")
    names = [getattr(c, "elem_id", None) or f"{type(c).__name__}#{i}" for i, c in enumerate(block_fn.outputs)]
    session = Session(pair_key=ex.default_key)
    loaded = ex.pairs.loaded(session)
    chat = loaded is not None and loaded.has_chat_template  # as the page sets it for the pair
    columns = [{"algorithm": a, "params": {}} for a in COLUMNS[n_cols]]
    gen = block_fn.fn(
        session=session,
        prompt=example_prompts(chat)[0],  # the page's own prompt
        max_new_tokens=max_new,
        temperature=0.0,
        top_p=1.0,
        top_k=0,
        seed=0,
        columns=columns,
        pace=pace,
        chat=chat,
    )
    state = SessionState(demo)
    built: list[float] = []  # each update's build time, from the run loop's own events (decoding left out)
    ex.loop.probe = lambda event, **f: (
        built.append(f["t_built"] - f.get("t_build", f["t_ready"])) if event == "update" else None
    )
    out: list[dict[str, Any]] = []
    for view in gen:
        t1 = time.perf_counter()
        data = asyncio.run(demo.postprocess_data(block_fn, view, state))
        t2 = time.perf_counter()
        sent = demo.handle_streaming_diffs(block_fn, data, session_hash="bench", run="run", final=False)
        by_kind: dict[str, int] = {}
        for name, value in zip(names, sent):
            k = kind(name)
            by_kind[k] = by_kind.get(k, 0) + len(json.dumps(value, default=str, ensure_ascii=ascii_json).encode())
        ex.page_shown(session, f"{session.n_steps}:x")  # drawn at once
        build_s = built[-1] if built else float("nan")
        out.append({"steps": session.n_steps, "bytes": by_kind, "build_s": build_s, "post_s": t2 - t1})
    return out[1:-1]


def parser() -> Parser:
    """The script's options: the pair, the columns, the run's length and pace, and how bytes are counted."""
    ap = Parser(prog="python -m specviz.bench.live_updates", description=__doc__.split("\n\n")[0])
    ap.add_argument("--pair", type=one_of(*PAIRS), default="default", help="default (SmolLM2 with its draft) or code")
    ap.add_argument(
        "--columns",
        type=one_of(*map(str, COLUMNS)),
        default="4",
        help="1 (sd), 4 (the page's default) or 6 (+ sequoia, eesd)",
    )
    ap.add_argument("--max-new", type=whole(1), default=64, help="tokens per run (the page's default: 64)")
    ap.add_argument("--pace", type=real(0.0), default=0.3, help="seconds per step (the page's default: 0.3)")
    ap.add_argument("--ascii", action="store_true", help="bytes as ASCII JSON (bench.live's 'bytes'), not UTF-8")
    return ap


def main(argv: list[str] | None = None) -> None:
    """One run's live updates, printed step by step and summed up (median, mean, max)."""
    args = parser().parse_args(argv)
    updates = measure(args.pair, int(args.columns), args.max_new, args.pace, args.ascii)
    if not updates:
        raise SystemExit("no live update was sent")
    kinds = sorted({k for u in updates for k in u["bytes"]})
    unit = "ASCII" if args.ascii else "UTF-8"
    print(
        f"{len(updates)} live updates, {args.columns} columns, pair {args.pair}, pace {args.pace} s, {unit} JSON bytes"
    )
    print("step  " + "  ".join(f"{k:>7}" for k in kinds) + "    total  build ms  post ms")
    for u in updates:
        b = u["bytes"]
        row = "  ".join(f"{b.get(k, 0):7d}" for k in kinds)
        print(f"{u['steps']:4d}  {row}  {sum(b.values()):7d}  {1e3 * u['build_s']:8.1f}  {1e3 * u['post_s']:7.1f}")
    for name, stat in (("med", statistics.median), ("mean", statistics.mean), ("max", max)):
        cells = "  ".join(f"{stat([u['bytes'].get(k, 0) for u in updates]):7.0f}" for k in kinds)
        total = stat([sum(u["bytes"].values()) for u in updates])
        build, post = stat([u["build_s"] for u in updates]), stat([u["post_s"] for u in updates])
        print(f"{name:>4}  {cells}  {total:7.0f}  {1e3 * build:8.1f}  {1e3 * post:7.1f}")


if __name__ == "__main__":
    main()
