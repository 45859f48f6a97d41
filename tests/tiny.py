"""Small real models for tests: random-initialised stock transformers models built from configs,
and the exact enumeration / goodness-of-fit tools the exactness tests share.

Models are built on the CPU (the same weights on every machine) and moved to ``DEVICE``, the
environment variable ``SPECVIZ_TEST_DEVICE`` (default ``"cpu"``; ``"cuda"`` on a GPU machine)."""

from __future__ import annotations

import contextlib
import itertools
import os
from collections import Counter
from typing import Iterator
from unittest import mock

import torch
from scipy import stats
from transformers import (
    Gemma2Config,
    Gemma2ForCausalLM,
    Gemma3ForCausalLM,
    Gemma3TextConfig,
    GPT2Config,
    GPT2LMHeadModel,
    GPTNeoXConfig,
    GPTNeoXForCausalLM,
    LlamaConfig,
    LlamaForCausalLM,
    MistralConfig,
    MistralForCausalLM,
    Qwen2Config,
    Qwen2ForCausalLM,
)

import specviz
from specviz.core.sampling import SamplingConfig, warp
from specviz.models.loading import ModelPair
from specviz.models.random_llama import noisy_copy  # noqa: F401  (the tests import it from here)
from specviz.models.tree_forward import CachedLM

DEVICE = os.environ.get("SPECVIZ_TEST_DEVICE", "cpu")
FAMILIES = ("llama", "qwen2", "gpt2", "gpt_neox")  # full attention in every layer
# sliding-window attention: Mistral in every layer; Gemma 2 and Gemma 3 alternate sliding and full layers
SLIDING_FAMILIES = ("mistral", "gemma2", "gemma3")
WINDOW = 4  # the sliding families' default window: far shorter than the tests' prompts plus outputs


def tiny_model(
    family: str = "llama",
    vocab: int = 8,
    seed: int = 0,
    hidden: int = 16,
    layers: int = 1,
    init_range: float = 0.02,
    max_positions: int = 4096,
    window: int = WINDOW,
    device: str = DEVICE,
):
    """A random-initialised causal LM of a real architecture family, on ``device``. ``init_range``
    scales the weights: larger values give peakier, more varied next-token distributions (so draft
    and target differ). ``window`` is the attention window of the ``SLIDING_FAMILIES`` (a key at
    position k is seen from t iff t - window < k <= t); the Gemma layers alternate sliding, full,
    sliding, ... (one layer: sliding only)."""
    common = dict(vocab_size=vocab, bos_token_id=None, eos_token_id=None, pad_token_id=None)
    sliding = dict(
        hidden_size=hidden,
        intermediate_size=2 * hidden,
        num_hidden_layers=layers,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=hidden // 2,
        max_position_embeddings=max_positions,
        sliding_window=window,
        initializer_range=init_range,
        **common,
    )
    hybrid = ["sliding_attention" if i % 2 == 0 else "full_attention" for i in range(layers)]
    if family == "llama":
        cfg = LlamaConfig(
            hidden_size=hidden,
            intermediate_size=2 * hidden,
            num_hidden_layers=layers,
            num_attention_heads=2,
            num_key_value_heads=1,
            max_position_embeddings=max_positions,
            initializer_range=init_range,
            **common,
        )
        cls = LlamaForCausalLM
    elif family == "qwen2":
        cfg = Qwen2Config(
            hidden_size=hidden,
            intermediate_size=2 * hidden,
            num_hidden_layers=layers,
            num_attention_heads=2,
            num_key_value_heads=1,
            max_position_embeddings=max_positions,
            initializer_range=init_range,
            **common,
        )
        cls = Qwen2ForCausalLM
    elif family == "gpt2":
        cfg = GPT2Config(
            n_embd=hidden, n_layer=layers, n_head=2, n_positions=max_positions, initializer_range=init_range, **common
        )
        cls = GPT2LMHeadModel
    elif family == "gpt_neox":
        cfg = GPTNeoXConfig(
            hidden_size=hidden,
            intermediate_size=2 * hidden,
            num_hidden_layers=layers,
            num_attention_heads=2,
            max_position_embeddings=max_positions,
            initializer_range=init_range,
            **common,
        )
        cls = GPTNeoXForCausalLM
    elif family == "mistral":
        cfg, cls = MistralConfig(**sliding), MistralForCausalLM
    elif family == "gemma2":
        cfg, cls = Gemma2Config(layer_types=hybrid, **sliding), Gemma2ForCausalLM
    elif family == "gemma3":
        cfg, cls = Gemma3TextConfig(layer_types=hybrid, **sliding), Gemma3ForCausalLM
    else:
        raise ValueError(family)
    torch.manual_seed(seed)
    return cls(cfg).eval().to(device)


