"""``load_pair`` on directories written with ``save_pretrained`` (the same path as a hub id), the
vocabulary checks, and a clear error for every bad input, from Python and from the CLI."""

import subprocess
import sys

import pytest
from tiny import save_checkpoint, tiny_pair, tiny_tokenizer

import specviz
from specviz.errors import InvalidParameterError, ModelLoadError, PromptError, TokenizerMismatchError


@pytest.fixture(scope="module")
def dirs(tmp_path_factory):
    root = tmp_path_factory.mktemp("ckpt")
    tok = tiny_tokenizer()
    return {
        "tok": tok,
        "target": save_checkpoint(root / "target", "llama", tok, seed=0, hidden=32, layers=2),
        "draft": save_checkpoint(root / "draft", "llama", tok, seed=1),
        "padded": save_checkpoint(root / "padded", "llama", tok, seed=2, rows=len(tok) + 20),
        "other": save_checkpoint(
            root / "other", "llama", tiny_tokenizer(extra_text="class Other:\n    pass\n" * 9), seed=3
        ),
    }


def test_load_pair_from_saved_directories_and_decode(dirs):
    pair = specviz.load_pair(dirs["target"], dirs["draft"], device="cpu")
    assert pair.describe()["device"] == "cpu" and pair.describe()["dtype"] == "float32"
    trace = specviz.decode(pair, "sd", "def add(a, b):", max_new_tokens=12, temperature=0, gamma=3)
    ar = specviz.decode(pair, "ar", "def add(a, b):", max_new_tokens=12, temperature=0)
    assert trace.output_ids == ar.output_ids and len(trace.output_ids) >= 1
    assert trace.output_text == pair.tokenizer.decode(trace.output_ids)
    assert trace.prompt_ids == pair.tokenizer("def add(a, b):")["input_ids"]


def test_padded_vocab_is_sliced_to_the_shared_size(dirs):
    pair = specviz.load_pair(dirs["padded"], dirs["draft"], device="cpu")
    assert pair.vocab_size == len(dirs["tok"]) < pair.target.config.vocab_size
    trace = specviz.decode(pair, "sd", "import os", max_new_tokens=8, temperature=1.0, gamma=2)
    assert all(t < pair.vocab_size for t in trace.output_ids)


def test_mismatched_tokenizers_are_refused_naming_the_first_difference(dirs):
    with pytest.raises(TokenizerMismatchError, match="token id [0-9]+ is"):
        specviz.load_pair(dirs["target"], dirs["other"], device="cpu")


def test_unknown_models_give_a_load_error(tmp_path):
    with pytest.raises(ModelLoadError, match="^target: no model directory"):
        specviz.load_pair(str(tmp_path / "missing"))
    with pytest.raises(ModelLoadError, match="nobody-has/this-model"):
        specviz.load_pair("nobody-has/this-model")
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "readme.txt").write_text("not a model")
    with pytest.raises(ModelLoadError, match=r"is a directory but not a Hugging Face model: it has no config\.json\."):
        specviz.load_pair(str(tmp_path / "notes"))


def test_load_errors_keep_the_whole_message():
    from specviz.models.loading import one_line

    assert one_line(
        OSError("Couldn't instantiate the backend tokenizer from one of:\n(1) a tokenizers file\n(2) a slow tokenizer")
    ) == ("Couldn't instantiate the backend tokenizer from one of: (1) a tokenizers file (2) a slow tokenizer")
    assert len(one_line(ValueError("x" * 1000))) == 300


@pytest.mark.parametrize(
    "kwargs, error",
    [
        ({"prompt": ""}, PromptError),
        ({"prompt": "   "}, PromptError),
        ({"prompt": [1] * 5000}, PromptError),
        ({"max_new_tokens": 0}, InvalidParameterError),
        ({"temperature": -0.5}, InvalidParameterError),
        ({"top_p": 0.0}, InvalidParameterError),
        ({"top_p": 1.5}, InvalidParameterError),
        ({"top_k": -1}, InvalidParameterError),
        ({"gamma": 0}, InvalidParameterError),
        ({"gamma": 2.5}, InvalidParameterError),
        ({"beam": 3}, InvalidParameterError),
    ],
)
def test_bad_requests_raise_clear_errors(kwargs, error):
    pair = tiny_pair("llama", vocab=8)
    args = {"prompt": [1, 2], "max_new_tokens": 4, **kwargs}
    with pytest.raises(error) as info:
        specviz.decode(pair, "sd", args.pop("prompt"), **args)
    assert len(str(info.value)) > 20


def test_unknown_algorithm_lists_the_registry():
    with pytest.raises(specviz.UnknownAlgorithmError, match="registered: .*sd"):
        specviz.decode(tiny_pair("llama", vocab=8), "nope", [1], temperature=1.0)


@pytest.mark.slow
def test_cli_runs_and_reports_errors(dirs, tmp_path, capsys):
    out = tmp_path / "trace.json"
    cmd = [
        sys.executable,
        "-m",
        "specviz",
        "run",
        "--target",
        dirs["target"],
        "--draft",
        dirs["draft"],
        "--algo",
        "sd",
        "--prompt",
        "def add(a, b):",
        "--max-new-tokens",
        "10",
        "--temperature",
        "0",
        "--seed",
        "1",
        "--gamma",
        "3",
        "--out",
        str(out),
        "--no-color",
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "tau" in done.stdout and "target calls" in done.stdout
    trace = specviz.RunTrace.from_json(out.read_text())
    assert trace.algorithm == "sd" and trace.params["gamma"] == 3 and len(trace.output_ids) == 10
    from specviz.cli import main  # the rest in process: one interpreter start is enough to test the entry point

    assert main(cmd[3:-5] + ["--temperature", "-1"]) == 2
    err = capsys.readouterr().err
    assert "temperature must be 0 (greedy) or a number" in err and "Traceback" not in err
    assert main(["algorithms"]) == 0
    listing = capsys.readouterr().out
    assert "sd" in listing and "gamma" in listing
