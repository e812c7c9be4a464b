"""A model directory like the shipped one with a history of points beside it, for the Time-lapse tab's tests
and benchmark where the shipped model ships none (tests/test_timelapse.py, python -m tools.bench --timelapse)."""
import json
import shutil

import torch

from core.data import ASSETS

HISTORY = ((0, 0.0), (30, 0.4), (200, 0.75), (400, 1.0))  # (step, share of the way from the init to the shipped)


def make_history(root):
    """A model directory like the shipped one with a history beside it, for the Time-lapse tab's tests: the
    shipped weights, and four points on the straight line from a fresh initialisation to them (steps 0, 30 and 200,
    then the end of epoch 1), exported as the training run would (8 bits), with measures over our own probe
    sentences. Not a training run: what it tests is the tab's mechanics, on weights that translate differently."""
    from core.analysis import timelapse
    from core.checkpoint import load_pretrained, model_from_config
    from core.data import nonblank_lines
    from core.train import export_snapshots
    from core.translate import Translator
    model, run = root / "model", root / "run"
    shutil.copytree(ASSETS, model, ignore=shutil.ignore_patterns("snapshots", "timelapse.json"))
    base, config = load_pretrained(model)
    torch.manual_seed(0)
    init = model_from_config(config).state_dict()
    (run / "snapshots").mkdir(parents=True)
    records = []
    for k, (step, share) in enumerate(HISTORY):
        state = {n: init[n] + share * (v - init[n]) for n, v in base.state_dict().items()}
        last = k == len(HISTORY) - 1
        file = "epoch_01.pt" if last else f"snapshots/step_{step:06d}.pt"
        torch.save({"model": state}, run / file)
        loss = 9.0 - 7.4 * share
        records.append({"type": "epoch", "epoch": 1, "step": step, "val_loss": loss, "train_loss": loss + 0.2} if last
                       else {"type": "snapshot", "step": step, "epoch": 0, "train_loss": None if k == 0 else loss + 0.3,
                             "val_loss": loss, "file": file})
    (run / "log.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    probes = nonblank_lines((ASSETS / "probes.txt").read_text(encoding="utf-8"))
    export_snapshots(run, model, 8, probes)
    shipped = Translator.load(model)
    pairs = list(zip(probes, shipped.translate(probes)))
    (model / "timelapse.json").write_text(json.dumps(timelapse.compute(model, pairs)))
    return model
