"""One fact, one source: what the pages say about the shipped model's training run (its schedule, its BLEU after
the last epoch and at its best, the epochs they came after) is read from the run's log at run time, never written
into the prose, so that a retrained model's log changes every page that states it, and no two pages disagree."""
import json
import re

import pytest

from app import i18n, learn_path
from app.figures import learn as learn_figures
from app.figures import training
from app.i18n import in_language
from tests.conftest import needs_shipped


def said(fn, *args, lang, **kwargs):
    return in_language(fn)(*args, lang=lang, **kwargs)


def _log_lines():
    from app.shared import model_dir
    return [json.loads(x) for x in (model_dir() / "train_log.jsonl").read_text().splitlines() if x.strip()]


def _facts(records):
    config = next(r for r in records if r["type"] == "config")["args"]
    epochs = [r for r in records if r["type"] == "epoch" and r.get("val_bleu") is not None]
    best = max(epochs, key=lambda e: e["val_bleu"])
    return config, best, epochs[-1]


@pytest.fixture
def other_log(tmp_path, monkeypatch):
    """The shipped log with other arguments and another best epoch, read through the one reader of the log
    (app.figures.training.shipped_log) in place of the shipped one."""
    records = _log_lines()
    epochs = [r for r in records if r["type"] == "epoch"]
    for r in records:
        if r["type"] == "config":
            r["args"] = dict(r["args"], warmup=2000, factor=1.3)
        if r["type"] == "epoch" and r.get("val_bleu") is not None:
            r["val_bleu"] = 10.0 + r["epoch"]  # rising to the last epoch ...
    epochs[len(epochs) // 2]["val_bleu"] = 77.7  # ... but for a best in the middle
    (tmp_path / "train_log.jsonl").write_text("\n".join(json.dumps(r) for r in records) + "\n")
    monkeypatch.setattr(training, "model_dir", lambda: tmp_path)
    training.shipped_log.cache_clear()
    learn_figures.draw_noam.cache_clear()
    yield records
    training.shipped_log.cache_clear()
    learn_figures.draw_noam.cache_clear()


def _stated(lang):
    """What the Engineering tab and the Learn path's Noam and history steps say about the run, after Check."""
    from app.tabs import engineering
    c = learn_path.context(None)
    page = said(engineering.engineering_md, lang=lang)
    noam = said(learn_path.quiz_noam, c, lang=lang)[2]
    history = said(learn_path.quiz_history, c, lang=lang)[2]
    return page, i18n.text(lang, "learn.noam.q", **noam), i18n.text(lang, "learn.history.a", **history)


@needs_shipped
@pytest.mark.parametrize("lang", i18n.LANGS)
def test_the_pages_state_the_runs_facts_from_its_log(other_log, lang):
    config, best, last = _facts(other_log)
    page, noam_q, history_a = _stated(lang)
    # Engineering: the last epoch's BLEU and the best, each with its epoch
    assert f"{last['val_bleu']:.2f}" in page and f"{best['val_bleu']:.2f}" in page
    assert re.search(rf"\b{last['epoch']}\b", page) and re.search(rf"\b{best['epoch']}\b", page)
    # Learn 16: the last epoch's BLEU after the last epoch, as Engineering says
    assert f"{last['val_bleu']:.1f}" in history_a and re.search(rf"\b{last['epoch']}\b", history_a)
    # Learn 14: the logged warm-up and factor
    assert "2,000" in noam_q and "1.3" in noam_q
    assert "1,000" not in noam_q and "4,000" not in noam_q


@needs_shipped
def test_no_fact_of_the_shipped_run_is_written_into_the_prose():
    """The run's numbers come into the words through fields: none is written in either table."""
    config, best, last = _facts(_log_lines())
    warmup = config["warmup"]
    for lang in i18n.LANGS:
        for key, value in i18n.table(lang).items():
            for fact in (f"epoch {best['epoch']}", f"epoch {last['epoch']}", f"第 {best['epoch']} 个",
                         f"第 {last['epoch']} 个", f"{warmup} warm", f"{warmup:,} warm", f"预热 {warmup}",
                         f"预热 {warmup:,}", f"{best['val_bleu']:.1f}", f"{last['val_bleu']:.1f}"):
                assert fact not in value, (lang, key, fact)


def test_the_chinese_says_epoch_one_way():
    """One word for an epoch in the Chinese (迭代周期, d2l's), none left in English but in code (run_epoch)."""
    zh = i18n.table("zh-CN")
    for key, value in zh.items():
        assert not re.search(r"(?<![_\w`{])epochs?(?![_\w`}])", value), key
    assert sum("迭代周期" in v for v in zh.values()) >= 10
    assert "在前五分之一的" not in " ".join(zh.values())  # read as a fifth of one epoch


@pytest.mark.parametrize("lang", i18n.LANGS)
def test_the_smoothing_rows_name_each_example_once(lang):
    """The label-smoothing step and the Training tab: each row is one example, numbered, with its target; the padding target is
    called padding (its row gets nothing), and no two rows read the same."""
    fig, _ = said(training.smoothing_figure, 0.1, lang=lang)
    rows = list(fig.layout.yaxis.ticktext)
    assert len(set(rows)) == len(rows) == 5
    pad = i18n.text(lang, "training.smoothing.padding", i=3, t=0)
    assert rows[2] == pad and all(str(i) in r for i, r in enumerate(rows, 1))


def test_bold_chinese_renders_whatever_its_field_ends_with():
    """CommonMark closes ** only where the run is right-flanking: after a closing bracket (as in a choice's
    “clones（deepcopy + ModuleList）”) it must be followed by a space or punctuation, not by a Chinese character.
    Every Chinese string with bold text renders bold, its fields filled with such a value."""
    import string

    from markdown_it import MarkdownIt
    md = MarkdownIt("commonmark")
    worst = "clones（deepcopy + ModuleList）"
    left = []
    for key, value in i18n.table("zh-CN").items():
        if "**" not in value:
            continue
        fields = {f: worst for _, f, _, _ in string.Formatter().parse(value) if f}
        try:
            shown = md.render(value.format(**fields))
        except (KeyError, IndexError, ValueError):
            continue
        if "**" in shown:
            left.append(key)
    assert left == [], left


@needs_shipped
@pytest.mark.parametrize("lang", i18n.LANGS)
def test_the_shipped_models_greedy_bleu_on_val_is_one_number_on_the_heads_and_engineering_tabs(lang):
    """The Heads tab's "model as shipped" and the Engineering tab's quality table measure the same model on the same
    split with the same decoding: they write the same number (once 41.2 beside 41.25)."""
    import json as _json

    from app.shared import model_dir
    from app.tabs import engineering, heads
    atlas = _json.loads((model_dir() / "heads.json").read_text())
    rows = [r for r in _json.loads((model_dir() / "eval.json").read_text()) if r["split"] == "val" and r["beam"] == 1]
    assert atlas["data"]["split"] == "val" and rows and round(rows[0]["bleu"], 2) == round(atlas["baseline"]["bleu"], 2)
    written = f"{rows[0]['bleu']:.2f}"
    assert written in said(engineering.engineering_md, lang=lang)
    reading = heads.reading_md(atlas, lang)
    assert f"BLEU {written}" in reading.replace("BLEU：", "BLEU ").replace("BLEU 为 ", "BLEU ")
    # and nowhere in the reading at another precision (its findings' "the model as it is" wrote 41.2)
    assert not re.search(re.escape(f"{rows[0]['bleu']:.1f}") + r"(?!\d)", reading), reading
