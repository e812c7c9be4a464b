"""Leftovers of the page read as a reader reads it: the Learn path's masks step on a phone for any length of sentence,
the Inside tab's LayerNorm menu of the model of the translation it draws, and the Engineering tab saying whose
figures it shows."""
import pytest

from app import learn_path
from app.figures import learn as learn_figures
from app.i18n import LANGS, in_language
from tests.conftest import needs_shipped
from tests.test_learn import COLUMN_PX, LABEL_ROW_PX, SCREEN_PX

LONG55 = ("Eine junge Frau mit einem roten Regenschirm und ein älterer Mann mit einer blauen Mütze gehen langsam "
          "über die nasse Brücke, während hinter ihnen zwei kleine Hunde im Regen mit einem gelben Ball spielen "
          "und laut bellen, weil sie heute glücklich sind.")


def said(fn, *args, lang, **kwargs):
    """fn(*args) as an event of the page in `lang` runs it (app.i18n.in_language)."""
    return in_language(fn)(*args, lang=lang, **kwargs)


def _rows_shown(fig, layout, n):
    """The rows of a step's map a reader sees at first (the first window's where it has windows), after checking
    that each window has its button, showing its rows; and the plot's height per row shown."""
    windows = learn_figures.row_windows(n)
    (a, b), menus = windows[0], layout.get("updatemenus") or []
    if len(windows) > 1:
        assert list(fig.layout.yaxis.range) == [b + 0.5, a - 0.5]
        assert [m["args"][0]["yaxis.range"] for m in menus[0]["buttons"]] == [[y + 0.5, x - 0.5] for x, y in windows]
    else:
        assert not menus and fig.layout.yaxis.autorange == "reversed"
    margin = layout["margin"]
    return b - a + 1, (layout["height"] - margin["t"] - margin["b"]) / (b - a + 1)


@needs_shipped
@pytest.mark.parametrize("lang", LANGS)
def test_step_5s_maps_fit_a_phone_for_any_length_of_sentence(lang):
    """Step 5's three figures (the German's padding table, the subsequent mask, both masks) for 13 pieces, 55 and
    128 (a 1,000-character input, cut), drawn as the page draws them (margins fitted): at most a screen tall, each
    row of a window given a label's height and labelled, the long ones in windows of rows as step 4's map; the
    decoder's maps give every column a turned label's width at 390 px; before Check, each window with padding rows
    says that they wait for it. Drawn whole, the 128-piece table was 1,478 px tall, the 55-piece one 1,280 and
    that sentence's maps 686 (now 456, 522 and 416)."""
    from app.common import BOX_EXTRA
    from app.figures.margins import fit
    from app.shared import examples, get_translator
    tr = get_translator()
    for typed in (examples()[0], LONG55, ("Der Hund läuft. " * 70)[:1000]):
        ins = tr.inspect(typed, method="greedy")
        for which in ("padding", "subsequent", "both"):
            c = learn_path.context(ins)
            batch = learn_figures.mask_batch(c)
            fig, _ = said(learn_figures.draw_masks, c, which, lang=lang)
            layout = fit(fig.to_plotly_json())["layout"]
            n = batch.src.size(1) if which == "padding" else batch.tgt.size(1)
            where = (len(ins.src_tokens), which, n)
            assert layout["height"] + BOX_EXTRA <= SCREEN_PX + BOX_EXTRA, (where, layout["height"])
            shown, per_row = _rows_shown(fig, layout, n)
            assert per_row >= LABEL_ROW_PX, (where, per_row)
            if which == "padding":
                assert fig.layout.yaxis.dtick == 1, where  # every row of a window labelled
                for menu in layout.get("updatemenus") or []:  # the buttons above the column names, not over them
                    assert menu["pad"]["b"] >= learn_figures.TOP_LABELS_PX, (where, menu["pad"])
                continue
            assert list(fig.layout.yaxis.tickvals) == list(range(n)) == list(fig.layout.xaxis.tickvals)
            width = (fig.layout.meta or {}).get("phone_width") or learn_figures.LEARN_FITS
            assert (width - layout["margin"]["l"] - layout["margin"]["r"]) / n >= COLUMN_PX, (where, width)
            notes = [a.y for a in fig.layout.annotations if a.yref == "y"]
            if which == "both":  # before Check: the padding rows blank, a note among them in every window that has some
                _, _, real = learn_figures.pad_query_reach(batch)
                for a, b in learn_figures.row_windows(n):
                    assert (b >= real) == any(max(a, real) <= y <= b for y in notes), (where, (a, b), real, notes)
            else:
                assert notes == [], where
