"""The Compare tab (app/tabs/compare.py) without a browser: its two buttons' work on the shipped model and its run's
points, every bad input answered by one message with the session's results left as they were, and its views drawn
from the session's results alone (never the model)."""
import json

import numpy as np
import pytest

from app.i18n import speaking
from tests.conftest import needs_shipped

pytestmark = needs_shipped

SENTENCE = "Ein Mann fährt mit dem Fahrrad eine steile Straße hinunter."


@pytest.fixture(scope="module")
def compared():
    from app.tabs import compare as tab
    with speaking("en"):
        pair, status, layers, heads = tab.run_compare("shipped@epoch-1", "shipped", SENTENCE, "", None)
    return tab, pair, status, layers, heads


def test_two_models_compared_and_drawn_from_the_result(compared, monkeypatch):
    tab, pair, status, layers, heads = compared
    c = pair.models
    assert "after epoch 1" in status and c.names == ["shipped@epoch-1", "shipped"] and not c.by_words
    assert layers["choices"] == list(range(c.shapes["shared"][0])) and heads["choices"] == list(range(8))
    # the views never run the model: they are drawn from the Pair alone
    monkeypatch.setattr(tab, "compare", lambda *a, **k: pytest.fail("a view ran the model"))
    monkeypatch.setattr(tab.MODELS, "get", lambda *a, **k: pytest.fail("a view asked for a model"))
    with speaking("en"):
        shown = tab.result_view(pair)
        maps = tab.maps_view(pair, "cross", 1, 3)
        ranking = tab.ranking_view(pair)["value"]
    assert all(html_escaped in shown["table"] for html_escaped in (c.scored[0].translation, c.scored[1].translation))
    a, b, diff = c.maps("cross", 1, 3)
    # one figure: A's map, B's and A - B, one above another, each of the same queries and keys
    za, zb, z = maps.data
    assert np.allclose(np.asarray(za.z, dtype=float), np.round(a.numpy(), 3), atol=1e-3)
    assert np.allclose(np.asarray(zb.z, dtype=float), np.round(b.numpy(), 3), atol=1e-3)
    assert np.allclose(np.asarray(z.z, dtype=float), np.round((a - b).numpy(), 3), atol=1e-3)
    assert (z.zmin, z.zmid, z.zmax) == (-1, 0, 1) and "0" in z.colorbar.ticktext
    assert za.x == zb.x == z.x and za.y == zb.y == z.y
    assert "layer 1, head 3" in maps.layout.title.text.replace("<br>", " ")
    titles = [t.text.replace("<br>", " ") for t in maps.layout.annotations]
    assert "the shipped model, after epoch 1" in titles[0] and "A (" in titles[0]
    assert "B (the shipped model)" in titles[1] and titles[2].startswith("A − B")
    # the ranking's rows are the comparison's, most different first, measured as the tab says
    assert [r[4] for r in ranking["data"]] == [round(r[3], 3) for r in c.ranking[:len(ranking["data"])]]
    assert ranking["headers"][-1] == "mean TV"


def test_a_ranking_row_opens_its_head(compared):
    import gradio as gr
    tab, pair, *_ = compared
    kind, layer, head, _ = pair.models.ranking[2]
    picked = tab.open_head_of(pair, gr.SelectData(None, {"index": [2, 1], "value": "x"}))
    assert picked == (kind, layer, head)


@pytest.mark.parametrize("a, b, off, sentence, says", [
    ("nope", "shipped", "", SENTENCE, "no model named nope"),
    ("<script>", "shipped", "", SENTENCE, "no model named &lt;script&gt;"),
    ("shipped", "shipped", "", SENTENCE, "same model"),
    ("shipped", "shipped", "cross 9 1", SENTENCE, "layers 0 to 2"),
    ("shipped", "shipped", "cross one 1", SENTENCE, "is not a head"),
    ("shipped", "shipped@epoch-1", "", "", "Type a German sentence"),
    ("shipped", "shipped@epoch-1", "", "Wort " * 400, "takes up to 1,000"),
])
def test_bad_input_gets_one_message_and_keeps_the_results(compared, a, b, off, sentence, says):
    tab, pair, *_ = compared
    with speaking("en"):
        kept, status, layers, heads = tab.run_compare(a, b, sentence, off, pair)
    assert kept is pair and says.lower() in status.replace("\\", "").lower()
    assert "<script>" not in status  # what the reader sent is escaped
    assert layers == heads == {"__type__": "update"}


def test_a_model_with_heads_off_against_itself(compared):
    tab, *_ = compared
    with speaking("en"):
        pair, status, *_ = tab.run_compare("shipped", "shipped", SENTENCE, "cross 1 3; encoder 0 5", None)
    c = pair.models
    assert [tuple(h) for h in c.heads_off["b"]] == [("encoder", 0, 5), ("cross", 1, 3)] and not c.heads_off["a"]
    # upstream of the first head switched off nothing differs; the head itself is computed as usual
    assert float(c.difference("encoder")[0].abs().max()) == 0.0
    assert float(c.difference("cross")[2].abs().max()) > 0.0


