"""The decoding settings' ranges and first values are one table (core.decode.DECODING_LIMITS): the Translate tab's
sliders show it, and a link and the server keep every request to exactly those ranges. No model runs here."""
import inspect
from types import SimpleNamespace

import gradio as gr
import pytest

from app import links, translating
from app.tabs import translate as tab
from app.tabs import whatif
from app.translating import SETTINGS
from app.views import page_state
from core.checkpoint import read_tokenizer
from core.data import ASSETS
from core.decode import DECODING_LIMITS, DEFAULT_METHOD, METHODS

ALPHA = 0.7  # the model's own length penalty, as Translator.alpha gives it
CFG = {"N": 3, "h": 8}


def first(name):
    return ALPHA if DECODING_LIMITS[name].default is None else DECODING_LIMITS[name].default


@pytest.fixture(scope="module")
def controls():
    """The Translate tab's decoding controls by name, and the What if tab's beam size."""
    with gr.Blocks() as demo:
        page, state, lang = page_state(), gr.State(None), gr.State("en")
        built = tab.build(demo, page, state, ALPHA, lang)
        beam = whatif.build(page, state, lang).controls["beam"]
    return dict(zip(SETTINGS, built.form[1:])), beam


def test_the_sliders_show_the_table(controls):
    settings, whatif_beam = controls
    assert list(settings) == ["method", *DECODING_LIMITS] and settings["method"].value == DEFAULT_METHOD
    assert list(inspect.signature(tab.translate).parameters)[1:len(settings) + 1] == list(settings)
    assert [c[1] for c in settings["method"].choices] == list(METHODS)
    for name, limit in DECODING_LIMITS.items():
        slider = settings[name]
        assert (slider.minimum, slider.maximum, slider.value, slider.step) == (limit.lo, limit.hi, first(name),
                                                                               limit.step), name
    limit = DECODING_LIMITS["beam"]
    assert (whatif_beam.minimum, whatif_beam.maximum, whatif_beam.value) == (limit.lo, limit.hi, limit.default)


@pytest.fixture
def asked(monkeypatch):
    """The settings translate() hands the model, recorded by a stand-in Translator."""
    calls = []

    def inspect(text, nbest=False, **settings):  # nbest: what to keep of a beam search, not a decoding setting
        calls.append(settings)
        return SimpleNamespace(translation="A dog.", src_tokens=["<s>", "▁Hund", "</s>"], out_tokens=["▁A", "</s>"],
                               truncated=False, model="shipped")

    tokenizer = read_tokenizer(ASSETS / "spm.model")  # the German hint reads it; the model is not loaded
    stand_in = SimpleNamespace(alpha=ALPHA, max_src_tokens=128, inspect=inspect, tokenizer=tokenizer, directory=ASSETS,
                               name="shipped")
    monkeypatch.setattr(translating, "chosen", lambda name=None: stand_in)  # the session's model
    return calls


def test_the_server_keeps_a_request_to_the_sliders_ranges(asked):
    for step, bound in ((+1, "hi"), (-1, "lo")):
        tab.translate("Ein Hund.", "sample", **{k: getattr(v, bound) + step for k, v in DECODING_LIMITS.items()})
        assert asked[-1] == {"method": "sample", **{k: getattr(v, bound) for k, v in DECODING_LIMITS.items()}}
    tab.translate("Ein Hund.", "beam", beam="many")  # unreadable: the lowest; not given: the first value
    assert asked[-1] == {"method": "beam", "beam": DECODING_LIMITS["beam"].lo, "alpha": ALPHA,
                         "max_len": first("max_len")}
    tab.translate("Ein Hund.", "nonsense")
    assert asked[-1]["method"] == DEFAULT_METHOD
    assert all(type(asked[0][k]) is DECODING_LIMITS[k].cast for k in DECODING_LIMITS)


def test_a_link_is_kept_to_the_same_ranges():
    read = links.read_link({"text": "Ein Hund.", **{k: str(v.hi * 10 + 1) for k, v in DECODING_LIMITS.items()}},
                           CFG, ALPHA)
    assert {k: read[k] for k in DECODING_LIMITS} == {k: v.hi for k, v in DECODING_LIMITS.items()}
    read = links.read_link({"text": "Ein Hund.", **{k: str(v.lo - 1) for k, v in DECODING_LIMITS.items()}}, CFG, ALPHA)
    assert {k: read[k] for k in DECODING_LIMITS} == {k: v.lo for k, v in DECODING_LIMITS.items()}
    read = links.read_link({"text": "Ein Hund.", "method": "eval", "beam": "x"}, CFG, ALPHA)
    assert read["method"] == DEFAULT_METHOD and read["beam"] == DECODING_LIMITS["beam"].lo
    assert {k: read[k] for k in DECODING_LIMITS if k != "beam"} == {k: first(k) for k in DECODING_LIMITS if k != "beam"}
