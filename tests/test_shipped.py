"""The shipped model: its files, the Python API, the command lines, and its quality on real data."""
import json
import subprocess
import sys

import pytest

from core import Translator
from core.data import load_split
from core.decode import HalfPrecisionDecoder
from core.evaluate import score
from core.model import EncoderDecoder
from tests.conftest import ASSETS, ROOT, SHARED_DATA, needs_data, needs_shipped

pytestmark = needs_shipped


@pytest.fixture(scope="module")
def tr():
    return Translator.load()


def test_asset_files_fit_a_space_without_lfs():
    files = [p for p in ASSETS.iterdir() if p.is_file()]
    assert any(p.name.endswith(".safetensors") for p in files) and (ASSETS / "config.json").exists()
    for p in files:
        assert p.stat().st_size < 10 * 1024 * 1024, p


def test_python_api(tr):
    assert isinstance(tr.model, EncoderDecoder) and not tr.model.training
    assert tr.tokenizer.get_piece_size() == tr.config["src_vocab"]
    out = tr.translate(["Ein Hund rennt über eine Wiese.", "Eine Frau liest ein Buch."], beam=4)
    assert len(out) == 2 and all(o and o[0].isupper() for o in out)
    assert "dog" in out[0].lower() and "woman" in out[1].lower()
    # one sentence decodes with the float16 decoder, a batch of them in float32
    assert tr.decoding_model(1) is tr.half_model and tr.decoding_model(4) is tr.half_model
    assert tr.decoding_model(16) is tr.model
    assert isinstance(tr.half_model, HalfPrecisionDecoder) and tr.half_model.encoder is tr.model.encoder
    plain = Translator.load(half_rows=0)  # float32 throughout
    assert plain.half_model is None and plain.decoding_model(1) is plain.model
    assert tr.translate(["Ein Hund rennt über eine Wiese."] * 5, batch_size=5)[0] == \
        tr.translate("Ein Hund rennt über eine Wiese.")
    ins = tr.inspect("Ein Hund rennt über eine Wiese.")
    assert ins.translation == tr.translate("Ein Hund rennt über eine Wiese.")
    assert ins.encoder.shape[:2] == (tr.config["N"], tr.config["h"])


@pytest.mark.slow
def test_translate_cli():
    out = subprocess.run([sys.executable, "-m", "core.translate", "Ein Mann fährt Fahrrad.", "--beam", "3"],
                         cwd=ROOT, capture_output=True, text=True, check=True)
    assert "man" in out.stdout.lower() and out.stdout.count("\n") == 1


@pytest.mark.slow
def test_evaluate_cli_json(tmp_path, tr):
    """The command line's figures are sacrebleu's scores of the Python API's translations."""
    srcs, refs = ["Ein Hund rennt über eine Wiese.", "Zwei Kinder spielen im Sand."], \
        ["A dog runs across a meadow.", "Two children play in the sand."]
    (tmp_path / "src.de").write_text("".join(s + "\n" for s in srcs))
    (tmp_path / "ref.en").write_text("".join(r + "\n" for r in refs))
    out = subprocess.run([sys.executable, "-m", "core.evaluate", "--src", str(tmp_path / "src.de"),
                          "--ref", str(tmp_path / "ref.en"), "--out", str(tmp_path / "hyp.en"), "--json"], cwd=ROOT,
                         capture_output=True, text=True, check=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    hyps = tr.translate(srcs)
    assert (tmp_path / "hyp.en").read_text().splitlines() == hyps
    expected = score(hyps, refs)
    assert result["sentences"] == 2 and "seconds" in result
    assert result["bleu"] == pytest.approx(expected["bleu"]) and result["chrf"] == pytest.approx(expected["chrf"])


@pytest.mark.slow
@needs_data
def test_quality_on_test_2016_flickr_sample(tr):
    """Greedy BLEU on the first 200 test sentences (the full figures are in docs/training.md)."""
    pairs = load_split(SHARED_DATA, "test_2016_flickr")[:200]
    hyps = tr.translate([p[0] for p in pairs])  # batches of 64: float32
    bleu = score(hyps, [p[1] for p in pairs])["bleu"]
    assert bleu > 30
    # one sentence at a time (the float16 decoder) translates as well: same BLEU within half a point
    singles = tr.translate([p[0] for p in pairs[:100]], batch_size=1)
    assert tr.decoding_model(1) is tr.half_model
    refs = [p[1] for p in pairs[:100]]
    assert abs(score(singles, refs)["bleu"] - score(hyps[:100], refs)["bleu"]) < 0.5
    assert sum(a == b for a, b in zip(singles, hyps)) >= 95
