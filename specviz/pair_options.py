"""The model-pair options every command shares (``run``, ``compare``, ``bench``, ``bench eesd``):
``--preset`` or ``--target``/``--draft``, device, dtype, chat and the early-exit head, checked before
any model loads."""

from __future__ import annotations

import argparse

from specviz.errors import SpecvizError
from specviz.validation import whole_text


def add_pair_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--target", help="target model: hub id, local directory or package:DIST/FILE.gguf")
    p.add_argument("--draft", help="draft model: hub id or local directory")
    p.add_argument(
        "--preset",
        help="a pair from configs/presets.yaml instead of --target/--draft (default: the first, smollm2-135m-offline)",
    )
    p.add_argument(
        "--chat",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="format prompts with the pair's chat template (default: on when the pair has one)",
    )
    p.add_argument("--device", default="auto", help="auto (cuda when there is one), cpu, cuda or cuda:N")
    p.add_argument(
        "--dtype",
        default="auto",
        help="auto (float32 on CPU, bfloat16 or float16 on CUDA), float32, bfloat16 or float16",
    )
    p.add_argument("--trust-remote-code", action="store_true", help="run a hub model's own code (never from the app)")
    p.add_argument("--early-exit", help="EESD early-exit head: a head directory, or an exit layer N for a fresh head")
    p.add_argument(
        "--feature", help="a feature head directory for the target (drafter feature; a preset brings its own)"
    )


def check_pair_args(args: argparse.Namespace) -> None:
    """Refuse pair options that contradict each other, and a bad ``--device``/``--dtype``, before any
    model loads: ``--preset`` with ``--target``/``--draft`` (the preset names its own pair), ``--draft``
    alone."""
    from specviz.models.loading import resolve_device_dtype

    if args.preset and (args.target or args.draft):
        given = " and ".join(f"--{name} {getattr(args, name)}" for name in ("target", "draft") if getattr(args, name))
        raise SpecvizError(
            f"--preset {args.preset} names its own target and draft, so {given} would be ignored: "
            "give --preset, or --target/--draft, not both."
        )
    if args.draft and not args.target:
        raise SpecvizError("--draft needs a --target.")
    resolve_device_dtype(args.device, args.dtype)
    import os

    feature = getattr(args, "feature", None)
    if feature is not None and not os.path.isdir(feature):
        raise SpecvizError(f"--feature {feature}: not a feature head directory (none is there).")


def load_pair_from_args(args: argparse.Namespace):
    """The pair named by ``add_pair_args``' options: ``--preset``, else ``--target``/``--draft``."""
    from specviz.models.loading import load_pair

    check_pair_args(args)
    early_exit = getattr(args, "early_exit", None)
    if isinstance(early_exit, str) and whole_text(early_exit) is not None:  # a layer number, in ASCII digits
        early_exit = whole_text(early_exit)
    if not args.target:
        from specviz.presets import default_preset

        preset = args.preset or default_preset().name
        return load_pair(
            preset=preset,
            device=args.device,
            dtype=args.dtype,
            early_exit=early_exit,
            feature=getattr(args, "feature", None),
        )
    return load_pair(
        args.target,
        args.draft,
        device=args.device,
        dtype=args.dtype,
        trust_remote_code=args.trust_remote_code,
        early_exit=early_exit,
        feature=getattr(args, "feature", None),
    )


def chat_on(args: argparse.Namespace, pair) -> bool:
    """``--chat`` / ``--no-chat``, else on exactly when the pair has a chat template."""
    return pair.has_chat_template if args.chat is None else bool(args.chat)