def tiny_pair(
    family: str = "llama",
    vocab: int = 8,
    seed: int = 0,
    draft: str = "different",
    init_range: float = 0.2,
    hidden: int = 16,
    layers: int = 2,
    noise: float = 0.3,
    window: int = WINDOW,
) -> ModelPair:
    """A target and a draft sharing a ``vocab``-token vocabulary, both on ``DEVICE``.

    ``draft="different"``: an independent, smaller model (far from the target: many rejections).
    ``draft="noisy"``: the target with noise on its weights (close to it: long accepted runs).
    """
    target = tiny_model(family, vocab, seed, hidden=hidden, layers=layers, init_range=init_range, window=window)
    if draft == "noisy":
        d_model = noisy_copy(target, noise, seed)
    else:
        d_model = tiny_model(family, vocab, seed + 1000, hidden=8, layers=1, init_range=init_range, window=window)
    return ModelPair(target, d_model, None, vocab, target_name=f"tiny-{family}", draft_name=f"tiny-{family}-{draft}")


@torch.inference_mode()
def exact_distribution(pair: ModelPair, prompt: list[int], n: int, sampling: SamplingConfig) -> dict[tuple, float]:
    """Law of the first ``n`` generated tokens under the warped target, enumerated with plain
    full-sequence forwards (no cache, no specviz engine)."""
    law: dict[tuple, float] = {(): 1.0}
    for _ in range(n):
        nxt = {}
        for seq, mass in law.items():
            if mass == 0:
                continue
            ids = torch.tensor([prompt + list(seq)], device=pair.device)
            probs = warp(pair.target(ids).logits[0, -1, : pair.vocab_size], sampling).double().cpu()
            for tok in range(pair.vocab_size):
                if probs[tok] > 0:
                    nxt[seq + (tok,)] = mass * float(probs[tok])
        law = nxt
    return law


def _model_key(model: torch.nn.Module) -> tuple | None:
    """The model, its parameters' and hooks' identities, or None when a forward hook or pre-hook anywhere
    in it would observe the call (the early-exit drafter captures the target's final norm so): such a
    call must run. A hook marked ``pure`` only rewrites its module's output (``with_eos``), so a replayed
    output already holds its effect. Parameters by identity: a module swapped in at run time (an exit
    head) is a new key."""
    parts: list[int] = []
    stack = [model]  # by ``_modules`` directly: ``modules()``' generators cost 3x
    while stack:
        module = stack.pop()
        for hook in (*module._forward_hooks.values(), *module._forward_pre_hooks.values()):
            if not getattr(hook, "pure", False):
                return None
            parts.append(id(hook))
        parts += [id(p) for p in module._parameters.values() if p is not None]
        stack += [m for m in module._modules.values() if m is not None]
    return (model, tuple(parts))


