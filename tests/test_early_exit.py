"""The EESD early-exit draft (arXiv 2406.03853, Eq. 1) on four architecture families: the exit model is
the trunk plus the head, drafting through ``EarlyExitLM`` gives its logits under the prefix + tree
conventions, reading the target's trunk KV changes nothing, and ``load_pair`` attaches heads."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import torch
from tiny import FAMILIES, save_checkpoint, tiny_model, tiny_tokenizer

import specviz
from specviz.errors import ModelLoadError
from specviz.models.early_exit import (
    CalibrationHead,
    EarlyExitHead,
    EarlyExitLM,
    first_n,
    layout,
    load_early_exit,
    save_early_exit,
)
from specviz.models.tree_forward import ROOT, CachedLM

ROOT_DIR = Path(__file__).resolve().parents[1]
VOCAB = 24


def _base(family: str, layers: int = 3, seed: int = 0):
    return tiny_model(family, vocab=VOCAB, seed=seed, hidden=16, layers=layers, init_range=0.2)


def _trained_like(head: EarlyExitHead, seed: int = 0) -> EarlyExitHead:
    """Perturb every head weight so it no longer equals the base's last layer (as after training)."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in head.parameters():
            p.add_(0.3 * torch.randn(p.shape, generator=gen) * (p.std() if p.numel() > 1 else 1.0))
    return head.eval()


def _from_scratch(base, head: EarlyExitHead):
    """Trunk + head assembled the obvious way on a deep copy of the base (no shared modules, no meta shell)."""
    model = copy.deepcopy(base)
    backbone, layers, norm = layout(model)
    n = head.exit_layer
    setattr(backbone, layers, torch.nn.ModuleList(list(getattr(backbone, layers)[:n]) + [copy.deepcopy(head.layer)]))
    setattr(backbone, norm, copy.deepcopy(head.norm))
    model.config.get_text_config().num_hidden_layers = n + 1
    out_name = next(k for k, c in model.named_children() if c is model.get_output_embeddings())
    setattr(model, out_name, copy.deepcopy(head.lm_head))
    return model.eval()


