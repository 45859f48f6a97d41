"""Checks that a draft and a target share a vocabulary before any decoding.

Speculative decoding compares ``p(x)`` and ``q(x)`` token id by token id, so both tokenizers must
map text to the same ids. Model vocab sizes may still differ by padding (Qwen2 checkpoints ship
151936 vs 152064 rows): the shared vocabulary is then the smaller size, and logits are sliced to it.
A tokenizer may also be *larger* than the models' output rows when every extra id is an added
special token the models were never trained on (transformers' Qwen2 tokenizer class adds
``<|endoftext|>`` to a small vocabulary): those ids are accepted and masked (no model can produce
them, and a prompt containing one is refused); any other excess is a real mismatch.
"""

from __future__ import annotations

from specviz.errors import TokenizerMismatchError

PROBE_TEXT = "def fibonacci(n):\n    return n if n < 2 else fibonacci(n - 1) + fibonacci(n - 2)  # Ünïcödé ✓ 123"


def shared_vocab_size(
    target_tok, draft_tok, target_rows: int, draft_rows: int, target_name: str = "target", draft_name: str = "draft"
) -> int:
    """Return the number of logit rows both models share, or raise ``TokenizerMismatchError``.

    ``*_rows`` are the models' output vocab sizes (``config.vocab_size``, possibly padded).
    """
    if draft_tok is not None and target_tok is not None:
        t_vocab, d_vocab = target_tok.get_vocab(), draft_tok.get_vocab()
        if t_vocab != d_vocab:
            t_by_id = {i: t for t, i in t_vocab.items()}
            d_by_id = {i: t for t, i in d_vocab.items()}
            first = min(i for i in set(t_by_id) | set(d_by_id) if t_by_id.get(i) != d_by_id.get(i))
            raise TokenizerMismatchError(
                f"{target_name} and {draft_name} use different vocabularies: token id {first} is "
                f"{t_by_id.get(first)!r} in {target_name} but {d_by_id.get(first)!r} in {draft_name} "
                f"({len(t_vocab)} vs {len(d_vocab)} tokens). Pick a draft from the same model family."
            )
        t_ids = target_tok(PROBE_TEXT, add_special_tokens=False)["input_ids"]
        d_ids = draft_tok(PROBE_TEXT, add_special_tokens=False)["input_ids"]
        if t_ids != d_ids:
            raise TokenizerMismatchError(
                f"{target_name} and {draft_name} tokenize the same text differently "
                f"({t_ids[:8]}... vs {d_ids[:8]}...): their pre-tokenizers or merges differ."
            )
    shared = min(target_rows, draft_rows)
    n_tokens = len(target_tok) if target_tok is not None else shared
    if shared < n_tokens and not unmodelled_special_ids(target_tok, shared):
        raise TokenizerMismatchError(
            f"{target_name} has {target_rows} output rows and {draft_name} {draft_rows}, fewer than the "
            f"tokenizer's {n_tokens} tokens: the models were not trained on this tokenizer."
        )
    return shared


def unmodelled_special_ids(tokenizer, rows: int) -> list[int]:
    """The token ids ``>= rows`` of ``tokenizer`` when *all* of them are added special tokens (ids the
    models have no output row for, which can be masked); an empty list when there are none or when
    any of them is an ordinary token (a real mismatch)."""
    if tokenizer is None or len(tokenizer) <= rows:
        return []
    added = getattr(tokenizer, "added_tokens_decoder", {}) or {}
    extra = list(range(rows, len(tokenizer)))
    if all(i in added and getattr(added[i], "special", False) for i in extra):
        return extra
    return []
