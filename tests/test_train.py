"""Training pieces: the Noam rate, label smoothing, the copy task, resume, DDP and checkpoints."""
import json
import math
import os
import signal
import subprocess
import sys
import time

import pytest
import torch
import torch.multiprocessing as mp

from core.checkpoint import load_pretrained, model_from_config, save_pretrained
from core.data import Batch, load_split, load_tokenizer
from core.decode import greedy_decode
from core.evaluate import score
from core.model import make_model
from core.train import LabelSmoothing, SimpleLossCompute, TrainState, average_checkpoints, main, rate, run_epoch
from core.translate import Translator
from tests.conftest import ROOT, free_port


def test_noam_rate_at_known_steps():
    d, warmup = 512, 4000
    # peak at step == warmup: d^-0.5 * warmup^-0.5
    assert rate(4000, d, 1.0, warmup) == pytest.approx(1 / math.sqrt(512 * 4000))
    assert rate(4000, d, 1.0, warmup) == pytest.approx(6.987712429686844e-04)
    assert rate(1, d, 1.0, warmup) == pytest.approx(512 ** -0.5 * 4000 ** -1.5)
    assert rate(0, d, 1.0, warmup) == rate(1, d, 1.0, warmup)
    assert rate(16000, d, 2.0, warmup) == pytest.approx(2 / math.sqrt(512 * 16000))
    # linear increase before warmup, inverse square root decay after
    assert rate(2000, d, 1.0, warmup) == pytest.approx(rate(1000, d, 1.0, warmup) * 2)
    assert rate(16000, d, 1.0, warmup) == pytest.approx(rate(4000, d, 1.0, warmup) / 2)


def test_lambdalr_follows_noam():
    p = torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.Adam([p], lr=1.0, betas=(0.9, 0.98), eps=1e-9)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: rate(s, 256, 0.8, 100))
    for step in range(0, 300):
        assert opt.param_groups[0]["lr"] == pytest.approx(rate(step, 256, 0.8, 100))
        opt.step()
        sched.step()


def test_label_smoothing_target_distribution():
    V, eps, pad = 6, 0.4, 0
    crit = LabelSmoothing(V, pad, eps)
    x = torch.log_softmax(torch.randn(3, V), -1)
    target = torch.tensor([2, 5, pad])
    crit(x, target)
    td = crit.true_dist
    assert td[0, 2] == pytest.approx(1 - eps) and td[1, 5] == pytest.approx(1 - eps)
    assert torch.all(td[:2, pad] == 0)
    assert td[0, 1] == pytest.approx(eps / (V - 2))
    torch.testing.assert_close(td[:2].sum(-1), torch.ones(2))  # a distribution over non-pad tokens
    assert torch.all(td[2] == 0)  # padding positions contribute nothing


def test_label_smoothing_loss_is_kl_divergence_in_float64():
    V, eps = 7, 0.1
    crit = LabelSmoothing(V, 0, eps)
    x = torch.log_softmax(torch.randn(4, V), -1)
    target = torch.tensor([1, 3, 6, 2])
    loss = crit(x, target)
    q = torch.full((4, V), eps / (V - 2), dtype=torch.float64)
    q[torch.arange(4), target] = 1 - eps
    q[:, 0] = 0
    kl = sum(q[i, j] * (math.log(q[i, j]) - x[i, j].double()) for i in range(4) for j in range(V) if q[i, j] > 0)
    assert loss.item() == pytest.approx(kl.item(), rel=1e-5)


def test_label_smoothing_penalizes_overconfidence():
    """With smoothing the loss is lowest below full confidence in the right token."""
    crit = LabelSmoothing(5, 0, 0.1)

    def loss_at(p):
        probs = torch.tensor([[1e-9, p, (1 - p) / 3, (1 - p) / 3, (1 - p) / 3]])
        return crit(probs.log(), torch.tensor([1])).item()

    assert loss_at(0.9) < loss_at(0.999) and loss_at(0.9) < loss_at(0.5)


