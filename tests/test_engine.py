"""The engine's contracts: calls counted where they happen, controller hooks, trace v2 positions,
the lossless flag, input validation, and old (v1) traces still loading."""

import dataclasses
import json

import pytest
import torch
from counting import count_forwards
from tiny import memoised_forwards, tiny_pair, with_eos, with_feature_head

import specviz
import specviz.metrics
from specviz.algorithms.decoder import Decoder
from specviz.algorithms.drafters import ModelDrafter
from specviz.algorithms.tree_engine import StaticShape, run_engine
from specviz.core.rules import MultiCandidate, OverAcceptance
from specviz.core.sampling import SamplingConfig
from specviz.core.trees import chain_shape, k_config_shape
from specviz.step_state import UnknownState
from specviz.trace import RunTrace

CASES = [
    ("ar", {}),
    ("sd", {"gamma": 3}),
    ("mcsd", {"k_config": "3x2x1"}),
    ("mcsd", {"k_config": "2x2", "replacement": True}),
    ("specinfer", {"k_config": "2x1x1"}),
    ("sequoia", {"size": 10, "depth": 4, "acceptance": "0.6,0.2,0.1"}),
    ("pld", {"num_tokens": 4, "max_ngram": 2}),
    ("beam", {"width": 3}),
    ("dsbd", {"width": 3, "gamma": 2}),
]


@pytest.fixture(scope="module")
def pair():
    return tiny_pair("llama", vocab=16, draft="noisy", noise=0.5)


@pytest.mark.parametrize("temperature", [0.0, 1.0])
@pytest.mark.parametrize("algorithm,params", CASES, ids=[f"{a}-{i}" for i, (a, _) in enumerate(CASES)])
def test_calls_are_counted_where_they_happen(pair, algorithm, params, temperature):
    with count_forwards(target=pair.target, draft=pair.draft) as n:
        run = specviz.stream(
            pair, algorithm, [1, 2, 3, 1, 2, 3, 1], max_new_tokens=20, temperature=temperature, seed=2, **params
        )
        seen_t = seen_d = 0
        for step in run:
            assert step.target_calls == n["target"] - seen_t
            assert step.draft_calls == n["draft"] - seen_d
            assert step.target_fed == n.fed["target"][seen_t:]  # the tokens each call ran on, for the cost model
            assert step.draft_fed == n.fed["draft"][seen_d:]
            seen_t, seen_d = n["target"], n["draft"]
    m = run.trace.metrics
    assert m["target_calls"] == n["target"] and m["draft_calls"] == n["draft"]
    assert m["tau"] == pytest.approx(len(run.trace.output_ids) / n["target"])
    if algorithm in ("ar", "pld", "beam"):
        assert n["draft"] == 0


class StopWhenUnsure(StaticShape):
    """Draft on only while the drafted token had q >= 0.5 (an EESD-like stop rule), and keep at most
    one node per level (a width rule)."""

    kind = "test"

    def __init__(self, shape):
        super().__init__(shape)
        self.asked, self.steps = 0, 0

    def go_on(self, tree, node):
        self.asked += 1
        return tree.q_draw[node] >= 0.5

    def keep(self, tree, level, nodes):
        return nodes[:1]

    def update(self, dec, result):
        self.steps += 1

    def state(self, result):  # a kind this specviz has no type for: kept as its raw object
        return UnknownState({"kind": self.kind, "steps": self.steps, "drafted": len(result.tree)})


@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_controller_hooks_stop_and_prune_the_draft(pair, temperature):
    prompt = [1, 2, 3]
    dec = Decoder(pair, prompt, 24, SamplingConfig(temperature), seed=0)
    ctrl = StopWhenUnsure(k_config_shape((2, 2, 2, 2)))
    steps = list(run_engine(dec, ModelDrafter(dec.draft), ctrl, MultiCandidate(replacement=False)))
    assert ctrl.asked == sum(len(s.forest) - 1 for s in steps)  # asked after every drafted token
    for i, s in enumerate(steps):
        assert s.controller.to_json() == {"kind": "test", "steps": i + 1, "drafted": len(s.forest) - 1}
        drafted = s.forest[:-1]
        for n in drafted:
            if n.parent is not None:  # only a confident node that was first at its level has children
                parent = drafted[n.parent]
                assert parent.q >= 0.5 and parent.id == min(m.id for m in drafted if m.depth == parent.depth)
        assert s.draft_calls <= 1 + max((n.depth for n in drafted), default=0)
    if temperature == 0:
        ref = specviz.decode(pair, "ar", prompt, max_new_tokens=24, temperature=0).output_ids
        assert dec.output == ref


