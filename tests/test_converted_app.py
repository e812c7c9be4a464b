"""The app on a converted model (issue 40): a tiny Marian model (seeded random weights, tokenizers trained here, no
download) converted by core.convert and opened as EXPLORER_MODEL_DIR. Every tab's views draw for it in both
languages; the page names it; the views that describe the shipped model's run say so or step aside, and none shows
the shipped run's figures as the open model's; the Masks tab and the search tree use the open model's ids."""
import warnings

import pytest

from app.i18n import speaking, text
from core.analysis.heads import SAMPLE
from core.convert import convert
from core.convert.random_opus import made_up_pairs, write_marian
from tests.conftest import clear_app_caches

pytest.importorskip("transformers", reason="transformers is not installed (pip install transformers)")
pytestmark = pytest.mark.slow  # a Marian model is built, saved, given trained tokenizers and converted: seconds

SMALL = dict(d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4, decoder_attention_heads=4,
             encoder_ffn_dim=64, decoder_ffn_dim=64, max_position_embeddings=64, scale_embedding=True,
             activation_function="swish")
NAME = "tiny*marian_[x]"  # a directory name with Markdown in it: the page shows it as typed
SENTENCE = "Ein Mann läuft auf der Straße."


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    root = tmp_path_factory.mktemp("converted-app")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        source = write_marian(root / "hf", SMALL, dict(num_beams=4, max_length=64), made_up_pairs(300, seed=3), 150,
                              seed=3, scale=3.0)
        convert(source, root / NAME)
    return root / NAME


@pytest.fixture
def on_converted(converted, monkeypatch):
    import app.ui  # noqa: F401 (every tab's module imported, so that its caches are cleared)
    monkeypatch.setenv("EXPLORER_MODEL_DIR", str(converted))
    clear_app_caches()
    yield converted
    monkeypatch.undo()
    clear_app_caches()


def drawn_words(demo, ins, lang):
    """{tab: all the text its views draw for `ins` in `lang`, joined}."""
    from tools.i18n_report import value_strings, view_values
    return {tab.where[0]: "\n".join(s for _, v in view_values(tab, ins, lang) for s in value_strings(v))
            for tab in demo.tab_views}


def test_every_tab_draws_for_a_converted_model_and_says_what_it_lacks(on_converted):
    from app.shared import get_translator
    from app.translating import translate
    from app.ui import build_demo
    from tools.i18n_report import value_strings

    tr = get_translator()
    assert tr.config["norm"] == "post" and tr.bos_id is None and tr.start_id == tr.pad_id  # Marian's choices
    demo = build_demo()
    assert not any(t.where == ("timelapse",) for t in demo.tab_views)  # no snapshots beside it: no tab
    ins = translate(SENTENCE, "beam")[2]
    for lang in ("en", "zh-CN"):
        words = drawn_words(demo, ins, lang)  # no view raises
        with speaking(lang):
            assert text("training.replay.none_note") in words["training"]
            assert text("training.ablation.shipped") in words["training"]
            assert text("learn.shipped_run") in words["learn"]
            assert value_strings(text("heads.atlas.missing", file="<code>heads.json</code>", sentences=SAMPLE,
                                      command="<code>python -m core.analysis.heads --model DIR</code>"))[0] \
                in words["heads"]
        # the shipped run's probes and measures are nowhere: no probe table, no atlas grid
        assert "heads-grid" not in words["heads"]
    shipped_probe_title = text("en", "training.probes.title", epoch=1)
    assert shipped_probe_title not in drawn_words(demo, ins, "en")["training"]


def test_the_page_names_the_open_model_escaped(on_converted):
    from app.shared import get_translator, model_dir, model_line
    key, values = model_line(get_translator().config, model_dir())
    assert key == "ui.model.converted"
    line = text("en", key, **values)
    assert r"tiny\*marian\_\[x\]" in line and "2+2 layers, 4 heads, d_model 32" in line
    assert "converted from transformers" in line
    assert text("zh-CN", key, **values).count(r"tiny\*marian\_\[x\]") == 1


def test_engineering_describes_the_converted_model_and_leaves_the_shipped_runs_figures_out(on_converted):
    from app.tabs import engineering
    keys = [key for key, _ in engineering.sections()]
    # whose figures these are (the open model's), then the model
    assert keys[:2] == ["ui.engineering.of", "ui.engineering.model-converted"] and "ui.engineering.none" in keys
    assert not any(k.startswith(("ui.engineering.training", "ui.engineering.quality", "ui.engineering.speed"))
                   for k in keys)


def test_the_masks_batch_uses_the_open_models_ids(on_converted):
    from app.figures.masks import make_batch
    from app.shared import get_translator
    tr = get_translator()
    batch, examples = make_batch(tr.tokenizer, [("Ein Hund.", "A dog."), (SENTENCE, "A man runs on the street.")],
                                 model=tr)
    for src, tgt in examples:
        assert src[-1] == tr.eos_id and src[0] != tr.pad_id  # no <s> before a Marian source
        assert tgt[0] == tr.start_id == tr.pad_id and tgt[-1] == tr.eos_id
    assert batch.pad == tr.pad_id
    assert batch.tgt_keep[:, 0].all()  # the decoder's start is <pad> itself, a position the mask keeps
    assert batch.tgt_mask[:, :, 0].all()
    short = min(range(2), key=lambda i: len(examples[i][1]))
    n = len(examples[short][1])  # the shorter pair's pieces, its </s> too, are decoder inputs; the rest is padding
    assert not batch.tgt_keep[short, n:].any() and batch.tgt_keep[short, :n].all()


