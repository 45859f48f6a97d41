"""The feature drafter (``models.feature_head``: EAGLE-3's layer over the target's hidden states, a cut
draft vocabulary) keeps every algorithm exact, reads the right features, and costs no target call.

Exactness: chi-square of the first three generated tokens (the first step reads the prompt and
drafts nothing; the second drafts a chain of 2) and of the second token's marginal against the
enumerated target law at T = 1 and at T = 0.7 with top-k and top-p, 8000 runs, on a tiny Llama whose
feature head drafts over 5 of its 8 tokens (three tokens have q = 0 everywhere: only the residual can
produce them). Power: the same runs reject a 10 % over-acceptance of the head's drafts
(``test_the_feature_exactness_test_sees_a_small_bias``), as ``test_exactness`` states for ``sd``. Greedy: every
algorithm that drafts with a draft model equals ``ar`` token for token on four families with the feature drafter.
"""

import os
from collections import Counter

import pytest
import torch
from test_ui_support import read_hover
from tiny import (
    FAMILIES,
    chi_square_pvalue,
    exact_distribution,
    over_accept,
    sample_counts,
    tiny_model,
    with_feature_head,
)

import specviz
from specviz.core.sampling import SamplingConfig
from specviz.errors import InvalidParameterError
from specviz.models.feature_head import FeatureLM, load_feature_head
from specviz.models.loading import ModelPair
from specviz.models.tree_forward import CachedLM
from specviz.trace import DRAFTED

RUNS = int(os.environ.get("SPECVIZ_EXACTNESS_RUNS", 8000))
PROMPT = [1, 2, 3]
FEATURE_ALGORITHMS = {
    "sd": {},
    "dyntree": {"nodes": 6, "depth": 3, "topk": 2},
    "mcsd": {"k_config": "2x2"},
    "specinfer": {"k_config": "2x1x1"},
    "sequoia": {"acceptance": "0.5,0.2", "size": 6},
}


def feature_pair(
    family: str = "llama", vocab: int = 8, keep: int = 5, seed: int = 0, scale: float = 0.5, draft: bool = False
) -> ModelPair:
    """A tiny target with a random feature head over ``keep`` of its ``vocab`` tokens (layers 0 and 1)."""
    target = tiny_model(family, vocab, seed, hidden=16, layers=2, init_range=0.3)
    pair = ModelPair(
        target,
        tiny_model(family, vocab, seed + 1000, hidden=8, layers=1) if draft else None,
        None,
        vocab,
        target_name=f"tiny-{family}",
    )
    return with_feature_head(pair, keep, seed, scale)


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("algorithm", sorted(FEATURE_ALGORITHMS))
def test_greedy_with_the_feature_drafter_equals_ar(family, algorithm):
    pair = feature_pair(family)
    ar = specviz.decode(pair, "ar", PROMPT, max_new_tokens=24, temperature=0)
    run = specviz.decode(
        pair, algorithm, PROMPT, max_new_tokens=24, temperature=0, drafter="feature", **FEATURE_ALGORITHMS[algorithm]
    )
    assert run.output_ids == ar.output_ids
    assert run.drafter["kind"] == "feature" and run.params["drafter"] == "feature"  # kept as given
    assert run.steps[0].draft_calls == 0 and run.steps[0].n_drafted == 0  # EAGLE's prefill: nothing to read yet
    assert any(s.n_drafted for s in run.steps[1:])


def test_the_target_keeps_the_features_of_the_committed_positions():
    """After a sampled run with rejections, the features the target kept (``CachedLM.rows``) equal those
    of one plain forward over the committed tokens, position by position."""
    pair = feature_pair("llama", scale=0.2)
    run = specviz.stream(pair, "sd", PROMPT, max_new_tokens=20, temperature=1.0, seed=3, drafter="feature", gamma=3)
    steps = list(run)
    assert any(s.n_accepted < s.n_drafted for s in steps)  # some draft was rejected
    dec = run.decoder
    with torch.no_grad():
        out = pair.target(torch.tensor([dec.tokens[:-1]]), output_hidden_states=True)
    want = torch.cat([out.hidden_states[i][0] for i in (0, 1)], -1)
    assert dec.target.rows.shape == want.shape
    torch.testing.assert_close(dec.target.rows, want, rtol=1e-5, atol=1e-5)