def test_the_edited_copy_follows_the_original_while_it_is_the_pages_own():
    """follow_original: the box holding a copy the page made gets the new original's copy, which joins the page's
    record of its copies; a copy the reader wrote, an original the page does not take, or a model it cannot open
    leave both as they are."""
    from app.tabs import compare as tab
    tokenizer = tab.MODELS.get().tokenizer
    made = tab.edited_default(SENTENCE, tokenizer)
    other = "Eine Frau liest ein Buch im Park."
    copy = tab.edited_default(other, tokenizer)
    assert copy not in (other, made)
    assert tab.follow_original(other, made, (made,), "shipped") == (copy, (made, copy))
    assert tab.follow_original(f"  {other} ", made, (made,), "shipped") == (copy, (made, copy))
    skipped = (tab.gr.skip(), tab.gr.skip())
    with speaking("en"):
        assert tab.follow_original(other, "Mein eigener Satz.", (made,), "shipped") == skipped  # the reader's own
        assert tab.follow_original(SENTENCE, made, (made,), "shipped") == skipped  # nothing new to follow
        assert tab.follow_original("", made, (made,), "shipped") == skipped
        assert tab.follow_original("x" * 100_000, made, (made,), "shipped") == skipped  # over the page's limit
        assert tab.follow_original(other, made, (made,), "no-such-model") == skipped


def test_the_patch_clicks_follow_writes_the_copy_its_twin_made_first():
    """The Patch click leaves the original's box, so the box's own follow and the click's first step run at once,
    from the same boxes. Whichever comes second finds the new copy already in the record, the box (as sent) still
    holding the old one, and writes the new copy itself: the patching after the click reads the new sentence's copy
    whichever of the two answered first (pair p20: the click's step skipped, and the patching read the old copy)."""
    from app.tabs import compare as tab
    tokenizer = tab.MODELS.get().tokenizer
    made = tab.edited_default(SENTENCE, tokenizer)
    other = "Eine Frau liest ein Buch im Park."
    copy = tab.edited_default(other, tokenizer)
    first = tab.follow_original(other, made, (made,), "shipped")
    assert first == (copy, (made, copy))
    second = tab.follow_original(other, made, first[1], "shipped")  # the same box, the record the first one left
    assert second[0] == copy and second[1][-1] == copy and second[1].count(copy) == 1
    # the record stays small: only the last few copies the page made count as its own
    record = (made,)
    for i in range(10):
        _, record = tab.follow_original(f"Ein Hund läuft {i} Mal im Park.", record[-1], record, "shipped")
    assert len(record) == tab.COPIES_KEPT
    assert tab.follow_original(other, made, record, "shipped") == (tab.gr.skip(), tab.gr.skip())


def test_two_sentences_patched_and_drawn(compared):
    tab, pair, *_ = compared
    edited = tab.edited_default(SENTENCE, tab.MODELS.get().tokenizer)
    assert edited != SENTENCE and len(edited.split()) == len(SENTENCE.split())
    with speaking("en"):
        both, status, menu = tab.run_patch("shipped", SENTENCE, edited, pair)
        assert both.models is pair.models and both.sentences is not None
        g = both.sentences
        assert g.changed == [2] and menu["choices"][0][1] == "all" and len(menu["choices"]) == len(g.out_tokens) + 1
        shown = tab.patch_view(both)
        grid = tab.grid_view(both, "all")
        one = tab.grid_view(both, "1")
    z = np.asarray(grid.data[0].z, dtype=float)
    assert z.shape == (4, len(g.edited_tokens))
    # restoring the changed piece's embedding restores the whole translation's probability (layer 0 is the input)
    assert z[0, 2] == pytest.approx(1.0, abs=1e-3)
    assert "★" in grid.data[0].x[2] and "output token 2" in one.layout.title.text.replace("<br>", " ")
    assert json.loads(g.to_json())["changed"] == [2] and "\\-" not in shown["patch_summary"].split("nats")[0][-8:]
    with speaking("en"):
        kept, status, _ = tab.run_patch("shipped", SENTENCE, "Ein Mann fährt.", both)
    assert kept is both and "pieces" in status
    with speaking("en"):
        kept, status, _ = tab.run_patch("nope", SENTENCE, edited, both)
    assert kept is both and "no model named" in status


def test_every_word_of_the_tab_is_in_both_languages():
    from app.i18n import table
    en, zh = table("en"), table("zh-CN")
    keys = {k for k in en if k.startswith(("compare.", "ui.compare.")) or k == "ui.tab.compare"}
    assert keys and keys <= set(zh)
    assert all(zh[k] != en[k] for k in keys if any(c.isalpha() for c in en[k]) and not en[k].startswith("{"))


