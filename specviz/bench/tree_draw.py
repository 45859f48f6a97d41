"""What the browser pays to draw the live page's trees, by part: ``python -m specviz.bench.tree_draw``.

Issue 34's display overhead is mostly the browser's, and most of that is the four trees' ``Plotly.react``
on every step. This decodes the goal case's four columns (``bench.live.COLUMNS[4]``) on one pair, builds
each step's tree figure as the page gets it (``viz.step_tree_figure``), opens the app in headless
Chromium and draws the four trees of each step in turn on the page's own tree elements (a forced layout
after the four), timing each step, straight through ``Plotly.react`` (not the ``PlotBox``, which now
draws a tree's title and legend as HTML and at its box's width). It does so for the figure as the
server builds it and for the figure without each part Plotly would draw again on every step (its
legend, its title, the nodes' token labels), with Plotly's default tick-label overflow check, at a
fixed width, with Plotly's config given on the first draw only and no size read from the page per draw,
and with all those parts off: what each part costs, and how much of a tree's draw no change to the
figure can save (Plotly's own cost per figure). A
benchmark: nothing is asserted; the load average is printed beside the table.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import statistics
from typing import Any, Callable

from specviz.validation import Parser, one_of, whole

PROMPT = "Why is the sky blue?"
Figure = dict[str, Any]


def _no_legend(fig: Figure) -> None:
    fig["layout"]["showlegend"] = False


def _no_title(fig: Figure) -> None:
    fig["layout"].pop("title", None)


def _no_labels(fig: Figure) -> None:
    for trace in fig["data"]:
        if trace.get("mode") == "markers+text":
            trace["mode"] = "markers"


def _tick_labels_hidden(fig: Figure) -> None:
    """Plotly's default ``ticklabeloverflow`` (tick labels measured on every draw to hide those past the div;
    ``viz.template`` allows them)."""
    fig["layout"]["xaxis"]["ticklabeloverflow"] = "hide past div"


# a variant: the edits made to every figure, whether it is drawn at its box's width (autosize off) and
# whether Plotly is given its config on the first draw only and told the box has a size (as the PlotBox
# does: a draw otherwise reads the box's height, a layout of the page, and a react given a config copies
# and compares Plotly's whole context)
VARIANTS: dict[str, tuple[tuple[Callable[[Figure], None], ...], bool, bool]] = {
    "as built": ((), False, False),
    "tick labels hidden past the div": ((_tick_labels_hidden,), False, False),
    "no legend": ((_no_legend,), False, False),
    "no title": ((_no_title,), False, False),
    "no node labels": ((_no_labels,), False, False),
    "fixed width": ((), True, False),
    "fixed width, config once": ((), True, True),
    "none of them, fixed width, config once": ((_no_legend, _no_title, _no_labels), True, True),
}

DRAW = r"""
async ([steps, fixed, once]) => {
  const P = await window.svPlotly();
  const boxes = [...document.querySelectorAll("[id^=sv-tree-] .sv-plotbox")].slice(0, steps[0].length);
  const width = boxes.map((b) => Math.round(b.getBoundingClientRect().width));
  const frame = () => new Promise((ok) => requestAnimationFrame(() => setTimeout(ok, 0)));
  const times = [];
  for (const figs of steps) {
    const t0 = performance.now();
    for (let c = 0; c < figs.length; c++) {
      const size = fixed ? {autosize: false, width: width[c]} : {autosize: true};
      const known = once && boxes[c]._context;  // as the PlotBox: Plotly told the box has a size
      if (known) boxes[c]._context._hasZeroHeight = boxes[c]._context._hasZeroWidth = true;
      const config = known ? undefined : {responsive: !fixed, displaylogo: false};
      await P.react(boxes[c], figs[c].data, Object.assign({}, figs[c].layout, size), config);
    }
    document.body.getBoundingClientRect();
    times.push(performance.now() - t0);
    await frame();
  }
  return times;
}
"""


def tree_figures(preset: str, algos: list[str], max_new: int, chat: bool) -> list[list[Figure]]:
    """Each step's tree figure (as plotly JSON) of each column, steps cut to the shortest run."""
    import plotly.io as pio

    from specviz import viz
    from specviz.decoding import decode
    from specviz.models.loading import load_pair

    pair = load_pair(preset=preset)
    runs = [decode(pair, a, PROMPT, chat=chat, max_new_tokens=max_new) for a in algos]
    n = min(len(t.steps) for t in runs)
    return [[json.loads(pio.to_json(viz.step_tree_figure(t, k))) for t in runs] for k in range(n)]


