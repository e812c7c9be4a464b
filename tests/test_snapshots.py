"""A training run's history (issue 30's time-lapse): snapshots kept during training, stored as their difference
from the shipped model in fewer bits, listed and loaded by the Translator with its whole API."""
import copy
import json

import pytest
import torch

from core import checkpoint, translate
from core.checkpoint import FILE_LIMIT, decode_snapshot, dequantize, encode_snapshot, quantize
from core.model import make_model, subsequent_mask
from core.train import main
from core.translate import Translator, kept_snapshots
from tests.test_train import tiny_args


@pytest.mark.parametrize("bits", [4, 8])
def test_quantized_weights_are_within_half_a_step_of_each_value(bits):
    g = torch.Generator().manual_seed(bits)
    x = torch.randn(16, 96, generator=g) * torch.logspace(-4, 0, 16).unsqueeze(1)  # rows of very unlike scales
    q, scale = quantize(x, bits)
    top = 2 ** (bits - 1) - 1
    assert q.dtype == torch.int8 and int(q.min()) >= -top - 1 and int(q.max()) <= top
    assert scale.shape == (16, 96 // checkpoint.GROUP)
    step = scale.float().repeat_interleave(checkpoint.GROUP, 1)
    err = (dequantize(q, scale) - x).abs()
    assert bool((err <= step * (0.5 + 1e-6)).all())  # half a step of the scale as stored
    # a row whose length is no multiple of the group shares one scale
    assert quantize(torch.randn(3, 7, generator=g), bits)[1].shape == (3, 1)


def test_four_bit_packing_keeps_every_value():
    q = torch.arange(-8, 8, dtype=torch.int8).repeat(3, 2)
    packed = checkpoint._pack4(q)
    assert packed.dtype == torch.uint8 and packed.shape == (3, 16)
    assert torch.equal(checkpoint._unpack4(packed), q)


def test_a_snapshot_stores_only_what_differs_from_its_base():
    torch.manual_seed(0)
    base = make_model(50, 50, N=1, d_model=32, d_ff=64, h=4, tie_weights=True)
    later = make_model(50, 50, N=1, d_model=32, d_ff=64, h=4, tie_weights=True)
    later.load_state_dict(base.state_dict())
    with torch.no_grad():
        later.encoder.layers[0].feed_forward.w_1.weight.add_(0.01)
        later.encoder.norm.b_2.add_(0.5)
    b, s = checkpoint.unique_state(base), checkpoint.unique_state(later)
    tensors = encode_snapshot(s, b, bits=8)
    assert set(tensors) == {"encoder.layers.0.feed_forward.w_1.weight:q", "encoder.layers.0.feed_forward.w_1.weight:scale",
                            "encoder.norm.b_2"}
    back = decode_snapshot(tensors, b, 8)
    assert all(torch.equal(back[k], v.float()) for k, v in b.items() if k not in (
        "encoder.layers.0.feed_forward.w_1.weight", "encoder.norm.b_2"))
    w = "encoder.layers.0.feed_forward.w_1.weight"
    assert (back[w] - s[w]).abs().max() <= 0.01 / 127  # the difference, 0.01 everywhere, to within its step
    assert torch.allclose(back["encoder.norm.b_2"], s["encoder.norm.b_2"], atol=1e-3)


@pytest.fixture(scope="module")
def tiny_history(tiny_data, tiny_spm, tmp_path_factory):
    """A tiny run with its history kept and exported in 8 bits, with two probe sentences."""
    _, spm = tiny_spm
    root = tmp_path_factory.mktemp("history")
    probes = root / "probes.txt"
    probes.write_text("Der Hund läuft im Park.\nDie Katze sitzt am See.\n")
    main(tiny_args(tiny_data, spm, root / "run", "--epochs", "2", "--snapshot-steps", "0,2,5", "--probes", str(probes),
                   "--export-to", str(root / "model"), "--average", "1", "--snapshot-bits", "8"))
    return root


@pytest.mark.slow
def test_the_translator_lists_the_runs_history_oldest_first(tiny_history):
    tr = Translator.load(tiny_history / "model")
    snaps = tr.snapshots()
    assert [s["label"] for s in snaps] == ["init", "step-2", "step-5", "epoch-1", "epoch-2"]
    assert all(set(s) == {"label", "step", "epoch", "train_loss", "val_loss"} for s in snaps)
    assert [s["step"] for s in snaps] == sorted(s["step"] for s in snaps)
    log = [json.loads(line) for line in (tiny_history / "run" / "log.jsonl").read_text().splitlines()]
    epochs = {r["epoch"]: r for r in log if r["type"] == "epoch"}
    assert snaps[-1]["val_loss"] == epochs[2]["val_loss"] and snaps[-1]["train_loss"] == epochs[2]["train_loss"]
    assert snaps[0]["train_loss"] is None and snaps[0]["val_loss"] > snaps[-1]["val_loss"]
    sizes = [p.stat().st_size for p in (tiny_history / "model" / "snapshots").glob("*.safetensors")]
    assert len(sizes) == 5 and max(sizes) < FILE_LIMIT
    assert Translator(tr.model, tr.tokenizer, tr.config).snapshots() == []  # a model from no folder has none


@pytest.mark.slow
def test_a_snapshot_translates_with_the_whole_api_and_says_what_was_recorded(tiny_history):
    directory = tiny_history / "model"
    index = json.loads((directory / "snapshots" / "index.json").read_text())
    probes = ["Der Hund läuft im Park.", "Die Katze sitzt am See."]
    for entry in index["snapshots"]:
        tr = Translator.load(directory, snapshot=entry["label"], half_rows=0)
        assert tr.snapshot == entry["label"] and tr.translate(probes) == entry["probes"]
    tr = Translator.load(directory, snapshot="step-5")
    ins = tr.inspect(probes[0], method="beam", beam=2)
    assert ins.cross.shape[:2] == (1, 4) and ins.translation == tr.translate(probes[0], beam=2)
    assert isinstance(tr.translate(probes[0], method="sample", seed=3), str)
    # its weights are the checkpoint's to within the 8-bit step of their difference from the shipped model
    run = torch.load(tiny_history / "run" / "snapshots" / "step_000005.pt", weights_only=True)["model"]
    mine = tr.model.state_dict()
    assert max(float((mine[k] - v).abs().max()) for k, v in run.items()) < 0.02
    assert not torch.equal(mine["encoder.layers.0.feed_forward.w_1.weight"],
                           Translator.load(directory).model.state_dict()["encoder.layers.0.feed_forward.w_1.weight"])
    with pytest.raises(KeyError, match="init, step-2"):
        Translator.load(directory, snapshot="step-3")


@pytest.mark.slow
def test_at_most_two_snapshots_stay_in_memory_the_least_recently_used_goes(tiny_history, monkeypatch):
    monkeypatch.setattr(translate, "_snapshots", type(translate._snapshots)())
    d = tiny_history / "model"
    first = Translator.load(d, snapshot="init")
    Translator.load(d, snapshot="step-2")
    assert Translator.load(d, snapshot="init") is first  # kept: not loaded again
    Translator.load(d, snapshot="epoch-1")
    assert kept_snapshots() == ["init", "epoch-1"]  # step-2 was used least recently
    loads = []
    monkeypatch.setattr(translate, "load_snapshot", lambda *a: loads.append(a) or checkpoint.load_snapshot(*a))
    Translator.load(d, snapshot="step-2")
    assert len(loads) == 1 and kept_snapshots() == ["epoch-1", "step-2"]


def nll_per_token(model, examples):
    """Teacher-forced NLL per target token, one sentence at a time with no padding, in float64."""
    model = copy.deepcopy(model).double().eval()
    nll = n = 0
    with torch.no_grad():
        for src, tgt in examples:
            s, t = torch.tensor([src]), torch.tensor([tgt[:-1]])
            out = model(s, t, torch.ones(1, 1, len(src), dtype=torch.bool), subsequent_mask(len(tgt) - 1))
            logp = model.generator(out)[0]
            nll -= float(logp.gather(-1, torch.tensor(tgt[1:]).unsqueeze(-1)).sum())
            n += len(tgt) - 1
    return nll / n


@pytest.mark.slow
def test_the_measures_over_the_run_are_each_snapshots_own(tiny_history, tiny_data, monkeypatch):
    from core.analysis import heads, timelapse
    from core.data import BOS, EOS, encode_pairs, load_split
    from core.evaluate import score
    pairs = load_split(tiny_data, "val")
    out = tiny_history / "timelapse.json"
    timelapse.main(["--data", str(tiny_data), "--model", str(tiny_history / "model"), "--out", str(out),
                    "--cache", str(tiny_history / "stages.json")])
    rows = json.loads(out.read_text())["snapshots"]
    tr = Translator.load(tiny_history / "model")
    assert [r["label"] for r in rows] == [s["label"] for s in tr.snapshots()]
    first, last = rows[0], rows[-1]
    # each loss is the snapshot's own teacher-forced NLL per token, computed here sentence by sentence in float64
    snap = Translator.load(tiny_history / "model", snapshot=last["label"], half_rows=0)
    examples = encode_pairs(snap.tokenizer, pairs, max_len=snap.max_src_tokens)
    assert last["val_loss"] == pytest.approx(nll_per_token(snap.model, examples), abs=2e-4)
    assert last["hidden_source_loss"] == pytest.approx(
        nll_per_token(snap.model, [([BOS, EOS], tgt) for _, tgt in examples]), abs=2e-4)
    # the trained model takes something from its source, more than the untrained one, which has nothing to lose
    gap = [r["hidden_source_loss"] - r["val_loss"] for r in (first, last)]
    assert gap[1] > 0 and gap[1] > gap[0] and abs(gap[0]) < 0.1
    assert last["val_loss"] == pytest.approx(tr.snapshots()[-1]["val_loss"], rel=0.02)  # 8 bits cost little
    assert last["bleu"] == pytest.approx(score(snap.translate([de for de, _ in pairs]), [en for _, en in pairs])["bleu"],
                                         abs=0.01)
    for kind, names in (("encoder", heads.SELF_MEASURES), ("cross", heads.CROSS_MEASURES)):
        assert set(last["heads"][kind]) == set(names)
        assert torch.tensor(last["heads"][kind]["entropy"]).shape == (1, 4)
    # a second run reads every snapshot from its cache
    monkeypatch.setattr(timelapse, "measure", lambda *a: pytest.fail("measured again"))
    timelapse.main(["--data", str(tiny_data), "--model", str(tiny_history / "model"), "--out", str(out),
                    "--cache", str(tiny_history / "stages.json")])
    assert json.loads(out.read_text())["snapshots"] == rows


@pytest.mark.slow
def test_an_export_ships_the_points_asked_for_within_the_size_limit(tiny_history, tmp_path, monkeypatch):
    import shutil

    from core import train
    target = tmp_path / "model"
    shutil.copytree(tiny_history / "model", target)
    entries = train.export_snapshots(tiny_history / "run", target, bits=4, labels=["init", "epoch-2"])
    assert [e["label"] for e in entries] == ["init", "epoch-2"] and all(e["bits"] == 4 for e in entries)
    assert [s["label"] for s in Translator.load(target).snapshots()] == ["init", "epoch-2"]
    assert sorted(p.name for p in (target / "snapshots").glob("*.safetensors")) == ["epoch-2.safetensors",
                                                                                    "init.safetensors"]
    with pytest.raises(SystemExit, match="step-3"):
        train.export_snapshots(tiny_history / "run", target, bits=4, labels=["init", "step-3"])
    # over the limit: it says so and leaves no part of an export behind
    monkeypatch.setattr(train, "SNAPSHOTS_LIMIT", entries[0]["bytes"] + 1)
    with pytest.raises(SystemExit, match="--snapshot-bits 4"):
        train.export_snapshots(tiny_history / "run", target, bits=4, labels=["init", "epoch-2"])
    assert not list((target / "snapshots").glob("*")) and Translator.load(target).snapshots() == []
