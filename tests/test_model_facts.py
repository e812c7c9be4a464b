"""A model other than the shipped one is itself (issue 55): with a model built from a config, its weights random
and saved to a directory of its own (no training log, no Hub), nothing the page builds says "Multi30k", "the
shipped model" or "trained" of it; its header line says what its own files say (nothing of its training, or a
log's steps where one is beside it), and the Positional tab calls its embeddings trained only where a log says so.
The shipped model keeps its own line (trained here on Multi30k)."""
import json
import re
import shutil

import gradio as gr
import pytest

from app.i18n import i18n, speaking, text
from core.checkpoint import save_pretrained
from core.model import make_model
from core.train import seeded
from tests.conftest import clear_app_caches

pytestmark = pytest.mark.slow  # the whole page is built on the small model: seconds

# what a page may not say of a model it knows nothing of: the shipped model's data and provenance, its weights
# called trained (a sentence on training in general, as the intro's "how a Transformer is trained", is no claim)
SHIPPED_WORDS = re.compile(r"Multi30k|shipped|\btrained (model|one|embedding|gain|bias)|\(trained\)|trained [ab]\u2082|"
                           r"随附|随项目发布|训练好的|训练得到的|训练后的", re.I)
# lines that name the shipped model to say that the open one is not it, and the Lab's toy runs' own words
NOT_THIS_MODEL = {"ui.lab.other", "ui.engineering.none", "lab.break.no_subsequent_mask",
                  # the Compare tab's lesson compares the shipped run's snapshots (another helper's tab, issue 55)
                  "ui.compare.intro", "ui.compare.lesson"}


@pytest.fixture(scope="module")
def random_dir(tiny_spm, tmp_path_factory):
    """A model of the Annotated Transformer's shape, random weights (Xavier's), saved with its tokenizer alone."""
    _, spm_path = tiny_spm
    import sentencepiece as spm
    v = spm.SentencePieceProcessor(model_file=str(spm_path)).get_piece_size()
    config = dict(src_vocab=v, tgt_vocab=v, N=1, d_model=16, d_ff=32, h=2, dropout=0.0, tokenizer="spm.model")
    directory = tmp_path_factory.mktemp("facts") / "random-model"
    with seeded(0):
        model = make_model(v, v, N=1, d_model=16, d_ff=32, h=2, dropout=0.0)
    save_pretrained(model, config, directory)
    shutil.copy(spm_path, directory / "spm.model")
    return directory


@pytest.fixture
def open_model(monkeypatch):
    """A function that opens a directory as the page's model (EXPLORER_MODEL_DIR), every cache cleared."""
    import app.ui  # noqa: F401 (every tab's module imported, so that its caches are cleared)

    def open_(directory):
        monkeypatch.setenv("EXPLORER_MODEL_DIR", str(directory))
        clear_app_caches()
    yield open_
    monkeypatch.undo()
    clear_app_caches()


def keyed(value):
    """(its key, its English) of a static string of the page: a gr.I18n key (or its serialized form) looked up;
    (None, the string) for one that is not translated."""
    if isinstance(value, str) and value.startswith("__i18n__"):
        value = gr.i18n.I18nData(json.loads(value[len("__i18n__"):])["key"])
    if isinstance(value, gr.i18n.I18nData):
        return value.key.split("#")[0], i18n().translations["en"].get(value.key) or text("en", value.key)
    return None, str(value)


def static_texts(demo):
    """Every static string the built page shows (labels, Markdown, choices) as (key, English)."""
    from tools.i18n_report import strings
    return [keyed(s) for block in demo.blocks.values() for s in strings(block)]


def test_the_page_says_nothing_of_the_shipped_run_of_a_random_model(random_dir, open_model):
    from app.shared import get_translator, model_dir, model_line
    from app.tabs.positional import embedding_scale
    from app.ui import build_demo
    open_model(random_dir)
    key, values = model_line(get_translator().config, model_dir())
    assert key == "ui.model.other"
    line = text("en", key, **values)
    assert r"random\-model" in line and "1+1 layers, 2 heads, d_model 16" in line and "no training log" in line
    said = [f"{k}: {s}" for k, s in static_texts(build_demo()) if SHIPPED_WORDS.search(s) and k not in NOT_THIS_MODEL]
    assert said == [], "\n".join(said)  # the header, the intro, Inside's title, Positional's and Masks' headings, the LayerNorm's
    for lang in ("en", "zh-CN"):
        with speaking(lang):
            note = embedding_scale()["scale_note"]
        assert not SHIPPED_WORDS.search(note), note
        assert text(lang, "positional.scale.note-untrained", raw="", scaled="", pe="", verdict="")[:8] in note


def test_a_logged_model_is_called_trained_for_the_steps_its_log_records(random_dir, tmp_path, open_model):
    from app.shared import get_translator, model_dir, model_line
    from app.tabs.positional import embedding_scale
    directory = tmp_path / "logged"
    shutil.copytree(random_dir, directory)
    records = [{"type": "config"}, {"type": "step", "step": 1}, {"type": "epoch", "epoch": 3, "step": 1250}]
    (directory / "train_log.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    open_model(directory)
    key, values = model_line(get_translator().config, model_dir())
    assert key == "ui.model.logged" and values["steps"] == "1,250"
    assert "trained by this project's core.train: 1,250 steps" in text("en", key, **values)
    with speaking("en"):
        assert "Median norm of a trained embedding" in embedding_scale()["scale_note"]


def test_the_shipped_model_says_where_it_was_trained():
    from app.shared import get_translator, model_dir, model_line
    key, values = model_line(get_translator().config, model_dir())
    assert key == "ui.model.shipped"
    assert "trained here on Multi30k" in text("en", key, **values)


def test_the_overview_says_how_a_model_was_trained_only_where_this_project_trained_it(random_dir, open_model):
    """The diagram's line on training (label smoothing, the Noam schedule) is the shipped run's: a random model's
    diagram has none, the shipped model's has it."""
    from app.tabs.overview import overview_svg
    said = text("en", "overview.trained")
    with speaking("en"):
        shipped = overview_svg(None)
        open_model(random_dir)
        other = overview_svg(None)
    assert said in shipped and said not in other
