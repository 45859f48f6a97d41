"""A hostile-client suite against a real public server on loopback (issue #21, point 6; docs/hosting.md).

`python app.py` with SPECVIZ_PUBLIC=1 (as `--public`) on the bundled pair and a free port, driven as
attackers and careless callers would: with `gradio_client` and with raw HTTP (Gradio's queue and its
`fn_index` calls, the upload route). What it checks:

(a) no endpoint takes `trust_remote_code` or a custom pair: not in the API, not in the page, and a
    load of a directory whose tokenizer points at its own Python file is refused without running it;
(b) a crafted page report cannot hold a decode slot: two attackers' paced runs, each told the page
    has drawn step 0 and then nothing (so every step waits for the page), take both slots, and a third
    client's run, queued behind them, still finishes: waiting draws on each run's waiting budget;
(c) Sequoia's per-pair cache stays bounded: distinct acceptance vectors past its LRU cap do not grow
    the server's resident memory by the DP tables they would have added;
(d) uploads over the per-client limit get HTTP 429 with a sentence, counted by address;
(e) load: 8 clients at once each run a seeded sampled run and get the tokens of that run made alone;
(f) memory: 200 new sessions of a tiny run one after another; resident memory after a warm-up of 20
    stays within 50 MB.

Nothing asserts a duration: the client timeouts only bound a hang. In (b) a step waits up to 600 s for
the page (SPECVIZ_PAGE_WAIT_S; default 3), so without the waiting budget an attacker would hold its slot
until the run deadline (120 s) and the victim would never finish within its timeout, on a fast machine
or a slow one. The waiting budget is lowered to 4 s (SPECVIZ_MAX_WAIT_S; public default 10) to keep (b)
short; every other limit is public mode's own. Runs are short (the bundled pair, ar, sd or a small Sequoia tree,
at most 16 tokens). The server's log may hold Gradio's tracebacks of its own refusals (gr.Error), and
no other exception.
"""

from __future__ import annotations

import http.client
import json
import re
import threading
import urllib.request
import uuid
from typing import Any

import psutil
import pytest
from e2e_support import HAVE_BUNDLED, start_app, stop
from gradio_client import Client
from test_ui_support import save_tiny_pair

from specviz.algorithms.sequoia_tune import CACHE_CAPS

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
# MALLOC_MMAP_THRESHOLD_: glibc serves every block of 128 kB or more by its own mapping and returns it when it
# is freed (by default it raises that threshold after such a free and keeps later large blocks in its
# per-thread arenas for reuse), so the server's resident memory follows what it holds, not glibc's reserve
SERVER_ENV = {
    "SPECVIZ_PUBLIC": "1",
    "SPECVIZ_MAX_WAIT_S": "4",
    "SPECVIZ_PAGE_WAIT_S": "600",
    "FORWARDED_ALLOW_IPS": "127.0.0.1",
    "MALLOC_MMAP_THRESHOLD_": "131072",
}
PROMPT = "def f(x):"
MB = 1024 * 1024
TIMEOUT_S = 90  # bounds a hang of one request; never a measurement
ATTACK_TOKENS = 16


