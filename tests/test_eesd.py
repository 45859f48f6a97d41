"""``eesd`` (early-exit drafting with Thompson-sampling control) and the draft-length controllers
``beta_ts`` / ``cali_ts`` / ``fixed`` on ``eesd`` and ``sd``: greedy equality with ``ar`` on four
families with fresh heads, exactness against the enumerated target law, counted calls, and the
controller state each step carries.

Exactness power: the target has 3 layers and the fresh head skips its middle layer, so draft and
target differ (many rejections); the prior Beta(4, 1) continues with probability 0.8, so the first
step drafts a chain of two most of the time and both output tokens go through the rule. With 4000
runs (``SPECVIZ_EXACTNESS_RUNS`` changes it) the same test flags a 20% over-acceptance
(``min(1, 1.2 p/q)``) on this pair: checked below (``test_the_eesd_test_sees_a_small_bias``). A 10%
over-acceptance is at the edge of what 4000 runs see (p = 0.0012 against the 0.001 threshold with
these seeds); 8000 runs are needed for it. The rule itself is exact by enumeration in
``test_acceptance.py``.
"""

import json
import os
from dataclasses import replace

import pytest
import torch
from counting import count_forwards
from tiny import FAMILIES, exact_distribution, goodness_of_fit, over_accept, sample_counts, tiny_pair

import specviz
from specviz.core import thompson as ts
from specviz.core.sampling import SamplingConfig
from specviz.errors import InvalidParameterError
from specviz.models.early_exit import CalibrationHead, capture_output, final_norm, first_n
from specviz.models.loading import attach_early_exit

RUNS = int(os.environ.get("SPECVIZ_EXACTNESS_RUNS", 4000))
PROMPT = [1, 2, 3]
SETTINGS = [SamplingConfig(1.0), SamplingConfig(0.7, top_k=5, top_p=0.9)]
LONG = {"alpha0": 4.0, "beta0": 1.0}  # a prior that usually drafts on


def ee_pair(family: str = "llama", vocab: int = 64, layers: int = 3, init_range: float = 0.05, hidden: int = 32):
    pair = tiny_pair(family, vocab=vocab, draft="noisy", init_range=init_range, hidden=hidden, layers=layers)
    return attach_early_exit(pair, 1)


def out(trace) -> list[int]:
    return [c.token_id for s in trace.steps for c in s.committed]


@pytest.fixture(scope="module")
def small():
    return ee_pair("llama", vocab=8, init_range=0.2, hidden=16)


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("controller", ["beta_ts", "cali_ts", "fixed"])
def test_eesd_greedy_equals_ar(family, controller):
    pair = ee_pair(family)
    ar = specviz.decode(pair, "ar", [5, 9, 2, 7], max_new_tokens=40, temperature=0)
    fixed = {"fixed_length": 4} if controller == "fixed" else {}  # a setting its controller ignores is refused
    tr = specviz.decode(
        pair, "eesd", [5, 9, 2, 7], max_new_tokens=40, temperature=0, controller=controller, seed=3, **fixed
    )
    assert out(tr) == out(ar) and len(out(tr)) == 40
    kinds = [c.kind for s in tr.steps for c in s.committed]
    assert "draft" in kinds and "resampled" in kinds  # the head agrees sometimes, not always
    assert all(s.target_calls == 1 for s in tr.steps) and tr.lossless


@pytest.mark.slow
@pytest.mark.parametrize("sampling", SETTINGS, ids=["t1", "t07-topk-topp"])
def test_eesd_first_two_tokens_follow_target(small, sampling):
    law = exact_distribution(small, PROMPT, 2, sampling)
    counts = sample_counts(small, "eesd", PROMPT, 2, RUNS, sampling, budget=3, **LONG)
    assert goodness_of_fit(counts, law) > 1e-3


@pytest.mark.slow
def test_sd_with_beta_ts_first_two_tokens_follow_target():
    """At T = 1 only: the controller only chooses how many tokens to draft, from earlier outcomes; the
    warp's path through ``sd`` (the same chain and rule) is test_exactness's."""
    pair = tiny_pair("llama", vocab=8)
    law = exact_distribution(pair, PROMPT, 2, SETTINGS[0])
    counts = sample_counts(pair, "sd", PROMPT, 2, RUNS, SETTINGS[0], budget=3, controller="beta_ts", **LONG)
    assert goodness_of_fit(counts, law) > 1e-3


@pytest.mark.slow
def test_the_eesd_test_sees_a_small_bias(small, monkeypatch):
    over_accept(monkeypatch, 1.2)
    law = exact_distribution(small, PROMPT, 2, SETTINGS[0])
    counts = sample_counts(small, "eesd", PROMPT, 2, RUNS, SETTINGS[0], budget=3, **LONG)
    assert goodness_of_fit(counts, law) < 1e-3


