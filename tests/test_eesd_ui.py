"""``eesd`` in the app: the bundled preset loads with its early-exit head, and a column's controller
panel is the Thompson-sampling view of the step it shows, moving with the step."""

import specviz
from specviz.presets import bundled_preset
from specviz.ui import render
from specviz.ui.pairs import preset_early_exit
from specviz.ui.runner import Column


def test_the_bundled_preset_brings_its_head_and_the_panel_follows_the_step():
    p = bundled_preset()
    assert preset_early_exit(p.target, p.draft) == p.early_exit and preset_early_exit(p.target, None) is None
    pair = specviz.load_pair(p.target, p.draft, early_exit=preset_early_exit(p.target, p.draft))
    trace = specviz.decode(pair, "eesd", "def add(a, b):\n", max_new_tokens=24, temperature=0.8, seed=0)
    col = Column(label="eesd", algorithm="eesd", trace=trace, done=True)
    views = [render.slot_view(col, 0, k) for k in (1, 2)]
    for k, v in zip((1, 2), views):
        st = trace.steps[k].controller.to_json()
        assert v.controller.layout.title.text == f"Thompson sampling · round {k + 1}"
        assert f"Beta(α={st['alpha']:.1f}, β={st['beta']:.1f})" in v.controller.layout.title.subtitle.text


def test_a_thompson_column_also_shows_drafted_vs_accepted():
    p = bundled_preset()
    pair = specviz.load_pair(p.target, p.draft, early_exit=p.early_exit)
    for controller, shown in (("beta_ts", True), ("fixed", False)):  # fixed: its controller view already is it
        trace = specviz.decode(
            pair, "eesd", "def add(a, b):\n", max_new_tokens=16, temperature=0, controller=controller
        )
        v = render.slot_view(Column(label="eesd", algorithm="eesd", trace=trace, done=True), 0, 1)
        assert (v.lengths is not None) == shown
        if shown:
            drafted = [t for t in v.lengths.data if t.name == "drafted"][0]
            assert list(drafted.y) == [s.controller.to_json()["drafted"] for s in trace.steps]
    sd = specviz.decode(pair, "sd", "def add(a, b):\n", max_new_tokens=8, temperature=0)
    assert render.slot_view(Column(label="sd", algorithm="sd", trace=sd, done=True), 0, 0).lengths is None
