"""A feature-level drafter: EAGLE-3's one decoder layer over the target's own hidden states, with a
reduced draft vocabulary.

EAGLE-3 (Li et al. 2025, arXiv 2503.01840, Section 3 and Figure 5): the draft reads the target's
hidden states at a low, a middle and a high layer (``layers``, Hugging Face ``hidden_states``
indices), fuses them with ``fc`` (3d -> d), and runs one decoder layer whose attention input is the
normed embedding of the token *after* that position concatenated with the normed feature (2d wide);
the residual is the feature. Its output ``h`` is fed back as the next row's feature for deeper draft
tokens (EAGLE's recurrence, arXiv 2401.15077, Section 4.1), and read out through the draft's own
norm and head over ``vocab``: the ``N`` target tokens the target uses most (EAGLE-3's ``d2t`` map;
FR-Spec, arXiv 2502.14856). The embedding is the target's own, frozen, never stored here.

Row convention (one row per committed token ``t_j``): row ``j`` reads ``(f_{j-1}, t_j)`` at position
``j`` (row 0 reads a zero feature) and predicts ``t_{j+1}``. At decoding time the last committed
token (the target's bonus or correction) is the token of the last row, and its feature is the one
of the position verified before it: the target has computed it in the call that verified.

``FeatureLM`` is a ``CachedLM`` over this head: the engine's drafters (``ModelDrafter``,
``DynamicTreeDrafter``) use it unchanged. Its logits cover the target's whole vocabulary with the
dtype's lowest value outside ``vocab``, so every warped q is 0 there (the residual of the target's
verification produces those tokens at the target's rate).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from specviz.core.trees import ROOT
from specviz.errors import SpecvizError
from specviz.models.tree_forward import CachedLM

CONFIG = "feature_head.json"
WEIGHTS = "feature_head-{:02d}.safetensors"  # shards, each at most SHARD_BYTES (a tensor larger goes alone)
SHARD_BYTES = 9_400_000  # under the 9.5 MB a Hugging Face Space takes without its large-file storage


@dataclass(frozen=True)
class FeatureHeadConfig:
    """The head's shape (the target's width, heads and rotary settings) and the target layers it reads."""

    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    intermediate: int
    layers: tuple[int, ...]
    draft_vocab: int
    target_vocab: int
    eps: float = 1e-5
    rope_theta: float = 10000.0

    @classmethod
    def for_target(
        cls, config, layers: tuple[int, ...], draft_vocab: int, intermediate: int | None = None
    ) -> "FeatureHeadConfig":
        head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
        theta = (getattr(config, "rope_parameters", None) or {}).get("rope_theta", 10000.0)
        return cls(
            config.hidden_size,
            config.num_attention_heads,
            config.num_key_value_heads,
            head_dim,
            intermediate or config.intermediate_size,
            tuple(layers),
            draft_vocab,
            config.vocab_size,
            config.rms_norm_eps,
            float(theta),
        )


def _rms(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    h = x.float()
    return weight * (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype)


def _rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return x * cos + torch.cat((-x[..., half:], x[..., :half]), dim=-1) * sin


class FeatureHead(nn.Module):
    """EAGLE-3's draft layer and head (module docstring). ``vocab``: the draft vocabulary's target ids,
    ascending (draft id ``j`` is target id ``vocab[j]``; EAGLE-3's offset map is ``vocab[j] - j``)."""

    def __init__(self, cfg: FeatureHeadConfig, vocab: torch.Tensor | None = None):
        super().__init__()
        d, hd = cfg.hidden, cfg.head_dim
        self.cfg = cfg
        self.feature_norms = nn.Parameter(torch.ones(len(cfg.layers), d))
        self.fc = nn.Linear(len(cfg.layers) * d, d, bias=False)
        self.q = nn.Linear(2 * d, cfg.heads * hd, bias=False)
        self.k = nn.Linear(2 * d, cfg.kv_heads * hd, bias=False)
        self.v = nn.Linear(2 * d, cfg.kv_heads * hd, bias=False)
        self.o = nn.Linear(cfg.heads * hd, d, bias=False)
        self.gate = nn.Linear(d, cfg.intermediate, bias=False)
        self.up = nn.Linear(d, cfg.intermediate, bias=False)
        self.down = nn.Linear(cfg.intermediate, d, bias=False)
        self.norm_feature, self.norm_embed, self.norm_mlp, self.norm_out = (
            nn.Parameter(torch.ones(d)) for _ in range(4)
        )
        self.head = nn.Linear(d, cfg.draft_vocab, bias=False)
        if vocab is None:
            vocab = torch.arange(cfg.draft_vocab)
        if vocab.shape != (cfg.draft_vocab,) or not bool((vocab[1:] > vocab[:-1]).all()):
            raise SpecvizError("the draft vocabulary must list draft_vocab distinct target ids in ascending order")
        self.register_buffer("vocab", vocab.long(), persistent=True)

    # ---- the layer -------------------------------------------------------------------------------
    def rope(self, positions: torch.Tensor, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
        """Rotary ``(cos, sin)`` ``[..., n, hd]`` at ``positions`` (rotate-half convention, the head's own theta)."""
        hd = self.cfg.head_dim
        inv = 1.0 / (self.cfg.rope_theta ** (torch.arange(0, hd, 2, device=positions.device).float() / hd))
        freqs = positions.float()[..., None] * inv
        emb = torch.cat([freqs, freqs], -1)
        return emb.cos().to(dtype), emb.sin().to(dtype)

    def fuse(self, features: torch.Tensor) -> torch.Tensor:
        """The target's features ``[..., len(layers) * d]`` fused to one ``[..., d]``: each layer's part
        RMS-normed (the residual stream's scale grows with depth), then ``fc`` (EAGLE-3's fusion)."""
        parts = features.unflatten(-1, (len(self.cfg.layers), self.cfg.hidden))
        return self.fc(_rms(parts, self.feature_norms, self.cfg.eps).flatten(-2))

    def qkv(self, feature: torch.Tensor, embed: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor):
        """Queries, keys and values ``[B, heads, n, hd]`` of rows reading ``feature`` (already fused,
        width d) and ``embed`` (the token's target embedding), rotated at their positions."""
        c = self.cfg
        x = torch.cat([_rms(embed, self.norm_embed, c.eps), _rms(feature, self.norm_feature, c.eps)], -1)
        b, n, _ = x.shape
        q = self.q(x).view(b, n, c.heads, c.head_dim).transpose(1, 2)
        k = self.k(x).view(b, n, c.kv_heads, c.head_dim).transpose(1, 2)
        v = self.v(x).view(b, n, c.kv_heads, c.head_dim).transpose(1, 2)
        return _rotate(q, cos, sin), _rotate(k, cos, sin), v

    def finish(self, feature: torch.Tensor, attended: torch.Tensor) -> torch.Tensor:
        """The layer's output ``h`` from its attention output ``[B, n, heads * hd]``: residual, MLP."""
        h = feature + self.o(attended)
        m = _rms(h, self.norm_mlp, self.cfg.eps)
        return h + self.down(F.silu(self.gate(m)) * self.up(m))

    def logits(self, h: torch.Tensor) -> torch.Tensor:
        """Draft-vocabulary logits ``[..., N]`` of output features ``h``."""
        return self.head(_rms(h, self.norm_out, self.cfg.eps))

    def attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        """SDPA with the KV heads repeated for the query groups; ``[B, n, heads * hd]``."""
        groups = self.cfg.heads // self.cfg.kv_heads
        if groups > 1:
            k, v = k.repeat_interleave(groups, 1), v.repeat_interleave(groups, 1)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=self.cfg.head_dim**-0.5)
        b, _, n, _ = out.shape
        return out.transpose(1, 2).reshape(b, n, -1)

    # ---- training: EAGLE-3's training-time test -----------------------------------------------------
    def unrolled(
        self, features: torch.Tensor, ids: torch.Tensor, embed: torch.Tensor, steps: int
    ) -> list[torch.Tensor]:
        """The outputs ``h`` ``[B, L, d]`` of ``steps`` unrolled draft steps over sequences ``ids``
        ``[B, L]`` whose row ``j`` reads ``features[:, j]`` (the target's feature of position ``j - 1``;
        zeros for row 0). EAGLE-3's training-time test (arXiv 2503.01840, Section 3.2): step ``k`` row
        ``j`` reads the step ``k - 1`` output of row ``j`` and token ``ids[:, j + k]`` at position
        ``j + k``, attends causally to the step-0 rows ``<= j`` and to its own row of steps 1..k (its
        draft ancestors at decoding time), and predicts token ``j + k + 1``: exactly what a chain
        draft at depth ``k + 1`` computes after committed row ``j``."""
        c = self.cfg
        b, n = ids.shape
        groups = c.heads // c.kv_heads
        pos = torch.arange(n, device=ids.device)
        causal = torch.ones(n, n, dtype=torch.bool, device=ids.device).tril()
        x = self.fuse(features)
        keys, values, outs = [], [], []
        for k in range(steps):
            tok = F.pad(ids[:, k:], (0, k))
            cos, sin = self.rope(pos + k, x.dtype)
            q, kk, vv = self.qkv(x, F.embedding(tok, embed).to(x.dtype), cos, sin)
            kk, vv = kk.repeat_interleave(groups, 1), vv.repeat_interleave(groups, 1)
            scale = c.head_dim**-0.5
            if k == 0:
                keys0, values0 = kk, vv
                scores = (q @ kk.transpose(-1, -2)) * scale
                scores = scores.masked_fill(~causal, float("-inf"))
                attn = scores.softmax(-1) @ vv
            else:
                keys.append(kk)
                values.append(vv)
                base = ((q @ keys0.transpose(-1, -2)) * scale).masked_fill(~causal, float("-inf"))
                diag = torch.stack([(q * kd).sum(-1) * scale for kd in keys], -1)  # [B, H, L, k]
                p = torch.cat([base, diag], -1).softmax(-1)
                attn = p[..., :n] @ values0 + sum(p[..., n + i, None] * vd for i, vd in enumerate(values))
            x = self.finish(x, attn.transpose(1, 2).reshape(b, n, -1))
            outs.append(x)
        return outs

    # ---- files -----------------------------------------------------------------------------------
    def save(self, path: str | Path, meta: dict | None = None, dtype: torch.dtype = torch.bfloat16) -> None:
        from safetensors.torch import save_file

        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        for old in path.glob(WEIGHTS.replace("{:02d}", "*")):
            old.unlink()
        state = {k: (v.to(dtype) if v.is_floating_point() else v).contiguous() for k, v in self.state_dict().items()}
        shards: list[dict[str, torch.Tensor]] = [{}]
        for name, tensor in sorted(state.items(), key=lambda kv: -kv[1].nbytes):  # largest first, first fit
            size = tensor.nbytes
            fit = next((s for s in shards if sum(t.nbytes for t in s.values()) + size <= SHARD_BYTES), None)
            if fit is None:
                fit = {}
                shards.append(fit)
            fit[name] = tensor
        for i, shard in enumerate(s for s in shards if s):
            save_file(shard, str(path / WEIGHTS.format(i)))
        (path / CONFIG).write_text(json.dumps({"config": asdict(self.cfg), **(meta or {})}, indent=2) + "\n")


def load_feature_head(path: str | Path, target) -> FeatureHead:
    """A head saved by ``FeatureHead.save`` for ``target`` (float32, eval mode; its weight shards read
    together); its width and vocabulary are checked against the target's."""
    from safetensors.torch import load_file

    path = Path(path)
    conf = json.loads((path / CONFIG).read_text())["config"]
    cfg = FeatureHeadConfig(**{**conf, "layers": tuple(conf["layers"])})
    t = target.config
    if cfg.hidden != t.hidden_size or cfg.target_vocab != t.vocab_size or max(cfg.layers) >= t.num_hidden_layers:
        raise SpecvizError(
            f"the feature head at {str(path)!r} was trained for another target (width {cfg.hidden}, "
            f"vocabulary {cfg.target_vocab}, layers {cfg.layers})"
        )
    state = {k: v for f in sorted(path.glob(WEIGHTS.replace("{:02d}", "*"))) for k, v in load_file(str(f)).items()}
    head = FeatureHead(cfg, state["vocab"])
    head.load_state_dict({k: v.float() if v.is_floating_point() else v for k, v in state.items()})
    device = next(target.parameters()).device
    return head.to(device).eval().requires_grad_(False)


class FeatureLM(CachedLM):
    """A ``CachedLM`` whose model is a ``FeatureHead`` reading ``target``'s cached features (module
    docstring). Committed rows read the target's features (``target.rows``); a draft node reads the
    output feature of its parent row. ``commit`` keeps nothing: accepted tokens are fed again at the
    next ``extend`` with the target's own features in place of the draft's (EAGLE, arXiv 2401.15077,
    Section 4.1; vLLM and SGLang do the same)."""

    def __init__(self, head: FeatureHead, target: CachedLM, embed: torch.Tensor, vocab_size: int | None = None):
        if tuple(target.features) != head.cfg.layers:
            raise SpecvizError(f"the target keeps features {target.features}, the head reads {head.cfg.layers}")
        self.head, self.target, self.embed = head, target, embed
        self.vocab_size = vocab_size
        self.features = ()
        self.lean = None
        self.device = embed.device
        self.dtype = embed.dtype
        self.windows = {"full_attention": None}
        self.context_rows = 0
        self.reset()

    def extend(self, context: list[int], tokens: list[int] = (), parents: list[int] = ()) -> torch.Tensor:
        if tokens:
            raise SpecvizError("a feature drafter extends by committed tokens only")
        self.context_rows = len(context)
        try:
            return super().extend(context)
        finally:
            self.context_rows = 0

    def commit(self, path: list[int]) -> None:
        self.keep([])

    def can_draft(self, context: list[int]) -> bool:
        """Whether the target has verified every position the context's rows read (not before its
        first call: that step drafts nothing, as EAGLE's prefill)."""
        return self.target.prefix_len > 0 and self.prefix_len + len(context) - 1 <= self.target.prefix_len

    def _inputs(self, n: int) -> torch.Tensor:
        """The fused feature ``[n, d]`` each new row reads (class docstring)."""
        start = len(self.tree) - n
        if self.context_rows:
            first = self.prefix_len  # the absolute index of the first context row's token
            if first + n - 1 > self.target.prefix_len:
                raise SpecvizError("the target has not verified the positions the draft should read")
            feats = self.target.rows[max(first - 1, 0) : first + n - 1].to(self.fc_dtype)
            fused = self.head.fuse(feats)
            if first == 0:  # row 0 reads a zero feature
                fused = torch.cat([torch.zeros_like(fused[:1]), fused])
            return fused
        parents = self.tree.parents[start:]
        if any(p >= start for p in parents):
            raise SpecvizError("a feature drafter feeds one tree level a call: a node reads its parent's output")
        idx = [self.prefix_len - 1 if p == ROOT else self.prefix_len + p for p in parents]
        return self.rows[idx]

    @property
    def fc_dtype(self) -> torch.dtype:
        return self.head.fc.weight.dtype

    @torch.inference_mode()
    def compute(
        self, ids: torch.Tensor, positions: torch.Tensor, masks: dict[str, torch.Tensor], position: int | None
    ) -> torch.Tensor:
        n = ids.shape[1]
        feature = self._inputs(n)[None]
        embed = F.embedding(ids, self.embed).to(feature.dtype)
        cos, sin = self.head.rope(positions, feature.dtype)
        q, k, v = self.head.qkv(feature, embed, cos.unsqueeze(1), sin.unsqueeze(1))
        k, v = self.cache.update(k, v, 0)
        mask = masks["full_attention"].to(feature.dtype)
        h = self.head.finish(feature, self.head.attend(q, k, v, mask))
        self.new_rows = h[0]
        small = self.head.logits(h[0]).float()
        full = torch.full((n, self.head.cfg.target_vocab), torch.finfo(torch.float32).min, device=small.device)
        full[:, self.head.vocab] = small
        return full