@contextlib.contextmanager
def memoised_forwards() -> Iterator[dict]:
    """While active, ``CachedLM.compute`` (and ``FeatureLM.compute``) runs each distinct call once and
    replays it after: the same logits, the same KV rows appended to the cache, the same feature rows
    (``new_rows``) where the call keeps them. The key is the call's whole input: the model (its
    parameters by identity), the ids, positions and masks, the bytes of every cached key and value, the
    feature layers kept and the cut head's rows; for a feature head also the fused features it reads
    (from the target's rows or its own), so a call is replayed only where it would compute the same
    numbers (the forward is deterministic on the CPU at a fixed thread count); a wrong cache gives
    another key and runs. Thousands of seeded runs from one prompt make the same few calls, and an
    exactness test's runs are then mostly the algorithm's own Python. Off on other devices.
    ``test_engine``: runs are identical with and without."""
    if str(DEVICE) != "cpu":
        yield {}
        return
    from specviz.models.feature_head import FeatureLM

    memo: dict = {}
    plain, plain_feature = CachedLM.compute, FeatureLM.compute

    def data(t: torch.Tensor | None) -> bytes | None:
        return None if t is None else t.detach().cpu().numpy().tobytes()

    def replay(run, lm: CachedLM, ids, positions, masks, position, extra: tuple):
        model = _model_key(lm.head if isinstance(lm, FeatureLM) else lm.model)
        if model is None or getattr(lm, "lens", False):  # a call keeping every layer's states (the lens) runs
            return run(lm, ids, positions, masks, position)
        layers = lm.cache.layers
        cached = tuple((data(layer.keys), data(layer.values)) if layer.is_initialized else None for layer in layers)
        key = (
            type(lm),
            model,
            data(ids),
            data(positions),
            tuple((kind, data(m)) for kind, m in sorted(masks.items())),
            cached,
            lm.features,
            data(getattr(lm, "head_rows", None)),
            extra,
        )
        hit = memo.get(key)
        if hit is None:
            before = [layer.keys.shape[-2] if layer.is_initialized else 0 for layer in layers]
            logits = run(lm, ids, positions, masks, position)  # may add the cache's layers on a first call
            starts = before + [0] * (len(lm.cache.layers) - len(before))
            rows = [
                (layer.keys[..., start:, :].clone(), layer.values[..., start:, :].clone())
                for layer, start in zip(lm.cache.layers, starts)
            ]
            memo[key] = (logits.clone(), rows, None if lm.new_rows is None else lm.new_rows.clone())
            return logits
        logits, rows, new_rows = hit
        for index, (keys, values) in enumerate(rows):
            lm.cache.update(keys, values, index)
        lm.new_rows = None if new_rows is None else new_rows.clone()
        return logits.clone()

    def compute(lm: CachedLM, ids, positions, masks, position):
        return replay(plain, lm, ids, positions, masks, position, ())

    def compute_feature(lm: FeatureLM, ids, positions, masks, position):
        return replay(
            plain_feature, lm, ids, positions, masks, position, (id(lm.embed), data(lm._inputs(ids.shape[1])))
        )

    with mock.patch.object(CachedLM, "compute", compute), mock.patch.object(FeatureLM, "compute", compute_feature):
        yield memo


def sample_counts(
    pair: ModelPair,
    algorithm: str,
    prompt: list[int],
    n: int,
    runs: int,
    sampling: SamplingConfig,
    budget: int | None = None,
    **params,
) -> Counter:
    """Counts of the first ``n`` output tokens over ``runs`` seeds. Each run may generate ``budget``
    tokens (default ``n``; a larger budget lets the first step draft deeper) and stops once ``n`` are out.
    Runs record no position records (``record_top_k=0``, about 12% faster): the recording reads the
    laws and draws nothing, so the output is the same (``test_engine``: recording never changes it).
    Model calls are memoised (``memoised_forwards``: the same numbers, about 2.4x faster for ``sd``)."""
    counts: Counter = Counter()
    with memoised_forwards():
        for seed in range(runs):
            run = specviz.stream(
                pair,
                algorithm,
                prompt,
                max_new_tokens=budget or n,
                seed=seed,
                record_top_k=0,
                temperature=sampling.temperature,
                top_k=sampling.top_k,
                top_p=sampling.top_p,
                **params,
            )
            for _ in run:
                if len(run.decoder.output) >= n:
                    break
            counts[tuple(run.decoder.output[:n])] += 1
    return counts


def chi_square_pvalue(counts: Counter, law: dict) -> float:
    """Chi-square p-value of ``counts`` against ``law``; cells with expected count < 5 are pooled.
    A sample outside the support of ``law`` gives p = 0."""
    total = sum(counts.values())
    if any(seq not in law for seq in counts):
        return 0.0
    obs, exp, pool_o, pool_e = [], [], 0, 0.0
    for seq in sorted(law, key=law.get, reverse=True):
        e = law[seq] * total
        if e >= 5:
            obs.append(counts.get(seq, 0))
            exp.append(e)
        else:
            pool_o += counts.get(seq, 0)
            pool_e += e
    if pool_e > 0:
        obs.append(pool_o)
        exp.append(pool_e)
    if len(obs) < 2:
        return 1.0
    scale = sum(obs) / sum(exp)
    return float(stats.chisquare(obs, [e * scale for e in exp]).pvalue)