def copy_batch(V, B, L, g):
    data = torch.randint(4, V, (B, L), generator=g)
    data[:, 0] = 2  # <s>
    return Batch(data[:, 1:].clone(), data, pad=0)


@pytest.mark.slow
def test_copy_task_learns_within_seconds():
    """The Annotated Transformer's first example: learn to copy random symbols."""
    torch.manual_seed(0)
    V = 11
    model = make_model(V, V, N=2, d_model=32, d_ff=64, h=4, dropout=0.0)
    opt = torch.optim.Adam(model.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: rate(s, 32, 1.0, 100))
    loss_compute = SimpleLossCompute(model.generator, LabelSmoothing(V, 0, 0.0))
    g = torch.Generator().manual_seed(0)
    model.train()
    for _ in range(400):
        b = copy_batch(V, 32, 8, g)
        _, loss = loss_compute(model(b.src, b.tgt, b.src_mask, b.tgt_mask), b.tgt_y, b.ntokens)
        loss.backward()
        opt.step()
        opt.zero_grad()
        sched.step()
    model.eval()
    test = copy_batch(V, 64, 8, torch.Generator().manual_seed(123))
    out = greedy_decode(model, test.src, test.src_mask, 7, bos=2, eos=3)
    exact = sum(o[:7] == s.tolist() for o, s in zip(out, test.src))
    assert exact / 64 >= 0.9


def test_save_and_load_pretrained_sharded_roundtrip(tmp_path):
    model = make_model(40, 40, N=1, d_model=32, d_ff=64, h=4).eval()
    config = {"src_vocab": 40, "tgt_vocab": 40, "N": 1, "d_model": 32, "d_ff": 64, "h": 4, "dropout": 0.1,
              "max_len": 5000, "tie_weights": True}
    save_pretrained(model, config, tmp_path, dtype=torch.float32, max_shard_bytes=20_000)
    shards = sorted(p.name for p in tmp_path.glob("model-*.safetensors"))
    assert len(shards) > 1 and (tmp_path / "model.safetensors.index.json").exists()
    loaded, cfg = load_pretrained(tmp_path)
    assert cfg == config
    for (n, a), (_, b) in zip(model.state_dict().items(), loaded.state_dict().items()):
        assert torch.equal(a, b), n
    assert loaded.generator.proj.weight is loaded.src_embed[0].lut.weight  # tying survives loading
    save_pretrained(model, config, tmp_path)  # float16, one file
    half, _ = load_pretrained(tmp_path)
    assert not list(tmp_path.glob("model-*.safetensors"))
    torch.testing.assert_close(half.generator.proj.weight, model.generator.proj.weight, atol=1e-3, rtol=1e-3)


def test_average_checkpoints_is_elementwise_mean(tmp_path):
    states = [make_model(20, 20, N=1, d_model=16, d_ff=32, h=2).state_dict() for _ in range(3)]
    for i, s in enumerate(states):
        torch.save({"model": s}, tmp_path / f"epoch_{i:02d}.pt")
    avg = average_checkpoints(sorted(tmp_path.glob("epoch_*.pt")))
    key = "encoder.layers.0.feed_forward.w_1.weight"
    torch.testing.assert_close(avg[key], (states[0][key] + states[1][key] + states[2][key]) / 3)


def tiny_args(data, spm, run_dir, *extra):
    return ["--data-dir", str(data), "--spm", str(spm), "--run-dir", str(run_dir), "--layers", "1", "--d-model",
            "32", "--d-ff", "64", "--heads", "4", "--max-tokens", "400", "--warmup", "20", "--bleu-every", "0",
            "--threads", "1", "--no-progress", "--probes", "none", "--dropout", "0.0", *extra]


def read_log(path):
    recs = [json.loads(line) for line in path.read_text().splitlines()]
    return recs, [r for r in recs if r["type"] == "step"], [r for r in recs if r["type"] == "epoch"]


