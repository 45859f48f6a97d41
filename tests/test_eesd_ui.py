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
    titles = [v.controller.layout.title.text for v in views]
    assert all(t.startswith("Thompson sampling · round") for t in titles) and titles[0] != titles[1]
    for k, v in zip((1, 2), views):
        st = trace.steps[k].controller
        assert f"round {k + 1} · Beta(α={st['alpha']:.1f}, β={st['beta']:.1f})" in v.controller.layout.title.text
