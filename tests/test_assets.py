"""A damaged or missing model file stops loading with a short message that names the file, says what is wrong and
how to get a good copy; `python app.py` prints it and exits instead of serving. Weights load through safetensors
alone: nothing is unpickled."""
import os
import pickle
import shutil
import subprocess
import sys

import pytest
import torch

from core.checkpoint import HOW_TO_FIX, AssetError
from core.translate import Translator
from tests.conftest import ASSETS, ROOT, needs_shipped

pytestmark = needs_shipped
MODEL_FILES = ("config.json", "model.safetensors.index.json", "model-00001-of-00002.safetensors",
               "model-00002-of-00002.safetensors", "spm.model")


@pytest.fixture
def model_dir(tmp_path):
    """A copy of the shipped model's files, to damage."""
    for name in MODEL_FILES:
        shutil.copy(ASSETS / name, tmp_path / name)
    return tmp_path


def load_error(directory):
    with pytest.raises(AssetError) as caught:
        Translator.load(directory)
    message = str(caught.value)
    assert HOW_TO_FIX in message and len(message) < 700, message
    return caught.value, message


def test_the_copy_loads(model_dir):
    """The copy is the shipped model: the same configuration, weights and translations."""
    copy, shipped = Translator.load(model_dir), Translator.load(ASSETS)
    assert copy.config == shipped.config
    for (name, a), (_, b) in zip(copy.model.state_dict().items(), shipped.model.state_dict().items(), strict=True):
        assert torch.equal(a, b), name
    sentence = "Zwei Hunde spielen im Schnee."
    assert copy.translate(sentence) == shipped.translate(sentence) == "Two dogs play in the snow."


@pytest.mark.parametrize("damage", ["truncated", "garbage", "missing"])
def test_a_damaged_or_missing_shard_is_named(model_dir, damage):
    shard = model_dir / "model-00002-of-00002.safetensors"
    data = shard.read_bytes()
    if damage == "truncated":
        shard.write_bytes(data[: len(data) // 2])
    elif damage == "garbage":
        shard.write_bytes(os.urandom(4096))
    else:
        shard.unlink()
    error, message = load_error(model_dir)
    assert error.path == shard and str(shard) in message
    assert ("missing" if damage == "missing" else "damaged or truncated") in message


def test_a_broken_index_is_named(model_dir):
    (model_dir / "model.safetensors.index.json").write_text('{"weight_map": ')
    error, message = load_error(model_dir)
    assert error.path.name == "model.safetensors.index.json" and "not valid JSON" in message


@pytest.mark.parametrize("text, says", [
    ("{not json", "not valid JSON (Expecting property name enclosed in double quotes at line 1, column 2)"),
    ("[1, 2]", "should be a JSON object"),
    ('{"N": 3}', "it lacks src_vocab, tgt_vocab, d_model, d_ff, h"),
    (None, "the model's configuration is missing")])
def test_a_broken_config_is_named(model_dir, text, says):
    config = model_dir / "config.json"
    config.unlink() if text is None else config.write_text(text)
    error, message = load_error(model_dir)
    assert error.path == config and says in message


def test_a_config_that_does_not_match_the_weights_says_how(model_dir):
    config = model_dir / "config.json"
    config.write_text(config.read_text().replace('"d_model": 256', '"d_model": 128'))
    error, message = load_error(model_dir)
    assert error.path == config and "do not match" in message
    # a sentence with two examples, not a 2 KB dump of every tensor
    assert "tensor shapes differ" in message and "(1024, 256) in the weights but (1024, 128) in the model" in message


@pytest.mark.parametrize("damage", ["garbage", "missing", "another model's"])
def test_a_damaged_missing_or_foreign_tokenizer_is_named(model_dir, damage, tiny_spm):
    spm_file = model_dir / "spm.model"
    if damage == "garbage":
        spm_file.write_bytes(b"\x00\x01 not a protobuf " * 50)
    elif damage == "missing":
        spm_file.unlink()
    else:
        shutil.copy(tiny_spm[1], spm_file)  # 64 pieces
    error, message = load_error(model_dir)
    assert error.path == spm_file
    assert {"garbage": "not a readable SentencePiece model", "missing": "SentencePiece model is missing",
            "another model's": "belongs to another model"}[damage] in message


def test_nothing_is_unpickled_when_loading(monkeypatch):
    def refuse(*a, **k):
        raise AssertionError("something was unpickled")

    expected = Translator.load(ASSETS).translate(["Ein Hund."])[0]
    for module, name in ((torch, "load"), (pickle, "load"), (pickle, "loads")):
        monkeypatch.setattr(module, name, refuse)
    assert Translator.load(ASSETS).translate(["Ein Hund."])[0] == expected == "A dog."


@pytest.mark.slow
def test_the_app_refuses_to_start_with_a_broken_file(model_dir):
    (model_dir / "model-00001-of-00002.safetensors").write_bytes(b"truncated")
    env = dict(os.environ, EXPLORER_MODEL_DIR=str(model_dir), GRADIO_ANALYTICS_ENABLED="False")
    done = subprocess.run([sys.executable, "app.py", "--port", "1"], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 2, done.stderr[-2000:]
    assert "model-00001-of-00002.safetensors" in done.stderr and "git checkout assets/" in done.stderr
    assert "Traceback" not in done.stderr and "Running on" not in done.stdout
