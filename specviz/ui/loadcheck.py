"""Load check (not a CI test): several concurrent clients run side-by-side decodes for a bounded time.

    python -m specviz.ui.loadcheck --clients 6 --duration 120 [--algorithms ar,sd,mcsd,specinfer]

Starts ``python app.py`` on a free loopback port (with the environment it is given, so
``SPECVIZ_TARGET`` / ``SPECVIZ_PUBLIC`` ... apply), or uses ``--url`` of a running app. Each client is
a separate ``gradio_client`` session that calls the ``/run`` endpoint in a loop with rotating prompts
and seeds, every request going through the app's queue. Reports requests, errors, latency
percentiles, tokens generated, and the server's resident memory (sampled every second: start,
peak, end; when it started the server).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

from specviz.cli_params_data import ALGORITHM_NAMES
from specviz.validation import Parser, comma_list, one_of, real, temperature_text, whole

ROOT = Path(__file__).resolve().parents[2]
PROMPTS = [
    "def fibonacci(n):\n",
    "import os\n\n\ndef walk(root):\n",
    "class Stack:\n    def __init__(self):\n",
    "for i in range(len(items)):\n",
    "def parse_args(argv=None):\n",
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start_server(port: int, log: Path) -> subprocess.Popen:
    env = {
        **os.environ,
        "GRADIO_SERVER_NAME": "127.0.0.1",
        "GRADIO_SERVER_PORT": str(port),
        "GRADIO_ANALYTICS_ENABLED": "False",
    }
    proc = subprocess.Popen(
        [sys.executable, "app.py"], cwd=ROOT, env=env, stdout=open(log, "w"), stderr=subprocess.STDOUT
    )
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"app.py exited:\n{log.read_text()[-2000:]}")
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/config", timeout=2)
            return proc
        except OSError:
            time.sleep(0.5)
    proc.kill()
    raise SystemExit("app.py did not start")


def _parser() -> Parser:
    ap = Parser(
        prog="python -m specviz.ui.loadcheck", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--clients", type=whole(1), default=6)
    ap.add_argument("--duration", type=real(0, lo_open=True), default=120.0, help="seconds to keep starting requests")
    ap.add_argument("--max-new-tokens", type=whole(1), default=32)
    ap.add_argument("--algorithms", type=comma_list(one_of(*ALGORITHM_NAMES)), default="ar,sd,mcsd,specinfer")
    ap.add_argument("--temperature", type=temperature_text, default=0.8)
    ap.add_argument("--url", help="a running app; default: start app.py on a free port")
    ap.add_argument("--json", help="write the summary here")
    ap.add_argument("--html", help="write a figure here: each request's latency and the server's memory over time")
    return ap


class MemorySampler(threading.Thread):
    """The server's resident memory (MB) once a second, with when it was read (s since ``t_start``)."""

    def __init__(self, pid: int | None, t_start: float):
        super().__init__(daemon=True)
        self.pid, self.t_start = pid, t_start
        self.memory: list[float] = []
        self.memory_at: list[float] = []
        self.done = threading.Event()

    def run(self) -> None:
        import psutil

        ps = psutil.Process(self.pid) if self.pid is not None else None
        while not self.done.is_set():
            if ps is not None:
                try:
                    self.memory.append(ps.memory_info().rss / 2**20)
                    self.memory_at.append(time.monotonic() - self.t_start)
                except psutil.Error:
                    pass
            time.sleep(1.0)


def _one_request(c, kwargs: dict) -> tuple[bool, str]:
    """One ``/run`` call: whether it finished, and its error (a status or an exception) if not."""
    try:
        out = c.predict(api_name="/run", **kwargs)
    except Exception as exc:  # noqa: BLE001 - counted and reported
        return False, f"{type(exc).__name__}: {exc}"[:200]
    status = str(out[0] if isinstance(out, (list, tuple)) else out)
    ok = "Done" in status and "failed" not in status
    return ok, "" if ok else status[:200]


def _client(i: int, url: str, args: argparse.Namespace, stop_at: float, t_start: float, results: list[dict]) -> None:
    """Client ``i``: its own session, calling ``/run`` with rotating prompts and seeds until ``stop_at``."""
    from gradio_client import Client

    c = Client(url, verbose=False)
    api = c.view_api(return_format="dict", print_info=False)["named_endpoints"]["/run"]["parameters"]
    defaults = {p["parameter_name"]: p.get("parameter_default") for p in api}
    k = 0
    while time.monotonic() < stop_at:
        kwargs = {
            **defaults,
            "prompt": PROMPTS[(i + k) % len(PROMPTS)],
            "max_new_tokens": args.max_new_tokens,
            "temperature": args.temperature,
            "seed": 1000 * i + k,
            "columns": args.algorithms,
            "pace": 0.0,
        }
        t0 = time.monotonic()
        ok, err = _one_request(c, kwargs)
        results.append(  # list.append is atomic: the clients share the list
            {"client": i, "ok": ok, "error": err, "latency_s": time.monotonic() - t0, "started_s": t0 - t_start}
        )
        k += 1


