"""The model chosen per session (issue 54, "Choose the model in the page"): the header's menu and `?model=` in the
link name one of app.models.MODELS, every translation of the session is made by it (its Inspection says which), the
views read the model of the translation they draw, and a name the server does not have is said, escaped, in both
languages, the page staying on the model it had."""
import threading
from types import SimpleNamespace

import gradio as gr
import pytest
import torch

from app import links
from app.header import header, unknown_note
from app.i18n import speaking
from app.models import MODELS
from app.shared import header_line, model_of
from app.translating import translate
from core.data import ASSETS
from core.translate import Inspection, Translator
from tests.conftest import needs_shipped, ships_history

pytestmark = [needs_shipped, pytest.mark.skipif(not ships_history(), reason="the shipped model ships no run")]
SENTENCE = "Ein Mann fährt mit dem Fahrrad über eine Brücke."
BAD = "<img src=x onerror=alert(1)>"


@pytest.fixture(autouse=True)
def _the_shipped_server(monkeypatch):
    for name in ("EXPLORER_MODEL_DIR", "EXPLORER_MODELS", "EXPLORER_MODELS_MB"):
        monkeypatch.delenv(name, raising=False)


def first_point():
    return next(n for n in MODELS.names() if n.startswith("shipped@"))


def test_a_session_on_a_point_translates_with_that_points_weights():
    point = first_point()  # "shipped@init": the weights before training
    _, _, own = translate(SENTENCE, "greedy")
    _, status, ins = translate(SENTENCE, "greedy", model=point)
    assert (own.model, ins.model) == ("shipped", point)
    label = point.split("@")[1]
    reference = Translator.load(ASSETS, snapshot=label, half_rows=0, kept=False).inspect(SENTENCE, **ins.decoding)
    assert ins.out_tokens == reference.out_tokens
    assert torch.allclose(torch.tensor(ins.token_probs), torch.tensor(reference.token_probs), atol=1e-6)
    assert ins.out_tokens != own.out_tokens or not torch.allclose(torch.tensor(ins.token_probs[:3]),
                                                                  torch.tensor(own.token_probs[:3]), atol=1e-3)
    assert status.startswith("model: the shipped model")  # the status line names a model other than the page's own
    # a view reads the model of the translation it draws: the Inside tab's recorded pass gives back its probabilities
    assert model_of(ins) is MODELS.get(point) and model_of(own) is MODELS.get()
    from app.recording import recorded
    from core.analysis.inside import output_logp
    logp = output_logp(model_of(ins).model, recorded(ins))
    probs = logp.exp().gather(1, torch.tensor([reference_ids(ins)]).T).squeeze(1)
    assert torch.allclose(probs, torch.tensor(ins.token_probs), atol=1e-5)


def reference_ids(ins):
    """The ids of an Inspection's output pieces, by the model that made it."""
    tr = model_of(ins)
    return [tr.tokenizer.piece_to_id(p) for p in ins.out_tokens]


def test_the_inspection_keeps_its_model_in_its_json():
    _, _, ins = translate("Ein Hund.", "greedy", model=first_point())
    back = Inspection.from_json(ins.to_json())
    assert back.model == ins.model == first_point() and model_of(back) is model_of(ins)
    older = ins.to_json().replace(f', "model": "{ins.model}"', "")  # a file written before models had names
    assert Inspection.from_json(older).model == "" and model_of(Inspection.from_json(older)) is MODELS.get()


