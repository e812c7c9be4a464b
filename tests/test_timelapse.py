"""The Time-lapse tab (issue 30): the run's points as the page shows them, a point's translation and its
cross-attention made from that point's own weights, the changed tokens, heads x time from the measures, Play,
links, and a model that ships no history."""
import json
import math
from types import SimpleNamespace

import pytest
import torch

from app.figures import timelapse as figs
from app.i18n import speaking
from app.tabs import timelapse as tab
from core.translate import Translator
from tests.conftest import needs_shipped
from tools.synthetic_history import HISTORY

pytestmark = needs_shipped


@pytest.fixture
def on_history(history, monkeypatch):
    monkeypatch.setenv("EXPLORER_MODEL_DIR", str(history))
    monkeypatch.setattr(tab, "_kept", type(tab._kept)())
    for cached in (tab.curves_view, tab._heads_time):
        cached.cache_clear()
    yield history
    for cached in (tab.curves_view, tab._heads_time):
        cached.cache_clear()


def test_the_points_are_the_exported_ones_with_their_measures(on_history):
    pts = tab.points()
    index = json.loads((on_history / "snapshots" / "index.json").read_text())["snapshots"]
    measures = json.loads((on_history / "timelapse.json").read_text())["snapshots"]
    assert [p["label"] for p in pts] == ["init", "step-30", "step-200", "epoch-1"]
    assert [p["step"] for p in pts] == [s for s, _ in HISTORY]
    for p, e, m in zip(pts, index, measures):
        assert p["probes"] == e["probes"] and p["val_loss"] == e["val_loss"]
        assert p["bleu"] == m["bleu"] and p["heads"] == m["heads"]
    with speaking("en"):
        assert [figs.point_name(p) for p in pts] == ["initialisation", "step 30", "step 200", "epoch 1"]
    with speaking("zh-CN"):
        assert figs.point_name(pts[3]) == "第 1 个迭代周期"


def test_the_curves_and_where_each_point_stands_on_the_log_step_axis(on_history):
    with speaking("en"):
        fig = tab.curves_view()
        where = [tab.where_view(i) for i in (2, 99, "x")]
    assert fig.layout.xaxis.type == "log" and not fig.layout.shapes  # the chosen point's line is the page's
    val = next(t for t in fig.data if t.name == "val loss")
    assert list(val.x) == [1, 30, 200, 400] and list(val.y) == [p["val_loss"] for p in tab.points()]
    # each point's place across the axis, as the page draws its line: log10(step) within the axis's range
    lo, hi = fig.layout.xaxis.range
    fractions = figs.point_fractions(tab.points(), figs.run_log(on_history)[1])
    assert fractions == [pytest.approx((math.log10(x) - lo) / (hi - lo), abs=1e-5) for x in val.x]
    assert 0 < fractions[0] < fractions[1] < fractions[-1] < 1
    assert tab.now_js().endswith(f")({json.dumps(fractions)})")  # app/page/timelapse-now.js, given them
    # counted as the slider counts the points (0, the initialisation, to the last), out of range kept to it
    assert where[0].startswith("2 / 3") and "step 200" in where[0]
    assert where[1].startswith("3 / 3") and where[2].startswith("0 / 3")
    with speaking("en"):
        learn = figs.curves_figure(tab.points(), [], 2, lr=False)  # the Learn path's marks its point itself
    assert [s.x0 for s in learn.layout.shapes] == [200]  # plotly draws a shape on a log axis at its value
    assert [a.x for a in learn.layout.annotations] == [pytest.approx(math.log10(200))]  # and a note at its exponent


def test_a_points_translation_is_made_by_its_own_weights_and_the_changes_are_marked(on_history):
    text = "Ein kleiner Junge spielt mit einem roten Ball."
    ins = SimpleNamespace(source=text)
    with speaking("en"):
        out = tab.sentence_view(ins, 2, "page", 1, 3)
    now = Translator.load(on_history, snapshot="step-200", half_rows=0).inspect(text, method="greedy")
    before = Translator.load(on_history, snapshot="step-30", half_rows=0).inspect(text, method="greedy")
    assert now.translation == Translator.load(on_history, snapshot="step-200", half_rows=0).translate(text)
    marked = figs.changed_positions(before.out_tokens, now.out_tokens)
    assert out["said"].count("outline:2px") == len(marked)
    assert f"the {len(marked)} tokens that differ from what the model said at step 30" in out["said"]
    mosaic, one = out["cross"].data
    z, who = torch.tensor(mosaic.z, dtype=torch.float32), torch.tensor(mosaic.customdata)
    tq, tk = now.cross.shape[2:]
    for h in range(now.cross.size(1)):  # each head's block is that point's map, to the three decimals drawn
        block = z[who == h].reshape(tq, tk)
        assert torch.allclose(block, now.cross[1, h], atol=5e-4)
    assert int((who >= 0).sum()) == now.cross.size(1) * tq * tk and bool(z[who < 0].isnan().all())
    assert torch.allclose(torch.tensor(one.z), now.cross[1, 3], atol=5e-4)
    rect = out["cross"].layout.shapes[0]  # head 3 outlined: the last of the first row of four
    assert (rect.x0, rect.x1, rect.y0, rect.y1) == (3 * (tk + 1) - 0.5, 3 * (tk + 1) + tk - 0.5, -0.5, tq - 0.5)