@pytest.mark.parametrize("temperature", [0.0, 0.9])
def test_the_walk_copies_only_the_rows_it_visits(pair, monkeypatch, temperature):
    """``VerifyRows``: of a verify call's [1 + n, V] distributions only the accepted path's rows and the
    row where the walk stopped leave the device; the other nodes' p come from one gather, and equal
    their rows' entries."""
    from specviz.algorithms import decoder as D

    copied: list[set[int]] = []
    row = D.VerifyRows.row

    def spying_row(self, i):
        if not copied or copied[-1] is not getattr(self, "_seen", None):
            self._seen = set()
            copied.append(self._seen)
        self._seen.add(i)
        return row(self, i)

    monkeypatch.setattr(D.VerifyRows, "row", spying_row)
    trace = specviz.decode(
        pair, "mcsd", [1, 2, 3], max_new_tokens=30, temperature=temperature, seed=1, k_config="3x2x2"
    )
    assert len(copied) == len(trace.steps)
    for step, rows in zip(trace.steps, copied):
        path = [n.id for n in step.forest if n.status == "accepted"]
        assert rows == {0} | {i + 1 for i in path}
    assert sum(len(s.forest) - 1 for s in trace.steps) > 3 * sum(
        len(r) for r in copied
    )  # nodes verified vs rows copied


def test_positions_explain_every_decision(pair):
    trace = specviz.decode(
        pair, "mcsd", [1, 2, 3], max_new_tokens=30, temperature=0.9, top_k=10, seed=1, k_config="3x2", record_top_k=4
    )
    for step in trace.steps:
        path = [n for n in step.forest if n.status == "accepted"]
        parents = [None] + [n.id for n in path]
        assert [r.parent for r in step.positions] == parents[: len(step.positions)]
        assert len(step.positions) == len(path) + 1  # every visited position, the last one included
        for r, tv in zip(step.positions, step.tv):
            assert r.residual_mass == pytest.approx(tv, abs=1e-5)  # = TV(p, q)
            assert r.p == sorted(r.p, reverse=True) and len(r.p) == len(r.ids) == len(r.q)
            assert 4 <= len(r.ids) <= 8 + 3 + 1  # top-4 of p and q, candidates, the token produced
            assert r.texts == [pair.decode_token(t) for t in r.ids]  # a replay labels them with no tokenizer
        tested = {n.id for n in step.forest if n.status in ("accepted", "rejected")}
        for n in step.forest:
            if n.id in tested:
                siblings = [m for m in step.forest if m.parent == n.parent and m.id in tested]
                if n is siblings[0]:
                    assert n.p_residual == pytest.approx(n.p)  # the first candidate sees p itself
                else:
                    assert n.accept_prob == pytest.approx(min(1.0, n.p_residual / n.q), abs=1e-6)
        last = step.positions[-1]
        produced = step.forest[-1]
        assert produced.token_id in last.ids
        if produced.status == "resampled":
            assert last.final_residual is not None and sum(last.final_residual) <= 1 + 1e-4
        else:
            assert last.q is None and last.final_residual is None
    assert any(s.forest[-1].status == "resampled" for s in trace.steps)
    quiet = specviz.decode(
        pair, "mcsd", [1, 2, 3], max_new_tokens=30, temperature=0.9, top_k=10, seed=1, k_config="3x2", record_top_k=0
    )
    assert all(not s.positions for s in quiet.steps) and quiet.output_ids == trace.output_ids


