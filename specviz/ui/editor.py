"""The sidebar's column editor: which columns the next Run shows, each an algorithm with its settings.

Declared in one place (``ColumnEditor.declare``) and wired by ``ColumnEditor.wire``. The columns live
in the page as a JSON value (``ColumnEditor.value``, hidden; the ``columns`` input of ``/run`` and
``/measure``, see ``ui.columns``). The algorithm checkboxes add a column at the algorithm's defaults
or remove every column of it; the radio picks the column whose settings the controls below show and
change; *duplicate* copies the picked column right after it (then change the copy's settings), and
*remove* takes it out. The controls are one set per algorithm (its declared ``Param``s: defaults,
ranges, help), shown for the picked column's algorithm only, and shared by that algorithm's columns:
picking a column loads its values into them.

Every handler takes the page's values and returns ``{component: update}``; each checks what it is
given (a columns value that is not one is read as the columns it can make out of it, at most the
app's number of columns; a picked index out of range is the first column) and never raises. Nothing
here runs a model: Run checks the columns again (``ui.columns.check_columns``) and each setting's
value (``AlgorithmSpec.resolve``).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any, Callable, Mapping

import gradio as gr

from specviz.algorithms.registry import AlgorithmSpec, Param
from specviz.errors import SpecvizError
from specviz.ui import columns as cfg
from specviz.ui.numberbox import NumberBox, SliderBox

Update = dict[Any, Any]


def param_elem_id(algorithm: str, name: str) -> str:
    return f"sv-param-{algorithm}-{name}"


def param_component(spec: AlgorithmSpec, p: Param) -> gr.components.Component:
    """The control of one declared parameter, shown only if it applies under the defaults
    (``Param.applies``; ``ColumnEditor.param_visibility`` follows later changes)."""
    kw = dict(
        label=p.name, info=p.help or None, visible=p.applies(spec.defaults), elem_id=param_elem_id(spec.name, p.name)
    )
    if p.kind == "bool":
        return gr.Checkbox(value=bool(p.default), **kw)
    if p.kind == "choice":
        return gr.Dropdown(
            choices=[(str(c), i) for i, c in enumerate(p.choices)],
            value=list(p.choices).index(p.default) if p.default in p.choices else 0,
            **kw,
        )
    if p.kind == "str":
        return gr.Textbox(value=str(p.default), max_lines=1, **kw)
    if p.kind in ("int", "float") and p.min is not None and p.max is not None and (p.max - p.min) <= 1000:
        step = 1 if p.kind == "int" else (p.max - p.min) / 100
        return SliderBox(p.min, p.max, value=p.default, step=step, **kw)
    return NumberBox(value=p.default, precision=0 if p.kind == "int" else None, minimum=p.min, maximum=p.max, **kw)


def control_value(p: Param, value: Any, algorithm: str) -> Any:
    """What the control of ``p`` shows for a column's ``value`` (a dropdown: the choice's index), or
    ``gr.skip()`` for a value the control cannot hold (Run refuses it by name)."""
    try:
        value = p.validate(value, algorithm)
    except SpecvizError:
        return gr.skip()
    if p.kind == "choice":
        return list(p.choices).index(value)
    if p.kind == "str":
        return str(value)
    return value


def dependent_params(spec: AlgorithmSpec) -> dict[str, list[Param]]:
    """``{controlling parameter: the parameters whose relevance it decides}`` (``Param.applies_when``;
    a parameter shared with an algorithm that lacks the controlling one always applies there)."""
    names = {p.name for p in spec.params}
    out: dict[str, list[Param]] = {}
    for p in spec.params:
        if p.applies_when is not None and p.applies_when[0] in names:
            out.setdefault(p.applies_when[0], []).append(p)
    return out


@dataclass
class ColumnEditor:
    """The editor's components, by name; ``controls[(algorithm, setting)]``, ``groups[algorithm]``."""

    algorithms: Mapping[str, AlgorithmSpec]
    most: int
    value: gr.JSON
    algos: gr.CheckboxGroup
    pick: gr.Radio
    note: gr.Markdown
    duplicate: gr.Button
    remove: gr.Button
    groups: dict[str, gr.Accordion]
    controls: dict[tuple[str, str], gr.components.Component]

    @classmethod
    def declare(cls, algorithms: Mapping[str, AlgorithmSpec], initial: list[str], most: int) -> "ColumnEditor":
        """The editor in the current Blocks context, with one column per algorithm of ``initial``."""
        cols = cfg.editable(initial, algorithms, most)
        algos = gr.CheckboxGroup(
            choices=list(algorithms),
            value=[c["algorithm"] for c in cols],
            show_label=False,
            info=f"each checked algorithm gets a column; duplicate a column to run it again "
            f"with other settings (up to {most} columns)",
            elem_id="sv-algos",
        )
        pick = gr.Radio(
            label="columns (pick one to see and change its settings)",
            elem_id="sv-col-pick",
            **cls._pick_props(cols, 0, algorithms),
        )
        with gr.Row(elem_id="sv-col-actions"):
            duplicate = gr.Button(
                "+ duplicate column", size="sm", elem_id="sv-col-dup", interactive=0 < len(cols) < most
            )
            remove = gr.Button("✕ remove column", size="sm", elem_id="sv-col-remove", interactive=bool(cols))
        note = gr.Markdown(cls._note(cols, 0, algorithms, most), elem_id="sv-col-note", elem_classes=["sv-note"])
        value = gr.JSON(cols, elem_id="sv-columns-spec", elem_classes=["sv-hidden"], show_label=False)
        groups, controls = {}, {}
        shown = cols[0]["algorithm"] if cols else None
        for name, spec in algorithms.items():
            if not spec.params:
                continue
            with gr.Accordion(
                f"{name} settings", open=False, visible=name == shown, elem_id=f"sv-settings-{name}"
            ) as acc:
                for p in spec.params:
                    controls[name, p.name] = param_component(spec, p)
            groups[name] = acc
        return cls(algorithms, most, value, algos, pick, note, duplicate, remove, groups, controls)

    # ---- views -----------------------------------------------------------------------------------------------
    @staticmethod
    def _labels(cols: list[dict[str, Any]], algorithms: Mapping[str, AlgorithmSpec]) -> list[str]:
        return cfg.column_labels([(c["algorithm"], c["params"]) for c in cols], algorithms)

    @classmethod
    def _pick_props(cls, cols: list[dict[str, Any]], i: int, algorithms: Mapping[str, AlgorithmSpec]) -> dict[str, Any]:
        labels = cls._labels(cols, algorithms)
        return {"choices": [(f"{k + 1} · {label}", k) for k, label in enumerate(labels)], "value": i if cols else None}

    @classmethod
    def _note(cls, cols: list[dict[str, Any]], i: int, algorithms: Mapping[str, AlgorithmSpec], most: int) -> str:
        if not cols:
            return "No columns: check an algorithm above."
        label = cls._labels(cols, algorithms)[i]
        spec = algorithms[cols[i]["algorithm"]]
        count = f"{len(cols)} of at most {most} columns"
        if not spec.params:
            return f"Column {i + 1} ({label}): {spec.name} has no settings · {count}"
        return f"Column {i + 1} ({label}): its settings are in the group below · {count}"

    def outputs(self) -> list[Any]:
        return [
            self.value,
            self.pick,
            self.algos,
            self.note,
            self.duplicate,
            self.remove,
            *self.groups.values(),
            *self.controls.values(),
        ]

    def view(self, cols: list[dict[str, Any]], i: int, load: bool = True) -> Update:
        """The editor showing ``cols`` with column ``i`` picked; ``load`` puts its values in the controls."""
        shown = cols[i]["algorithm"] if cols else None
        out: Update = {
            self.value: cols,
            self.pick: gr.Radio(**self._pick_props(cols, i, self.algorithms)),
            self.algos: [a for a in self.algorithms if any(c["algorithm"] == a for c in cols)],
            self.note: self._note(cols, i, self.algorithms, self.most),
            self.duplicate: gr.Button(interactive=0 < len(cols) < self.most),
            self.remove: gr.Button(interactive=bool(cols)),
        }
        for name, acc in self.groups.items():
            out[acc] = gr.Accordion(visible=name == shown)
        if load and shown is not None:
            spec = self.algorithms[shown]
            for p in spec.params:
                out[self.controls[shown, p.name]] = control_value(p, cols[i]["params"].get(p.name, p.default), shown)
        return out

    # ---- handlers (the page's values in, {component: update} out) ---------------------------------------------
    def _read(self, columns: Any, pick: Any) -> tuple[list[dict[str, Any]], int]:
        cols = cfg.editable(columns, self.algorithms, self.most)
        return cols, cfg.picked(pick, len(cols))

    def on_algorithms(self, columns: Any, pick: Any, chosen: Any) -> Update:
        """The checkboxes changed: a column for each newly checked algorithm, none for an unchecked one;
        the picked column stays picked if it is still there, else the last new one (or the first)."""
        cols, i = self._read(columns, pick)
        before = cols[i] if cols else None
        after = cfg.with_algorithms(cols, chosen, self.algorithms, self.most)
        if before is not None and any(c is before for c in after):
            j = next(k for k, c in enumerate(after) if c is before)
        else:
            new = [k for k, c in enumerate(after) if not any(c is old for old in cols)]
            j = new[-1] if new else 0
        out = self.view(after, j)
        if isinstance(chosen, list) and out[self.algos] == [a for a in self.algorithms if a in chosen]:
            # the boxes already say this: writing them back would undo a box the user (or a test) has
            # clicked meanwhile, whose own event is still to come
            del out[self.algos]
        return out

    def on_pick(self, columns: Any, pick: Any) -> Update:
        cols, i = self._read(columns, pick)
        return self.view(cols, i)

    def on_duplicate(self, columns: Any, pick: Any) -> Update:
        cols, i = self._read(columns, pick)
        cols, j = cfg.duplicated(cols, i, self.most)
        return self.view(cols, j, load=False)  # the copy's values are the ones the controls show

    def on_remove(self, columns: Any, pick: Any) -> Update:
        cols, i = self._read(columns, pick)
        cols, j = cfg.removed(cols, i)
        return self.view(cols, j)

    def on_setting(self, algorithm: str, name: str, columns: Any, pick: Any, raw: Any) -> Update:
        """A control of ``algorithm``'s setting ``name`` changed to ``raw``: the picked column's setting."""
        cols, i = self._read(columns, pick)
        param = next(p for p in self.algorithms[algorithm].params if p.name == name)
        cols = cfg.with_setting(cols, i, algorithm, param, raw)
        return {
            self.value: cols,
            self.pick: gr.Radio(**self._pick_props(cols, i, self.algorithms)),
            self.note: self._note(cols, i, self.algorithms, self.most),
        }

    def param_visibility(self, algorithm: str, name: str, raw: Any) -> list[Any]:
        """Show or hide ``algorithm``'s parameters that depend on its parameter ``name``, now set to the
        component value ``raw`` (in ``dependent_params`` order). Hidden controls keep their values."""
        spec = self.algorithms[algorithm]
        source = next(p for p in spec.params if p.name == name)
        value = {name: cfg.param_value(source, raw)}
        return [gr.update(visible=p.applies(value)) for p in dependent_params(spec).get(name, [])]

    def wire(self) -> None:
        """The editor's events: user actions only (``.input``, clicks), so loading a column's values into
        the controls does not write them back. ``always_last``: an action while the previous one of its
        kind is pending runs after it, on the values it left (Gradio's default for ``.input`` and clicks,
        ``once``, dropped it: two boxes unchecked quickly left one column, a value typed quickly lost its
        last keys)."""
        # progress tracked on the note only (hidden): tracked on every output, the editor's ~80 controls
        # and groups would be updated by the page on every message of every later event (ui.app.wire)
        kw = dict(
            queue=False,
            show_progress="hidden",
            show_progress_on=[self.note],
            api_visibility="private",
            trigger_mode="always_last",
        )
        outputs = self.outputs()
        self.algos.input(self.on_algorithms, [self.value, self.pick, self.algos], outputs, **kw)
        self.pick.input(self.on_pick, [self.value, self.pick], outputs, **kw)
        self.duplicate.click(self.on_duplicate, [self.value, self.pick], outputs, **kw)
        self.remove.click(self.on_remove, [self.value, self.pick], outputs, **kw)
        for (algorithm, name), control in self.controls.items():
            control.input(
                _named(partial(self.on_setting, algorithm, name), "on_setting"),
                [self.value, self.pick, control],
                [self.value, self.pick, self.note],
                **kw,
            )
        for algorithm, spec in self.algorithms.items():
            for source, params in dependent_params(spec).items():
                shown = [self.controls[algorithm, p.name] for p in params]
                self.controls[algorithm, source].change(
                    _by_component(_named(partial(self.param_visibility, algorithm, source), "param_visibility"), shown),
                    [self.controls[algorithm, source]],
                    shown,
                    **kw,
                )


def _named(fn: Callable[..., Any], name: str) -> Callable[..., Any]:
    """``fn`` (a partial) as a function Gradio names ``name`` (its handlers are listed by name)."""

    def call(*args: Any) -> Any:
        return fn(*args)

    call.__name__ = call.__qualname__ = name
    return call


def _by_component(fn: Callable[..., list[Any]], outputs: list[Any]) -> Callable[..., dict[Any, Any]]:
    """``fn``'s list of updates as ``{component: update}`` (Gradio reads a one-element list as one value)."""

    def call(*args: Any) -> dict[Any, Any]:
        return dict(zip(outputs, fn(*args)))

    call.__name__ = call.__qualname__ = getattr(fn, "__name__", "param_visibility")
    return call