def test_moving_the_layer_or_head_never_runs_a_model_again(on_history, monkeypatch):
    ins = SimpleNamespace(source="Zwei Hunde spielen im Schnee.")
    with speaking("en"):
        tab.sentence_view(ins, 3, "page", 0, 0)
        monkeypatch.setattr(Translator, "inspect", lambda *a, **k: pytest.fail("ran the model"))
        for layer, head in ((1, 2), (2, 7), (0, 5)):
            tab.sentence_view(ins, 3, "page", layer, head)


def test_the_probe_sentences_give_what_was_recorded_at_export(on_history):
    pts = tab.points()
    for i in (1, 3):
        ins = tab._inspected(pts[i]["label"], tab.sentence_of(None, "probe-0"))
        assert ins.translation == pts[i]["probes"][0]
    assert tab.sentence_of(None, "probe-999") == tab.probe_sentences()[-1]  # kept to the menu's range


def test_changed_positions_are_the_inserted_and_replaced_tokens():
    a = ["▁A", "▁dog", "▁runs", "."]
    assert figs.changed_positions(a, a) == set()
    assert figs.changed_positions(a, ["▁A", "▁big", "▁dog", "▁runs", "."]) == {1}
    assert figs.changed_positions(a, ["▁A", "▁cat", "▁runs", "."]) == {1}
    assert figs.changed_positions(a, ["▁A", "▁dog", "."]) == set()  # a token dropped leaves nothing to outline
    assert figs.changed_positions([], ["▁A"]) == {0}


def test_halfway_is_where_a_value_has_come_half_its_way():
    assert figs.halfway([0.0, 0.2, 0.6, 1.0]) == 2
    assert figs.halfway([3.0, 2.0, 1.5, 1.0]) == 1  # falling: from 3 to 1, halfway is 2
    assert figs.halfway([0.5, 0.5, 0.5]) is None


def test_heads_by_time_shows_each_heads_measure_at_each_point(on_history):
    pts = tab.points()
    with speaking("en"):
        fig = tab.heads_view("cross", "diagonal")
        encoder = [tab.heads_view("encoder", m).data[0].z for m in ("diagonal", "entropy")]
    heat, marks = fig.data
    values = [p["heads"]["cross"]["diagonal"] for p in pts]  # [point][layer][head]
    n_heads = len(values[0][0])
    for r, row in enumerate(heat.z):
        layer, h = divmod(r, n_heads)
        assert list(row) == [v[layer][h] for v in values]
    halves = {y: x for x, y in zip(marks.x, marks.y)}
    for r, row in enumerate(heat.z):
        t = figs.halfway(list(row))
        assert (halves.get(heat.y[r]) == heat.x[t]) if t is not None else heat.y[r] not in halves
    # a measure cross-attention lacks falls back to the first of the kind's own
    assert encoder[0] == encoder[1]


def test_play_moves_a_point_a_tick_and_stops_at_the_last(on_history):
    button, timer, playing, start = tab.play_toggle(False, 3)
    assert playing and start.value == 0  # at the end, Play starts over
    seen, snap = [], 0
    while playing:
        slider, timer, playing, button = tab.play_tick(snap, playing)
        snap = slider.value
        seen.append(snap)
    assert seen == [1, 2, 3] and timer.active is False
    assert tab.play_toggle(True, 2)[2] is False  # Pause


def test_a_link_names_a_point_by_its_label(on_history):
    def request(**params):
        return SimpleNamespace(query_params=params)
    assert tab.linked_point(request(snapshot="step-200")).value == 2
    assert tab.linked_point(request(snapshot="<script>")).value == 3  # unknown: the last point
    assert tab.linked_point(None).value == 3
    js = tab.record_point_js()
    assert '["init", "step-30", "step-200", "epoch-1"]' in js