def test_eesd_needs_an_early_exit_head():
    with pytest.raises(InvalidParameterError, match="early_exit"):
        specviz.decode(tiny_pair("llama", vocab=8), "eesd", PROMPT, max_new_tokens=4, temperature=1.0)


def test_calls_are_counted_where_they_happen():
    pair = ee_pair("llama")
    with count_forwards(target=pair.target, draft=pair.early_exit.exit_model) as counts:
        tr = specviz.decode(
            pair, "eesd", PROMPT, max_new_tokens=30, temperature=1.0, seed=2, controller="fixed", fixed_length=3
        )
    assert sum(s.target_calls for s in tr.steps) == counts["target"] == len(tr.steps)
    assert sum(s.draft_calls for s in tr.steps) == counts["draft"] > 0
    # a chain of k drafts costs k draft forwards (the last draft is never fed to the draft)
    assert all(s.draft_calls == s.controller.to_json()["drafted"] for s in tr.steps)


def test_beta_ts_state_follows_algorithm_2_round_by_round():
    pair = ee_pair("llama")
    tr = specviz.decode(pair, "eesd", PROMPT, max_new_tokens=60, temperature=1.0, seed=4, controller="beta_ts")
    states = [s.controller.to_json() for s in tr.steps]
    json.dumps(states)  # plain JSON
    assert (states[0]["alpha"], states[0]["beta"]) == (1.0, 1.0)  # reset per prompt
    post = ts.beta_prior(1.0, 1.0)
    for s, st in zip(tr.steps, states):
        assert st["kind"] == "beta_ts" and (st["alpha"], st["beta"]) == (round(post.alpha, 5), round(post.beta, 5))
        k, a = st["drafted"], st["accepted"]
        assert k == len(s.forest) - 1 == len(st["draws"]) and a == sum(c.kind == "draft" for c in s.committed)
        if not k:  # the last token of the budget: nothing drafted, nothing learned
            assert st["stop_reason"] == "max_len" and st["update"] is None and s is tr.steps[-1]
            continue
        assert all(d["continue"] and d["stop"] is None for d in st["draws"][:-1])
        last = st["draws"][-1]
        assert not last["continue"] and last["stop"] == st["stop_reason"] in ("chi0", "max_len", "eos")
        if st["stop_reason"] == "chi0":
            assert last["chi"] == 0 and last["u"] >= last["theta"]
        assert all(d["u"] < d["theta"] for d in st["draws"][:-1])  # chi = 1[u < theta]
        post, up = ts.beta_update(post, k, a, "paper")
        assert st["update"]["d_alpha"] == up.d_alpha and st["update"]["d_beta"] == up.d_beta
        assert (st["after"]["alpha"], st["after"]["beta"]) == (round(post.alpha, 5), round(post.beta, 5))
    assert len({st["drafted"] for st in states}) > 1  # the length varies round to round


def test_fixed_length_and_the_safety_cap_are_logged():
    pair = ee_pair("llama")
    tr = specviz.decode(pair, "eesd", PROMPT, max_new_tokens=30, temperature=0, controller="fixed", fixed_length=4)
    for s in tr.steps:  # K a round, unless the budget (30 tokens; a chain never passes remaining - 1) cuts it
        room = 30 - s.n_before - 1
        assert s.controller.to_json()["drafted"] == min(4, room)
        assert s.controller.to_json()["stop_reason"] == ("fixed_length" if room > 4 else "max_len")
    capped = specviz.decode(
        pair, "eesd", PROMPT, max_new_tokens=30, temperature=0, controller="fixed", fixed_length=10, k_max=3
    )
    assert out(capped) == out(tr)
    for s in capped.steps:
        st, room = s.controller.to_json(), 30 - s.n_before - 1
        assert st["drafted"] == min(3, room) and st["k_max"] == 3
        assert st["k_cap_hit"] == (st["stop_reason"] == "k_cap") == (room > 3)
    # the budget ends the last chain: 30 tokens, the chain never passes remaining - 1
    short = specviz.decode(pair, "eesd", PROMPT, max_new_tokens=3, temperature=0, controller="fixed", fixed_length=10)
    first = short.steps[0].controller
    assert first.drafted == 2 and first.stop_reason == "max_len"


def test_the_printed_running_estimate_drifts_to_one_and_the_default_does_not():
    pair = ee_pair("llama", init_range=0.2)  # a poor head: most drafts are rejected
    kw = dict(max_new_tokens=60, temperature=1.0, seed=1, controller="cali_ts")
    fixed = specviz.decode(pair, "eesd", PROMPT, **kw).steps[-1].controller.to_json()
    literal = specviz.decode(pair, "eesd", PROMPT, theta_hat_rule="paper_literal", **kw).steps[-1].controller.to_json()
    assert literal["after"]["theta_hat"] > 0.95 and fixed["after"]["theta_hat"] < 0.6
    assert fixed["theta_m_source"].startswith("untrained") and all(d["theta_m"] == 0.5 for d in fixed["draws"])


