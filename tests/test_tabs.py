"""What the Masks, Positional encoding and Training tabs show, checked against hand-built
expectations, a float64 reference, and the formulas."""
import json
import math
import re

import gradio as gr
import pytest
import torch

from app.figures.masks import batching_figure, make_batch, mask_panels
from app.figures.positional import encoding, encoding_f64, relative_figure, relative_residual, rotation
from app.figures.training import (
    ablation_runs,
    noam_figure,
    penalization_figure,
    replay_figure,
    shipped_log,
    smoothing_figure,
)
from app.i18n import L, speaking
from app.shared import get_translator
from app.tabs import masks, positional, training
from app.tabs.masks import DEFAULT_DE, DEFAULT_EN, parse_pairs, scores_at_work
from core.instrument import attention_name, run_with_cache
from core.train import rate
from tests.conftest import ASSETS, needs_shipped
from tools.i18n_report import CJK, WORD, english, value_strings

# ---- masks -----------------------------------------------------------------------------------------

def test_parse_pairs_messages(english):
    assert parse_pairs("a\nb", "c\nd") == [("a", "c"), ("b", "d")]
    with pytest.raises(ValueError, match="2 German lines but 1 English"):
        parse_pairs("a\nb", "c")
    with pytest.raises(ValueError, match="between 2 and 4"):
        parse_pairs("a", "b")
    with pytest.raises(ValueError, match="between 2 and 4"):
        parse_pairs("\n".join("abcde"), "\n".join("abcde"))
    # a huge paste is refused by its length, before it is split, with a message that does not echo it
    with pytest.raises(ValueError, match="that text has 2,000,000 characters") as caught:
        parse_pairs("Ein Hund.\n" * 200_000, "A dog.\n" * 2)
    assert len(str(caught.value)) < 200


def test_the_sentence_slider_reaches_the_last_pair_typed_and_no_further():
    """One slider position per sentence pair of the batch typed (three pairs: 0 to 2), the value kept within them;
    a text that is no batch leaves the slider as it is (the view says why). Its event carries no language: it runs
    outside one here, as on the server."""
    assert masks.sentence_range(DEFAULT_DE, DEFAULT_EN, 3) == {"__type__": "update", "maximum": 2, "value": 2}
    assert masks.sentence_range("Ein Hund.\nEine Katze.", "A dog.\nA cat.", 1)["maximum"] == 1
    assert masks.sentence_range("eins\nzwei", "one", 1) == gr.skip()
    assert len(parse_pairs(DEFAULT_DE, DEFAULT_EN)) == 3


def test_mask_panels_match_hand_built_masks(tiny_spm, english):
    sp, _ = tiny_spm
    batch, examples = make_batch(sp, [("Der Hund.", "A dog."), ("Die alte Katze schläft im Park.", "An old cat sleeps in the park.")])
    T = batch.tgt.size(1)
    # real decoder-input positions of the shorter sentence 0: all of <s> ... </s> (its </s> is an input
    # position too; what it predicts is padding, which the loss ignores)
    n0 = len(examples[0][1])
    assert n0 < T
    fig = mask_panels(batch, 0, ["p"] * batch.src.size(1), ["p"] * T)
    src_pad, sub, tgt_pad, both = (torch.tensor(d.z) for d in fig.data)
    assert torch.equal(src_pad[0], torch.tensor([1.0] * len(examples[0][0]) + [0.0] * (batch.src.size(1) - len(examples[0][0]))))
    expected_sub = torch.tensor([[1.0 if c <= r else 0.0 for c in range(T)] for r in range(T)])
    expected_pad = torch.tensor([[1.0 if c < n0 else 0.0 for c in range(T)] for r in range(T)])
    assert torch.equal(sub, expected_sub) and torch.equal(tgt_pad, expected_pad)
    assert torch.equal(both, expected_sub * expected_pad)


