"""The one-screen reference decoder (``specviz/reference.py``: plain chain speculative sampling, full
forwards, no engine) equals the engine's ``sd`` run on the same seed: the output tokens, and per step
the drafted tokens, their p and q, the coins, the accept decisions and the resampled / bonus token of
the trace's ``StepRecord`` forest. The tests also check that the runs reached every branch (coins,
rejections, bonus tokens, an EOS, a cut chain) and that another seed gives another trace."""

from __future__ import annotations

import pytest
from tiny import tiny_pair, with_eos

import specviz
from specviz.core.sampling import SamplingConfig
from specviz.reference import Step, speculative_sampling
from specviz.trace import DRAFTED, TESTED, RunTrace

TOL = 2e-5  # probabilities: the engine's cached tree forward against the reference's full forward (float32)
SAMPLINGS = {"t1": SamplingConfig(1.0), "t0.7-top3": SamplingConfig(0.7, top_k=3), "greedy": SamplingConfig(0.0)}


def engine(pair, prompt: list[int], gamma: int, cfg: SamplingConfig, seed: int, n: int) -> RunTrace:
    return specviz.decode(
        pair,
        "sd",
        prompt=prompt,
        max_new_tokens=n,
        seed=seed,
        temperature=cfg.temperature,
        top_k=cfg.top_k,
        top_p=cfg.top_p,
        gamma=gamma,
        controller="static",
        drafter="model",
        record_top_k=0,
    )


def reference(pair, prompt: list[int], gamma: int, cfg: SamplingConfig, seed: int, n: int):
    return speculative_sampling(
        pair.target, pair.draft, prompt, gamma, cfg, seed, n, eos=pair.eos_token_ids, vocab=pair.vocab_size
    )


def close(a: list, b: list) -> bool:
    return len(a) == len(b) and all(x is y if x is None or y is None else abs(x - y) <= TOL for x, y in zip(a, b))


def differences(trace: RunTrace, out: list[int], steps: list[Step], greedy: bool) -> list[str]:
    """Where the reference's run differs from the engine's trace (empty: the same run)."""
    bad = [] if out == trace.output_ids else [f"output {out} != engine {trace.output_ids}"]
    if len(steps) != len(trace.steps):
        return bad + [f"{len(steps)} steps != engine {len(trace.steps)}"]
    for k, (step, rec) in enumerate(zip(steps, trace.steps)):
        drafted = [n for n in rec.forest if n.status in DRAFTED]  # the chain, in draft order
        tested = [n for n in drafted if n.status in TESTED]
        extra = [n for n in rec.forest if n.status in ("resampled", "bonus")]
        # at temperature 0 the trace shows the draft's plain softmax; the rule's warped q is the one-hot
        q = [1.0] * len(drafted) if greedy else [n.q for n in drafted]
        checks = {
            "drafted": step.drafted == [n.token_id for n in drafted],
            "p": close(step.p, [n.p for n in drafted]),
            "q": close(step.q, q),
            "coins": close(step.coins, [n.draw for n in tested]),
            "accepted": step.accepted == [n.status == "accepted" for n in tested],
            "extra": [(step.extra, step.kind)] == [(n.token_id, n.status) for n in extra],
            "accept_prob": close(
                [min(1.0, p / q) for p, q in zip(step.p, step.q)][: len(tested)], [n.accept_prob for n in tested]
            ),
        }
        bad += [f"step {k}: {name} differs: {step} vs {rec.forest}" for name, ok in checks.items() if not ok]
    return bad


def reached(steps: list[Step]) -> set[str]:
    """The branches of the algorithm a run went through."""
    out = {s.kind for s in steps}
    out |= {"coin"} if any(u is not None for s in steps for u in s.coins) else set()
    out |= {"certain"} if any(u is None for s in steps for u in s.coins) else set()
    out |= {"rejected"} if any(not a for s in steps for a in s.accepted) else set()
    return out