@pytest.mark.slow
def test_training_logs_evaluates_and_resumes(tiny_data, tiny_spm, tmp_path):
    _, spm = tiny_spm
    probes = tmp_path / "probes.txt"
    probes.write_text("Der Hund läuft im Park.\n\n  Die Katze sitzt am See.  \n")
    main(tiny_args(tiny_data, spm, tmp_path / "a", "--epochs", "2", "--dropout", "0.1", "--bleu-every", "2",
                   "--probes", str(probes)))
    recs, steps, epochs = read_log(tmp_path / "a" / "log.jsonl")
    assert recs[0]["type"] == "config" and len(epochs) == 2
    assert recs[0]["args"]["run_dir"] == str(tmp_path / "a")
    assert [r["step"] for r in steps] == list(range(1, len(steps) + 1))
    for r in steps:  # the logged rate is the Noam rate of that step
        assert r["lr"] == pytest.approx(rate(r["step"] - 1, 32, 1.0, 20))
    # below the uniform guess over the 64 pieces after one epoch, and lower again after the second
    assert epochs[0]["val_loss"] < math.log(64)
    assert epochs[1]["val_loss"] < epochs[0]["val_loss"] - 0.05
    assert epochs[1]["val_ppl"] == pytest.approx(math.exp(epochs[1]["val_loss"]))
    assert sorted(p.name for p in (tmp_path / "a").glob("epoch_*.pt")) == ["epoch_01.pt", "epoch_02.pt"]
    # greedy BLEU every second epoch, of the epoch checkpoint's translations of val; the probes translated
    assert "val_bleu" not in epochs[0]
    model = model_from_config(recs[0]["model"])
    model.load_state_dict(torch.load(tmp_path / "a" / "epoch_02.pt")["model"])
    translator = Translator(model, load_tokenizer(tmp_path / "a" / "spm.model"), recs[0]["model"], half_rows=0)
    val = load_split(tiny_data, "val")
    assert epochs[1]["val_bleu"] == pytest.approx(score(translator.translate([de for de, _ in val]),
                                                        [en for _, en in val])["bleu"])
    assert epochs[1]["probes"] == translator.translate(["Der Hund läuft im Park.", "Die Katze sitzt am See."])

    # stop part-way twice, then resume: the same steps with the same losses (dropout masks included)
    # and the same validation figures as the uninterrupted run; the log continues without gaps
    common = ("--epochs", "2", "--dropout", "0.1", "--bleu-every", "2", "--probes", str(probes))
    main(tiny_args(tiny_data, spm, tmp_path / "b", *common, "--max-steps", "5"))
    assert [r["step"] for r in read_log(tmp_path / "b" / "log.jsonl")[1]] == [1, 2, 3, 4, 5]
    main(tiny_args(tiny_data, spm, tmp_path / "b", *common, "--max-steps", str(len(steps) // 2 + 3), "--resume"))
    main(tiny_args(tiny_data, spm, tmp_path / "b", *common, "--resume"))
    recs_b, steps_b, epochs_b = read_log(tmp_path / "b" / "log.jsonl")
    assert [r["step"] for r in steps_b] == [r["step"] for r in steps]
    assert [r["loss"] for r in steps_b] == pytest.approx([r["loss"] for r in steps], rel=1e-6)
    assert [r["val_loss"] for r in epochs_b] == pytest.approx([r["val_loss"] for r in epochs], rel=1e-6)
    assert epochs_b[1]["probes"] == epochs[1]["probes"]
    assert [r["type"] for r in recs_b].count("config") == 1


@pytest.mark.slow
def test_snapshots_keep_the_runs_history_without_changing_it(tiny_data, tiny_spm, tmp_path):
    _, spm = tiny_spm
    common = ("--epochs", "1", "--dropout", "0.1")
    main(tiny_args(tiny_data, spm, tmp_path / "plain", *common, "--snapshot-steps", ""))
    main(tiny_args(tiny_data, spm, tmp_path / "kept", *common, "--snapshot-steps", "0,2,5", "--max-steps", "3"))
    main(tiny_args(tiny_data, spm, tmp_path / "kept", *common, "--snapshot-steps", "0,2,5", "--resume"))
    recs, steps, epochs = read_log(tmp_path / "kept" / "log.jsonl")
    _, plain_steps, _ = read_log(tmp_path / "plain" / "log.jsonl")
    # the same training, dropout masks included, with its history kept (and kept once across the resume)
    assert [r["loss"] for r in steps] == pytest.approx([r["loss"] for r in plain_steps], rel=1e-6)
    snaps = [r for r in recs if r["type"] == "snapshot"]
    assert [r["step"] for r in snaps] == [0, 2, 5] and snaps[0]["train_loss"] is None
    assert sorted(p.name for p in (tmp_path / "kept" / "snapshots").iterdir()) == [
        "step_000000.pt", "step_000002.pt", "step_000005.pt"]
    # a snapshot's training loss is that of the steps since the one before it, per token
    by_step = {r["step"]: r for r in steps}
    mine = [by_step[k] for k in (3, 4, 5)]
    assert snaps[2]["train_loss"] == pytest.approx(sum(r["loss"] * r["tokens"] for r in mine) /
                                                   sum(r["tokens"] for r in mine))
    assert epochs[0]["train_loss"] == pytest.approx(sum(r["loss"] * r["tokens"] for r in steps) /
                                                    sum(r["tokens"] for r in steps))
    # the weights are those of that step: the initialisation is a fresh model's of the same seed, and each
    # snapshot's val loss is its weights' own
    config = recs[0]["model"]
    torch.manual_seed(0)
    fresh = model_from_config(config)
    first = torch.load(tmp_path / "kept" / snaps[0]["file"], weights_only=True)
    assert all(torch.equal(v, first["model"][k]) for k, v in fresh.state_dict().items())
    from core.data import BatchLoader, encode_pairs, token_batches
    from core.train import evaluate_loss
    val = encode_pairs(load_tokenizer(spm), load_split(tiny_data, "val"), 128)
    for snap in snaps:
        model = model_from_config(config)
        model.load_state_dict(torch.load(tmp_path / "kept" / snap["file"], weights_only=True)["model"])
        loss = evaluate_loss(model, BatchLoader(val, token_batches(val, 400, shuffle=False), torch.device("cpu")))
        assert snap["val_loss"] == pytest.approx(loss["val_loss"], rel=1e-5)
    assert snaps[0]["val_loss"] > snaps[2]["val_loss"]


def tiny_batches(V, n, g):
    return [copy_batch(V, 4 + i, 6, g) for i in range(n)]


def test_run_epoch_accumulates_gradients_and_steps_at_the_schedules_rate():
    """accum_iter batches make one optimizer step with the mean of their per-token gradients; the
    last step takes what is left; each record holds the rate that step used."""
    torch.manual_seed(0)
    V = 11
    model = make_model(V, V, N=1, d_model=16, d_ff=32, h=2, dropout=0.0)
    loss_compute = SimpleLossCompute(model.generator, LabelSmoothing(V, 0, 0.1))
    batches = tiny_batches(V, 5, torch.Generator().manual_seed(1))
    before = {k: v.clone() for k, v in model.state_dict().items()}
    # the reference: each batch's per-token gradient at the starting weights
    grads = []
    for b in batches[:2]:
        model.zero_grad()
        loss_compute(model(b.src, b.tgt, b.src_mask, b.tgt_mask), b.tgt_y, b.ntokens)[1].backward()
        grads.append({n: p.grad.clone() for n, p in model.named_parameters()})
    model.zero_grad(set_to_none=True)

    opt = torch.optim.SGD(model.parameters(), lr=1.0)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 0.5 / (s + 1))
    state, records = TrainState(epoch=3), []
    first_step = {}

    def on_step(record):
        records.append(record)
        if record["step"] == 1:
            first_step.update({k: v.clone() for k, v in model.state_dict().items()})
        return False

    loss, stopped = run_epoch(batches, model, loss_compute, opt, sched, accum_iter=2, train_state=state,
                              on_step=on_step)
    assert not stopped and (state.step, state.batch_pos) == (3, 5)
    assert [r["lr"] for r in records] == pytest.approx([0.5, 0.25, 0.5 / 3])
    assert [r["tokens"] for r in records] == [batches[0].ntokens + batches[1].ntokens,
                                              batches[2].ntokens + batches[3].ntokens, batches[4].ntokens]
    assert all(r["epoch"] == 3 and r["type"] == "step" for r in records)
    total = sum(r["loss"] * r["tokens"] for r in records) / sum(r["tokens"] for r in records)
    assert loss == pytest.approx(total)
    for name, p in model.named_parameters():  # SGD at rate 0.5: w1 = w0 - 0.5 * (g_a + g_b) / 2
        expected = before[name] - 0.5 * (grads[0][name] + grads[1][name]) / 2
        torch.testing.assert_close(first_step[name], expected, rtol=1e-5, atol=1e-6)


def test_run_epoch_stops_when_asked():
    torch.manual_seed(0)
    model = make_model(11, 11, N=1, d_model=16, d_ff=32, h=2, dropout=0.0)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0)
    state = TrainState(step=10, batch_pos=4)
    batches = tiny_batches(11, 6, torch.Generator().manual_seed(2))
    _, stopped = run_epoch(batches, model, SimpleLossCompute(model.generator, LabelSmoothing(11, 0, 0.0)), opt,
                           sched, accum_iter=2, train_state=state, on_step=lambda r: r["step"] == 12)
    assert stopped and (state.step, state.batch_pos) == (12, 8)
    assert all(p.grad is None for p in model.parameters())  # no gradient left over for the next run


def test_train_state_saves_and_resumes_as_one(tmp_path):
    torch.manual_seed(0)
    model = make_model(20, 20, N=1, d_model=16, d_ff=32, h=2)
    opt = torch.optim.Adam(model.parameters(), lr=1.0)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: rate(s, 16, 1.0, 10))
    model(torch.ones(1, 3, dtype=torch.long), torch.ones(1, 2, dtype=torch.long), None, None).sum().backward()
    opt.step()
    sched.step()
    state = TrainState(step=7, epoch=2, batch_pos=13, minutes=5.0)
    state.save(tmp_path / "last.pt", model, opt, sched)
    expected_noise = torch.rand(3)  # what the RNG gives next after the save
    saved = {k: v.clone() for k, v in model.state_dict().items()}

    torch.manual_seed(1)
    model2 = make_model(20, 20, N=1, d_model=16, d_ff=32, h=2)
    opt2 = torch.optim.Adam(model2.parameters(), lr=1.0)
    sched2 = torch.optim.lr_scheduler.LambdaLR(opt2, lambda s: rate(s, 16, 1.0, 10))
    resumed = TrainState.load(tmp_path / "last.pt", model2, opt2, sched2)
    assert (resumed.step, resumed.epoch, resumed.batch_pos) == (7, 2, 13)
    assert 5.0 <= resumed.minutes < 5.5  # the earlier minutes plus this process's few seconds
    assert torch.equal(torch.rand(3), expected_noise)
    for k, v in model2.state_dict().items():
        assert torch.equal(v, saved[k]), k
    assert sched2.last_epoch == 1 and opt2.param_groups[0]["lr"] == pytest.approx(rate(1, 16, 1.0, 10))
    torch.testing.assert_close(opt2.state_dict()["state"][0]["exp_avg"], opt.state_dict()["state"][0]["exp_avg"])
    assert not (tmp_path / "last.tmp").exists()


