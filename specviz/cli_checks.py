"""What ``python -m specviz`` checks before any model loads: the decoding options (as ``decode`` does), the
pair options and the context the models' configs state, and the files and directories to write."""

from __future__ import annotations

import argparse
import os

from specviz.cli_options import algo_params
from specviz.errors import SpecvizError
from specviz.validation import whole_text


def check_decode_args(args: argparse.Namespace, algorithms: list[str]) -> None:
    """Refuse bad decoding options before any model is loaded: the same checks as ``decode``
    (``decoding.check_request``) for each algorithm, and ``--out``'s directory."""
    from specviz.algorithms import ALGORITHMS, get_algorithm
    from specviz.decoding import check_request

    given = {
        prm.name for spec in ALGORITHMS.values() for prm in spec.params if getattr(args, prm.name, None) is not None
    }
    taken = {prm.name for algo in algorithms for prm in get_algorithm(algo).params}
    if given - taken:
        flags = ", ".join("--" + n.replace("_", "-") for n in sorted(given - taken))
        raise SpecvizError(f"{flags}: not a parameter of {', '.join(algorithms)} (see python -m specviz algorithms).")
    for algo in algorithms:
        check_request(
            algo,
            max_new_tokens=args.max_new_tokens,
            temperature=args.temperature,
            top_p=args.top_p,
            top_k=args.top_k,
            seed=args.seed,
            **algo_params(args, algo),
        )
    check_pair_limits(args, args.max_new_tokens)
    for dest, flag, what in (("out", "--out", "the trace"), ("tokens_csv", "--tokens-csv", "the tokens")):
        out = getattr(args, dest, None)
        if out is None:
            continue
        folder = os.path.dirname(os.path.abspath(out))
        if not out.strip() or os.path.isdir(out):
            raise SpecvizError(f"{flag} must name a file to write {what} to, got {out!r}.")
        if not os.path.isdir(folder) or not os.access(folder, os.W_OK):
            raise SpecvizError(f"{flag} {out}: the directory {folder} does not exist or is not writable.")


CONTEXT_KEYS = ("max_position_embeddings", "n_positions")  # what ``models.pair._context_length`` reads first


def _config_context(ref: str | None) -> int | None:
    """The context length a model's ``config.json`` states, read without loading the model: a local
    directory's, a hub model's already in the local Hugging Face cache (no network), or a packaged
    checkpoint's cached conversion; None where it cannot be read here (the load checks it then)."""
    if not isinstance(ref, str) or not ref.strip():
        return None
    import json

    try:
        if os.path.isdir(ref):
            path: str | None = os.path.join(ref, "config.json")
        elif ref.startswith("package:"):
            import hashlib

            from specviz.models import packaged

            gguf = packaged.PackagedFile.parse(ref).locate()  # as convert_packaged names its cache entry
            source = {"ref": ref, **packaged._source_key(gguf)}
            key = hashlib.sha256(json.dumps(source, sort_keys=True).encode()).hexdigest()[:12]
            name = packaged.PackagedFile.parse(ref).name
            path = str(packaged.cache_root() / "converted" / f"{name}-{key}" / "config.json")
        else:
            from huggingface_hub import try_to_load_from_cache

            found = try_to_load_from_cache(ref, "config.json")
            path = found if isinstance(found, str) else None
        if not path or not os.path.isfile(path):
            return None
        with open(path, encoding="utf-8") as fh:
            config = json.load(fh)
    except Exception:  # noqa: BLE001 - anything unreadable is left to the load, which says what is wrong
        return None
    for key in CONTEXT_KEYS:
        value = config.get(key) if isinstance(config, dict) else None
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def _pair_refs(args: argparse.Namespace) -> list[str]:
    """The target and draft the pair options name (``--target``/``--draft``, else the preset's)."""
    if getattr(args, "target", None):
        return [args.target, getattr(args, "draft", None)]
    try:
        from specviz.presets import default_preset, get_preset

        preset = get_preset(args.preset) if getattr(args, "preset", None) else default_preset()
        return [preset.target_ref(), preset.draft]
    except Exception:  # noqa: BLE001 - an unknown or missing preset is refused by the load, in its words
        return []


def check_pair_limits(args: argparse.Namespace, max_new_tokens: int | None) -> None:
    """What the pair options and ``max_new_tokens`` must satisfy, checked before any model loads: the
    options agree (``pair_options.check_pair_args``), ``--early-exit`` is a directory or a layer
    number, ``--prompt`` is not empty, and ``max_new_tokens`` plus at least one prompt token fit the
    context the models' configs state (read from the files, ``_config_context``)."""
    from specviz.pair_options import check_pair_args

    check_pair_args(args)
    early_exit = getattr(args, "early_exit", None)
    if isinstance(early_exit, str) and whole_text(early_exit) is None and not os.path.isdir(early_exit):
        raise SpecvizError(
            f"--early-exit {early_exit}: not a head directory (none is there) nor an exit layer number N."
        )
    prompt = getattr(args, "prompt", None)
    if isinstance(prompt, str) and not prompt.strip():
        raise SpecvizError("--prompt is empty: give some text to continue.")
    if max_new_tokens is None:
        return
    known = [(context, ref) for ref in _pair_refs(args) if (context := _config_context(ref)) is not None]
    if known:
        context, ref = min(known)
        if max_new_tokens >= context:
            raise SpecvizError(
                f"--max-new-tokens {max_new_tokens}: the models' context is {context} tokens ({ref}'s "
                f"config) and the prompt takes at least one, so at most {context - 1} new tokens fit."
            )


def check_out_dir(out: str, flag: str = "--out", what: str = "the report") -> None:
    """A directory option (``bench --out``, ``theory --figures``), checked before any work: it names a
    directory or none yet, and the deepest part of it that exists is a directory this user can write to
    (the rest is created)."""
    if not isinstance(out, str) or not out.strip():
        raise SpecvizError(f"{flag} must name a directory to write {what} to, got {out!r}.")
    path = os.path.abspath(out)
    if os.path.exists(path) and not os.path.isdir(path):
        raise SpecvizError(f"{flag} {out}: a file is there; it must name a directory to write {what} to.")
    existing = path
    while not os.path.exists(existing) and os.path.dirname(existing) != existing:
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing) or not os.access(existing, os.W_OK | os.X_OK):
        raise SpecvizError(f"{flag} {out}: the directory {existing} does not exist or is not writable.")