@pytest.mark.parametrize("name", SAMPLINGS)
@pytest.mark.parametrize("family, draft", [("llama", "different"), ("llama", "noisy"), ("gpt2", "noisy")])
def test_reference_equals_the_engine_on_tiny_pairs(family, draft, name):
    cfg, pair, prompt = SAMPLINGS[name], tiny_pair(family, vocab=8, draft=draft), [1, 5, 2, 7]
    seen: set[str] = set()
    for seed in range(4):
        for gamma, n in ((4, 18), (3, 11)):  # 11 and 18 tokens: the last step's chain is cut to the budget
            trace = engine(pair, prompt, gamma, cfg, seed, n)
            out, steps = reference(pair, prompt, gamma, cfg, seed, n)
            assert differences(trace, out, steps, cfg.greedy) == []
            assert len(out) == n and trace.finish_reason == "length"
            seen |= reached(steps)
    assert {"bonus", "rejected", "certain"} <= seen  # both ends of a step, and decisions without a coin
    if not cfg.greedy:
        assert {"resampled", "coin"} <= seen
    else:
        assert all(u is None for u in (c for s in steps for c in s.coins))  # greedy draws nothing


@pytest.mark.parametrize("name", SAMPLINGS)
def test_reference_equals_the_engine_through_eos(name):
    """EOS is common (its logit raised): drafting stops after an EOS draft and the run ends at EOS."""
    cfg, pair, prompt = SAMPLINGS[name], with_eos(tiny_pair("llama", vocab=8, draft="noisy"), eos=0, bias=1.0), [3, 4]
    ended = stopped = 0
    for seed in range(8):
        trace = engine(pair, prompt, 4, cfg, seed, 24)
        out, steps = reference(pair, prompt, 4, cfg, seed, 24)
        assert differences(trace, out, steps, cfg.greedy) == []
        assert (out[-1] == 0) == (trace.finish_reason == "eos") and out.count(0) <= 1
        ended += trace.finish_reason == "eos"
        stopped += any(s.drafted[-1:] == [0] and len(s.drafted) < 4 for s in steps)  # an EOS draft ended the chain
    assert ended >= 4 and stopped >= 4


def test_another_seed_gives_another_trace():
    """The comparison can fail: the reference on seed s + 1 differs from the engine on seed s."""
    pair, prompt, cfg = tiny_pair("llama", vocab=8, draft="different"), [1, 5, 2, 7], SAMPLINGS["t1"]
    for seed in range(4):
        trace = engine(pair, prompt, 4, cfg, seed, 18)
        out, steps = reference(pair, prompt, 4, cfg, seed + 1, 18)
        assert differences(trace, out, steps, cfg.greedy) != []


def test_each_field_is_compared():
    """The comparison can fail on every field: one changed decision, coin, p, q, drafted or extra token
    of a matching run is reported."""
    import dataclasses

    pair, prompt, cfg = tiny_pair("llama", vocab=8, draft="different"), [1, 5, 2, 7], SAMPLINGS["t1"]
    trace = engine(pair, prompt, 4, cfg, 0, 18)
    out, steps = reference(pair, prompt, 4, cfg, 0, 18)
    assert differences(trace, out, steps, False) == []
    k = next(i for i, s in enumerate(steps) if any(u is not None for u in s.coins))
    s, j = steps[k], next(j for j, u in enumerate(steps[k].coins) if u is not None)
    changes = {
        "accepted": [not a if i == j else a for i, a in enumerate(s.accepted)],
        "coins": [u + 1e-3 if i == j else u for i, u in enumerate(s.coins)],
        "p": [x + 1e-4 if i == j else x for i, x in enumerate(s.p)],
        "q": [x * (1 + 1e-3) if i == j else x for i, x in enumerate(s.q)],
        "drafted": [(x + 1) % 8 if i == j else x for i, x in enumerate(s.drafted)],
        "extra": (s.extra + 1) % 8,
    }
    for name, value in changes.items():
        wrong = steps[:k] + [dataclasses.replace(s, **{name: value})] + steps[k + 1 :]
        assert any(f"{name} differs" in d for d in differences(trace, out, wrong, False)), name


@pytest.mark.parametrize(
    "cfg", [SamplingConfig(1.0), SamplingConfig(0.7, top_k=20), SamplingConfig(0.0)], ids=["t1", "t0.7-top20", "greedy"]
)
def test_reference_equals_the_engine_on_the_bundled_pair(bundled_pair, cfg):
    prompt = bundled_pair.encode("def add(a, b):\n")
    for seed in range(2):
        trace = engine(bundled_pair, prompt, 4, cfg, seed, 14)
        out, steps = reference(bundled_pair, prompt, 4, cfg, seed, 14)
        assert differences(trace, out, steps, cfg.greedy) == []