def _ddp_worker(rank, world, port, argv, out):
    os.environ.update(RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank), MASTER_ADDR="127.0.0.1",
                      MASTER_PORT=str(port))
    model = main(argv)
    torch.save(model.state_dict(), os.path.join(out, f"rank{rank}.pt"))


@pytest.mark.slow
def test_ddp_two_cpu_processes_end_with_identical_weights(tiny_data, tiny_spm, tmp_path):
    _, spm = tiny_spm
    argv = tiny_args(tiny_data, spm, tmp_path / "run", "--epochs", "1", "--device", "cpu", "--accum-iter", "2")
    mp.spawn(_ddp_worker, args=(2, free_port(), argv, str(tmp_path)), nprocs=2, join=True)
    a = torch.load(tmp_path / "rank0.pt")
    b = torch.load(tmp_path / "rank1.pt")
    torch.manual_seed(0)  # the run's seed: the same initial weights as both ranks started from
    init = make_model(64, 64, N=1, d_model=32, d_ff=64, h=4, dropout=0.0, max_len=512).state_dict()
    for k in a:
        assert torch.equal(a[k], b[k]), k
    assert torch.equal(init["decoder.norm.a_2"], torch.ones(32))
    moved = [k for k in a if not torch.equal(a[k], init[k])]
    assert len(moved) == len(a)  # every tensor was trained
    recs, steps, epochs = read_log(tmp_path / "run" / "log.jsonl")
    assert recs[0]["world_size"] == 2 and len(epochs) == 1
    # each process trains on its half of the batches, two batches a step: a quarter of the batches' steps
    n_batches = recs[0]["batching"]["token_based"]["batches"]
    assert len(steps) == math.ceil(n_batches // 2 / 2)
    assert all(math.isfinite(r["loss"]) for r in steps)


def step_lines(log):
    """{step: its log line} of the step records in a log (a last line cut short left out)."""
    out = {}
    for line in log.read_text().splitlines():
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            continue
        if rec["type"] == "step":
            out[rec["step"]] = line
    return out


@pytest.mark.slow
def test_a_run_killed_mid_epoch_resumes_from_its_last_whole_checkpoint(tiny_data, tiny_spm, tmp_path, capfd):
    """SIGKILL part-way (no clean stop), then the newest checkpoint damaged as a kill during its write would
    leave it: the resumed run reads the one before, and its log, losses and rates are those of a run that was
    never interrupted, with no step missing or twice."""
    _, spm = tiny_spm
    common = ("--epochs", "2", "--dropout", "0.1")
    main(tiny_args(tiny_data, spm, tmp_path / "a", *common))
    steps = read_log(tmp_path / "a" / "log.jsonl")[1]

    run = tmp_path / "b"
    argv = tiny_args(tiny_data, spm, run, *common, "--save-every-min", "0.0001")  # a resume point every step
    child = subprocess.Popen([sys.executable, "-m", "core.train", *argv], cwd=ROOT)
    log = run / "log.jsonl"
    deadline = time.monotonic() + 300
    while child.poll() is None and time.monotonic() < deadline:  # until half the steps are logged
        if log.exists() and log.read_text().count('"type": "step"') >= len(steps) // 2:
            break
        time.sleep(0.02)
    assert child.poll() is None, "the run ended before it could be killed"
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    last = run / "last.pt"
    assert last.exists() and (run / "last.prev.pt").exists()
    # cut short, as a new file under its name: killed between TrainState.save's two renames, last.pt and
    # last.prev.pt are one file under two names (a hard link), which a write in place would cut short both of
    cut = run / "last.cut"
    cut.write_bytes(last.read_bytes()[: last.stat().st_size // 2])
    os.replace(cut, last)
    resumed_at = torch.load(run / "last.prev.pt", weights_only=True)["step"]
    assert 0 < resumed_at < len(steps)
    logged = step_lines(log)

    main(tiny_args(tiny_data, spm, run, *common, "--resume"))
    assert "last.pt cannot be read" in capfd.readouterr().err
    # the steps up to the resume point were kept as the killed process wrote them (their timings included),
    # not trained again
    assert {k: v for k, v in step_lines(log).items() if k <= resumed_at} == \
        {k: v for k, v in logged.items() if k <= resumed_at}
    recs_b, steps_b, epochs_b = read_log(log)
    assert [r["step"] for r in steps_b] == list(range(1, len(steps) + 1))
    assert [r["loss"] for r in steps_b] == pytest.approx([r["loss"] for r in steps], rel=1e-6)
    for r in steps_b:  # the Noam curve continues where it was
        assert r["lr"] == pytest.approx(rate(r["step"] - 1, 32, 1.0, 20))
    assert [r["epoch"] for r in epochs_b] == [1, 2] and [r["type"] for r in recs_b].count("config") == 1
