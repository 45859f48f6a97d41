"""The generated text as HTML, every token coloured by how it was produced.

Accepted draft tokens are green, resampled tokens orange, bonus tokens (drawn from the target; every
``ar`` token) blue. A rejected draft token is shown struck through in red at the place it was tried,
just before the token that replaced it (a copy of a rejected draft says so in its tooltip; copies of
an accepted draft were never tested and are not shown: its tooltip counts them). Steps are separated
by a thin gap; when a step is selected, its tokens are outlined and the text after it is faded.
Every token has a tooltip with its step, kind, ``p`` and ``q``.

Only classes are emitted (``sv-*``); ``TOKENS_CSS`` styles them and is included in the app's CSS.
``tokens_html(..., standalone=True)`` embeds it for use outside the app.
"""

from __future__ import annotations

import html
from typing import Any

from specviz.trace import RunTrace, StepRecord, TreeNode
from specviz.viz.explain import copies
from specviz.viz.style import STATUS_COLORS, fmt_prob

TOKENS_CSS = f"""
.sv-text {{ font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 13px;
  line-height: 1.75; white-space: pre-wrap; word-break: break-word; color: #111827; }}
.sv-prompt {{ color: #6b7280; }}
.sv-tok {{ border-radius: 3px; padding: 1px 0; }}
.sv-draft {{ background: #d9f2e3; box-shadow: inset 0 -2px 0 {STATUS_COLORS["accepted"]}; }}
.sv-resampled {{ background: #fde9c8; box-shadow: inset 0 -2px 0 {STATUS_COLORS["resampled"]}; }}
.sv-bonus {{ background: #dce8fb; box-shadow: inset 0 -2px 0 {STATUS_COLORS["bonus"]}; }}
.sv-rejected {{ color: {STATUS_COLORS["rejected"]}; text-decoration: line-through; text-decoration-thickness: 2px;
  background: #fbe3e3; opacity: 0.85; font-size: 0.92em; }}
.sv-step {{ margin-right: 3px; }}
.sv-cur .sv-tok {{ outline: 2px solid #7c3aed; outline-offset: 0px; }}
.sv-future {{ opacity: 0.28; }}
.sv-nl {{ color: #9ca3af; }}
.sv-key {{ display: flex; flex-wrap: wrap; gap: 10px; font-size: 12px; margin: 2px 0 6px 0; color: #374151; }}
.sv-key .sv-tok {{ padding: 1px 5px; }}
.sv-empty {{ color: #9ca3af; font-style: italic; }}
.sv-diverge {{ outline: 2px dashed #b91c1c !important; outline-offset: 1px; }}
.sv-diverge-lossy {{ outline: 2px dotted #6b7280 !important; outline-offset: 1px; }}
"""


def _esc(text: str) -> str:
    """Escape a token for HTML; a newline is shown as a faint return arrow before the line break."""
    out = html.escape(text, quote=False)
    if "\n" in out:
        out = out.replace("\n", '<span class="sv-nl">↵</span>\n')
    return out


def _title(step: StepRecord, kind: str, node: TreeNode | None) -> str:
    """Tooltip: step, kind, q, p and, for a tested draft, the p its ``a`` was computed against
    (``p_res``, when it differs from p) and ``a``; significant digits, so 4e-5 never reads "0.000"."""
    bits = [f"step {step.index + 1}", kind]
    if node is not None:
        if node.q is not None:
            bits.append(f"q={fmt_prob(node.q)}")
        if node.q_draft is not None:
            bits.append(f"draft's own probability={fmt_prob(node.q_draft)}")
        if node.p is not None:
            bits.append(f"p={fmt_prob(node.p)}")
        if node.p_residual is not None and node.p_residual != node.p:
            bits.append(f"p_res={fmt_prob(node.p_residual)} (residual target a was computed against)")
        if node.accept_prob is not None:
            bits.append(f"a={fmt_prob(node.accept_prob)}")
        if node.draw is not None:
            bits.append(f"u={fmt_prob(node.draw)}")
    return html.escape(" · ".join(bits))


def step_html(
    step: StepRecord, show_rejected: bool = True, diverge_at: int | None = None, lossless: bool = True
) -> str:
    """One step's tokens: for each committed token, the rejected drafts tried at its position first.
    ``diverge_at`` (output position) marks the token where the output first differs from ``ar``'s:
    as a bug (red) for a lossless run, as an expected difference (grey) when ``lossless`` is False."""
    nodes = {n.id: n for n in step.forest}
    copy = copies(step)
    parts: list[str] = []
    for j, tok in enumerate(step.committed):
        node = nodes.get(tok.node_id) if tok.node_id is not None else None
        if show_rejected and node is not None:
            for alt in step.forest:
                if alt.status == "rejected" and alt.parent == node.parent and alt.id != node.id:
                    kind = "rejected draft" + (" (a copy of the rejected draft before it)" if alt.id in copy else "")
                    parts.append(
                        f'<span class="sv-tok sv-rejected" title="{_title(step, kind, alt)}">'
                        f"{_esc(alt.token_text)}</span>"
                    )
        kind = tok.kind if tok.kind in ("draft", "resampled", "bonus") else "bonus"
        label = {"draft": "accepted draft", "resampled": "resampled", "bonus": "bonus"}[kind]
        skipped = sum(
            1 for c, o in copy.items() if node is not None and o == node.id and nodes[c].status == "not_reached"
        )
        if skipped:
            label += f" ({skipped} cop{'y' if skipped == 1 else 'ies'} of it after it never tested)"
        extra, title = "", _title(step, label, node)
        if diverge_at is not None and step.n_before + j == diverge_at:
            if lossless:
                extra, title = " sv-diverge", title + " · first token that differs from ar's greedy output"
            else:
                extra, title = (
                    " sv-diverge-lossy",
                    title + " · first token that differs from ar's greedy output "
                    "(expected: this run is not lossless by design)",
                )
        parts.append(f'<span class="sv-tok sv-{kind}{extra}" title="{title}">{_esc(tok.text)}</span>')
    return "".join(parts)


