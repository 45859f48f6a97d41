"""What ``python -m specviz run|compare`` write: the generated text with every token marked by how it
was produced, the one-line summary, and the trace or tokens written to a file (``--out``, ``--tokens-csv``)."""

from __future__ import annotations

from specviz.errors import SpecvizError
from specviz.trace import RunTrace

COLORS = {"draft": "\033[32m", "resampled": "\033[33m", "bonus": "\033[36m", "rejected": "\033[31;9m"}
RESET = "\033[0m"
PLAIN = {"draft": "{}", "resampled": "[{}]", "bonus": "{{{}}}", "rejected": "~~{}~~"}


def render_text(trace: RunTrace, color: bool = True) -> str:
    """The generated text with every token marked by how it was produced; rejected drafts shown
    (struck through) where they were tried. Plain markers: ``[resampled]``, ``{bonus}``, ``~~rejected~~``."""

    def mark(text: str, kind: str) -> str:
        return f"{COLORS[kind]}{text}{RESET}" if color else PLAIN[kind].format(text)

    parts = [trace.prompt_text]
    for step in trace.steps:
        rejected = [n for n in step.forest if n.status == "rejected"]
        for tok in step.committed:
            if tok.kind == "resampled":
                parts.extend(mark(n.token_text, "rejected") for n in rejected)
            parts.append(mark(tok.text, tok.kind))
    return "".join(parts)


def summary_line(trace: RunTrace) -> str:
    m = trace.metrics
    rate = "n/a" if m.get("acceptance_rate") is None else f"{m['acceptance_rate']:.1%}"
    kind = (trace.drafter or {}).get("kind")
    by = {"feature": " (feature head)", "draft_model": " (draft model)"}.get(kind, "") if kind else ""
    return (
        f"{trace.algorithm}{by}: {m['new_tokens']} tokens, {m['target_calls']} target calls, "
        f"{m['draft_calls']} draft calls, tau {m['tau']:.2f}, acceptance rate {rate}, "
        f"{m['wall_time_s']:.2f} s, {m['tokens_per_s']:.1f} tokens/s ({trace.finish_reason})"
    )


def write_text(text: str, out: str, flag: str = "--out", what: str = "the trace") -> None:
    """Write ``text`` to ``out`` as UTF-8, exactly (no newline translation); a failure names ``flag``."""
    try:
        with open(out, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
    except OSError as exc:
        raise SpecvizError(f"{flag} {out}: could not write {what} ({exc.strerror or exc}).") from exc


def write_trace(trace: RunTrace, out: str) -> None:
    """The trace's JSON to ``out``, gzip-compressed when the name ends in ``.gz`` (``specviz.trace_io``)."""
    from specviz import trace_io

    if not trace_io.is_gzip_name(out):
        write_text(trace.to_json(), out)
        return
    try:
        trace_io.save_trace(trace, out, compress=True)
    except OSError as exc:
        raise SpecvizError(f"--out {out}: could not write the trace ({exc.strerror or exc}).") from exc


def write_tokens(traces: list[RunTrace], out: str) -> None:
    """``export_tokens.tokens_csv`` of ``traces`` to ``out`` (``--tokens-csv``)."""
    from specviz.export_tokens import tokens_csv

    write_text(tokens_csv(*traces), out, "--tokens-csv", "the tokens")