@pytest.mark.parametrize("family", FAMILIES)
def test_exit_model_is_trunk_plus_head(family):
    base = _base(family)
    head = _trained_like(EarlyExitHead(base, 1))
    ids = torch.randint(0, VOCAB, (2, 9), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        got = head.logits_for(ids)
        want = _from_scratch(base, head)(input_ids=ids).logits
        from_hidden, h_d = head(first_n(base, ids, 1), return_hidden=True)
    assert torch.allclose(got, want, atol=1e-5)
    assert torch.allclose(from_hidden, got, atol=1e-5) and h_d.shape == (2, 9, 16)
    # untied, trainable head; the base is untouched
    assert head.lm_head.weight.data_ptr() != base.get_output_embeddings().weight.data_ptr()
    assert head.lm_head.weight.data_ptr() != base.get_input_embeddings().weight.data_ptr()
    assert all(p.requires_grad for p in head.parameters())
    backbone, layers, norm = layout(base)
    n_params = lambda m: sum(p.numel() for p in m.parameters())  # noqa: E731
    # trainable = one decoder layer + the final norm + V x d (EESD section 3.1's parameter count)
    assert n_params(head) == n_params(getattr(backbone, layers)[-1]) + n_params(getattr(backbone, norm)) + VOCAB * 16
    assert set(head.state_dict()) == {f"layer.{k}" for k in head.layer.state_dict()} | {
        f"norm.{k}" for k in head.norm.state_dict()
    } | {f"lm_head.{k}" for k in head.lm_head.state_dict()}


@pytest.mark.parametrize("family", FAMILIES)
def test_fresh_head_on_a_two_layer_base_is_the_base(family):
    """Copying the last layer, norm and head onto H^1 of a 2-layer model rebuilds the model itself."""
    base = _base(family, layers=2)
    head = EarlyExitHead(base, 1).eval()
    ids = torch.randint(0, VOCAB, (1, 11), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        assert torch.allclose(head.logits_for(ids), base(input_ids=ids).logits, atol=1e-5)
    with pytest.raises(ValueError):
        EarlyExitHead(base, 2)


def _greedy_rounds(family: str, share: bool, rounds: int = 6, k: int = 3):
    """An engine-shaped loop: the draft proposes k greedy tokens, the target verifies them with one
    ``extend`` and keeps the greedy-matching prefix plus its own token. Returns every draft-logit row
    with the sequence it was computed after, and the drafter."""
    base = _base(family)
    head = _trained_like(EarlyExitHead(base, 1), seed=3)
    target = CachedLM(base, VOCAB)
    drafter = EarlyExitLM(head, VOCAB, share=target if share else None)
    seq = [3, 9, 14, 1, 7]
    pending = list(seq)  # committed tokens neither model has cached yet
    d_pending = list(seq)
    rows = []
    for _ in range(rounds):
        drafts = []
        logits = drafter.extend(d_pending)[-1]
        rows.append((seq + drafts, logits))
        for i in range(k):
            drafts.append(int(logits.argmax()))
            if i + 1 < k:
                logits = drafter.forward([drafts[-1]], [ROOT if i == 0 else i - 1])[0]
                rows.append((seq + drafts, logits))
        t_logits = target.extend(pending, drafts, list(range(-1, k - 1)))
        a = 0
        while a < k and int(t_logits[a].argmax()) == drafts[a]:
            a += 1
        nxt = int(t_logits[a].argmax())
        target.commit(list(range(a)))
        drafter.commit(list(range(min(a, k - 1))))  # the last draft was never fed to the drafter
        d_pending = drafts[k - 1 : k] + [nxt] if a == k else [nxt]
        seq = seq + drafts[:a] + [nxt]
        pending = [nxt]
    return head, drafter, rows


@pytest.mark.parametrize("family", FAMILIES)
def test_drafting_with_the_shared_trunk_cache_equals_recomputing(family):
    head, shared, rows_shared = _greedy_rounds(family, share=True)
    _, own, rows_own = _greedy_rounds(family, share=False)
    assert [r[0] for r in rows_shared] == [r[0] for r in rows_own]
    for (prefix, a), (_, b) in zip(rows_shared, rows_own):
        with torch.no_grad():
            full = head.logits_for(torch.tensor([prefix]))[0, -1]
        assert torch.allclose(a, b, atol=1e-5) and torch.allclose(a, full, atol=1e-5)
    assert shared.shared_len >= 8 and own.shared_len == 0  # prompt + earlier rounds, read from the target
    trunk = shared.cache.layers[0]
    # the shared drafter keeps only its uncommitted tail of trunk keys; the exit layer keeps everything
    assert trunk.tail_keys.shape[-2] <= 4 and trunk.get_seq_length() == shared.cached_len
    assert shared.cache.layers[head.exit_layer].keys.shape[-2] == shared.cached_len
    assert shared.last_hidden is not None and shared.last_hidden.shape[-1] == 16
    # h_D rows follow the returned logits: lm_head(h_D) gives them back
    logits = shared.extend([5, 6], [7], [ROOT])
    assert shared.last_hidden.shape == (2, 16)
    with torch.no_grad():
        assert torch.allclose(head.lm_head(shared.last_hidden), logits, atol=1e-5)


@pytest.mark.parametrize("family", ["llama", "gpt2"])
def test_tree_of_drafts_matches_each_path(family):
    """The 4D-mask tree forward of CachedLM on the exit model: each node's logits equal those of its
    root-to-node path decoded from scratch; committing a side branch keeps the cache consistent."""
    base = _base(family)
    head = _trained_like(EarlyExitHead(base, 1), seed=5)
    lm = EarlyExitLM(head, VOCAB)
    prefix = [2, 5, 8]
    tokens, parents = [4, 6, 1, 9], [ROOT, ROOT, 0, 1]
    out = lm.extend(prefix, tokens, parents)
    paths = [[4], [6], [4, 1], [6, 9]]
    with torch.no_grad():
        for row, path in zip(out[1:], paths):
            assert torch.allclose(row, head.logits_for(torch.tensor([prefix + path]))[0, -1], atol=1e-5)
        lm.commit([1, 3])  # keep 6, 9
        nxt = lm.forward([11], [ROOT])[0]
        assert torch.allclose(nxt, head.logits_for(torch.tensor([prefix + [6, 9, 11]]))[0, -1], atol=1e-5)


@pytest.fixture(scope="module")
def dirs(tmp_path_factory):
    root = tmp_path_factory.mktemp("ee")
    tok = tiny_tokenizer()
    return {
        "target": save_checkpoint(root / "target", "qwen2", tok, seed=0, hidden=32, layers=3),
        "draft": save_checkpoint(root / "draft", "qwen2", tok, seed=1),
        "root": root,
    }


def test_load_pair_attaches_fresh_and_saved_heads(dirs):
    fresh = specviz.load_pair(dirs["target"], early_exit=1, device="cpu")
    assert fresh.draft is None and fresh.early_exit.exit_layer == 1
    assert fresh.describe()["early_exit"]["exit_layer"] == 1
    head = _trained_like(fresh.early_exit, seed=9)
    save_early_exit(head, dirs["root"] / "head", base="../target")
    both = specviz.load_pair(dirs["target"], dirs["draft"], early_exit=str(dirs["root"] / "head"), device="cpu")
    assert both.draft is not None and both.early_exit.exit_layer == 1
    ids = torch.tensor([both.encode("def add(a, b):")])
    with torch.no_grad():
        assert torch.equal(both.early_exit.logits_for(ids), head.logits_for(ids))
    with pytest.raises(ModelLoadError, match="exit_layer must be in"):
        specviz.load_pair(dirs["target"], early_exit=3, device="cpu")
    with pytest.raises(ModelLoadError, match="(?i)no early-exit head"):
        specviz.load_pair(dirs["target"], early_exit=str(dirs["root"] / "missing"), device="cpu")
    with pytest.raises(ModelLoadError, match="trained for a base"):  # a head for another model
        specviz.load_pair(dirs["draft"], early_exit=str(dirs["root"] / "head"), device="cpu")


def test_bundled_head_loads_through_load_pair():
    pair = specviz.load_pair(
        str(ROOT_DIR / "assets" / "target"), early_exit=str(ROOT_DIR / "assets" / "early_exit"), device="cpu"
    )
    head = pair.early_exit
    direct = load_early_exit(ROOT_DIR / "assets" / "early_exit", pair.target)
    ids = torch.tensor([pair.encode("def read_config(path):\n    with open(path) as f:\n")])
    with torch.no_grad():
        got = head.logits_for(ids)
        assert torch.equal(got, direct.logits_for(ids))
        assert torch.allclose(got, head(first_n(pair.target, ids, head.exit_layer)), atol=1e-5)
    # the trained head agrees with the target's greedy choice far more often than chance
    with torch.no_grad():
        agree = (got.argmax(-1) == pair.target(ids).logits.argmax(-1)).float().mean()
    assert agree > 0.3


def test_calibration_head_shapes_and_index_cap():
    torch.manual_seed(0)
    cal = CalibrationHead(8)
    h_t, h_d = torch.randn(8), torch.randn(8)
    with torch.no_grad():
        proj = cal.project_target(h_t)
    assert proj.shape == (10, 8) and torch.allclose(proj[3], h_t)  # W^j = identity at init
    with torch.no_grad():
        assert float(cal(proj, h_d, 1)) == pytest.approx(0.5)  # W_p = 0: theta_M = 0.5 before training
        cal.w_p.weight.normal_()
        cal.w[9].mul_(2.0)
        proj = cal.project_target(h_t)
        theta = [float(cal(proj, h_d, i)) for i in (1, 10, 11, 25)]
    assert all(0 < t < 1 for t in theta) and theta[1] == theta[2] == theta[3] != theta[0]