def test_a_model_with_no_history_says_so(monkeypatch):
    from core.data import ASSETS
    monkeypatch.setenv("EXPLORER_MODEL_DIR", str(ASSETS))
    if figs.run_points(ASSETS):
        pytest.skip("the shipped model ships its history")
    tab.curves_view.cache_clear()
    with speaking("en"):
        out = {"where_now": tab.where_view(0)}
        said = tab.sentence_view(SimpleNamespace(source="Ein Hund."), 0, "page", 0, 0)
        heads = tab.heads_view("cross", "diagonal")
    assert "ships no history" in out["where_now"] and "ships no history" in said["said"]
    assert "timelapse" in heads.layout.annotations[0].text
    tab.curves_view.cache_clear()


def test_a_typed_sentence_is_escaped(on_history):
    text = "<img src=x onerror=alert(1)> Ein Hund."
    with speaking("zh-CN"):
        out = tab.sentence_view(SimpleNamespace(source=text), 3, "page", 0, 0)
    assert "<img" not in out["said"]


@needs_shipped
def test_the_page_has_the_tab_only_for_a_model_with_a_history(on_history, monkeypatch):
    """With a history beside the model, the page has a Time-lapse tab, whose opening (it translates with a point's
    weights) waits in the model's queue, and the Learn path's last step opens it; with none, neither."""
    from app import learn_path
    from app.ui import build_demo
    from core.data import ASSETS
    demo = build_demo()
    assert "timelapse" in [t.where[0] for t in demo.tab_views]
    timelapse = next(t for t in demo.tab_views if t.where[0] == "timelapse")
    assert next(d for d in demo.fns.values() if d.fn == timelapse.show).concurrency_id == "model"
    assert learn_path.STEPS[-1].opens == "timelapse"
    if figs.run_points(ASSETS):
        return
    monkeypatch.setenv("EXPLORER_MODEL_DIR", str(ASSETS))
    demo = build_demo()
    assert "timelapse" not in [t.where[0] for t in demo.tab_views]
    assert learn_path.STEPS[-1].opens == "training"


def test_the_tab_names_the_epochs_the_translating_model_averages():
    """The model that translates is the average of the run's last epochs (core.train's export --average): the
    tab says which, so that its last point's words are not taken for the translating model's."""
    from app.tabs.timelapse import averaged_epochs
    assert averaged_epochs({"averaged_checkpoints": ["epoch_27.pt", "epoch_9.pt", "epoch_28.pt"]}) == [9, 27, 28]
    assert averaged_epochs({"averaged_checkpoints": ["notes.txt"]}) == averaged_epochs({}) == []
    from app.shared import model_dir
    shipped = json.loads((model_dir() / "config.json").read_text())
    assert len(averaged_epochs(shipped)) == len(shipped.get("averaged_checkpoints", ()))


def test_the_changed_tokens_and_the_epochs_are_counted_in_words_that_fit_the_count():
    """The Time-lapse says how many tokens changed, and how many epochs a step is, in words that fit the count in
    both languages: no "the 1 tokens", "the 0 tokens" or "1 epochs"."""
    ins = SimpleNamespace(out_tokens=["▁A", "▁dog", "▁runs", "."], token_probs=[0.9, 0.8, 0.7, 0.6])
    said = {}
    for lang in ("en", "zh-CN"):
        with speaking(lang):
            for previous, n in ((["▁A", "▁dog", "▁runs", "."], 0), (["▁A", "▁cat", "▁runs", "."], 1),
                                (["▁A", "▁cat", "▁sits", "."], 2)):
                said[lang, n] = figs.translation_html(ins, previous, "epoch 1")
            points = [dict(label="epoch-1", epoch=1, step=1000, val_loss=2.0), dict(label="s", step=500, val_loss=3.0)]
            said[lang, "epochs"] = [figs.where_now(points, i, per_epoch=1000) for i in (0, 1)]
    assert "No token differs" in said["en", 0] and "the one token that differs" in said["en", 1]
    assert "the 2 tokens" in said["en", 2]
    assert "没有词元改变" in said["zh-CN", 0] and "那一个词元" in said["zh-CN", 1] and "的 2 个词元" in said["zh-CN", 2]
    for n in (0, 1):
        assert f"the {n} tokens" not in said["en", n] and f" {n} 个词元" not in said["zh-CN", n]
    one, half = said["en", "epochs"]
    assert "(1 epoch)" in one and "epochs" not in one and "(0.5 epochs)" in half
