"""Held-out perplexity, greedy top-1 agreement and the greedy-SD mean accepted length it implies.

All functions take *logits functions* (``ids -> logits`` for a whole sequence, no cache) so the same
code measures a ``*ForCausalLM``, a distilled draft and the early-exit head.
"""

from __future__ import annotations

import math
import statistics
from typing import Callable

import torch
import torch.nn.functional as F

LogitsFn = Callable[[torch.Tensor], torch.Tensor]


def hf_logits(model) -> LogitsFn:
    return lambda ids: model(input_ids=ids).logits


@torch.no_grad()
def perplexity(logits_fn: LogitsFn, windows: torch.Tensor, batch_size: int = 8) -> dict:
    """Mean next-token NLL (nats) and perplexity over ``windows`` of shape (n, seq_len + 1)."""
    total, count = 0.0, 0
    for i in range(0, len(windows), batch_size):
        w = windows[i : i + batch_size]
        logits = logits_fn(w[:, :-1]).float()
        nll = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), w[:, 1:].reshape(-1), reduction="sum")
        total += float(nll)
        count += w[:, 1:].numel()
    loss = total / max(1, count)
    return {"loss": round(loss, 4), "ppl": round(math.exp(loss), 2), "tokens": count}


@torch.no_grad()
def top1_matches(target_fn: LogitsFn, draft_fn: LogitsFn, windows: torch.Tensor, batch_size: int = 8) -> torch.Tensor:
    """Bool (n, seq_len): does the draft's argmax equal the target's argmax at each position."""
    out = []
    for i in range(0, len(windows), batch_size):
        w = windows[i : i + batch_size]
        out.append(target_fn(w).argmax(-1) == draft_fn(w).argmax(-1))
    return torch.cat(out)


def greedy_sd_tau(matches: torch.Tensor | list[list[bool]], gamma: int) -> dict:
    """Exact greedy chain-SD bookkeeping from teacher-forced matches on the target's greedy text.

    ``matches[b, j]`` says whether the draft, given the target's greedy prefix, proposes the target's
    token ``j``. At temperature 0, a step that starts at ``j`` accepts the run of leading matches
    (at most ``gamma``) and then commits one target token (correction or bonus), so the step count and
    the tokens per step (tau, counting the bonus) follow with no model call.
    """
    steps = tokens = accepted = drafted = 0
    for row in matches.tolist() if isinstance(matches, torch.Tensor) else matches:
        j, n = 0, len(row)
        while j < n:
            k = 0
            while k < gamma and j + k < n and row[j + k]:
                k += 1
            drafted += min(gamma, n - j)
            accepted += k
            steps += 1
            tokens += min(k + 1, n - j)
            j += k + 1
    return {
        "gamma": gamma,
        "tau": round(tokens / max(1, steps), 3),
        "acceptance_rate": round(accepted / max(1, drafted), 3),
        "steps": steps,
        "tokens": tokens,
    }


