"""The whole recipe: corpus -> tokenizer -> target -> distilled draft -> early-exit head -> report.

Each stage writes its result under ``out`` (``target/``, ``draft/``, ``early_exit/``,
``bundled_pair.json``); a stage that is not run loads the previous result from there, so one stage
can be redone without the others. Everything is seeded: the corpus order, the tokenizer, model
initialisation (``torch.manual_seed(seed + stage)``), batch order and generated data.
"""

from __future__ import annotations

import json
import platform
import shutil
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable

import torch

from . import configs
from .common import STAGES, TrainConfig, encoded_streams, load_model, pick_device, save_tokenizer
from .corpus import build_corpus
from .data import MixedSampler, WindowSampler, sequential_windows
from .distill import build_generated_bank, init_draft_from_target, kl_to_teacher
from .evaluate import agreement_report, generate, hf_logits, measured_sd_report, perplexity
from .loop import torch_threads, train_loop
from .tokenizer import train_tokenizer

# open lines: a prompt ending in a space or a bare newline splits a token BPE merges (" x", "\\n    ")
SAMPLE_PROMPTS = ("def read_config(path", "import os\n", "class Stack(", "    def __init__(self", "for i in range(")
AGREEMENT_PROMPTS = (
    "def ",
    "import ",
    "class Foo:\n    def ",
    "if __name__ == ",
    "    return ",
    "for ",
    "try:\n    ",
    "@property\n    def ",
)


def _save_model(model, tokenizer, path: Path, meta: dict) -> None:
    """A model directory in float32 (the pair is trained in float32), in files under the size a Space
    takes in plain git (``models.shards``); ``tokenizer``: None for the draft, which reads the target's
    one copy (``load_pair``)."""
    from specviz.models.shards import save_model_dir

    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)
    model = model.to("cpu", torch.float32)
    model.generation_config.do_sample = False
    save_model_dir(model, path)
    if tokenizer is not None:
        save_tokenizer(tokenizer, path)
    (path / "specviz_train.json").write_text(json.dumps(meta, indent=2, default=str) + "\n")


def _prompt_ids(tokenizer, texts, device) -> torch.Tensor:
    """Equal-length prompts: each text's ids left-truncated/cut to the shortest length."""
    ids = [tokenizer(t, add_special_tokens=False).input_ids for t in texts]
    n = min(len(i) for i in ids)
    return torch.tensor([i[:n] for i in ids], device=device)


def run(cfg: TrainConfig, log=print) -> dict:
    """Run the stages of ``cfg``; returns the report also written to ``out/bundled_pair.json``."""
    with torch_threads(cfg.threads):
        return _run(cfg, log)


@dataclass
class _Run:
    """What every stage of one run reads: the settings, where it writes, the report it adds to, the
    tokenizer and the encoded corpus (``_start``)."""

    cfg: TrainConfig
    log: Callable[[str], Any]
    device: torch.device
    out: Path
    report: dict
    tokenizer: Any
    train_stream: Any
    heldout_stream: Any
    eval_windows: torch.Tensor
    stage_meta: dict

    @property
    def timings(self) -> dict:
        return self.report["timings_s"]

    def fit(self, name: str, model, sampler, loss_fn, steps: int, lr: float, **eval_kw) -> dict:
        """Train ``model`` in place (the shared loop), record the stage's time and summary, leave it in eval mode."""
        model.train()
        summary = train_loop(
            model.parameters(),
            lambda _step: sampler.next(),
            loss_fn,
            steps,
            lr,
            name,
            log_every=self.cfg.log_every,
            log=self.log,
            **eval_kw,
        )
        model.eval()
        self.timings[name] = summary["seconds"]
        self.report[f"{name}_training"] = {k: v for k, v in summary.items() if k != "history"}
        return summary

    def mixed_sampler(self, bank, seed: int) -> MixedSampler:
        """Corpus windows mixed with the target's continuations (``bank``), seeded ``seed`` and ``seed + 1``."""
        cfg = self.cfg
        return MixedSampler(
            WindowSampler(self.train_stream, cfg.seq_len, cfg.batch_size, seed), bank, cfg.generated_fraction, seed + 1
        )