def test_a_position_record_is_its_definition_on_the_shown_ids():
    """``position_records`` against the definition written with whole-vocabulary tensors: the ids are
    the top-k of p and q, the tested candidates and the produced token, sorted by p (ties by id);
    every value is the law at those ids, to 5 significant digits; the residual is max(0, p - q)
    normalised by its whole-vocabulary mass, which is TV(p, q). Recorded together (one step's
    positions share their calls) or one by one, the records are the same."""
    from specviz.algorithms.positions import Site, position_records

    def five(values):
        return [float(f"{v:.5g}") for v in values]

    gen = torch.Generator().manual_seed(3)
    sites = []
    for case in range(40):
        vocab = 50
        p = torch.softmax(torch.randn(vocab, generator=gen, dtype=torch.float64) * 2, -1)
        q = torch.softmax(torch.randn(vocab, generator=gen, dtype=torch.float64) * 2, -1)
        if case % 4 == 0:
            p[:10] = p[:10].mean()  # ties, broken by id
        if case % 5 == 0:
            q = p.clone()  # no residual mass: the residual shows p
        final = torch.softmax(torch.randn(vocab, generator=gen, dtype=torch.float64), -1) if case % 3 else None
        tested, produced = [int(t) for t in torch.randperm(vocab, generator=gen)[:2]], case % vocab
        sites.append(Site(7, p, q, tested, produced, final, root=2))
        [rec] = position_records(sites[-1:], 4, text=lambda t: f"<{t}>")
        shown = (
            set(tested) | {produced} | set(torch.topk(p, 4).indices.tolist()) | set(torch.topk(q, 4).indices.tolist())
        )
        ids = sorted(shown, key=lambda t: (-float(p[t]), t))
        gap = torch.clamp(p - q, min=0.0)
        mass = float(gap.sum())
        assert rec.ids == ids and rec.texts == [f"<{t}>" for t in ids] and (rec.parent, rec.root) == (7, 2)
        assert rec.p == five(p[ids].tolist()) and rec.q == five(q[ids].tolist())
        assert rec.residual == five((gap[ids] / mass if mass > 0 else p[ids]).tolist())
        assert rec.residual_mass == pytest.approx(mass, rel=1e-6)  # 7 significant digits
        assert rec.final_residual == (five(final[ids].tolist()) if final is not None else None)
    sites.insert(5, Site(None, p, None, [], 3))  # a bonus position: no q
    together = position_records(sites, 4)
    assert together == [position_records([s], 4)[0] for s in sites]
    bare = together[5]
    assert bare.q is bare.residual is bare.residual_mass is bare.texts is None and 3 in bare.ids


@pytest.mark.parametrize("algorithm", list(specviz.ALGORITHMS))
def test_recording_never_changes_the_output(algorithm):
    """Position records read the laws and draw nothing: every algorithm's sampled output is the same
    with ``record_top_k`` 8 and 0 (so the statistical tests may run without them)."""
    from specviz.models.loading import attach_early_exit

    pair = attach_early_exit(tiny_pair("llama", vocab=16, draft="noisy", noise=0.5, layers=2), 1)
    for seed in range(3):
        runs = [
            specviz.decode(
                pair, algorithm, [1, 2, 3], max_new_tokens=12, temperature=0.9, top_k=10, seed=seed, record_top_k=k
            )
            for k in (8, 0)
        ]
        assert runs[0].output_ids == runs[1].output_ids
        assert not any(s.positions for s in runs[1].steps)
    assert algorithm == "ar" or any(s.positions for s in runs[0].steps)


def untimed(step):
    """A step without its clock readings (Sequoia's state times its tree's set-up)."""
    state = step.controller
    if hasattr(state, "setup_ms"):
        state = dataclasses.replace(state, setup_ms=0.0)
    return dataclasses.replace(step, timings={}, controller=state)


def assert_memo_changes_nothing(pair, algorithm: str, **params) -> None:
    """Seeded runs are identical plainly and twice under the memo, the second time only replayed."""

    def steps(seed: int) -> tuple:
        trace = specviz.decode(
            pair, algorithm, [1, 2, 3], max_new_tokens=12, temperature=0.9, top_k=10, seed=seed, **params
        )
        return trace.output_ids, [untimed(s) for s in trace.steps]

    steps(0)  # per-pair caches filled first (Sequoia's tuned tree: its state says whether it was cached)
    plain = [steps(seed) for seed in range(3)]
    with memoised_forwards() as memo:
        first = [steps(seed) for seed in range(3)]
        calls = len(memo)
        again = [steps(seed) for seed in range(3)]
    assert plain == first == again
    assert calls > 0 and len(memo) == calls  # the first runs filled it; the repeats only replayed