@needs_shipped
def test_mask_at_work_zeroes_masked_weights(english):
    tr = get_translator()
    batch, _ = make_batch(tr.tokenizer, list(zip(DEFAULT_DE.splitlines(), DEFAULT_EN.splitlines())))
    for kind in ("decoder", "encoder"):
        raw, masked, weights, mask = scores_at_work(tr.model, batch, 0, kind, 0, 1)
        assert torch.all(weights[mask == 0] == 0)  # exactly zero
        torch.testing.assert_close(weights.sum(-1), torch.ones(weights.size(0)))
        torch.testing.assert_close(masked[mask.bool()], raw[mask.bool()])
        assert torch.all(masked[mask == 0] == -1e9)
        # the weights are the model's own: same as its attention with weights kept
        _, cache = run_with_cache(tr.model, batch.src, batch.tgt, batch.src_mask, batch.tgt_mask, names=["*:weights"])
        kept = cache[attention_name(kind, 0)][0, 1]
        torch.testing.assert_close(weights, kept, atol=1e-5, rtol=1e-4)
    out = masks.masks_view(DEFAULT_DE, DEFAULT_EN, 1, "decoder", 0, 0)
    assert out["summary"].startswith("Batch of 3 pairs")
    assert "Give between" in masks.masks_view("a", "b", 0, "decoder", 0, 0)["summary"]


def test_batching_figure_shows_training_and_user_batch(english):
    stats = {"batch_size": 10, "max_tokens": 100,
             "sentence_count": {"padding_fraction": 0.5, "tokens_per_batch_mean": 90, "tokens_per_batch_std": 5},
             "token_based": {"padding_fraction": 0.05, "tokens_per_batch_mean": 88, "tokens_per_batch_std": 9}}
    fig = batching_figure(stats, [([1, 1], [1, 1, 1]), ([1, 1, 1, 1], [1])])
    assert list(fig.data[0].y) == pytest.approx([0.5, 0.05, 1 - 10 / 14])


def test_shipped_batching_stats_favour_token_batches():
    path = ASSETS / "batching.json"
    if not path.exists():
        pytest.skip("no batching.json in assets/ yet")
    s = json.loads(path.read_text())
    assert s["token_based"]["padding_fraction"] < s["sentence_count"]["padding_fraction"]


# ---- positional encoding ---------------------------------------------------------------------------

def test_encoding_matches_float64_reference():
    for d in (16, 256):
        torch.testing.assert_close(encoding(d, 200).double(), encoding_f64(d, 200), atol=2e-5, rtol=0)
    ref = encoding_f64(8, 3)
    assert ref[2, 0] == pytest.approx(math.sin(2)) and ref[2, 3] == pytest.approx(math.cos(2 / 10000 ** (2 / 8)))


@pytest.mark.parametrize("k", [1, 7, 40])
def test_rotation_maps_pos_to_pos_plus_k(k):
    pe = encoding_f64(64, 120)
    assert relative_residual(pe, k).max() < 1e-10
    M = rotation(64, k)
    torch.testing.assert_close(M @ M.T, torch.eye(64, dtype=torch.float64))  # a rotation
    torch.testing.assert_close(pe[5] @ M.T, pe[5 + k])


def test_positional_view_and_errors(english):
    curves, heat, sim, rel, note = positional.positional_view(32, 50, "0, 1, 9", 3).values()
    assert [t.name.split()[1] for t in curves.data] == ["0", "1", "9"]
    assert len(heat.data[0].z) == 50 and len(heat.data[0].z[0]) == 32
    assert "largest residual" in note
    assert "must lie in" in positional.positional_view(32, 50, "40", 3)["note"]
    # long or many-numbered input: a short message, never an echo of the input
    for typed in ("9" * 100_000, "1 " * 5_000, " ".join(["99"] * 90)):
        note = positional.positional_view(32, 50, typed, 3)["note"]
        assert note.startswith("**") and len(note) < 250, note
    # odd d_model is made even, k is kept inside the range
    assert len(positional.positional_view(33, 20, "", 999)["heat"].data[0].z[0]) == 32


