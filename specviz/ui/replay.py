"""Replaying uploaded trace files (no model needed): each file (``.json`` or ``.json.gz``) read within the
upload cap and, decompressed, within what is left of the replay's JSON cap, and checked
(``trace_files.load_trace_file``), one column per trace, the download's copy, and the sidebar set to what
the traces ran with (the column editor and the sampling settings) so Run runs them again here.
"""

from __future__ import annotations

import gc
import html
import math
from pathlib import Path
from typing import Any, Iterator, Mapping

from specviz.algorithms.registry import AlgorithmSpec
from specviz.errors import SpecvizError
from specviz.fast_json import gc_paused
from specviz.models.loading import ModelPair
from specviz.trace_io import ReadBudget
from specviz.ui.config import AppConfig
from specviz.ui.editor import ColumnEditor
from specviz.ui.layout import SLIDER_RANGES, Page, View
from specviz.ui.pacing import RunRegistry
from specviz.ui.pair_loading import PairLoader
from specviz.ui.runner import Session, columns_from_traces, given_session
from specviz.ui.trace_files import export_copy, load_trace_file
from specviz.ui.validate import max_new_limit
from specviz.ui.views import full_view, later_view, message_view

# a replay of more steps than this (its columns together) shows its columns first and draws the
# comparison and the theory panels in a second event (``Replay.rest``): 12,000 steps take about a second
LATER_STEPS = 2_000


def replayed_settings(trace: Any, pair: ModelPair | None, max_new_tokens_cap: int) -> tuple[View, str]:
    """The sidebar's sampling settings set to those the (first) replayed trace used, each within what
    its box allows here, and the sentence saying which one could not be (else ""): a trace made with
    more new tokens than this app (``max_new_tokens_cap``) or ``pair``'s context allows sets max new
    tokens to that limit (the box's own, as its caption says), a temperature past the slider's end
    leaves the slider as it is."""
    s = trace.sampling or {}
    made = len(trace.output_ids)
    limit = max_new_limit(pair.context_length if pair is not None else None, 0, max_new_tokens_cap)
    out: View = {"seed": str(trace.seed), "max_new": min(made, limit) or None}
    said = []
    if made > limit:
        said.append(f"the trace made {made} new tokens; max new tokens is set to {limit}, the most allowed here")
    for name in ("temperature", "top_p", "top_k"):
        value = s.get(name)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            lo, hi = SLIDER_RANGES.get(name, (0, math.inf))
            if not lo <= value <= hi:
                said.append(
                    f"the trace's {name.replace('_', '-')} {value:g} is outside its slider's "
                    f"{lo:g} to {hi:g}, so it is left as it was"
                )
                continue
            out[name] = value
    return {k: v for k, v in out.items() if v is not None}, "; ".join(said) + ("." if said else "")


def replayed_columns(session: Any, algorithms: Mapping[str, AlgorithmSpec]) -> list[dict[str, Any]] | None:
    """The column editor's value for a replay's columns (each trace's algorithm with the settings it
    declares, as it ran), so Run runs them again here; None when a column's algorithm is not
    registered here or a setting is not valid here (the editor is then left as it is)."""
    session = given_session(session)
    if session is None or session.source != "replay" or not session.columns:
        return None
    out = []
    for c in session.columns:
        spec = algorithms.get(c.algorithm)
        if spec is None:
            return None
        declared = {p.name for p in spec.params}
        try:
            params = spec.resolve({k: v for k, v in c.params.items() if k in declared})
        except SpecvizError:
            return None
        out.append({"algorithm": spec.name, "params": params})
    return out