def open_columns(page: Any, n: int) -> None:
    """The goal case's ``n`` columns on the page, each with its tree element (a 2-token run: the page
    lays out a column's panels once it has a step to show)."""
    from specviz.bench.live import COLUMNS
    from specviz.bench.live_page import choose, set_number

    choose(page, COLUMNS[n])
    set_number(page, "sv-max-new", 2)
    page.click("#sv-run")
    page.wait_for_function(
        "(n) => /^Done/.test(document.querySelector('#sv-status').textContent.trim()) &&"
        " document.querySelectorAll('[id^=sv-tree-] .sv-plotbox').length >= n",
        arg=n,
        timeout=120_000,
    )


def time_variants(page: Any, steps: list[list[Figure]], rounds: int) -> dict[str, list[float]]:
    """Milliseconds per step (four trees drawn) of each variant, the rounds interleaved."""
    out: dict[str, list[float]] = {name: [] for name in VARIANTS}
    for _ in range(rounds):
        for name, (edits, fixed, once) in VARIANTS.items():
            shown = copy.deepcopy(steps)
            for figs in shown:
                for fig in figs:
                    for edit in edits:
                        edit(fig)
            out[name] += page.evaluate(DRAW, [shown, fixed, once])[1:]  # the first draws build the plots
    return out


def table(times: dict[str, list[float]]) -> str:
    base = statistics.median(times["as built"])
    rows = ["| the four trees of a step | median (ms) | p90 (ms) | of the figure as built |", "|---|---:|---:|---:|"]
    for name, t in times.items():
        med, p90 = statistics.median(t), sorted(t)[int(0.9 * (len(t) - 1))]
        rows.append(f"| {name} | {med:.1f} | {p90:.1f} | {med / base:.2f} |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    from specviz.bench.live import COLUMNS, PAIRS

    p = Parser(prog="python -m specviz.bench.tree_draw", description=__doc__.split("\n\n")[0])
    p.add_argument("--pair", type=one_of(*PAIRS), default="default", help="default (SmolLM2) or code")
    p.add_argument("--max-new", type=whole(1, 256), default=48, help="tokens each column decodes (default 48)")
    p.add_argument("--rounds", type=whole(1, 20), default=2, help="passes over the variants (default 2)")
    p.add_argument("--width", type=whole(400, 4000), default=1600, help="the page's width in px (default 1600)")
    args = p.parse_args(argv)
    from playwright.sync_api import sync_playwright

    from specviz.bench.live_page import open_page, start_app
    from specviz.bench.live_probe import Recorder

    steps = tree_figures(PAIRS[args.pair], COLUMNS[4], args.max_new, chat=args.pair == "default")
    demo, url = start_app(PAIRS[args.pair], Recorder())
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=shutil.which("chromium"), headless=True, args=["--no-sandbox"])
            page = open_page(browser, url, args.width)
            open_columns(page, 4)
            times = time_variants(page, steps, args.rounds)
            browser.close()
    finally:
        demo.close()
    print(
        f"{len(steps)} steps x {args.rounds} rounds, {args.pair} pair, {args.width} px, load {os.getloadavg()[0]:.2f}"
    )
    print(table(times))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