@pytest.mark.parametrize(
    "algorithm,eos", [(name, False) for name in specviz.ALGORITHMS] + [(name, True) for name in ("sd", "beam", "dsbd")]
)
def test_memoised_forwards_change_nothing(algorithm, eos):
    """The exactness tests' memo (``tiny.memoised_forwards``) replays a model call only with the numbers
    it would compute: every algorithm's steps (trees, p and q, coins, committed tokens, controller
    states; all but timings) are identical run plainly, and run twice under the memo, the second time
    replayed call for call wherever no hook watches the model (``eos``: past ``with_eos``' pure hook)."""
    from specviz.models.loading import attach_early_exit

    pair = attach_early_exit(tiny_pair("llama", vocab=16, draft="noisy", noise=0.5, layers=2), 1)
    assert_memo_changes_nothing(with_eos(pair, 0, 2.0) if eos else pair, algorithm)


@pytest.mark.parametrize(
    "algorithm,drafter", [("sd", "feature"), ("dyntree", "feature"), ("sd", "model_cut"), ("sequoia", "model_cut")]
)
def test_memoised_forwards_change_nothing_with_a_feature_head_or_a_cut_vocabulary(algorithm, drafter):
    """The memo replays a feature-keeping target call with its feature rows and a feature head's call keyed
    by the features it reads, and keys a cut head by its rows: the runs are identical, and replayed."""
    pair = with_feature_head(tiny_pair("llama", vocab=16, draft="noisy", noise=0.5, layers=2), keep=11)
    assert_memo_changes_nothing(
        pair, algorithm, drafter=drafter, **({"acceptance": "0.6,0.3"} if algorithm == "sequoia" else {})
    )


def test_a_watched_model_is_never_replayed(pair):
    """A forward hook (the early-exit drafter's capture of the target's last norm) sees every call."""
    seen: list[int] = []
    handle = pair.target.model.norm.register_forward_hook(lambda *_: seen.append(1))
    try:
        with memoised_forwards():
            traces = [
                specviz.decode(pair, "sd", [1, 2, 3], max_new_tokens=6, temperature=1.0, seed=0, gamma=2)
                for _ in range(2)
            ]
    finally:
        handle.remove()
    calls = [specviz.metrics.target_calls(trace.steps) for trace in traces]
    assert len(seen) == sum(calls) and calls[0] == calls[1] > 0


def test_greedy_positions_show_only_what_matters(pair):
    trace = specviz.decode(pair, "sd", [1, 2, 3], max_new_tokens=20, temperature=0, gamma=3)
    for step in trace.steps:
        for r in step.positions:
            assert 1 <= len(r.ids) <= 3 and r.p[0] == 1.0  # argmax of p, argmax of q, the candidate
            assert r.residual_mass in ((0.0, 1.0) if r.q is not None else (None,))


def test_an_over_accepting_rule_marks_the_run_lossy(pair):
    dec = Decoder(pair, [1, 2], 10, SamplingConfig(1.0), seed=0)
    list(run_engine(dec, ModelDrafter(dec.draft), StaticShape(chain_shape(3)), OverAcceptance(0.1)))
    assert not dec.lossless
    dec = Decoder(pair, [1, 2], 10, SamplingConfig(0.0), seed=0)
    list(run_engine(dec, ModelDrafter(dec.draft), StaticShape(chain_shape(3)), OverAcceptance(0.1)))
    assert dec.lossless  # at temperature 0 every rule is exact match
    assert specviz.decode(pair, "sd", [1, 2], max_new_tokens=5, temperature=1.0).lossless


@pytest.mark.parametrize("seed", [-1, 2**63, 1.5, True, "3"])
def test_seed_out_of_range_is_a_clear_error(pair, seed):
    with pytest.raises(specviz.InvalidParameterError, match=r"seed must be an integer in \[0, 2\*\*63 - 1\]"):
        specviz.decode(pair, "sd", [1, 2], max_new_tokens=3, seed=seed, temperature=1.0)


def test_largest_seed_and_bad_record_top_k(pair):
    assert len(specviz.decode(pair, "sd", [1, 2], max_new_tokens=3, seed=2**63 - 1, temperature=1.0).output_ids) == 3
    with pytest.raises(specviz.InvalidParameterError, match="record_top_k"):
        specviz.decode(pair, "sd", [1, 2], max_new_tokens=3, record_top_k=-1, temperature=1.0)