STEP_OPEN = '<span class="sv-step" data-step="'  # how every step's element begins, unmarked (``step_span``)


def step_span(
    step: StepRecord, show_rejected: bool = True, diverge_at: int | None = None, lossless: bool = True
) -> str:
    """One step's element: its tokens (``step_html``) in a ``sv-step`` span numbered by its step
    (``data-step``, 1-based), not yet marked as the current or a later step (``mark_step``)."""
    return f'{STEP_OPEN}{step.index + 1}">{step_html(step, show_rejected, diverge_at, lossless)}</span>'


def mark_step(span: str, current_step: int | None) -> str:
    """A step's element (``step_span``) outlined when it is ``current_step`` (0-based), faded when it
    comes after it; as it is when nothing is selected."""
    if current_step is None:
        return span
    number = span[len(STEP_OPEN) : span.index('"', len(STEP_OPEN))]
    index = int(number) - 1
    if index < current_step:
        return span
    rest = span[len('<span class="sv-step') :]  # '" data-step="…">…</span>'
    return f'<span class="sv-step {"sv-cur" if index == current_step else "sv-future"}{rest}'


def text_parts(
    trace: RunTrace | None,
    *,
    show_prompt: bool = True,
    show_rejected: bool = True,
    prompt_chars: int = 400,
    diverge_at: int | None = None,
    spans: list[str] | None = None,
) -> dict[str, Any]:
    """The output of ``trace`` as its parts, none of them marked for a step: ``head`` (the prompt, or
    what shows for no run), ``steps`` (each step's element, ``step_span``, in order; ``spans``: those
    elements, built by the caller) and ``tail`` (what shows for a run without steps). ``tokens_html``
    puts them together; a live page appends each new step's element to those it has (``ui.textbox``)."""
    if trace is None:
        return {"head": '<span class="sv-empty">no run yet</span>', "steps": [], "tail": ""}
    head = ""
    if show_prompt and trace.prompt_text:
        prompt = trace.prompt_text
        if len(prompt) > prompt_chars:
            prompt = "…" + prompt[-prompt_chars:]
        head = f'<span class="sv-prompt" title="prompt">{_esc(prompt)}</span>'
    if spans is None:
        spans = [step_span(step, show_rejected, diverge_at, trace.lossless) for step in trace.steps]
    steps = list(spans)
    tail = "" if steps else '<span class="sv-empty"> (no tokens generated)</span>'
    return {"head": head, "steps": steps, "tail": tail}


def text_from_parts(parts: dict[str, Any], current_step: int | None = None) -> str:
    """The text of ``text_parts``' parts, ``current_step`` (0-based) outlined and later steps faded."""
    steps = "".join(mark_step(span, current_step) for span in parts["steps"])
    return f'<div class="sv-text">{parts["head"]}{steps}{parts["tail"]}</div>'


def tokens_html(
    trace: RunTrace | None,
    current_step: int | None = None,
    *,
    show_prompt: bool = True,
    show_rejected: bool = True,
    standalone: bool = False,
    prompt_chars: int = 400,
    diverge_at: int | None = None,
) -> str:
    """The whole output of ``trace``. ``current_step`` (0-based) outlines that step and fades later
    ones; ``diverge_at`` marks the output position where a greedy run first differs from ``ar`` (a bug
    only if ``trace.lossless``)."""
    parts = text_parts(
        trace, show_prompt=show_prompt, show_rejected=show_rejected, prompt_chars=prompt_chars, diverge_at=diverge_at
    )
    out = text_from_parts(parts, current_step)
    if standalone:
        out = f"<style>{TOKENS_CSS}</style>{out}"
    return out


def legend_html() -> str:
    """The colour key shown above the texts."""
    return (
        '<div class="sv-key">'
        '<span class="sv-tok sv-draft">accepted draft</span>'
        '<span class="sv-tok sv-resampled">resampled (residual)</span>'
        '<span class="sv-tok sv-bonus">bonus / from target</span>'
        '<span class="sv-tok sv-rejected">rejected draft</span>'
        "<span>· hover a token for p, q; ↵ = newline</span></div>"
    )


def text_upto(trace: RunTrace, step_index: int) -> str:
    """The committed text before step ``step_index`` (0-based): the tree's context."""
    return "".join(t.text for s in trace.steps[:step_index] for t in s.committed)