class Server:
    """The running app: its address, its page config, and raw calls of its events."""

    def __init__(self, proc: Any, url: str):
        self.proc, self.url = proc, url
        self.port = int(url.rstrip("/").rsplit(":", 1)[1])
        with urllib.request.urlopen(url + "config", timeout=TIMEOUT_S) as r:
            self.config = json.load(r)
        self.components = {c["id"]: c for c in self.config["components"]}
        self.deps = {d["api_name"]: d for d in self.config["dependencies"]}

    def rss(self) -> int:
        return psutil.Process(self.proc.pid).memory_info().rss

    def elem(self, elem_id: str) -> dict:
        return next(c for c in self.components.values() if c["props"].get("elem_id") == elem_id)

    def run_data(self, algos: list[str] | None = None, **values: Any) -> list[Any]:
        """The run event's inputs at the page's defaults, with ``values`` by elem_id (``sv-`` and dashes
        left out: ``max_new=8``); ``algos`` and ``param_<algorithm>_<setting>=value`` (``param_sequoia_size=64``)
        make the columns value: a column per algorithm, with those settings."""
        data = [self.components[i]["props"].get("value") for i in self.deps["run"]["inputs"]]
        ids = [self.components[i]["props"].get("elem_id") for i in self.deps["run"]["inputs"]]
        params = {k[len("param_") :]: values.pop(k) for k in list(values) if k.startswith("param_")}
        if algos is not None:
            data[ids.index("sv-columns-spec")] = [
                {"algorithm": a, "params": {k[len(a) + 1 :]: v for k, v in params.items() if k.startswith(a + "_")}}
                for a in algos
            ]
        for name, value in values.items():
            data[ids.index("sv-" + name.replace("_", "-"))] = value
        return data

    def connection(self) -> http.client.HTTPConnection:
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=TIMEOUT_S)

    def join(self, api_name: str, data: list[Any], session: str, on_message=None) -> list[dict]:
        """One queued event as Gradio's client sends it; its messages up to ``process_completed``
        (``on_message(message)`` is called as each arrives)."""
        dep = self.deps[api_name]
        conn = self.connection()
        try:
            body = {
                "data": data,
                "fn_index": dep["id"],
                "session_hash": session,
                "event_data": None,
                "trigger_id": dep["targets"][0][0],
            }
            conn.request("POST", "/gradio_api/queue/join", json.dumps(body), {"Content-Type": "application/json"})
            joined = conn.getresponse()
            assert joined.status == 200, joined.read()[:300]
            joined.read()
            conn.request("GET", f"/gradio_api/queue/data?session_hash={session}")
            messages = []
            for line in conn.getresponse():
                if not line.startswith(b"data:"):
                    continue
                message = json.loads(line[5:])
                messages.append(message)
                if on_message is not None:
                    on_message(message)
                if message.get("msg") == "process_completed":
                    return messages
            raise AssertionError(f"the stream ended without process_completed: {str(messages[-1:])[:300]}")
        finally:
            conn.close()

    def call(self, api_name: str, data: list[Any], session: str) -> dict:
        """One unqueued event (``queue=False``), as the page sends it."""
        dep = self.deps[api_name]
        conn = self.connection()
        try:
            body = {
                "data": data,
                "fn_index": dep["id"],
                "session_hash": session,
                "event_data": None,
                "trigger_id": dep["targets"][0][0],
            }
            conn.request("POST", "/gradio_api/run/predict", json.dumps(body), {"Content-Type": "application/json"})
            response = conn.getresponse()
            return {"status": response.status, "body": response.read().decode()}
        finally:
            conn.close()

    def upload(self, content: bytes, address: str | None = None, chunked: bool = False) -> tuple[int, str]:
        """POST one file to Gradio's upload route, as from ``address`` (X-Forwarded-For, which uvicorn
        takes from a loopback peer) or from loopback itself."""
        boundary = uuid.uuid4().hex
        body = (
            (
                f'--{boundary}\r\nContent-Disposition: form-data; name="files"; filename="t.json"\r\n'
                f"Content-Type: application/json\r\n\r\n"
            ).encode()
            + content
            + f"\r\n--{boundary}--\r\n".encode()
        )
        headers = {"Content-Type": f"multipart/form-data; boundary={boundary}"}
        if address:
            headers["X-Forwarded-For"] = address
        conn = self.connection()
        try:
            if chunked:
                conn.request("POST", "/gradio_api/upload", iter([body]), headers, encode_chunked=True)
            else:
                conn.request("POST", "/gradio_api/upload", body, headers)
            response = conn.getresponse()
            return response.status, response.read().decode()
        finally:
            conn.close()


def new_session() -> str:
    return uuid.uuid4().hex[:11]


def completed(messages: list[dict]) -> list[Any]:
    """The final outputs of a run that completed without a Gradio error."""
    last = messages[-1]
    assert last["msg"] == "process_completed" and last.get("success"), str(last)[:500]
    return last["output"]["data"]