def _run(cfg: TrainConfig, log) -> dict:
    t_start = time.time()
    run = _start(cfg, log)
    target = _target_stage(run)
    bank = _generated_bank(run, target)
    draft = _draft_stage(run, target, bank)
    head = _early_exit_stage(run, target, bank)
    if "eval" in cfg.stages:
        _evaluate(run, target, draft, head)
    timings = run.timings
    timings["total_this_run"] = round(time.time() - t_start, 1)
    report_path = run.out / "bundled_pair.json"
    report_path.write_text(json.dumps(run.report, indent=2, default=str) + "\n")
    log(f"[done] report written to {report_path} ({timings['total_this_run'] / 60:.1f} min)")
    return run.report


def _start(cfg: TrainConfig, log) -> _Run:
    """The device, the output directory, the report so far (a stage not run keeps its earlier entries)
    and the environment; the corpus, the tokenizer (trained, or the one written before) and the encoded
    streams."""
    from transformers import AutoTokenizer

    device = pick_device(cfg.device)
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    unknown = set(cfg.stages) - set(STAGES)
    if unknown:
        raise ValueError(f"unknown stages {sorted(unknown)}; choose from {', '.join(STAGES)}")
    report_path = out / "bundled_pair.json"
    report: dict = json.loads(report_path.read_text()) if report_path.is_file() else {}
    report["config"] = {k: v for k, v in asdict(cfg).items()}
    report["environment"] = {
        "python": sys.version.split()[0],
        "torch": torch.__version__,
        "device": str(device),
        "threads": cfg.threads,
        "platform": platform.platform(),
    }

    # corpus and tokenizer
    corpus = build_corpus(max_files=cfg.max_files, heldout_percent=cfg.heldout_percent, include_tests=cfg.include_tests)
    report["corpus"] = corpus.describe()
    log(
        f"[corpus] {len(corpus.train_files)} training files, {len(corpus.heldout_files)} held-out files "
        f"from {corpus.root} (sha256 {corpus.sha256[:12]})"
    )
    if "tokenizer" in cfg.stages:
        t0 = time.time()
        tokenizer = train_tokenizer(corpus.train_texts, cfg.vocab_size)
        log(f"[tokenizer] byte-level BPE, vocab {len(tokenizer)}, trained in {time.time() - t0:.1f}s")
        save_tokenizer(tokenizer, out / "target")  # the pair's one copy; the target stage writes it again
    else:
        src = out / "tokenizer" if (out / "tokenizer").is_dir() else out / "target"  # out/tokenizer: older runs
        tokenizer = AutoTokenizer.from_pretrained(src)
    t0 = time.time()
    train_stream, heldout_stream = encoded_streams(tokenizer, corpus, cfg.cache_dir)
    report["corpus"].update(train_tokens=int(len(train_stream)), heldout_tokens=int(len(heldout_stream)))
    log(
        f"[tokenizer] {len(train_stream)} training tokens, {len(heldout_stream)} held-out tokens "
        f"({time.time() - t0:.1f}s)"
    )
    eval_windows = sequential_windows(heldout_stream, cfg.seq_len, cfg.eval_windows).to(device)
    report.setdefault("timings_s", {})
    stage_meta = {"corpus": report["corpus"], "seed": cfg.seed, "recipe": "python -m specviz.train (specviz/train)"}
    return _Run(cfg, log, device, out, report, tokenizer, train_stream, heldout_stream, eval_windows, stage_meta)


def _target_stage(run: _Run):
    """The target, trained from scratch on corpus windows and saved (stage ``target``), or loaded; frozen."""
    from transformers import LlamaForCausalLM

    cfg, device, out, log = run.cfg, run.device, run.out, run.log
    if "target" in cfg.stages:
        torch.manual_seed(cfg.seed + 1)
        target = LlamaForCausalLM(
            configs.llama_config(cfg.target_size, len(run.tokenizer), run.tokenizer.eos_token_id)
        ).to(device)
        n_params = configs.count_parameters(target)
        log(
            f"[target] {cfg.target_size}: {n_params / 1e6:.2f}M parameters, {cfg.target_steps} steps of "
            f"{cfg.batch_size}x{cfg.seq_len} tokens on {device}"
        )
        sampler = WindowSampler(run.train_stream, cfg.seq_len, cfg.batch_size, cfg.seed + 11)

        def target_loss(batch):
            batch = batch.to(device)
            return _ce(target(input_ids=batch[:, :-1]).logits, batch[:, 1:])

        summary = run.fit(
            "target",
            target,
            sampler,
            target_loss,
            cfg.target_steps,
            cfg.target_lr,
            eval_fn=lambda: perplexity(hf_logits(target), run.eval_windows[:8]),
            eval_every=300,
        )
        _save_model(
            target,
            run.tokenizer,
            out / "target",
            {**run.stage_meta, "role": "target", "training": summary, "size": configs.SIZES[cfg.target_size].as_dict()},
        )
        target.to(device)
        log(f"[target] saved to {out / 'target'}")
    else:
        target = load_model(out / "target", device)
    target.eval()
    for p in target.parameters():
        p.requires_grad_(False)
    return target


