"""Training pieces: the Noam rate, label smoothing, the copy task, resume, DDP and checkpoints."""
import json
import math
import os
import socket

import pytest
import torch
import torch.multiprocessing as mp

from core.checkpoint import load_pretrained, save_pretrained
from core.data import Batch
from core.decode import greedy_decode
from core.model import make_model
from core.train import LabelSmoothing, SimpleLossCompute, average_checkpoints, rate


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


def tiny_args(data, spm, out, *extra):
    return ["--data-dir", str(data), "--spm", str(spm), "--out", str(out), "--layers", "1", "--d-model", "32",
            "--d-ff", "64", "--heads", "4", "--max-tokens", "400", "--warmup", "20", "--bleu-every", "0",
            "--threads", "1", "--no-progress", "--probes", "none", "--dropout", "0.0", *extra]


def test_training_logs_and_resumes(tiny_data, tiny_spm, tmp_path):
    from core.train import main
    _, spm = tiny_spm
    main(tiny_args(tiny_data, spm, tmp_path / "a", "--epochs", "2"))
    recs = [json.loads(l) for l in (tmp_path / "a" / "log.jsonl").read_text().splitlines()]
    steps = [r for r in recs if r["type"] == "step"]
    epochs = [r for r in recs if r["type"] == "epoch"]
    assert recs[0]["type"] == "config" and len(epochs) == 2
    assert [r["step"] for r in steps] == list(range(1, len(steps) + 1))
    for r in steps:  # the logged rate is the Noam rate of that step
        assert r["lr"] == pytest.approx(rate(r["step"] - 1, 32, 1.0, 20))
    assert epochs[1]["val_loss"] < epochs[0]["val_loss"] or epochs[1]["val_loss"] < 3.0

    # stop part-way, then resume: the same number of steps, the log continues without gaps
    main(tiny_args(tiny_data, spm, tmp_path / "b", "--epochs", "2", "--max-steps", "5"))
    main(tiny_args(tiny_data, spm, tmp_path / "b", "--epochs", "2", "--resume"))
    recs_b = [json.loads(l) for l in (tmp_path / "b" / "log.jsonl").read_text().splitlines()]
    steps_b = [r["step"] for r in recs_b if r["type"] == "step"]
    assert steps_b == [r["step"] for r in steps]
    assert len([r for r in recs_b if r["type"] == "epoch"]) == 2


def _ddp_worker(rank, world, port, argv, out):
    os.environ.update(RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank), MASTER_ADDR="127.0.0.1",
                      MASTER_PORT=str(port))
    from core.train import main
    model = main(argv)
    torch.save(model.state_dict(), os.path.join(out, f"rank{rank}.pt"))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_ddp_two_cpu_processes_end_with_identical_weights(tiny_data, tiny_spm, tmp_path):
    _, spm = tiny_spm
    argv = tiny_args(tiny_data, spm, tmp_path / "run", "--epochs", "1", "--device", "cpu")
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
