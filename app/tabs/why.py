"""The Why tab: one output token of the last translation, its cross-attention from every head beside
two attributions of its probability to the input pieces (core/analysis/attribution.py).

Attention is read from the Inspection; the attributions need one backward pass and one batched forward pass of
the float32 model for the chosen token, kept per translation and token so that choosing a token again costs
nothing. The figures are app/figures/why.py's.
"""

import hashlib

import gradio as gr

from core.analysis.attribution import attribute

from ..cache import PerTranslation
from ..common import clamp, code_panel, empty_figure, fitted_plot
from ..figures.why import reading, source_figure, target_figure
from ..i18n import L, texts
from ..shared import model_of
from ..views import Tab, View

_t = texts("why")


def not_yet():
    """What the tab's figures say before a translation."""
    return _t("not-yet")


# ---- the attribution of one token, kept ----------------------------------------------------------------

_KEPT = PerTranslation(64)  # attributions, per translation and token


def attribution(ins, position):
    """The attributions of output `position` of `ins`, computed once per (translation, position)."""
    def compute():
        tr = model_of(ins)
        src, tgt = ([tr.tokenizer.piece_to_id(p) for p in tokens] for tokens in (ins.src_tokens, ins.tgt_tokens))
        return attribute(tr.model, src, tgt, position, eos=tr.eos_id, unk=tr.unk_id)
    return _KEPT.get(ins, position, compute)


def default_position(ins):
    """The first output token that is a word (not a piece that only continues one), else the first."""
    for i, t in enumerate(ins.out_tokens[:-1]):
        if t.startswith("▁") and len(t) > 2:
            return i
    return 0


def tag(ins):
    """A short name of the translation, which the token menu's values carry: a value the browser keeps from an
    earlier sentence's menu is known as such."""
    return hashlib.blake2b(repr((ins.src_tokens, ins.out_tokens)).encode(), digest_size=4).hexdigest()


def token_choices(ins):
    """(label, value) for each output token: what the token menu lists; a value is "position@tag"."""
    t = tag(ins)
    return [(f"{i + 1} {tok}", f"{i}@{t}") for i, tok in enumerate(ins.out_tokens)]


def chosen(ins, value):
    """The output position the menu's value names for this translation: the default one where it names none,
    or names a token of another translation (the menu the browser still shows until the new one arrives)."""
    if isinstance(value, str) and "@" in value:
        position, _, of = value.partition("@")
        if of != tag(ins) or not position.isdigit():
            return default_position(ins)
        value = int(position)
    if value is None:
        return default_position(ins)
    return clamp(value, 0, len(ins.out_tokens) - 1)


def resolve(ins, position):
    return dict(position=chosen(ins, position))


# ---- figures ------------------------------------------------------------------------------------------

# ---- views --------------------------------------------------------------------------------------------

def tokens_view(ins):
    """The token menu for this translation, on its default token."""
    return gr.update(choices=token_choices(ins), value=f"{default_position(ins)}@{tag(ins)}")


def why_view(ins, position):
    position = chosen(ins, position)
    att = attribution(ins, position)
    return dict(source=source_figure(ins, att, position), target=target_figure(ins, att, position),
                reading=reading(ins, att, position))


def placeholder(position):
    """The figures before a translation: what to do, in the page's language."""
    return dict(source=empty_figure(not_yet()), target=empty_figure(not_yet()), reading="")


# the token menu (its choices are the output tokens, in no language) and the token's figures and reading, in the
# page's language (before a translation, what to do)
WHERE = ("why",)
VIEWS = [View("why/tokens", WHERE, tokens_view, outputs=("token",), blank=dict(token=gr.update(choices=[], value=None))),
         View("why/attribution", WHERE, why_view, outputs=("source", "target", "reading"), uses=("position",),
              blank=placeholder, resolve=resolve)]


# ---- layout and events -----------------------------------------------------------------------------

def build(page, state, lang):
    """Lay out the tab and wire its events; returns its Tab (app/views.py), whose views each new translation draws
    (app/ui.py). Its opening and its menu may compute an attribution: they wait for the model."""
    with gr.Tab(L("ui.tab.why"), id="why") as tab:
        gr.Markdown(L("ui.why.intro"))
        # a value the browser keeps from the last sentence's menu is no error: why_view clamps it
        token = gr.Dropdown(choices=[], value=None, label=L("ui.why.token"), elem_id="why-token",
                            allow_custom_value=True)
        src_fig = fitted_plot(elem_id="why-source")
        tgt_fig = fitted_plot(elem_id="why-target")
        note = gr.Markdown(elem_id="why-reading")
        gr.Markdown(L("ui.why.reading"))
        code_panel(None, attribute)
    outputs = dict(token=token, source=src_fig, target=tgt_fig, reading=note)
    return Tab(WHERE, VIEWS, dict(position=token), outputs, page, lang, state).wire(
        tab, by_hand=("position",), concurrency_id="model")