@torch.no_grad()
def generate(
    model,
    prompts: torch.Tensor,
    new_tokens: int,
    temperature: float = 0.0,
    greedy_prefix: int = 0,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """Continue each row of ``prompts`` (equal lengths, no padding) by ``new_tokens`` with a KV cache.

    ``temperature == 0`` is greedy. With ``temperature > 0`` the first ``greedy_prefix`` tokens are
    still greedy (the LLM-QAT hybrid used for EESD self-distillation). Returns prompt + continuation.
    """
    out = model(input_ids=prompts, use_cache=True)
    cache, logits = out.cache, out.logits[:, -1]
    pieces = [prompts]
    for i in range(new_tokens):
        if temperature <= 0 or i < greedy_prefix:
            nxt = logits.argmax(-1)
        else:
            probs = torch.softmax(logits.float() / temperature, dim=-1)
            nxt = torch.multinomial(probs, 1, generator=generator).squeeze(-1)
        pieces.append(nxt[:, None])
        if i + 1 < new_tokens:
            out = model(input_ids=nxt[:, None], cache=cache, use_cache=True)
            cache, logits = out.cache, out.logits[:, -1]
    return torch.cat(pieces, dim=1)


@torch.no_grad()
def agreement_report(
    target,
    draft_fn: LogitsFn,
    heldout_windows: torch.Tensor,
    prompts: torch.Tensor,
    new_tokens: int = 64,
    gammas=(4,),
    batch_size: int = 8,
) -> dict:
    """Greedy agreement on held-out text and on the target's own greedy continuations of ``prompts``,
    plus the greedy-SD tau those continuations imply for each gamma."""
    tfn = hf_logits(target)
    held = top1_matches(tfn, draft_fn, heldout_windows[:, :-1], batch_size)
    cont = generate(target, prompts, new_tokens)
    m = top1_matches(tfn, draft_fn, cont[:, :-1], batch_size)[:, prompts.shape[1] - 1 :]
    report = {
        "agreement_heldout": round(float(held.float().mean()), 4),
        "agreement_target_greedy": round(float(m.float().mean()), 4),
    }
    for g in gammas:
        report[f"sim_greedy_sd_gamma{g}"] = greedy_sd_tau(m, g)
    return report


CODE_PROMPTS = (
    "def ",
    "import os\nimport sys\n\n\ndef main():\n    ",
    "class Parser:\n    def __init__(self, text):\n        ",
    "    def __repr__(self):\n        return ",
    "for i in range(len(items)):\n    ",
    "if __name__ == '__main__':\n    ",
    "try:\n    import threading\nexcept ImportError:\n    ",
    "    @property\n    def name(self):\n        ",
    "    def test_basic(self):\n        self.assert",
    "with open(filename) as f:\n    ",
)


def _median(xs: list[float]) -> float | None:
    return round(statistics.median(xs), 3) if xs else None


def measured_sd_report(
    target_dir,
    draft_dir,
    prompts=CODE_PROMPTS,
    gamma: int | None = 4,
    max_new_tokens: int = 64,
    chat: bool = False,
    feature=None,
) -> dict:
    """Greedy ``sd`` with the real decoder (``specviz.decode``) on code prompts, pooled over prompts:
    tau = new tokens / target calls, acceptance rate = accepted / drafted, and the wall-time ratio to
    ``ar`` on the same prompts. Also checks that every output equals greedy ``ar`` token for token, and
    times one forward call of each model inside the decoder (medians): a draft call during ``sd``
    against a one-token target call during ``ar`` (leaving out each run's first call, the prefill).
    ``chat``: the prompts are questions, run through the pair's chat template. ``feature``: a feature head
    directory drafting instead of a draft model (``draft_dir`` None). ``gamma`` None: ``sd``'s default."""
    from specviz.decoding import decode
    from specviz.models.loading import load_pair

    draft = str(draft_dir) if draft_dir is not None else None
    pair = load_pair(str(target_dir), draft, device="cpu", dtype="float32", feature=feature and str(feature))
    tot = {
        "new_tokens": 0,
        "target_calls": 0,
        "accepted": 0,
        "drafted": 0,
        "sd_s": 0.0,
        "ar_s": 0.0,
        "draft_ms": [],
        "target_ms": [],
    }
    per_prompt, identical = [], True
    length = {} if gamma is None else {"gamma": gamma}
    for p in prompts:
        sd = decode(pair, "sd", prompt=p, max_new_tokens=max_new_tokens, temperature=0, chat=chat, **length)
        ar = decode(pair, "ar", prompt=p, max_new_tokens=max_new_tokens, temperature=0, chat=chat)
        identical &= sd.output_ids == ar.output_ids
        m = sd.metrics
        for k in ("new_tokens", "target_calls", "accepted", "drafted"):
            tot[k] += m[k]
        tot["sd_s"] += m["wall_time_s"]
        tot["ar_s"] += ar.metrics["wall_time_s"]
        tot["draft_ms"] += [s.timings["draft_ms"] / s.draft_calls for s in sd.steps[1:] if s.draft_calls]
        tot["target_ms"] += [s.timings["verify_ms"] for s in ar.steps[1:]]
        per_prompt.append(
            {"prompt": p, "tau": round(m["tau"], 3), "acceptance_rate": round(m["acceptance_rate"] or 0, 3)}
        )
    return {
        "gamma": gamma,
        "max_new_tokens": max_new_tokens,
        "prompts": len(prompts),
        "tau": round(tot["new_tokens"] / max(1, tot["target_calls"]), 3),
        "acceptance_rate": round(tot["accepted"] / max(1, tot["drafted"]), 3),
        "wall_time_speedup_vs_ar": round(tot["ar_s"] / tot["sd_s"], 3) if tot["sd_s"] else None,
        "greedy_output_equals_ar": bool(identical),
        "draft_ms_per_call": _median(tot["draft_ms"]),
        "target_ms_per_call": _median(tot["target_ms"]),
        "per_prompt": per_prompt,
    }
