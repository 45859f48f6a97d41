"""The live page, timed in a browser (issue 34): ``python -m specviz.bench.live [--goals | --quick | ...]``.

Starts the app in this process on one pair (``--pairs``), opens it in headless Chromium (Debian's
``chromium`` through Playwright) at each ``--widths`` viewport width, and for every case (columns x
paced/unpaced) presses Run as a person would and waits for "Done". For every step it records

* when the step was decoded (the run loop's ``RunLoop.probe`` events, server clock);
* when its update was built, serialised by Gradio (``Blocks.postprocess_data`` and the stream's diff,
  timed here) and how many bytes went out;
* when the browser received the update (the page's stream reader, wrapped), when its status line
  changed (the update applied) and the next frame after it (drawn), and how long Plotly's own calls
  took meanwhile; the page's long tasks (``longtask``).

and prints per case the display overhead per step (decoded, or released by the pacing -> drawn:
median and p95), the longest gap between two drawn steps and the decoding inside it, the update
sizes, the first step's latency, the run's time on screen against its decoding time, and where an
update's time goes (build, wait for the page, serialise, transfer, browser). With ``--interact``
(on by default for the goal cases) it then scrubs the slider and clicks a tree node, timing each from
the action to the new view drawn. Everything runs on this machine: its load average is printed.

This is a benchmark, not a test: nothing here asserts a speed. ``--goals`` runs the issue's goal
cases (the default pair, 1600 px: 4 columns paced with scrubs and a node click, 6 columns unpaced)
and states each goal met or not. The history of these numbers is in ``docs/bench.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys

from specviz.bench.live_page import open_page, run_case, start_app
from specviz.bench.live_probe import Recorder, hook_gradio
from specviz.bench.live_report import load, print_summary, row
from specviz.validation import Parser, comma_list, one_of, whole

PAIRS = {"default": "smollm2-135m-offline", "code": "bundled-stdlib-pair"}
COLUMNS = {1: ["sd"], 4: ["ar", "sd", "specinfer", "mcsd"], 6: ["ar", "sd", "specinfer", "mcsd", "sequoia", "eesd"]}
GOALS = {
    "overhead_median_s": 0.100,
    "overhead_p95_s": 0.300,
    "gap_s": 1.0,
    "unpaced_ratio": 1.25,
    "first_step_s": 1.5,
    "scrub_s": 0.3,
    "click_s": 0.5,
    "update_bytes": 50_000,
}


def cases_from(args: argparse.Namespace) -> list[tuple[str, int, bool, int]]:
    if args.goals:
        return [("default", 4, True, 1600), ("default", 6, False, 1600)]
    if args.quick:
        return [("default", 4, True, 1600), ("default", 6, False, 1600), ("code", 4, True, 400)]
    out = []
    for pair in args.pairs:  # each list read by its option's type (validation.comma_list)
        for width in args.widths:
            for n in [int(c) for c in args.columns]:
                for pace in args.pace:
                    out.append((pair, n, pace == "paced", width))
    return out


def parser() -> Parser:
    """The benchmark's options: which cases (``--goals``, ``--quick`` or the matrix of ``--pairs`` x
    ``--columns`` x ``--pace`` x ``--widths``), the run's length and what is written."""
    ap = Parser(
        prog="python -m specviz.bench.live",
        description=__doc__.split("\n\n")[0],
        epilog="The goal cases in one command (1.5 to 7 minutes on a 2-core machine, by its speed and load): "
        "python -m specviz.bench.live --goals. The full matrix: python -m specviz.bench.live "
        "(both pairs, 1/4/6 columns, paced and unpaced, 1600 and 400 px; about an hour).",
    )
    ap.add_argument(
        "--goals",
        action="store_true",
        help="the issue's goal cases only: the default pair at 1600 px, "
        "4 columns paced (then 4 scrubs and a node click) and 6 columns unpaced",
    )
    ap.add_argument("--quick", action="store_true", help="the goal cases and the code pair's 4 columns paced at 400 px")
    ap.add_argument(
        "--pairs",
        type=comma_list(one_of(*PAIRS)),
        default="default,code",
        help="default (SmolLM2 with its draft) and/or code (the bundled pair)",
    )
    ap.add_argument(
        "--columns",
        type=comma_list(one_of(*map(str, COLUMNS))),
        default="1,4,6",
        help="column counts: 1 (sd), 4 (the page's default), 6 (+ sequoia, eesd)",
    )
    ap.add_argument(
        "--pace",
        type=comma_list(one_of("paced", "unpaced")),
        default="paced,unpaced",
        help="paced (the page's default pace) and/or unpaced (0)",
    )
    ap.add_argument(
        "--widths", type=comma_list(whole(200, 10000)), default="1600,400", help="viewport widths in px, 200 to 10000"
    )
    ap.add_argument("--max-new", type=whole(1), default=64, help="tokens per run (the page's default: 64)")
    ap.add_argument("--no-interact", action="store_true", help="skip the scrubs and the node click")
    ap.add_argument("--json", default="", help="write every case's numbers here (JSON)")
    ap.add_argument("--shots", default="", help="a folder for a screenshot of each case's last view")
    return ap


def run_cases(cases: list[tuple[str, int, bool, int]], args: argparse.Namespace, chromium: str) -> list[tuple]:
    """Every case in headless Chromium, the app started once per pair: (case, its numbers), the load at
    the start and each row printed as it is measured."""
    from playwright.sync_api import sync_playwright

    rec = Recorder()
    hook_gradio(rec)
    results: list[tuple[tuple, dict]] = []
    print(f"# specviz live page · {load()} at start · {len(cases)} cases", flush=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=chromium, headless=True, args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"]
        )
        for pair in dict.fromkeys(c[0] for c in cases):
            demo, url = start_app(PAIRS[pair], rec)
            pace_s = demo.explorer.config.default_pace_s
            try:
                for case in [c for c in cases if c[0] == pair]:
                    _, n_cols, paced, width = case
                    page = open_page(browser, url, width)
                    interact = not args.no_interact and (paced or not args.goals)
                    shot = (
                        os.path.join(args.shots, f"live-{pair}-{n_cols}-{'paced' if paced else 'unpaced'}-{width}.png")
                        if args.shots
                        else None
                    )
                    r = run_case(page, rec, COLUMNS[n_cols], paced, pace_s, args.max_new, interact, shot)
                    page.close()
                    r["load"] = load()
                    results.append((case, r))
                    print(row(case, r) + f" {r['load']}", flush=True)
            finally:
                demo.close()
        browser.close()
    return results


def main(argv: list[str] | None = None) -> None:
    """Run the cases the options name and print their numbers (``--json``: write them too)."""
    args = parser().parse_args(argv)
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        raise SystemExit("needs Debian's chromium (apt-get install chromium)")
    results = run_cases(cases_from(args), args, chromium)
    print_summary(results)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump([{"case": list(c), **r} for c, r in results], fh, indent=1, default=str)


if __name__ == "__main__":
    main(sys.argv[1:])