def _summary(args: argparse.Namespace, results: list[dict], memory: list[float], wall: float) -> dict:
    """Requests, errors, latency percentiles of the completed ones, and the server's memory."""
    lat = sorted(r["latency_s"] for r in results if r["ok"])

    def pct(q: float) -> float | None:
        return lat[min(len(lat) - 1, int(q * len(lat)))] if lat else None

    rss = {
        "start": round(memory[0], 1),
        "after_warmup": round(memory[min(len(memory) - 1, 10)], 1),
        "peak": round(max(memory), 1),
        "end": round(memory[-1], 1),
        "every_10s": [round(m) for m in memory[::10]],
    }
    return {
        "clients": args.clients,
        "duration_s": round(wall, 1),
        "algorithms": args.algorithms,
        "max_new_tokens": args.max_new_tokens,
        "requests": len(results),
        "errors": sum(not r["ok"] for r in results),
        "error_examples": sorted({r["error"] for r in results if not r["ok"]})[:3],
        "runs_completed": len(lat),
        "tokens_requested": len(lat) * len(args.algorithms) * args.max_new_tokens,
        "latency_s": {
            "p50": pct(0.5),
            "p90": pct(0.9),
            "p95": pct(0.95),
            "max": lat[-1] if lat else None,
            "mean": statistics.mean(lat) if lat else None,
        },
        "server_rss_mb": rss if memory else None,
        "cpu_count": os.cpu_count(),
    }


def main(argv: list[str] | None = None) -> dict:
    args = _parser().parse_args(argv)
    proc = None
    if args.url:
        url = args.url.rstrip("/") + "/"
    else:
        port = _free_port()
        proc = _start_server(port, Path(f"/tmp/specviz-loadcheck-{port}.log"))
        url = f"http://127.0.0.1:{port}/"
    t_start = time.monotonic()
    sampler = MemorySampler(proc.pid if proc else None, t_start)
    sampler.start()
    results: list[dict] = []
    stop_at = time.monotonic() + args.duration
    threads = [
        threading.Thread(target=_client, args=(i, url, args, stop_at, t_start, results)) for i in range(args.clients)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.monotonic() - t_start
    sampler.done.set()
    sampler.join()
    if proc is not None:
        proc.terminate()
        proc.wait(20)
    summary = _summary(args, results, sampler.memory, wall)
    text = json.dumps(summary, indent=2)
    print(text)
    if args.json:
        Path(args.json).write_text(text)
    if args.html:
        load_figure(results, sampler.memory_at, sampler.memory, summary).write_html(args.html, include_plotlyjs="cdn")
    return summary


def load_figure(results: list[dict], memory_at: list[float], memory: list[float], summary: dict):
    """Each request's latency at its start time (errors marked) above the server's resident memory."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    fig = make_subplots(
        rows=2,
        cols=1,
        shared_xaxes=True,
        vertical_spacing=0.12,
        subplot_titles=("request latency (s) by start time", "server resident memory (MB)"),
    )
    for ok, name, color in ((True, "completed", "#1f77b4"), (False, "error", "#d62728")):
        rs = [r for r in results if r["ok"] is ok]
        fig.add_trace(
            go.Scatter(
                x=[r["started_s"] for r in rs],
                y=[r["latency_s"] for r in rs],
                mode="markers",
                name=name,
                marker={"color": color},
            ),
            row=1,
            col=1,
        )
    fig.add_trace(go.Scatter(x=memory_at, y=memory, mode="lines", name="RSS", line={"color": "#2ca02c"}), row=2, col=1)
    lat = summary["latency_s"]
    title = (
        f"{summary['clients']} clients, {summary['requests']} requests, {summary['errors']} errors; "
        f"p50 {lat['p50'] or 0:.1f} s, p95 {lat['p95'] or 0:.1f} s"
    )
    fig.update_layout(title=title, height=600, template="plotly_white")
    fig.update_xaxes(title_text="seconds since start", row=2, col=1)
    return fig


if __name__ == "__main__":
    main()