def test_decoding_reads_what_training_unrolls():
    """The draft's law after the committed context and one level deeper equals ``FeatureHead.unrolled``
    (the training-time test) at steps 0 and 1 on the same tokens: training and decoding share one
    row convention (row j reads the feature of j - 1 and token j)."""
    pair = feature_pair("llama")
    head = pair.feature
    tokens = [1, 2, 3, 4, 5, 6]
    target = CachedLM(pair.target, pair.vocab_size, features=head.cfg.layers)
    target.extend(tokens[:-1])
    target.commit([])
    lm = FeatureLM(head, target, pair.target.get_input_embeddings().weight, pair.vocab_size)
    root = lm.extend(tokens)
    deeper = lm.forward([7], [-1])
    with torch.no_grad():
        feats = torch.cat([torch.zeros(1, 1, target.rows.shape[-1]), target.rows[None]], 1)
        outs = head.unrolled(feats, torch.tensor([tokens + [7]])[:, :-1], pair.target.get_input_embeddings().weight, 2)
        full = torch.tensor([tokens + [7]])
        outs1 = head.unrolled(
            torch.cat([feats, torch.zeros_like(feats[:, :1])], 1), full, pair.target.get_input_embeddings().weight, 2
        )
    step0 = head.logits(outs[0][0, -1])
    torch.testing.assert_close(root[0, head.vocab], step0, rtol=1e-4, atol=1e-4)
    step1 = head.logits(outs1[1][0, len(tokens) - 1])
    torch.testing.assert_close(deeper[0, head.vocab], step1, rtol=1e-4, atol=1e-4)
    outside = torch.ones(pair.vocab_size, dtype=torch.bool)
    outside[head.vocab] = False
    assert bool((root[0, outside] == torch.finfo(torch.float32).min).all())  # q = 0 outside the draft vocabulary


def test_the_feature_drafter_costs_no_extra_target_call():
    pair = feature_pair("llama", draft=True)
    for drafter in ("feature", "model"):
        run = specviz.decode(pair, "sd", PROMPT, max_new_tokens=16, temperature=1.0, seed=1, drafter=drafter)
        assert run.metrics["target_calls"] == len(run.steps)


def test_drafter_choice_is_checked_and_resolved():
    with_head = feature_pair("llama", draft=True)
    auto = specviz.decode(with_head, "sd", PROMPT, max_new_tokens=4, temperature=0)
    assert auto.params["drafter"] == "auto" and auto.drafter["kind"] == "feature"  # the setting, and what ran
    no_head = feature_pair("llama", draft=True)
    no_head.feature = None
    assert specviz.decode(no_head, "sd", PROMPT, max_new_tokens=4, temperature=0).drafter["kind"] == "draft_model"
    with pytest.raises(InvalidParameterError) as err:
        specviz.decode(no_head, "sd", PROMPT, max_new_tokens=4, drafter="feature", temperature=1.0)
    assert err.value.param == "drafter"
    with pytest.raises(InvalidParameterError):
        specviz.decode(with_head, "sd", PROMPT, max_new_tokens=4, drafter="eagle", temperature=1.0)
    only_head = feature_pair("llama")  # a target and a feature head, no draft model
    with pytest.raises(InvalidParameterError):
        specviz.decode(only_head, "sd", PROMPT, max_new_tokens=4, drafter="model", temperature=1.0)


def test_a_saved_head_loads_back_with_its_vocabulary(tmp_path):
    pair = feature_pair("llama")
    pair.feature.save(tmp_path, {"note": "test"}, dtype=torch.float32)
    back = load_feature_head(tmp_path, pair.target)
    assert back.vocab.tolist() == pair.feature.vocab.tolist()
    for (name, a), b in zip(pair.feature.state_dict().items(), back.state_dict().values()):
        assert torch.equal(a, b), name
    other = tiny_model("llama", 12, 0, hidden=16, layers=2)
    with pytest.raises(specviz.SpecvizError):
        load_feature_head(tmp_path, other)


SETTINGS = [SamplingConfig(1.0), SamplingConfig(0.7, top_k=5, top_p=0.9)]


def fit(counts, law) -> float:
    """Bonferroni-combined chi-square p-value of the joint law of three tokens and of the second token's
    marginal: the first step reads the prompt and drafts nothing (its token is plain sampling), so the
    first token the feature head drafts is the second."""

    def second(mapping):
        out = Counter()
        for seq, v in mapping.items():
            out[seq[1:2]] += v
        return out

    return min(1.0, 2 * min(chi_square_pvalue(counts, law), chi_square_pvalue(second(counts), second(law))))


@pytest.mark.slow
@pytest.mark.parametrize("sampling", SETTINGS, ids=["t1", "t07-topk-topp"])
def test_sd_with_the_feature_drafter_follows_the_target(sampling):
    pair = feature_pair("llama")
    law = exact_distribution(pair, PROMPT, 3, sampling)
    # the first step is the prefill (nothing drafted); budget 4 lets the second draft a chain of 2
    counts = sample_counts(pair, "sd", PROMPT, 3, RUNS, sampling, budget=4, gamma=2, drafter="feature")
    assert fit(counts, law) > 1e-3