def texts(outputs: Any) -> str:
    return json.dumps(outputs)


def trace_of(server: Server, outputs: list[Any]) -> dict:
    """The exported trace of the run's first column (its download button's file), as served."""
    files = [
        o["value"]
        for o in outputs
        if isinstance(o, dict)
        and isinstance(o.get("value"), dict)
        and str(o["value"].get("orig_name", "")).endswith(".json")
    ]
    assert files, "no trace offered for download"
    with urllib.request.urlopen(files[0]["url"], timeout=TIMEOUT_S) as r:
        return json.load(r)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("public-server")
    pair = {} if HAVE_BUNDLED else dict(zip(("SPECVIZ_TARGET", "SPECVIZ_DRAFT"), save_tiny_pair(tmp / "pair")))
    proc, url, log = start_app(tmp, **SERVER_ENV, **pair)
    try:
        yield Server(proc, url)
    finally:
        stop(proc)
    raised = re.findall(r"^([A-Za-z_][\w.]*(?:Error|Exception)\b.*)$", log.read_text(), re.M)
    assert all(line.startswith("gradio.exceptions.Error: ") for line in raised), raised


# ---- (a) no remote code, no custom pair ------------------------------------------------------------------
def test_no_endpoint_takes_remote_code_or_a_custom_pair(server, tmp_path):
    marker = tmp_path / "evil-ran"
    evil = tmp_path / "evil-model"
    evil.mkdir()
    (evil / "evil.py").write_text(f"import pathlib\npathlib.Path({str(marker)!r}).write_text('ran')\n")
    (evil / "config.json").write_text(json.dumps({"model_type": "evil", "auto_map": {"AutoConfig": "evil.Cfg"}}))
    (evil / "tokenizer_config.json").write_text(json.dumps({"auto_map": {"AutoTokenizer": ["evil.Tok", None]}}))

    client = Client(server.url, verbose=False, download_files=False)
    api = client.view_api(return_format="dict", print_info=False)
    names = [
        p["parameter_name"]
        for kind in ("named_endpoints", "unnamed_endpoints")
        for endpoint in api[kind].values()
        for p in endpoint["parameters"]
    ]
    assert names and not any("remote" in n or "trust" in n for n in names), names
    page = json.dumps(server.config).lower()
    assert "trust_remote_code" not in page and "__custom__" not in page  # no such input, no custom choice

    load = server.deps["load_pair"]
    assert len(load["inputs"]) == 4  # choice, target, draft, the session's state: nothing else
    for choice, target in (("__custom__", str(evil)), (str(evil), str(evil)), ("__custom__", "owner/any-hub-repo")):
        try:  # Gradio's dropdown refuses a choice it does not offer; the handler refuses what gets past it
            shown = client.predict(choice, target, str(evil), api_name="/load_pair")
        except Exception as exc:  # noqa: BLE001 - gradio_client's AppError with the server's sentence
            shown = str(exc)
            assert "not in the list of choices" in shown, shown
        else:
            assert "Could not load that pair" in shown and ("preset pairs only" in shown or "Unknown preset" in shown)
            assert "Still using" in shown  # the preset pair stays
    # raw, by fn_index through the queue as any client may call it: the custom choice, and the same call with
    # an extra value where a trust_remote_code flag would go (the handler's own refusal of a custom pair in
    # public mode, past the dropdown, is tests/test_hosting.py's)
    for data in (["__custom__", str(evil), str(evil), None], ["__custom__", str(evil), str(evil), None, True]):
        messages = server.join("load_pair", data, new_session())
        assert "Traceback" not in texts(messages) and str(tmp_path) not in texts(messages).replace(str(evil), "")
        assert messages[-1].get("success") is False or "preset pairs only" in texts(messages)
    assert not marker.exists()


