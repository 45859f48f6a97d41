"""``decode`` and ``stream``: validate the request once, run an algorithm, build its ``RunTrace``.

``RunTrace.lossless`` is the algorithm's declared flag and the run's acceptance rule's (an
over-accepting rule is lossy except at temperature 0, where every rule is exact match)."""
from __future__ import annotations

import time
from typing import Any, Iterator

from specviz.algorithms import get_algorithm
from specviz.algorithms.decoder import Decoder
from specviz.core.sampling import SamplingConfig
from specviz.errors import InvalidParameterError, PromptError
from specviz.metrics import summarize
from specviz.models.chat import encode_prompt
from specviz.models.device_errors import device_errors
from specviz.models.loading import ModelPair
from specviz.trace import RunTrace, StepRecord

MAX_SEED = 2**63 - 1  # torch.Generator.manual_seed takes a signed 64-bit integer


class LiveRun:
    """Iterate to get each ``StepRecord`` as it happens; ``trace`` grows with the run and is complete
    (output, finish reason, metrics) once iteration ends."""

    def __init__(self, pair: ModelPair, algorithm: str, prompt: str | list[int], max_new_tokens: int = 64,
                 temperature: float = 1.0, top_p: float = 1.0, top_k: int = 0, seed: int = 0,
                 record_top_k: int = 8, chat: bool = False, **params: Any):
        spec = get_algorithm(algorithm)
        self.params = spec.resolve(params)
        sampling = SamplingConfig(temperature, top_k, top_p)
        if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int) or max_new_tokens < 1:
            raise InvalidParameterError(f"max_new_tokens must be an integer >= 1, got {max_new_tokens!r}.")
        if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
            raise InvalidParameterError(f"seed must be an integer in [0, 2**63 - 1], got {seed!r}.")
        if isinstance(record_top_k, bool) or not isinstance(record_top_k, int) or record_top_k < 0:
            raise InvalidParameterError(
                f"record_top_k must be an integer >= 0 (0 records no per-position distributions), "
                f"got {record_top_k!r}.")
        if spec.needs_draft and pair.draft is None:
            raise InvalidParameterError(f"{algorithm} needs a draft model; this pair has only a target.")
        if not isinstance(chat, bool):
            raise InvalidParameterError(f"chat must be true or false, got {chat!r}.")
        prompt_ids, prompt_text = encode_prompt(pair, prompt, chat)
        if len(prompt_ids) + max_new_tokens > pair.context_length:
            raise PromptError(
                f"The prompt ({len(prompt_ids)} tokens) plus max_new_tokens ({max_new_tokens}) exceeds the "
                f"models' context of {pair.context_length} tokens: shorten the prompt or ask for fewer tokens."
            )
        self.spec = spec
        self.decoder = Decoder(pair, prompt_ids, max_new_tokens, sampling, seed, record_top_k)
        self.trace = RunTrace(algorithm=algorithm, params=self.params, pair=pair.describe(),
                              sampling=sampling.as_dict(), seed=seed, prompt_ids=prompt_ids, prompt_text=prompt_text,
                              lossless=spec.lossless, chat=chat, user_text=prompt if chat else None)

    def __iter__(self) -> Iterator[StepRecord]:
        dec, trace = self.decoder, self.trace
        steps = self.spec.run(dec, **self.params)
        start = time.perf_counter()
        while True:
            t0 = time.perf_counter()
            with device_errors():  # out of memory / CUDA failure -> DeviceError with a message
                step = next(steps, None)
            if step is None:
                break
            total = 1000 * (time.perf_counter() - t0)
            step.timings = {"draft_ms": 0.0, "verify_ms": 0.0, **step.timings, "total_ms": total}
            step.timings["bookkeeping_ms"] = max(0.0, total - step.timings["draft_ms"] - step.timings["verify_ms"])
            trace.steps.append(step)
            trace.output_ids = dec.output
            trace.lossless = self.spec.lossless and dec.lossless
            if dec.finished:
                steps.close()
            yield step
        trace.output_ids = dec.output
        trace.output_text = dec.pair.decode(trace.output_ids)
        trace.finish_reason = dec.finish_reason
        trace.metrics = summarize(trace, wall_time_s=time.perf_counter() - start)


def stream(pair: ModelPair, algorithm: str, prompt: str | list[int], **kwargs: Any) -> LiveRun:
    """Same arguments as ``decode``; iterate the result to get each ``StepRecord`` as it completes."""
    return LiveRun(pair, algorithm, prompt, **kwargs)


def decode(pair: ModelPair, algorithm: str, prompt: str | list[int], **kwargs: Any) -> RunTrace:
    """Run ``algorithm`` on ``prompt`` and return the full ``RunTrace``.

    kwargs: ``max_new_tokens``, ``temperature`` (0 = greedy), ``top_p``, ``top_k``, ``seed`` (an integer
    in [0, 2**63 - 1]), ``chat`` (format ``prompt`` as one user turn with the pair's chat template;
    the trace keeps the user's text in ``user_text``), ``record_top_k`` (tokens of p and q kept per verified position in
    ``StepRecord.positions``, default 8, 0 for none) and the algorithm's own parameters (see
    ``specviz.ALGORITHMS[name].params``).
    """
    run = LiveRun(pair, algorithm, prompt, **kwargs)
    for _ in run:
        pass
    return run.trace