def test_a_link_names_the_models_and_a_wrong_name_is_said():
    from types import SimpleNamespace

    import gradio as gr

    from app.tabs import compare as tab

    def load(**params):
        return tab.linked_models(SimpleNamespace(query_params=params))
    a, b, status = load(a="shipped@epoch-4", b="shipped")
    assert (a, b) == ("shipped@epoch-4", "shipped") and status == gr.skip()
    a, b, status = load(a="<img src=x onerror=alert(1)>", b="shipped@epoch-1")
    assert a == gr.skip() and b == "shipped@epoch-1"
    assert "no model named" in status and "<img" not in status  # said, escaped
    assert load() == (gr.skip(), gr.skip(), gr.skip())


def test_the_maps_stack_a_b_and_their_difference_without_overlap(compared):
    """A over B over A - B: each panel's rows 22 px a query, its title just above it, the key labels of the panel
    above clear of it, and the diverging colour bar between B's labels and A - B's title, on the plot area (placed
    from the figure's edge, plotly widened the bottom margin by the whole distance and squeezed the panels)."""
    from app.figures import compare as figures
    tab, pair, *_ = compared
    with speaking("zh-CN"):
        fig = tab.maps_view(pair, "encoder", 0, 2)
    layout = fig.layout
    paper = layout.height - layout.margin.t - layout.margin.b
    spans = [layout[f"yaxis{n}"].domain for n in ("", "2", "3")]
    rows = len(pair.models.src_units)
    for (lo, hi), title in zip(spans, layout.annotations):
        assert (hi - lo) * paper == pytest.approx(figures.PANEL_ROW * rows)
        assert title.y == pytest.approx(hi) and title.yanchor == "bottom"
    for (lo, _), (_, hi) in zip(spans, spans[1:]):
        assert (lo - hi) * paper >= layout.margin.b  # the key labels, as tall as those below the last panel
    bar = fig.data[2].colorbar
    assert bar.yref == "paper" and spans[2][1] < bar.y < spans[1][0]
    assert [t.text for t in layout.annotations][2].startswith("A − B（")


def test_each_bad_input_is_one_message_in_the_pages_language(compared, tmp_path, monkeypatch):
    """In Chinese, a sentence too long, a name not on the list and a model directory that cannot be read (a config
    alone; weights cut short) each get one message in Chinese, naming the model, and the results stay as they
    were; before, core's English text came inside the Chinese line, and a broken directory read as a config error."""
    import shutil

    from app.models import MODELS
    tab, pair, *_ = compared
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "config.json").write_text('{"N": 3}')
    cut = tmp_path / "cut-short"
    cut.mkdir()
    shutil.copy(MODELS.default_dir / "config.json", cut / "config.json")
    (cut / "model.safetensors").write_bytes(b"\x08\x00\x00\x00\x00\x00\x00\x00{")
    monkeypatch.setenv("EXPLORER_MODELS", str(tmp_path))
    too_long = " ".join(["Hund"] * 200)
    with speaking("zh-CN"):
        said = {what: tab.run_compare(a, b, sentence, "", pair) for what, (a, b, sentence) in {
            "long": ("shipped", "shipped@epoch-1", too_long), "name": ("shipped", "nope", SENTENCE),
            "broken": ("shipped", "broken", SENTENCE), "cut": ("cut-short", "shipped", SENTENCE)}.items()}
        patched = tab.run_patch("broken", SENTENCE, SENTENCE, pair)
    for kept, status, *_ in [*said.values(), patched]:
        assert kept is pair and not any(w in status for w in ("the ", "model", "sentence", "lacks")), status
    assert "太长" in said["long"][1] and "128" in said["long"][1]
    assert "nope" in said["name"][1] and "没有名为" in said["name"][1]
    for what, name in (("broken", "broken"), ("cut", "cut\\-short")):
        assert "无法打开模型 " + name in said[what][1]


def test_its_drawings_cover_no_output_and_its_buttons_show_progress():
    """The tab's one listener draws from the session's Pair, never the model, so it covers no output with a loading
    status: covering its nine (the ranking's table, the other sub-tab's plots) cost the page ~150 ms of each head
    move, every one of them re-rendered as the status came and went (python -m tools.bench --compare). The two
    buttons, which run the model, show their progress on their status lines."""
    from app.ui import build_demo
    demo = build_demo()
    tab = next(t for t in demo.tab_views if t.where[0] == "compare")
    (listener,) = [d for d in demo.fns.values() if d.fn == tab.show]
    assert listener.show_progress_on == [] and len(listener.outputs) == 9
    runs = [d for d in demo.fns.values() if getattr(d.fn, "__name__", "") in ("run_compare", "run_patch")]
    assert len(runs) == 3  # the comparison's button and the lesson's .then, the patching button
    assert all([c.elem_id for c in d.show_progress_on] in (["cmp-status"], ["cmp-patch-status"]) for d in runs)