def test_two_sessions_on_two_models_at_once_each_get_their_own():
    names = [first_point(), "shipped", MODELS.names()[-1]]
    alone = {name: translate(SENTENCE, "beam", beam=4, model=name)[2] for name in names}
    got, barrier = {}, threading.Barrier(len(names) * 2)

    def session(name, i):
        barrier.wait()
        got[name, i] = translate(SENTENCE, "beam", beam=4, model=name)[2]
    threads = [threading.Thread(target=session, args=(n, i)) for n in names for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for (name, _), ins in got.items():
        assert ins.model == name and ins.out_tokens == alone[name].out_tokens
        assert torch.allclose(ins.cross, alone[name].cross, atol=1e-6)


def test_a_name_not_on_the_list_is_said_and_nothing_changes():
    _, _, before = translate("Ein Hund.", "greedy")
    english, status, kept = translate("Ein Hund.", "greedy", previous=before, model=BAD)
    assert (english, kept) == ("", before) and "no model named" in status and "<img" not in status
    with speaking("zh-CN"):
        note = unknown_note((BAD, "shipped"))
    assert "没有" in note and "<img" not in note and "随附的模型" in note  # the page stays on the shipped model


def open_link(params, menu="shipped"):
    return links.link_opener()(None, None, menu, SimpleNamespace(query_params=params))


def test_a_link_names_the_model_and_a_bad_one_gets_the_message():
    out = open_link({"model": first_point(), "text": "Ein Hund läuft."})
    ins, menu, wrong = out[8], out[-2], out[-1]
    assert ins.model == first_point() and menu == first_point() and wrong is None
    out = open_link({"model": BAD, "text": "Ein Hund läuft."}, menu="shipped")
    ins, menu, wrong = out[8], out[-2], out[-1]
    # the menu stays; the header says why, and on which model the page stays
    assert ins.model == "shipped" and menu == gr.skip() and wrong == (BAD, "shipped")
    with speaking("en"):
        note = unknown_note(wrong)
    assert "does not have" in note and "&lt;img" in note and "<img" not in note
    assert open_link({"text": "Ein Hund läuft."})[-2:] == (gr.skip(), gr.skip())


def test_the_note_on_a_refused_model_stays_until_another_model_is_chosen_then_goes_for_good():
    """header: the note while the menu shows the model the page stayed on (in each language); another model chosen
    draws no note and clears the refused name, so that choosing the first model again brings no note back."""
    wrong = (BAD, "shipped")
    for lang, word in (("en", "does not have"), ("zh-CN", "没有")):
        with speaking(lang):
            line, note, kept = header("shipped", wrong)
            assert line == header_line("shipped")
            assert header(None, wrong)[1] == note  # a menu not read yet stands for the page's own model
        assert word in note and "<img" not in note and kept == gr.skip()
    point = first_point()
    with speaking("en"):
        line, note, cleared = header(point, wrong)
        assert (line, note, cleared) == (header_line(point), "", None)
        assert header("shipped", cleared)[1:] == ("", gr.skip())
        assert header("shipped", None) == (header_line("shipped"), "", gr.skip())


def test_the_header_line_names_a_point_in_both_languages():
    with speaking("en"):
        assert "the shipped model, at initialisation" in header_line("shipped@init")
        assert "trained here on Multi30k" in header_line("shipped")
    with speaking("zh-CN"):
        assert "随附的模型，初始化时" in header_line("shipped@init")


def test_a_new_choice_translates_the_pages_sentence_again_on_it():
    from gradio.events import EventData

    from app.tabs.translate import translating
    with gr.Blocks():
        menu, button = gr.Dropdown(MODELS.names(), value="shipped"), gr.Button()
    fn, point = translating(menu), first_point()
    settings = ("greedy", 4, 1.0, 1.0, 0, 60)
    _, _, own = translate("Ein Hund läuft.", *settings)
    english, _, ins = fn("Ein Hund läuft.", *settings, own, point, EventData(menu, None))  # the menu moved
    assert ins.model == point and english == ins.translation
    # the kept translation is that model's already (the page load translated a link's model): nothing again
    assert fn("Ein Hund läuft.", *settings, ins, point, EventData(menu, None)) == (gr.skip(),) * 3
    assert fn("Ein Hund läuft.", *settings, None, point, EventData(menu, None)) == (gr.skip(),) * 3  # none yet
    # the button (or the API, which names no trigger) translates whatever the model
    assert fn("Ein Hund läuft.", *settings, ins, point, EventData(button, None))[2].model == point
    assert fn("Ein Hund läuft.", *settings, ins, "shipped", EventData(None, None))[2].model == "shipped"


# ---- the views: a translation's model, or the model the header chose ---------------------------------------------

def test_the_views_that_read_a_translation_read_its_model():
    from app.tabs import whatif, why
    _, _, ins = translate(SENTENCE, "greedy", model=first_point())
    _, _, own = translate(SENTENCE, "greedy")
    # Why attributes the probability the translation's own model gave its token (the shipped model's differs)
    for position in range(3):
        assert why.attribution(ins, position).probability == pytest.approx(ins.token_probs[position], abs=1e-4)
        assert why.attribution(own, position).probability == pytest.approx(own.token_probs[position], abs=1e-4)
    assert abs(ins.token_probs[0] - own.token_probs[0]) > 1e-3
    # What if scores an English under the translation's model: the same English, two models, two scores
    with speaking("en"):
        assert whatif.compare(ins, "t", own.translation) != whatif.compare(own, "t", own.translation)


def test_the_views_that_describe_a_model_describe_the_chosen_one():
    from app.tabs import heads, inside, masks, overview, positional
    point = first_point()  # the weights before training
    with speaking("en"):
        assert inside.ln_params_view(point).to_json() != inside.ln_params_view("shipped").to_json()
        batch = (masks.DEFAULT_DE, masks.DEFAULT_EN, 1, "decoder", 0, 0)
        assert masks.masks_view(*batch, model=point)["scores"].to_json() != \
            masks.masks_view(*batch, model="shipped")["scores"].to_json()
        assert "untrained" in positional.embedding_scale(point)["scale_note"] or \
            positional.embedding_scale(point)["scale_note"] != positional.embedding_scale("shipped")["scale_note"]
        assert "3 encoder and 3 decoder layers" in overview.overview_view(None, point)["sizes"]
        # the atlas is the page's own model's: with a point chosen, its reading says whose it is
        reading = heads.atlas_view("delta_loss", 0, point)["reading"]
        assert reading.startswith("*This atlas is the shipped model's") and "after" in reading or "initialisation" in reading
        assert not heads.atlas_view("delta_loss", 0, "shipped")["reading"].startswith("*This atlas")


def test_the_menus_of_layers_and_heads_follow_the_model_chosen(monkeypatch):
    from app.header import follow
    configs = {"shipped": {"N": 3, "h": 8}, "wide": {"N": 6, "h": 4}}
    monkeypatch.setattr(MODELS, "names", lambda: list(configs))
    monkeypatch.setattr(MODELS, "config", lambda name=None: configs.get(name or "shipped", {}))
    with gr.Blocks() as demo:
        menu = gr.Dropdown(list(configs), value="shipped")
        layer, head = gr.Dropdown(list(range(3)), value=2), gr.Dropdown(list(range(8)), value=7)
        follow(menu, [layer, head], lambda c: [list(range(c["N"])), list(range(c["h"]))])
    (dep,) = [d for d in demo.fns.values() if getattr(d.fn, "__name__", "") == "follow_model"]
    to_layer, to_head = dep.fn("wide", 2, 7)
    assert to_layer["choices"] == list(range(6)) and to_layer["value"] == 2  # kept: the new model has it
    assert to_head["choices"] == list(range(4)) and to_head["value"] == 0  # out of the new range: the first


def test_the_learn_steps_read_the_translations_model():
    from app.figures.learn import context
    _, _, ins = translate("Ein Hund läuft.", "greedy", model=first_point())
    assert context(ins).translator is MODELS.get(first_point()) and context(None).translator is MODELS.get()


def test_a_hypothesis_of_the_n_best_list_and_heads_switched_off_stay_on_the_translations_model():
    from app.tabs.heads import switch_off
    from app.translating import open_hypothesis
    point = "shipped@epoch-4"  # trained enough for a beam's hypotheses to differ
    _, _, ins = translate(SENTENCE, "beam", beam=4, model=point)
    assert len(ins.nbest) > 1
    other = open_hypothesis(ins, 1)
    assert other.model == point and other.out_tokens[:-1] == [model_of(ins).tokenizer.id_to_piece(i)
                                                             for i in ins.nbest[1].ids]
    with speaking("en"):
        switched = switch_off(ins, ["cross 0 0"])["switched"]
    assert switched.changed.model == point and switched.changed.heads_off == (("cross", 0, 0),)


def test_the_status_line_says_when_the_menu_has_another_model_than_the_views():
    from app.tabs.translate import status_view
    _, _, ins = translate("Ein Hund läuft.", "greedy")
    with speaking("en"):
        assert "translate again" not in status_view(ins, "shipped")
        line = status_view(ins, first_point())
    assert "translate again to see it on the shipped model, at initialisation" in line
    with speaking("zh-CN"):
        assert "再翻译一次" in status_view(ins, first_point())
