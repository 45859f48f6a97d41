"""Byte-level BPE tokenizer trained on the corpus, saved as a Hugging Face fast tokenizer.

GPT-2 style: every byte is in the base alphabet (no unknown token), no automatic BOS, and one special
token ``<|endoftext|>`` (id 0) that serves as bos, eos and pad and separates files in the training
stream. ``AutoTokenizer.from_pretrained(dir)`` loads the saved directory.
"""

from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np

EOS = "<|endoftext|>"


def train_tokenizer(texts: Sequence[str], vocab_size: int = 4096, min_frequency: int = 2):
    """Train a byte-level BPE on ``texts`` and wrap it as a ``PreTrainedTokenizerFast``.

    The trainer counts pairs over the whole input and breaks ties deterministically, so the same texts
    give the same vocabulary and merges on every run.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=min_frequency,
        special_tokens=[EOS],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(iter(texts), trainer=trainer, length=len(texts))
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token=EOS,
        eos_token=EOS,
        pad_token=EOS,
        clean_up_tokenization_spaces=False,
        model_max_length=1024,
    )
    return fast


def encode_stream(tokenizer, texts: Iterable[str]) -> np.ndarray:
    """Concatenate the token ids of ``texts``, each followed by the eos id, as one int32 array."""
    eos = tokenizer.eos_token_id
    texts = list(texts)
    ids: list[int] = []
    backend = tokenizer.backend_tokenizer
    for enc in backend.encode_batch(texts, add_special_tokens=False):
        ids.extend(enc.ids)
        ids.append(eos)
    return np.asarray(ids, dtype=np.int32)