def test_the_search_tree_stops_where_the_models_positions_end(on_converted):
    from app.shared import get_translator
    from core.analysis import searchtree
    tr = get_translator()
    tree = searchtree.search(tr, SENTENCE, beam=4, max_len=100)  # the app's longest setting, past 64 positions
    assert tree.returned is not None  # (it ran out of positions before the fix)
    ours = tr.translate_ids([SENTENCE], method="beam", beam=4, max_len=100)[0]
    assert tr.tokenizer.decode(tree.path(tree.returned.id)) == tr.tokenizer.decode(ours)  # translate's cap too


def test_the_heads_atlas_of_a_converted_model_is_measured_on_request(converted, tmp_path, monkeypatch):
    """A model with no atlas is measured when the reader asks (the Heads tab's button), on the project's example
    sentences where Multi30k is not at hand (a sample asked larger than they are gets them all): Cancel shown while
    it runs, progress and the time left, the atlas kept beside the model, the grids and the reading drawn from it in
    both languages, its baseline loss the Translator's own over the same pairs; a second request while one runs is
    told so; a directory that cannot be written keeps the atlas in memory."""
    import shutil

    import torch

    from app.shared import get_translator
    from app.tabs import heads
    from core.analysis.heads import sample_pairs
    from core.model import subsequent_mask

    model = tmp_path / "model"
    shutil.copytree(converted, model)  # the module's model stays without an atlas
    monkeypatch.setenv("EXPLORER_MODEL_DIR", str(model))
    monkeypatch.setenv("MULTI30K_DIR", str(tmp_path / "no-data"))  # no Multi30k here: the examples serve
    clear_app_caches()
    try:
        assert heads.load_atlas() is None
        steps = []
        with speaking("en"):
            out = list(heads.measure_heads(0, 10_000, progress=lambda share, desc: steps.append((share, desc))))
        first, last = out[0], out[-1]
        assert first["cancel"]["visible"] is True and first["button"]["interactive"] is False  # Cancel while it runs
        assert last["version"] == 1 and last["row"]["visible"] is False and last["cancel"]["visible"] is False
        assert "Kept beside the model" in last["status"] and (model / "heads.json").is_file()
        shares = [s for s, _ in steps]  # the bar as the status line said it, once a tick
        assert shares == sorted(shares) and all(0 < s <= 1 for s in shares)
        assert all(d.startswith("Measuring the heads over ") and " left." in d for _, d in steps)

        atlas = heads.load_atlas()
        tr = get_translator()
        from app.figures.heads import measure_definition_key
        assert measure_definition_key("first") == "ui.heads.measure-def.first-piece"  # a Marian source has no <s> to be first
        pairs, source = sample_pairs(tr)
        assert source == "examples" == atlas["data"]["split"] and atlas["data"]["sentences"] == len(pairs) >= 12
        # the loss one sentence at a time (no padding, no batch), each target cut where the model's positions end
        nll = tokens = 0
        for de, en in pairs:
            src = torch.tensor([tr.encode_source(de)[0]])
            gold = torch.tensor(tr.encode_target(en)[:tr.max_out_tokens - 1] + [tr.eos_id])
            tgt = torch.cat([torch.tensor([tr.start_id]), gold[:-1]]).unsqueeze(0)
            with torch.no_grad():
                logp = tr.model.generator(tr.model(src, tgt, tr.source_mask(src), subsequent_mask(tgt.size(1))))[0]
            nll -= logp.gather(1, gold.unsqueeze(1)).sum().item()
            tokens += len(gold)
        assert atlas["baseline"]["loss"] == pytest.approx(nll / tokens, abs=1e-3)
        for lang, title in (("en", "**What the numbers say**"), ("zh-CN", "**数字告诉我们什么**")):
            with speaking(lang):
                view = heads.atlas_view("delta_loss", 1)
            assert view["atlas"].count('class="hcell"') == 3 * 2 * 4
            assert view["reading"].startswith(title) and str(len(pairs)) in view["reading"].split("\n")[0]
            assert text(lang, "heads.atlas.caption-examples", measure="", sentences=len(pairs), bleu="")[2:12] \
                in view["atlas"]

        (model / "heads.json").unlink()
        heads.load_atlas.cache_clear()
        heads._RUNNING["now"] = object()  # another session's measurement is running
        try:
            with speaking("en"):
                busy = list(heads.measure_heads(1, 24, progress=lambda *a, **k: None))
        finally:
            heads._RUNNING.clear()
        assert len(busy) == 1 and busy[0]["status"] == text("en", "heads.measure.busy")

        monkeypatch.setattr(heads, "model_dir", lambda: tmp_path / "read-only" / "model")  # cannot be written
        assert heads.keep_atlas(atlas) is False and heads.load_atlas() == atlas
    finally:
        heads._MEASURED.clear()
        clear_app_caches()
