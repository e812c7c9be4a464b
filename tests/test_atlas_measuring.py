"""The head atlas measured on demand (issue 55): in a thread of its own at the lowest priority, stopped on request
at its next checkpoint (a fraction of a stage), with an estimate of the time left; the Heads tab's generator stops
it when Gradio closes the generator (Cancel, or the page gone)."""
import os
import shutil
import threading

import pytest

from core.analysis import heads as atlas_mod
from core.analysis.heads import Measuring, lower_priority

pytestmark = pytest.mark.slow  # a small model's atlas, partly measured: seconds


@pytest.fixture(scope="module")
def small(tiny_spm, tmp_path_factory):
    """A Translator of a small random model with the tiny tokenizer."""
    from core.checkpoint import save_pretrained
    from core.model import make_model
    from core.train import seeded
    from core.translate import Translator
    sp, spm_path = tiny_spm
    v = sp.get_piece_size()
    directory = tmp_path_factory.mktemp("atlas-measuring") / "model"
    with seeded(0):
        model = make_model(v, v, N=2, d_model=16, d_ff=32, h=2, dropout=0.0)
    save_pretrained(model, dict(src_vocab=v, tgt_vocab=v, N=2, d_model=16, d_ff=32, h=2, dropout=0.0,
                                tokenizer="spm.model"), directory)
    shutil.copy(spm_path, directory / "spm.model")
    return Translator.load(directory), directory


def test_a_measurement_stops_within_its_stage_when_asked(small, tiny_data):
    tr, _ = small
    m = Measuring(tr, 40, data_dir=tiny_data).start()
    while m.done < 1 and not m.finished.is_set():  # a stage has ended: a time left is estimated
        m.finished.wait(0.01)
    assert m.seconds_left() is not None and m.seconds_left() >= 0
    m.stop()
    assert m.finished.wait(60)
    assert m.stopped and m.result is None and m.error is None
    assert m.done < m.total  # it did not run its stages to the end


def test_the_time_left_is_the_stages_to_go_at_the_pace_so_far(monkeypatch):
    now = [0.0]
    monkeypatch.setattr(atlas_mod.time, "perf_counter", lambda: now[0])
    m = Measuring(None, 10)
    m.started = 0.0
    assert m.seconds_left() is None  # before a stage has ended
    now[0] = 6.0
    m._progress(1, 11)  # the first stage (which also translates the sample) took 6 s
    assert m.seconds_left() == pytest.approx(60.0)
    now[0] = 10.0
    m._progress(2, 11)
    now[0] = 14.0
    m._progress(3, 11)  # then 4 s a stage
    now[0] = 15.0  # a second into the fourth
    assert m.seconds_left() == pytest.approx(8 * 4.0 - 1.0)


@pytest.mark.skipif(not hasattr(os, "setpriority"), reason="no per-thread priority here")
def test_the_measuring_thread_runs_at_the_lowest_priority():
    seen = {}

    def probe():
        seen["set"] = lower_priority()
        seen["nice"] = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    t = threading.Thread(target=probe)
    t.start()
    t.join()
    assert seen == {"set": True, "nice": 19}
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) < 19  # this thread is left as it was


def test_closing_the_tabs_generator_stops_its_measurement(small, tiny_data, monkeypatch):
    """What Gradio does when Cancel is pressed or the page is gone: it closes the generator at its yield
    (gradio.utils.SyncToAsyncIterator.aclose). The measurement stops, nothing is kept, and the server is free for
    another."""
    from app.i18n import speaking
    from app.tabs import heads
    tr, directory = small
    monkeypatch.setattr(heads, "get_translator", lambda: tr)
    monkeypatch.setattr(heads, "model_dir", lambda: directory)
    heads.load_atlas.cache_clear()
    started = []
    real = heads.Measuring

    def measuring(translator, limit, on_end):
        started.append(real(translator, limit, data_dir=tiny_data, on_end=on_end))
        return started[-1]
    monkeypatch.setattr(heads, "Measuring", measuring)
    try:
        with speaking("en"):
            steps = heads.measure_heads(0, 40, progress=lambda *a, **k: None)
            first = next(steps)
        assert first["cancel"]["visible"] is True
        steps.close()  # Gradio's close of an abandoned run
        m = started[0]
        assert m.finished.wait(60) and m.stopped and m.result is None
        assert not (directory / "heads.json").exists() and heads._RUNNING.get("now") is None
    finally:
        heads.load_atlas.cache_clear()