@pytest.mark.slow
def test_the_feature_exactness_test_sees_a_small_bias(monkeypatch):
    over_accept(monkeypatch, 1.1)
    pair = feature_pair("llama")
    law = exact_distribution(pair, PROMPT, 3, SETTINGS[0])
    counts = sample_counts(pair, "sd", PROMPT, 3, RUNS, SETTINGS[0], budget=4, gamma=2, drafter="feature")
    assert fit(counts, law) < 1e-3


def test_a_feature_run_says_where_its_tokens_came_from_and_replays_without_a_model():
    from specviz import viz
    from specviz.trace_check import check_trace
    from specviz.viz.narrative import step_narrative

    pair = feature_pair("llama")
    run = specviz.decode(pair, "sd", PROMPT, max_new_tokens=12, temperature=1.0, seed=2, drafter="feature")
    back = specviz.RunTrace.from_json(run.to_json())
    check_trace(back)
    assert back.drafter == run.drafter and back.drafter["draft_vocab"] == 5 and back.drafter["layers"] == [0, 1]
    first = step_narrative(back.steps[0], "sd", drafter=back.drafter)
    assert "prefill" in first
    k = next(i for i, s in enumerate(back.steps) if s.n_drafted >= 2)
    story = step_narrative(back.steps[k], "sd", drafter=back.drafter)
    assert "feature head" in story and "5 tokens" in story
    assert "feature head" not in step_narrative(back.steps[k], "sd")
    hovers = [read_hover(h) for tr in viz.step_tree_figure(back, k).data if tr.hovertext for h in tr.hovertext]
    assert any("target's own features" in h for h in hovers) and any("own feature at its parent" in h for h in hovers)


def test_sequoia_calibrates_and_times_the_feature_head():
    """Sequoia's acceptance vector and its hardware-aware timing are measured with the drafter the run uses."""
    from specviz.algorithms.sequoia_tune import estimate_acceptance, measure_times

    pair = feature_pair("llama", draft=True)
    run = specviz.decode(
        pair,
        "sequoia",
        PROMPT,
        max_new_tokens=12,
        temperature=0,
        drafter="feature",
        calibration_steps=8,
        width=4,
        size=6,
        depth=3,
        hardware_aware=True,
    )
    ar = specviz.decode(pair, "ar", PROMPT, max_new_tokens=12, temperature=0)
    assert run.output_ids == ar.output_ids
    sampling = SamplingConfig(0.0)
    feature = estimate_acceptance(pair, sampling, 4, 8, drafter="feature")
    model = estimate_acceptance(pair, sampling, 4, 8, drafter="model")
    assert feature.vector != model.vector  # two drafters, two measured vectors
    verify, draft_ms = measure_times(pair, 4, repeats=1, drafter="feature")
    assert draft_ms > 0 and set(verify) >= {1, 4}


@pytest.mark.parametrize("family", FAMILIES)
def test_the_draft_model_over_the_cut_vocabulary_stays_exact_in_greedy(family):
    pair = feature_pair(family, draft=True)
    ar = specviz.decode(pair, "ar", PROMPT, max_new_tokens=16, temperature=0)
    run = specviz.decode(pair, "sd", PROMPT, max_new_tokens=16, temperature=0, drafter="model_cut")
    assert run.output_ids == ar.output_ids and run.drafter["draft_vocab"] == 5
    outside = set(range(8)) - set(pair.feature.vocab.tolist())
    drafted = [n.token_id for s in run.steps for n in s.forest if n.status in DRAFTED]
    assert drafted and not set(drafted) & outside  # the draft model never drafts outside the cut


@pytest.mark.slow
def test_sd_with_the_cut_draft_model_follows_the_target():
    pair = feature_pair("llama", draft=True)
    law = exact_distribution(pair, PROMPT, 2, SETTINGS[0])
    counts = sample_counts(pair, "sd", PROMPT, 2, RUNS, SETTINGS[0], budget=3, gamma=3, drafter="model_cut")
    assert min(1.0, 2 * min(chi_square_pvalue(counts, law), chi_square_pvalue(first(counts), first(law)))) > 1e-3


def first(mapping):
    out = Counter()
    for seq, v in mapping.items():
        out[seq[:1]] += v
    return out


def test_a_saved_head_is_split_into_files_under_the_spaces_limit(tmp_path, monkeypatch):
    from specviz.models import feature_head

    pair = feature_pair("llama")
    monkeypatch.setattr(feature_head, "SHARD_BYTES", 600)  # a tiny limit: several shards
    pair.feature.save(tmp_path, dtype=torch.float32)
    files = sorted(tmp_path.glob("feature_head-*.safetensors"))
    assert len(files) > 2
    back = load_feature_head(tmp_path, pair.target)
    assert all(torch.equal(a, b) for a, b in zip(pair.feature.state_dict().values(), back.state_dict().values()))
    pair.feature.save(tmp_path, dtype=torch.float32)  # saving again leaves no stale shard behind
    assert sorted(tmp_path.glob("feature_head-*.safetensors")) == files