def test_cali_ts_reads_the_calibration_head_on_real_hidden_states():
    pair = ee_pair("llama")
    torch.manual_seed(0)
    cal = CalibrationHead(32)
    with torch.no_grad():
        cal.w_p.weight.normal_(0, 0.5)
    pair.heads = replace(pair.heads, calibration=cal, calibration_sigma_m=0.2)  # as load_pair attaches a saved one
    tr = specviz.decode(pair, "eesd", PROMPT, max_new_tokens=30, temperature=0, controller="cali_ts", seed=0)
    assert not final_norm(pair.target)._forward_hooks  # the H^(T) hook is gone after the run
    states = [s.controller.to_json() for s in tr.steps]
    assert states[0]["theta_m_source"] == "calibration head" and states[0]["sigma_m"] == 0.2
    assert len({d["theta_m"] for st in states for d in st["draws"]}) > 3
    # Eq. 5 by hand for the first draft token of round 2: H^(T) at the last accepted position of round 1
    # (the position whose p gave round 1's last token), h_D after the committed text
    seq = PROMPT + tr.output_ids[: tr.steps[1].n_before]
    head = pair.early_exit
    with torch.no_grad(), capture_output(final_norm(pair.target)) as h_t:
        pair.target(torch.tensor([seq[:-1]]))
        _, h_d = head(first_n(pair.target, torch.tensor([seq]), head.exit_layer), return_hidden=True)
        want = float(cal(cal.project_target(h_t[0][0, -1]), h_d[0, -1], 1))
    got = states[1]["draws"][0]
    assert got["theta_m"] == pytest.approx(want, abs=1e-4)
    assert got["mu"] == pytest.approx(got["w_m"] * got["theta_m"] + (1 - got["w_m"]) * got["theta_hat"], abs=1e-4)


def test_sd_keeps_its_static_gamma_unless_a_controller_is_given():
    pair = tiny_pair("llama", vocab=8)
    kw = dict(max_new_tokens=20, temperature=1.0, seed=7)
    default = specviz.decode(pair, "sd", PROMPT, gamma=3, **kw)
    assert all(s.controller is None for s in default.steps)
    assert all(len(s.forest) - 1 == min(3, 20 - s.n_before - 1) for s in default.steps)
    ts_run = specviz.decode(pair, "sd", PROMPT, controller="beta_ts", **kw)
    assert all(s.controller.to_json()["kind"] == "beta_ts" for s in ts_run.steps)
    assert len({len(s.forest) for s in ts_run.steps}) > 1
    fixed = specviz.decode(pair, "sd", PROMPT, controller="fixed", fixed_length=3, **kw)
    assert all(s.controller.to_json()["drafted"] == min(3, 20 - s.n_before - 1) for s in fixed.steps)


def test_eesd_runs_on_the_bundled_pair_with_its_head():
    from specviz.presets import bundled_preset

    p = bundled_preset()
    pair = specviz.load_pair(p.target, p.draft, early_exit=p.early_exit)
    ar = specviz.decode(pair, "ar", "def add(a, b):\n", max_new_tokens=24, temperature=0)
    tr = specviz.decode(pair, "eesd", "def add(a, b):\n", max_new_tokens=24, temperature=0)
    assert tr.output_ids == ar.output_ids and tr.metrics["target_calls"] < ar.metrics["target_calls"]


def test_the_printed_beta_update_breaks_and_the_default_does_not():
    pair = ee_pair("llama", init_range=0.2)  # a poor head: a first round that accepts nothing is common
    kw = dict(max_new_tokens=60, temperature=1.0, controller="beta_ts")
    # round 1 runs on the prior under either rule: pick a seed whose first round accepts nothing
    kw["seed"] = next(
        s
        for s in range(50)
        if specviz.decode(pair, "eesd", PROMPT, **{**kw, "seed": s, "max_new_tokens": 6}).steps[0].controller.accepted
        == 0
    )
    steps = []
    with pytest.raises(ValueError, match="not a distribution"):
        for step in specviz.stream(pair, "eesd", PROMPT, beta_rule="paper_literal", **kw):
            steps.append(step)
    assert steps[0].controller.to_json()["accepted"] == 0 and steps[0].controller.to_json()["update"]["d_alpha"] == -1.0
    fine = specviz.decode(pair, "eesd", PROMPT, **kw)
    assert len(fine.output_ids) == 60 and all(s.controller.to_json()["alpha"] >= 1 for s in fine.steps)