@needs_shipped
def test_embedding_scale_uses_trained_weights(english):
    fig, note = positional.embedding_scale().values()
    w = get_translator().model.src_embed[0].lut.weight.detach().float()
    raw, scaled = fig.data
    norms = w.norm(dim=1)
    # binned on the server: every embedding counted once in each histogram, the bins spanning the norms
    for bars, values in ((raw, norms), (scaled, norms * math.sqrt(w.size(1)))):
        assert sum(bars.y) == w.size(0)
        lo, hi, width = values.min().item(), values.max().item(), bars.width
        assert bars.x[0] - width / 2 == pytest.approx(lo, abs=1e-3) and bars.x[-1] + width / 2 == pytest.approx(hi, abs=1e-3)
        # the bin that holds the median holds as many norms as lie in it
        i = int((values.median().item() - lo) // width)
        inside = ((values >= lo + i * width) & (values < lo + (i + 1) * width)).sum().item()
        assert abs(bars.y[i] - inside) <= 1
    # the scaled norms are the raw ones times sqrt(d_model): the same histogram, stretched
    assert list(scaled.y) == list(raw.y)
    assert scaled.width == pytest.approx(raw.width * math.sqrt(w.size(1)), rel=1e-5)


# ---- training replay -------------------------------------------------------------------------------

def test_noam_figure_overlays_the_three_annotated_schedules(english):
    fig = noam_figure(256, 0.8, 1000)
    assert [t.name for t in fig.data[:3]] == ["512:4000", "512:8000", "256:4000"]
    x, y = fig.data[3].x, fig.data[3].y
    assert y[10] == pytest.approx(rate(x[10], 256, 0.8, 1000))


def test_smoothed_distribution(english):
    _, td = smoothing_figure(0.3, targets=(2, 1, 0), vocab=6)
    torch.testing.assert_close(td[:2].sum(-1), torch.ones(2))
    assert td[0, 2] == pytest.approx(0.7) and td[1, 1] == pytest.approx(0.7)
    assert torch.all(td[2] == 0) and torch.all(td[:, 0] == 0)


def test_penalization_curve_has_interior_minimum_with_smoothing(english):
    fig = penalization_figure((0.0, 0.4))
    plain, smooth = fig.data
    assert min(plain.y) == plain.y[-1]  # no smoothing: more confidence is always better
    assert list(smooth.y).index(min(smooth.y)) < len(smooth.y) - 3  # smoothing: over-confidence costs


def test_replay_tick_advances_and_stops(monkeypatch):
    monkeypatch.setattr(training, "replay_length", lambda: 120)
    slider, timer, playing = training.replay_tick(10, True)
    assert slider.value == 12 and playing
    slider, timer, playing = training.replay_tick(119, True)
    assert slider.value == 120 and not playing and timer.active is False
    button, timer, playing, slider = training.replay_toggle(False, 120)
    assert playing and slider.value == 1 and button.value == str(L("ui.training.pause"))  # "Pause" in the page's language


@needs_shipped
def test_replayed_learning_rates_follow_noam(english):
    config, steps, epochs = shipped_log()
    a = config["args"]
    for r in steps:
        assert r["lr"] == pytest.approx(rate(r["step"] - 1, a["d_model"], a["factor"], a["warmup"]), rel=1e-9)
    fig = replay_figure(steps, epochs, len(steps) // 2)
    marker = fig.data[2]
    assert marker.x[0] == steps[len(steps) // 2 - 1]["step"]
    assert epochs and all(e["val_ppl"] == pytest.approx(math.exp(e["val_loss"])) for e in epochs)


def test_ablation_logs_when_shipped():
    runs = ablation_runs()
    if not runs:
        pytest.skip("no ablation logs in assets/ yet")
    (_, s0, e0), (_, s1, e1) = runs["ε = 0"], runs["ε = 0.1"]
    assert len(s0) == len(s1) and len(e0) == len(e1)  # the same budget
    assert runs["ε = 0"][0]["args"]["smoothing"] == 0.0 and runs["ε = 0.1"][0]["args"]["smoothing"] == 0.1


# ---- the page in Chinese ---------------------------------------------------------------------------

HOVER_FIELD = re.compile(r"%\{[^}]*\}|<[^>]*>")  # plotly's %{y} and <extra></extra>: not words


def drawn_english(tab, controls, pieces=frozenset()):
    """The English a tab's views draw for `controls` (tools.i18n_report's measure), hover templates' words too."""
    found = []
    for view in tab.VIEWS:
        if isinstance(view.outputs, tuple):  # a view that names its outputs, drawn in the event's language
            with speaking(controls["lang"]):
                out = view.draw(**{name: controls.get(name) for name in view.uses})
            values = out.values() if isinstance(out, dict) else (out,)
        else:
            out = view.draw(*(controls[name] for name in view.uses))
            values = out if view.outputs > 1 else (out,)
        for value in values:
            found += [s for s in value_strings(value) if english(s, pieces)]
            found += [t.hovertemplate for t in getattr(value, "data", ())
                      if t.hovertemplate and english(HOVER_FIELD.sub(" ", t.hovertemplate), pieces)]
    return found


def chinese(s):
    return bool(CJK.search(s)) and not english(s)


def test_masks_tab_draws_its_words_in_chinese():
    tr = get_translator()
    batch, _ = make_batch(tr.tokenizer, list(zip(DEFAULT_DE.splitlines(), DEFAULT_EN.splitlines())))
    ids = batch.src.flatten().tolist() + batch.tgt.flatten().tolist()
    pieces = frozenset(w for i in ids for w in WORD.findall(tr.tokenizer.id_to_piece(i)))  # the batch's, <pad> too
    controls = dict(de=DEFAULT_DE, en=DEFAULT_EN, sentence=1, kind="decoder", layer=0, head=0, lang="zh-CN")
    for kind in ("decoder", "encoder"):
        assert drawn_english(masks, dict(controls, kind=kind), pieces) == []
    # a batch refused says why, in Chinese, in the summary and on the figures
    for de, en in (("a", "b"), ("a\nb", "c"), ("x" * 400 + "\ny", "c\nd"), ("Ein Hund.\n" * 200_000, "A dog.\n" * 2)):
        with speaking("zh-CN"):
            out = masks.masks_view(de, en, 0, "decoder", 0, 0)
        summary, fig = out["summary"], out["panels"]
        assert chinese(summary) and all(chinese(s) for s in value_strings(fig)), summary
    with pytest.raises(ValueError, match="德语有 2 行"), speaking("zh-CN"):
        parse_pairs("a\nb", "c")
    # in English as before
    with speaking("en"):
        assert masks.masks_view(DEFAULT_DE, DEFAULT_EN, 1, "decoder", 0, 0)["summary"].startswith("Batch of 3 pairs")


@needs_shipped
def test_positional_tab_draws_its_words_in_chinese():
    controls = dict(d_model=256, positions=100, dims="4, 5, 6, 7", k=5, lang="zh-CN")
    assert drawn_english(positional, controls) == []
    with speaking("zh-CN"):
        for typed in ("40", "4, x", "9" * 300):
            assert chinese(positional.positional_view(32, 50, typed, 3)["note"]), typed
    with speaking("en"):  # the figure the Learn path shares, in the event's language
        fig, _, _ = relative_figure(encoding(32, 20), 3)
    assert fig.data[1].name == "float32 buffer (the model's)" and fig.layout.xaxis2.title.text == "pos"
    with pytest.raises(LookupError):  # drawn outside an event: no language was chosen, so none is assumed
        relative_figure(encoding(32, 20), 3)


@needs_shipped
def test_training_tab_draws_its_words_in_chinese(monkeypatch):
    _, steps, epochs = shipped_log()
    data = (*training.probe_sentences(), *(p for e in epochs for p in e.get("probes", ())))
    pieces = frozenset(w for s in data for w in WORD.findall(s))  # the probe sentences and the model's outputs: data
    for step in (1, len(steps)):  # before the first evaluation (its empty state), and after the last
        controls = dict(step=step, d_model=512, factor=1.0, warmup=4000, eps=0.1, lang="zh-CN")
        assert drawn_english(training, controls, pieces) == []
    with speaking("en"):
        assert "No evaluation yet at this step" in training.replay_view(1)["probes"]
    monkeypatch.setattr(training, "ablation_runs", dict)  # no logs shipped: the figure says so
    with speaking("zh-CN"):
        fig = training.ablation_view.__wrapped__()["ablation"]
    assert all(chinese(s) for s in value_strings(fig))
    with speaking("en"):
        assert value_strings(training.ablation_view.__wrapped__()["ablation"]) == ["The ablation logs are not in assets/."]
        # the Learn path asks for the same figures in its own words: the Training tab's stay
        assert noam_figure(512, 1.0, 4000).layout.xaxis.title.text == "step"
        assert noam_figure(512, 1.0, 4000, words="learn").layout.xaxis.title.text == "optimizer step"
        assert list(smoothing_figure(0.1)[0].layout.yaxis.ticktext)[0] == "#1 → 2"
        hidden = smoothing_figure(0.1, words="learn", numbers=False)[0].data[0]
        assert hidden.text is None and hidden.hoverinfo == "skip"
        assert noam_figure(512, 1.0, 4000, scale=False).layout.yaxis.showticklabels is False
    with speaking("zh-CN"):  # a view that reads no sentence is drawn once per language and kept
        assert training.noam_view(512, 1.0, 4000) is training.noam_view(512, 1.0, 4000)
        assert training.noam_view(512, 1.0, 4000).layout.xaxis.title.text == "步数"


def test_the_translate_tab_puts_in_use_only_the_sliders_its_method_reads():
    from app.tabs import translate
    def used(method):
        return [u["interactive"] for u in translate.sliders_in_use(method)]  # beam, alpha, temperature, top-k
    assert used("greedy") == [False] * 4
    assert used("beam") == [True, True, False, False]
    assert used("sample") == [False, False, True, True]
    assert used("anything else") == [False] * 4


def _readable_log_axis(axis, values):
    """A log axis's ticks are set, each labelled in full by its value, 1, 2, 3 or 5 times a power of ten, and at
    least two of them fall among the values."""
    assert axis.type == "log" and axis.tickvals, axis
    assert list(axis.ticktext) == [f"{t:g}" for t in axis.tickvals]
    for t in axis.tickvals:
        mantissa = t / 10 ** math.floor(math.log10(t) + 1e-9)
        assert round(mantissa, 6) in (1, 2, 3, 5), t
    assert sum(min(values) <= t <= max(values) for t in axis.tickvals) >= 2


def test_log_ticks_read_in_full():
    from app.common import log_ticks
    assert log_ticks([6.5, 180])["ticktext"] == ["5", "10", "20", "30", "50", "100", "200"]
    assert log_ticks([0.0012, 3.4])["ticktext"] == ["0.001", "0.01", "0.1", "1"]
    assert log_ticks([0, None]) == {}


@needs_shipped
def test_the_log_axes_of_training_and_the_lab_tick_readably(english):
    """Training's perplexity and the Lab's loss: ticks a reader reads ("10, 20, 50"), not plotly's bare mantissas
    ("2, 100, 5, 2, 10, 5")."""
    from app.figures.lab import curve_figure
    _, steps, epochs = shipped_log()
    fig = replay_figure(steps, epochs, len(steps))
    _readable_log_axis(fig.layout.yaxis3, [e["val_ppl"] for e in epochs])
    run = dict(step=list(range(1, 101)), loss=[3.0 * 0.95 ** k + 0.002 for k in range(100)],
               lr=[1e-3] * 100)
    fig = curve_figure(run, None, "t")
    _readable_log_axis(fig.layout.yaxis, run["loss"])