def first_token(mapping: dict) -> Counter:
    """Marginal of the first token of a law or of counts over sequences."""
    out: Counter = Counter()
    for seq, v in mapping.items():
        out[seq[:1]] += v
    return out


def goodness_of_fit(counts: Counter, law: dict) -> float:
    """Bonferroni-combined p-value of two chi-square tests: the joint law of the sequences (sees cache
    and conditional bugs) and the first token's marginal (more power for a bias in the first step)."""
    return min(1.0, 2 * min(chi_square_pvalue(counts, law), chi_square_pvalue(first_token(counts), first_token(law))))


def all_sequences(vocab: int, n: int):
    return itertools.product(range(vocab), repeat=n)


def tiny_tokenizer(vocab: int = 300, extra_text: str = ""):
    """A byte-level BPE tokenizer trained on a few lines of Python, as a ``PreTrainedTokenizerFast``."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab,
        special_tokens=["<|endoftext|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    text = [
        "def add(a, b):\n    return a + b\n",
        "for i in range(10):\n    print(i)\n",
        "import os\n" + extra_text,
    ] * 20
    tok.train_from_iterator(text, trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|endoftext|>", bos_token="<|endoftext|>")


def save_checkpoint(path, family: str = "llama", tokenizer=None, seed: int = 0, rows: int | None = None, **kw) -> str:
    """Write a random-initialised model (``rows`` output rows, default the tokenizer's size) and its
    tokenizer with ``save_pretrained``, as a hub checkpoint would be laid out on disk."""
    tokenizer = tokenizer or tiny_tokenizer()
    model = tiny_model(family, vocab=rows or len(tokenizer), seed=seed, **kw)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return str(path)


def with_feature_head(
    pair: ModelPair, keep: int | None = None, seed: int = 0, scale: float = 0.5, layers: tuple[int, ...] = (0, 1)
) -> ModelPair:
    """``pair`` with a random feature head (``models.feature_head``) on its target, drafting over
    ``keep`` of the vocabulary's tokens (all when None), reading the target's ``hidden_states`` at
    ``layers``; weights drawn with standard deviation ``scale`` (peaky, varied draft laws)."""
    from specviz.models.feature_head import FeatureHead, FeatureHeadConfig

    cfg = pair.target.config
    hidden = getattr(cfg, "hidden_size", None) or cfg.n_embd
    keep = keep or pair.vocab_size
    gen = torch.Generator().manual_seed(seed + 7)
    vocab = torch.randperm(pair.vocab_size, generator=gen)[:keep].sort().values
    head = FeatureHead(FeatureHeadConfig(hidden, 2, 1, hidden // 2, 2 * hidden, layers, keep, cfg.vocab_size), vocab)
    with torch.no_grad():
        for p in head.parameters():
            if p.dim() == 2:
                p.normal_(0.0, scale, generator=gen)
    pair.feature, pair.feature_source = head.eval().to(pair.device), f"random head over {keep} tokens"
    return pair


def over_accept(monkeypatch, factor: float) -> None:
    """Bias every sibling acceptance test towards acceptance (q divided by ``factor`` inside the rule):
    the small, known bias an exactness test must be able to see."""
    from specviz.core import rules

    real = rules.sibling_schedule

    def over_accepting(p, q, candidates, replacement):
        return real(p, q / factor, candidates, replacement)

    monkeypatch.setattr(rules, "sibling_schedule", over_accepting)


def with_eos(pair: ModelPair, eos: int = 0, bias: float = 2.0, draft_bias: float | None = None) -> ModelPair:
    """``pair`` with token ``eos`` as the end-of-sequence token of both models (generation config)
    and its logit raised by ``bias`` in the target and ``draft_bias`` (default ``bias``) in the draft
    (a hook on the output head, so every forward path sees it): beams that finish are common."""
    for model, b in ((pair.target, bias), (pair.draft, bias if draft_bias is None else draft_bias)):

        def shift(module, inputs, out, b=b):
            out = out.clone()
            out[..., eos] += b
            return out

        shift.pure = True  # a function of the head's output only (``memoised_forwards`` may replay past it)
        model.get_output_embeddings().register_forward_hook(shift)
        model.generation_config.eos_token_id = eos
    return pair