class Replay:
    """The upload handler of a page of ``n_slots`` columns; refused while a run goes (``runs``)."""

    def __init__(
        self,
        config: AppConfig,
        pairs: PairLoader,
        algorithms: Mapping[str, AlgorithmSpec],
        n_slots: int,
        runs: RunRegistry,
    ):
        self.config = config
        self.pairs = pairs
        self.algorithms = algorithms
        self.n_slots = n_slots
        self.runs = runs
        self.page: Page | None = None  # the page, its column editor and upload box, once built (``bind``)
        self.editor: ColumnEditor | None = None
        self.box: Any = None

    def bind(self, page: Page, editor: ColumnEditor, box: Any = None) -> None:
        """The built page's parts ``replay`` answers for; ``box``: the upload component, emptied after each
        replay (``replay``)."""
        self.page, self.editor, self.box = page, editor, box

    def upload(self, files: Any, session: Session) -> View:
        """Replay uploaded trace files (no model needed); bad files get a message, good ones are shown."""
        session = self.pairs.session(session)
        if not files:
            return message_view(session, "No file received.")
        if self.runs.get(id(session)) is not None:
            return message_view(session, "A run is going in this page: press Stop before replaying a trace.")
        given = files if isinstance(files, list) else [files]
        paths = [f if isinstance(f, str) else getattr(f, "name", None) for f in given]
        if not all(isinstance(p, str) and p for p in paths):
            return message_view(session, "Could not replay: expected uploaded trace files.")
        note = ""
        if len(paths) > self.n_slots:  # only the files shown are read at all
            note = f"showing the first {self.n_slots} of {len(paths)} files (the others were not read)"
            paths = paths[: self.n_slots]
        # the collector paused from the read to the first view: a 12,000-step trace is some 400,000
        # objects, and collecting while its figures are drawn walked them all two or three times (0.5 to
        # 1.3 s of an upload); it collects once afterwards, as it would on its own (``fast_json.gc_paused``)
        with gc_paused():
            return self._show(paths, session, note)

    def _show(self, paths: list[str], session: Session, note: str) -> View:
        """``upload`` once its files are known: read, check and show them."""
        traces, sources, problems = [], [], []
        # each file within the upload cap, their JSON (decompressed) within one replay's cap, all together
        budget = ReadBudget(self.config.max_upload_bytes, self.config.max_replay_json_bytes)
        for path in paths:
            try:
                traces.append(load_trace_file(path, budget))
                sources.append(path)
            except SpecvizError as exc:
                problems.append(str(exc))
            except OSError as exc:
                problems.append(f"{Path(path).name}: could not be read ({exc}).")
        if not traces:
            return message_view(session, "Could not replay: " + " ".join(problems))
        if problems:
            note = (note + " · " if note else "") + "skipped: " + " ".join(html.escape(p) for p in problems)
        session.run_id += 1
        session.columns = columns_from_traces(traces)
        for c, source in zip(session.columns, sources):
            export_copy(c, source, quota=self.config.max_export_bytes)
        session.step, session.source, session.running, session.pace = 0, "replay", False, 0.0
        later = sum(c.n_steps for c in session.columns) > LATER_STEPS
        session.drawn_later = session.run_id if later else None
        settings, lowered = replayed_settings(
            traces[0], self.pairs.registry.get(session.pair_key), self.config.max_new_tokens_cap
        )
        if lowered:
            note = (note + " · " if note else "") + html.escape(lowered)
        view = full_view(session, self.n_slots, note, force=True, later=later)
        view.update(settings)
        return view

    def rest(self, session: Any) -> Iterator[View]:
        """The second event of a long replay (``LATER_STEPS``): its comparison and theory panels
        (``views.later_view``), once, if the page still shows that replay; else nothing (``{}``).

        Then, once the page has them, one full collection: the trace's objects, made while the
        collector was paused, would otherwise be walked in a later scrub (0.25-0.4 s, where a scrub
        takes 0.03 s); here it costs about 0.5 s that nobody waits for."""
        session = given_session(session)
        if session is None or session.drawn_later != session.run_id or session.source != "replay":
            yield {}
            return
        session.drawn_later = None
        with gc_paused():  # as in ``upload``: the figures' allocations would walk the trace's objects
            view = later_view(session, self.n_slots)
        yield view
        gc.collect()

    def replay(self, files: Any, session: Session) -> dict[Any, Any] | list[Any]:
        """``upload`` bound to the page, and the column editor set to the replayed columns
        (``replayed_columns``) where it can be, as the sampling settings are (``replayed_settings``).
        The upload box is emptied: Gradio's file box adds a new upload to the files it holds and sends
        them all, so an earlier upload's files would be read again and a refusal could name one of them;
        emptied, each upload is read on its own and its messages name its own files."""
        view = self.upload(files, session)
        bound = self.page.bind(view)
        cols = replayed_columns(view.get("session"), self.algorithms)
        if cols is not None and isinstance(bound, dict) and self.editor is not None:
            bound.update(self.editor.view(cols, 0))
        if self.box is not None and isinstance(bound, dict):
            bound[self.box] = None
        return bound