def _generated_bank(run: _Run, target):
    """The target's own continuations the draft and the head also learn from, or None when no stage needs them."""
    cfg = run.cfg
    need_bank = (
        ("draft" in cfg.stages or "early_exit" in cfg.stages) and cfg.generated_fraction > 0 and cfg.gen_sequences > 0
    )
    if not need_bank:
        return None
    t0 = time.time()
    bank = build_generated_bank(
        target,
        run.train_stream,
        cfg.gen_sequences,
        cfg.gen_prompt_len,
        cfg.gen_new_tokens,
        cfg.gen_greedy_fraction,
        cfg.gen_temperature,
        cfg.seed + 23,
        batch_size=64,
        log=run.log,
    ).cpu()
    run.timings["generate"] = round(time.time() - t0, 1)
    run.log(f"[generate] {len(bank)} target continuations of {cfg.gen_new_tokens} tokens in {run.timings['generate']}s")
    return bank


def _draft_stage(run: _Run, target, bank):
    """The draft, initialised from the target's layers it can copy and distilled from the target (KL, plus
    cross-entropy by ``draft_ce_weight``) and saved (stage ``draft``); else the saved one, or None."""
    from transformers import LlamaForCausalLM

    cfg, device, out, log = run.cfg, run.device, run.out, run.log
    if "draft" not in cfg.stages:
        return load_model(out / "draft", device) if (out / "draft" / "config.json").is_file() else None
    torch.manual_seed(cfg.seed + 2)
    draft = LlamaForCausalLM(configs.llama_config(cfg.draft_size, len(run.tokenizer), run.tokenizer.eos_token_id)).to(
        device
    )
    copied = init_draft_from_target(draft, target)
    n_params = configs.count_parameters(draft)
    log(
        f"[draft] {cfg.draft_size}: {n_params / 1e6:.2f}M parameters, initialised from the target's "
        f"{', '.join(copied) or 'nothing'}; {cfg.draft_steps} distillation steps"
    )
    sampler = run.mixed_sampler(bank, cfg.seed + 12)

    def draft_loss(batch):
        batch = batch.to(device)
        x = batch[:, :-1]
        with torch.no_grad():
            teacher = target(input_ids=x).logits
        student = draft(input_ids=x).logits
        loss = kl_to_teacher(student, teacher)
        if cfg.draft_ce_weight:
            loss = loss + cfg.draft_ce_weight * _ce(student, batch[:, 1:])
        return loss

    summary = run.fit("draft", draft, sampler, draft_loss, cfg.draft_steps, cfg.draft_lr)
    run.report["draft_init"] = copied
    _save_model(
        draft,
        None,
        out / "draft",
        {
            **run.stage_meta,
            "role": "draft",
            "distilled_from": "../target",
            "training": summary,
            "init": copied,
            "size": configs.SIZES[cfg.draft_size].as_dict(),
        },
    )
    draft.to(device)
    log(f"[draft] saved to {out / 'draft'}")
    return draft