V1_TRACE = {
    "algorithm": "sd",
    "params": {"gamma": 2},
    "pair": {"target": "t", "draft": "d"},
    "sampling": {"temperature": 1.0, "top_k": 0, "top_p": 1.0},
    "seed": 0,
    "prompt_ids": [1, 2],
    "prompt_text": "<1> <2>",
    "output_ids": [5, 6],
    "output_text": "<5> <6>",
    "finish_reason": "length",
    "metrics": {"new_tokens": 2, "target_calls": 1, "tau": 2.0},
    "schema_version": 1,
    "steps": [
        {
            "index": 0,
            "n_before": 0,
            "controller": None,
            "tv": [0.2, 0.1],
            "timings": {"draft_ms": 1.0, "verify_ms": 2.0, "total_ms": 3.5},
            "target_calls": 1,
            "draft_calls": 2,
            "forest": [
                {
                    "id": 0,
                    "parent": None,
                    "depth": 0,
                    "token_id": 5,
                    "token_text": "<5>",
                    "q": 0.5,
                    "p": 0.4,
                    "accept_prob": 0.8,
                    "draw": 0.3,
                    "status": "accepted",
                },
                {
                    "id": 1,
                    "parent": 0,
                    "depth": 1,
                    "token_id": 7,
                    "token_text": "<7>",
                    "q": 0.5,
                    "p": 0.1,
                    "accept_prob": 0.2,
                    "draw": 0.9,
                    "status": "rejected",
                },
                {
                    "id": 2,
                    "parent": 0,
                    "depth": 1,
                    "token_id": 6,
                    "token_text": "<6>",
                    "q": None,
                    "p": 0.3,
                    "accept_prob": None,
                    "draw": None,
                    "status": "resampled",
                },
            ],
            "committed": [
                {"token_id": 5, "text": "<5>", "kind": "draft", "node_id": 0},
                {"token_id": 6, "text": "<6>", "kind": "resampled", "node_id": 2},
            ],
        }
    ],
}


def test_a_v1_trace_still_loads():
    trace = RunTrace.from_json(json.dumps(V1_TRACE))
    assert trace.schema_version == 1 and trace.lossless and trace.output_ids == [5, 6]
    step = trace.steps[0]
    assert step.positions == [] and step.n_accepted == 1 and step.forest[1].root == 0
    assert step.forest[1].p_residual is None
    assert specviz.metrics.summarize(trace)["tau"] == 2.0


def test_trace_size_is_bounded():
    """Bounded JSON: with 69-node trees a step takes under 24 KB (measured: about 18 KB, 85% of it the
    forest), so a 1,024-token run stays a few MB; a position record stays under 1.5 KB whatever the
    vocabulary (top-k of p and q, candidates, produced token; 5 significant digits)."""
    big = tiny_pair("llama", vocab=512, draft="noisy", noise=0.5, init_range=0.05, hidden=32)
    trace = specviz.decode(big, "mcsd", [1, 2, 3], max_new_tokens=256, temperature=1.0, seed=0, k_config="4x4x3")
    assert max(len(s.forest) for s in trace.steps) == 4 + 16 + 48 + 1
    data = json.loads(trace.to_json())
    assert len(json.dumps(data)) < 24_000 * len(trace.steps)
    for step in data["steps"]:
        assert all(len(json.dumps(r)) < 1500 for r in step["positions"])


def test_a_recorded_residual_is_a_distribution_on_its_ids():
    """Each position's ``residual`` is ``max(0, p - q)`` over its own total: its entries on the shown ids
    sum to at most 1, also where p and q differ only by float noise (a draft within 1e-6 of its target:
    divided by the TV as the engine computed it, entries reached 1.095 and a position's sum 1.14)."""
    pair = tiny_pair("llama", vocab=64, draft="noisy", init_range=0.05, hidden=32, layers=3, noise=1e-6)
    for algorithm in ("sd", "specinfer"):
        trace = specviz.decode(pair, algorithm, [5, 9, 2, 7], max_new_tokens=24, temperature=0.7, top_k=5, seed=1)
        residuals = [r.residual for s in trace.steps for r in s.positions if r.residual is not None]
        assert residuals, algorithm
        assert all(0 <= x <= 1 + 1e-6 for r in residuals for x in r) and all(sum(r) <= 1 + 1e-4 for r in residuals)
