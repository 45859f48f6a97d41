"""``decode`` and ``stream``: validate the request once, run an algorithm, build its ``RunTrace``.

``RunTrace.lossless`` is the algorithm's declared flag and the run's acceptance rule's (an
over-accepting rule is lossy except at temperature 0, where every rule is exact match)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Iterator

from specviz import defaults, validation
from specviz.algorithms import AlgorithmSpec, get_algorithm
from specviz.algorithms.decoder import Decoder
from specviz.algorithms.drafter_choice import resolve_drafter
from specviz.core.sampling import SamplingConfig
from specviz.errors import InvalidParameterError, PromptError
from specviz.metrics import summarize
from specviz.models.chat import encode_prompt
from specviz.models.device_errors import device_errors
from specviz.models.loading import ModelPair
from specviz.trace import RunTrace, StepRecord, describe_drafter

MAX_SEED = validation.MAX_SEED  # torch.Generator.manual_seed takes a signed 64-bit integer


@dataclass(frozen=True)
class Request:
    """A decode request's arguments that need no pair, checked: the algorithm, its resolved
    parameters, the sampling settings, and the run's own integers and switches."""

    spec: AlgorithmSpec
    params: dict[str, Any]
    sampling: SamplingConfig
    max_new_tokens: int
    seed: int
    record_top_k: int
    chat: bool
    record_lens: bool = False


def check_request(
    algorithm: str,
    max_new_tokens: int = defaults.MAX_NEW_TOKENS,
    temperature: float = defaults.TEMPERATURE,
    top_p: float = defaults.TOP_P,
    top_k: int = defaults.TOP_K,
    seed: int = defaults.SEED,
    record_top_k: int = 8,
    chat: bool = False,
    record_lens: bool = False,
    **params: Any,
) -> Request:
    """Every argument of ``decode`` except the pair and the prompt, checked by ``specviz.validation``
    (the CLI calls it before loading a pair); a bad one raises a ``SpecvizError`` naming it. The
    defaults are ``specviz.defaults``' (the command line's and the app's too)."""
    spec = get_algorithm(algorithm)
    return Request(
        spec=spec,
        params=spec.resolve(params),
        sampling=SamplingConfig(temperature, top_k, top_p),
        max_new_tokens=validation.integer("max_new_tokens", max_new_tokens, 1),
        seed=validation.integer("seed", seed, 0, MAX_SEED, hi_text="2**63 - 1"),
        record_top_k=validation.integer(
            "record_top_k (0 records no per-position distributions)", record_top_k, 0, validation.MAX_RECORD_TOP_K
        ),
        chat=validation.flag("chat", chat),
        record_lens=validation.flag("record_lens", record_lens),
    )


def check_pair(pair: Any, spec: AlgorithmSpec, drafter: str = "model") -> ModelPair:
    """``pair`` if it is a ``ModelPair`` with the models ``spec`` drafts with (``drafter``: see
    ``drafter_choice``; ``"any"`` checks only what does not depend on it)."""
    if not isinstance(pair, ModelPair):
        raise InvalidParameterError(f"pair must be a ModelPair from specviz.load_pair, got {validation.shown(pair)}.")
    if spec.needs_draft and pair.draft is None and drafter in ("model", "model_cut"):
        raise InvalidParameterError(f"{spec.name} needs a draft model; this pair has only a target.")
    if spec.drafter == "early_exit" and pair.early_exit is None:
        raise InvalidParameterError(
            f"{spec.name} needs an early-exit head on the target: load_pair(target, early_exit=DIR) for a trained "
            "head (the bundled pair's is assets/early_exit) or early_exit=N for a fresh head after layer N."
        )
    return pair


class LiveRun:
    """Iterate to get each ``StepRecord`` as it happens; ``trace`` grows with the run and is complete
    (output, finish reason, metrics) once iteration ends."""

    def __init__(self, pair: ModelPair, algorithm: str, prompt: str | list[int], **kwargs: Any):
        req = check_request(algorithm, **kwargs)
        check_pair(pair, req.spec, "any")
        drafter = resolve_drafter(req.params, pair)
        check_pair(pair, req.spec, drafter)
        prompt_ids, prompt_text = encode_prompt(pair, prompt, req.chat)
        if len(prompt_ids) + req.max_new_tokens > pair.context_length:
            raise validation.about(
                PromptError(
                    f"The prompt ({len(prompt_ids)} tokens) plus max_new_tokens ({req.max_new_tokens}) exceeds the "
                    f"models' context of {pair.context_length} tokens: shorten the prompt or ask for fewer tokens."
                ),
                "max_new_tokens",
            )
        self.spec = req.spec
        self.params = req.params  # as given ("auto" too); RunTrace.drafter says which drafter ran
        self.decoder = Decoder(
            pair, prompt_ids, req.max_new_tokens, req.sampling, req.seed, req.record_top_k, drafter, req.record_lens
        )
        self.trace = RunTrace(
            algorithm=req.spec.name,
            params=self.params,
            pair=pair.describe(),
            sampling=req.sampling.as_dict(),
            seed=req.seed,
            prompt_ids=prompt_ids,
            prompt_text=prompt_text,
            lossless=req.spec.lossless,
            chat=req.chat,
            user_text=prompt if req.chat else None,
        )
        self.trace.drafter = describe_drafter(req.spec, self.trace.pair, drafter)  # what drafts (RunTrace.drafter)

    def __iter__(self) -> Iterator[StepRecord]:
        dec, trace = self.decoder, self.trace
        steps = self.spec.run(dec, **{k: v for k, v in self.params.items() if k != "drafter"})  # the Decoder's
        start = time.perf_counter()
        while True:
            with device_errors():  # out of memory / CUDA failure -> DeviceError with a message
                step = next(steps, None)
            if step is None:
                break
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

    kwargs (defaults: ``specviz.defaults``, greedy): ``max_new_tokens``, ``temperature`` (0 = greedy),
    ``top_p``, ``top_k``, ``seed`` (an integer
    in [0, 2**63 - 1]), ``chat`` (format ``prompt`` as one user turn with the pair's chat template;
    the trace keeps the user's text in ``user_text``), ``record_top_k`` (tokens of p and q kept per verified position in
    ``StepRecord.positions``, default 8, 0 for none), ``record_lens`` (each step's logit lens in
    ``StepRecord.lens``: what every layer of the target predicts through its own head, from the verify
    call; off by default) and the algorithm's own parameters (see
    ``specviz.ALGORITHMS[name].params``).
    """
    run = LiveRun(pair, algorithm, prompt, **kwargs)
    for _ in run:
        pass
    return run.trace
