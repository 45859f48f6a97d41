"""``Decoder``: the state one run shares with its algorithm.

It owns the committed tokens, the two cached models, the warps and the seeded generator, and turns
what a step produced into committed tokens, honouring ``max_new_tokens`` and EOS exactly (a step that
would overshoot is cut; tokens after EOS are dropped). Cache convention: at the start of every step
the last committed token is *not* in either model's cache, so ``context(lm)`` is never empty and
``CachedLM.extend`` returns the distribution for the first new token in the same call as the tree.
``record_top_k`` is how many of the likeliest tokens of p and q each ``PositionRecord`` keeps (0: no
position records); ``lossless`` (the run's rule keeps the output law) is set once by the step loop
(``step_loop.run_steps``) from its verifier. ``drafter``: ``"model"`` (the pair's draft model) or
``"feature"`` (the pair's feature head over the target's hidden states; ``draft`` is then its
``FeatureLM`` and the target keeps the features it reads) or ``"model_cut"`` (the draft model with
its output head cut to the feature head's draft vocabulary, FR-Spec, arXiv 2502.14856).
``record_lens``: the target keeps every layer's hidden states of its last call, and each step records
its logit lens (``algorithms.lens``, ``StepRecord.lens``).
"""

from __future__ import annotations

from typing import Sequence

import torch

from specviz.core.sampling import SamplingConfig, sample, uniform, warp
from specviz.models.loading import ModelPair
from specviz.models.tree_forward import CachedLM
from specviz.trace import CommittedToken


class Decoder:
    """Shared per-run state and helpers for algorithms (see module docstring)."""

    def __init__(
        self,
        pair: ModelPair,
        prompt_ids: list[int],
        max_new_tokens: int,
        sampling: SamplingConfig,
        seed: int,
        record_top_k: int = 8,
        drafter: str = "model",
        record_lens: bool = False,
    ):
        self.pair = pair
        self.sampling = sampling
        self.generator = torch.Generator().manual_seed(seed)
        self.tokens = list(prompt_ids)
        self.prompt_len = len(prompt_ids)
        self.max_new_tokens = max_new_tokens
        self.eos = pair.eos_token_ids
        self.finish_reason = ""
        self.drafter = drafter
        if drafter == "feature":  # the draft reads the target's own hidden states (models.feature_head)
            from specviz.models.feature_head import FeatureLM

            head = pair.feature
            self.target = CachedLM(pair.target, pair.vocab_size, features=head.cfg.layers, lens=record_lens)
            self.draft = FeatureLM(head, self.target, pair.target.get_input_embeddings().weight, pair.vocab_size)
        else:  # "model_cut": the draft model's head over the feature head's draft vocabulary only (FR-Spec)
            self.target = CachedLM(pair.target, pair.vocab_size, lens=record_lens)
            rows = pair.feature.vocab if drafter == "model_cut" else None
            self.draft = CachedLM(pair.draft, pair.vocab_size, head_rows=rows) if pair.draft is not None else None
        self.record_top_k = record_top_k
        self.lossless = True

    # ---- state -------------------------------------------------------------------------------
    @property
    def output(self) -> list[int]:
        return self.tokens[self.prompt_len :]

    @property
    def remaining(self) -> int:
        return self.max_new_tokens - len(self.output)

    @property
    def finished(self) -> bool:
        return bool(self.finish_reason)

    def context(self, lm: CachedLM) -> list[int]:
        """Committed tokens ``lm`` has not cached yet (always at least the last one)."""
        return self.tokens[lm.prefix_len :]

    # ---- maths helpers ---------------------------------------------------------------------------
    def probs(self, logits: torch.Tensor) -> torch.Tensor:
        """Warped float32 distributions on the CPU, same warp for draft and target."""
        return warp(logits, self.sampling).cpu()

    def verify_rows(self, logits: torch.Tensor) -> "VerifyRows":
        """The verify call's warped target distributions, left on the model's device (``VerifyRows``)."""
        return VerifyRows(warp(logits, self.sampling))

    def sample(self, probs: torch.Tensor) -> int:
        """One draw from ``probs``; at temperature 0 every warped distribution and residual is one-hot,
        so its draw is its argmax (no ``multinomial`` over the vocabulary, no generator state used)."""
        return int(probs.argmax()) if self.sampling.greedy else sample(probs, self.generator)

    def uniform(self) -> float:
        return uniform(self.generator)

    def text(self, token_id: int) -> str:
        return self.pair.decode_token(token_id)

    def is_eos(self, token_id: int) -> bool:
        return token_id in self.eos

    # ---- committing ------------------------------------------------------------------------------
    def commit_tokens(
        self, produced: Sequence[tuple[int, str, int | None]], final: bool = False
    ) -> list[CommittedToken]:
        """Append ``(token_id, kind, node_id)`` tokens to the output, stopping at the budget or at EOS,
        and return them as committed; ``final``: the run ends after them (reason ``length`` unless EOS)."""
        committed = []
        for token_id, kind, node_id in produced:
            if self.remaining <= 0:
                break
            self.tokens.append(token_id)
            committed.append(CommittedToken(token_id, self.text(token_id), kind, node_id))
            if self.is_eos(token_id):
                self.finish_reason = "eos"
                break
        if not self.finish_reason and (final or self.remaining <= 0):
            self.finish_reason = "length"
        return committed


class VerifyRows:
    """A verify call's warped target distributions ``[1 + n, V]`` where the target ran. The walk copies
    to the CPU only the rows it visits (``row``: the accepted path and the position it stops at, each
    once) and reads the tested tokens' probabilities in one gather (``at``), instead of copying every
    row of every call (a transfer of n x V floats per call on a GPU, a no-op on the CPU)."""

    def __init__(self, probs: torch.Tensor):
        self.probs = probs
        self._cpu: dict[int, torch.Tensor] = {}

    def row(self, i: int) -> torch.Tensor:
        """Row ``i`` as a float32 CPU vector (the rules' exact arithmetic runs there)."""
        if i not in self._cpu:
            self._cpu[i] = self.probs[i].cpu()
        return self._cpu[i]

    def at(self, rows: list[int], ids: list[int]) -> list[float]:
        """``probs[rows[j], ids[j]]`` for every j, in one gather and one transfer."""
        if not rows:
            return []
        dev = self.probs.device
        return self.probs[torch.tensor(rows, device=dev), torch.tensor(ids, device=dev)].tolist()