def test_columns_are_checked_on_the_server(server):
    """``/run``'s columns value, sent raw: more columns than public mode's 4, an unregistered algorithm, a
    setting the algorithm does not declare (a ``trust_remote_code`` flag included) and a column over the
    cost cap are each refused with a sentence; two columns of one algorithm run as two configurations."""
    cases = {
        "At most 4 columns": ["ar"] * 5,
        "unknown algorithm": [{"algorithm": "os.system"}],
        "has no setting": [{"algorithm": "sd", "params": {"trust_remote_code": True}}],
        "token positions": [{"algorithm": "sequoia", "params": {"size": 512, "depth": 32}}],
    }
    for words, columns in cases.items():
        data = server.run_data(prompt=PROMPT, max_new=128, pace=0)  # public mode's most (refused before any run)
        data[
            [server.components[i]["props"].get("elem_id") for i in server.deps["run"]["inputs"]].index(
                "sv-columns-spec"
            )
        ] = columns
        shown = texts(completed(server.join("run", data, new_session())))
        assert words in shown and "Traceback" not in shown, (words, shown[:300])
    data = server.run_data(prompt=PROMPT, max_new=4, pace=0, algos=["sd", "sd"], param_sd_gamma=2)
    data[[server.components[i]["props"].get("elem_id") for i in server.deps["run"]["inputs"]].index("sv-columns-spec")][
        1
    ]["params"]["gamma"] = 6
    shown = json.dumps(completed(server.join("run", data, new_session())), ensure_ascii=False)
    assert "Done · 2 runs" in shown and "sd · gamma 2" in shown and "sd · gamma 6" in shown, shown[:300]


# ---- (b) a crafted page report cannot hold a decode slot ---------------------------------------------------
def test_a_crafted_page_report_cannot_hold_a_decode_slot(server):
    done: dict[str, list[dict]] = {}
    started = [threading.Event(), threading.Event()]

    def attack(k: int) -> None:
        session = new_session()

        def on_message(message: dict) -> None:
            # its first update: the run holds a slot and listens to the page; report step 0 drawn, then nothing
            if message.get("msg") == "process_generating" and not started[k].is_set():
                for report in ("0:x", "-1:x", "999999999999:x"):
                    assert server.call("page_shown", [None, report], session)["status"] == 200
                started[k].set()

        data = server.run_data(prompt=PROMPT, max_new=ATTACK_TOKENS, algos=["ar"], pace=0.5)
        messages = server.join("run", data, session, on_message)
        done[f"attacker {k}"] = messages

    attackers = [threading.Thread(target=attack, args=(k,), daemon=True) for k in range(2)]
    for t in attackers:
        t.start()
    for event in started:
        assert event.wait(TIMEOUT_S), "an attacker's run never started"
    victim = Client(server.url, verbose=False, download_files=False)
    job = victim.submit(prompt=PROMPT, max_new_tokens=8, columns=["ar"], pace=0, api_name="/run")
    assert not done  # both slots are held (each attacker waits 4 s at least): the victim is queued behind them
    status = job.result(timeout=TIMEOUT_S)[0]
    for t in attackers:
        t.join(TIMEOUT_S)
    assert "Done" in status and "8 steps" in status, status
    assert set(done) == {"attacker 0", "attacker 1"}
    for who, messages in done.items():
        shown = texts(completed(messages))
        assert "Done" in shown and "stopped" not in shown, (who, shown[:300])  # ran to its end, unpaced at last