def _early_exit_stage(run: _Run, target, bank):
    """EESD's early-exit head after ``exit_layer`` (KL to the target) with Cali-TS's calibration head when
    ``calibration_steps``, saved (stage ``early_exit``); else the saved one, or None."""
    from specviz.models.early_exit import load_early_exit, save_early_exit

    from .early_exit import train_early_exit

    cfg, out, log = run.cfg, run.out, run.log
    if "early_exit" not in cfg.stages:
        return (
            load_early_exit(out / "early_exit", target) if (out / "early_exit" / "early_exit.json").is_file() else None
        )
    torch.manual_seed(cfg.seed + 3)
    sampler = run.mixed_sampler(bank, cfg.seed + 14)
    head, summary = train_early_exit(
        target, cfg.exit_layer, sampler, cfg.ee_steps, cfg.ee_lr, run.device, log=log, log_every=cfg.log_every
    )
    run.timings["early_exit"] = summary["seconds"]
    run.report["early_exit_training"] = {k: v for k, v in summary.items() if k != "history"}
    save_early_exit(
        head,
        out / "early_exit",
        base="../target",
        extra={
            "training": run.report["early_exit_training"],
            "loss": "KL(target || head) on corpus windows and target continuations",
            "seed": cfg.seed,
        },
    )
    if cfg.calibration_steps > 0:
        from .calibration import save_with_head, train_calibration

        cal, cal_report = train_calibration(
            target,
            head,
            run.train_stream,
            run.heldout_stream,
            steps=cfg.calibration_steps,
            sequences=cfg.calibration_sequences,
            seed=cfg.seed + 41,
            device=run.device,
            log=log,
        )
        save_with_head(cal, out / "early_exit", cal_report)
        run.report["calibration"] = cal_report
        log(f"[calibration] {cal_report}")
    log(f"[early_exit] saved to {out / 'early_exit'}")
    return head


def _evaluate(run: _Run, target, draft, head) -> None:
    """The report's ``eval``: held-out perplexity of each model, the draft's and the head's agreement with
    the target, the measured greedy ``sd`` when asked, parameter counts and sampled text."""
    cfg, device, out, log, windows = run.cfg, run.device, run.out, run.log, run.eval_windows
    t0 = time.time()
    ev: dict = {}
    ev["target"] = perplexity(hf_logits(target), windows)
    prompts = _prompt_ids(run.tokenizer, AGREEMENT_PROMPTS, device)
    if draft is not None:
        ev["draft"] = perplexity(hf_logits(draft), windows)
        ev["draft"].update(
            agreement_report(target, hf_logits(draft), windows, prompts, cfg.eval_new_tokens, gammas=(2, 4, 6))
        )
    if head is not None:
        ev["early_exit"] = perplexity(head.logits_for, windows)
        ev["early_exit"].update(
            agreement_report(target, head.logits_for, windows, prompts, cfg.eval_new_tokens, gammas=(2, 4, 6))
        )
    if draft is not None and cfg.measure_decode and (out / "draft" / "config.json").is_file():
        try:
            ev["decode_sd_gamma4"] = measured_sd_report(out / "target", out / "draft")
        except Exception as exc:  # noqa: BLE001 - the decoder is optional for training
            ev["decode_sd_gamma4"] = {"error": f"{type(exc).__name__}: {exc}"}
        log(
            f"[eval] specviz.decode greedy sd gamma 4 on code prompts: "
            f"{ {k: v for k, v in ev['decode_sd_gamma4'].items() if k != 'per_prompt'} }"
        )
    ev["parameters"] = {"target": configs.count_parameters(target)}
    if draft is not None:
        ev["parameters"]["draft"] = configs.count_parameters(draft)
    if head is not None:
        ev["parameters"]["early_exit_head"] = sum(p.numel() for p in head.parameters())
    ev["samples"] = samples = _samples(run, target)
    run.timings["eval"] = round(time.time() - t0, 1)
    run.report["eval"] = ev
    for k in ("target", "draft", "early_exit"):
        if k in ev:
            log(f"[eval] {k}: " + json.dumps({kk: vv for kk, vv in ev[k].items()}))
    for k, v in samples.items():
        log(f"[sample] {k!r} -> {v!r}")


def _samples(run: _Run, target) -> dict[str, str]:
    """The target's continuation of each of ``SAMPLE_PROMPTS``, sampled at T = 0.8 and greedy (on the CPU)."""
    tokenizer = run.tokenizer
    gen = torch.Generator(device="cpu").manual_seed(run.cfg.seed + 31)
    samples = {}
    for p in SAMPLE_PROMPTS:
        ids = torch.tensor([tokenizer(p, add_special_tokens=False).input_ids], device=run.device)
        samples[f"T=0.8 | {p}"] = tokenizer.decode(generate(target.cpu(), ids.cpu(), 64, 0.8, generator=gen)[0])
        samples[f"greedy | {p}"] = tokenizer.decode(generate(target.cpu(), ids.cpu(), 64, 0.0)[0])
        target.to(run.device)
    return samples


def _ce(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    import torch.nn.functional as F

    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), labels.reshape(-1))