# ---- (c) Sequoia's cache is bounded ---------------------------------------------------------------------
def test_sequoias_cache_does_not_grow_past_its_cap(server):
    size, depth, k = 64, 32, 48
    cap, extra = CACHE_CAPS["dp"], 10
    vectors = [",".join(["0"] * (i % k) + [f"0.{i // k + 1}"] + ["0"] * (k - 1 - i % k)) for i in range(cap + extra)]
    assert len(set(vectors)) == len(vectors) and max(map(len, vectors)) <= 100  # a parameter's text limit
    sessions = [new_session() for _ in range(3)]  # at most 7 runs each: under the 10 a minute per visitor

    def run(i: int) -> None:
        data = server.run_data(
            prompt=PROMPT,
            max_new=1,
            algos=["sequoia"],
            pace=0,
            param_sequoia_size=size,
            param_sequoia_depth=depth,
            param_sequoia_acceptance=vectors[i],
        )
        shown = texts(completed(server.join("run", data, sessions[i // 7])))
        assert "Done" in shown and "sv-error" not in shown and "sv-bad" not in shown, shown[:500]

    for i in range(cap):  # the cache fills up (and the first Sequoia run warms everything else up)
        run(i)
    before = server.rss()
    for i in range(cap, cap + extra):
        run(i)
    grown = server.rss() - before
    table = (size + 1) * (depth + 1) * (k + 1) * 16  # one DP table's T (float64) and Y (int64)
    assert grown < extra * table / 2, (
        f"{extra} more vectors grew the server by {grown / MB:.1f} MB (each table {table / MB:.1f} MB)"
    )


# ---- (d) uploads over the limit -------------------------------------------------------------------------
def test_uploads_over_the_limit_get_429_with_a_sentence(server):
    per_minute, mb_per_minute = 10, 32  # public mode's
    codes = [server.upload(b"{}", "198.51.100.1")[0] for _ in range(per_minute)]
    assert codes == [200] * per_minute
    status, text = server.upload(b"{}", "198.51.100.1")
    assert status == 429
    assert text.startswith(
        f"This app takes at most {per_minute} uploads and {mb_per_minute} MB a minute from one address; try again in "
    )
    assert server.upload(b"{}", "198.51.100.2")[0] == 200  # another client has its own minute
    big = b"[" + b"0," * 2_499_999 + b"0]"  # 5,000,001 bytes: under the 12 MB a file
    statuses = [server.upload(big, "198.51.100.3")[0] for _ in range(7)]
    assert statuses == [200] * 6 + [429]  # 7 x 5 MB is over 32 MB a minute
    assert server.upload(b"{}", "198.51.100.4", chunked=True)[0] == 411  # a size it does not declare
    assert server.upload(b"{}")[0] == 200  # loopback itself: its own minute


# ---- (e) load: concurrent clients get what each would alone ---------------------------------------------
def test_concurrent_sampled_runs_equal_the_same_runs_alone(server):
    configs = [("ar" if i % 2 else "sd", 1000 + i) for i in range(8)]

    def output_ids(algo: str, seed: int) -> list[int]:
        data = server.run_data(prompt=PROMPT, max_new=8, temperature=0.8, top_p=0.95, seed=seed, algos=[algo], pace=0)
        outputs = completed(server.join("run", data, new_session()))
        trace = trace_of(server, outputs)
        assert (trace["algorithm"], trace["seed"], trace["sampling"]["temperature"]) == (algo, seed, 0.8)
        return trace["output_ids"]

    alone = [output_ids(*config) for config in configs]
    assert len({tuple(ids) for ids in alone}) > 1 and all(len(ids) == 8 for ids in alone)

    together: dict[int, Any] = {}

    def client(i: int) -> None:
        try:
            together[i] = output_ids(*configs[i])
        except Exception as exc:  # noqa: BLE001 - reported below
            together[i] = exc

    threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(len(configs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(TIMEOUT_S)
    assert [together.get(i) for i in range(len(configs))] == alone


# ---- (f) memory over many sessions ----------------------------------------------------------------------
def test_resident_memory_is_flat_over_200_new_sessions(server):
    data = server.run_data(prompt=PROMPT, max_new=1, algos=["ar"], pace=0)

    def tiny_run() -> None:
        shown = texts(completed(server.join("run", data, new_session())))
        assert "Done" in shown, shown[:300]

    warm_up, total = 20, 200
    for _ in range(warm_up):
        tiny_run()
    before = server.rss()
    highest = before
    for i in range(total - warm_up):
        tiny_run()
        if i % 20 == 19:
            highest = max(highest, server.rss())
    assert highest - before < 50 * MB, (
        f"{total} sessions: {before / MB:.0f} MB after {warm_up}, up to {highest / MB:.0f} MB"
    )
