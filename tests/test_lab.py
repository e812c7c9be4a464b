"""The Lab (core/lab/): each break changes exactly what it names, the intact copy model learns its task, and
accumulated gradients equal one large batch's; then the shipped results and the Lab tab's callbacks."""
import json
import math
import subprocess
import sys

import pytest
import torch
import torch.nn.functional as F

from app.figures.lab import READINGS, examples_html, reading
from app.i18n import speaking
from core import lab
from core.instrument import attention_name, run_with_cache
from core.lab import BREAKS, PAD, Config, build_model, held_parameters, lr_lambda, masks, to_batch
from core.model import Embeddings, PositionalEncoding, SublayerConnection
from core.train import rate
from tests.conftest import ROOT
from tools import lab_table
from tools.i18n_report import CJK, english, value_strings

N = lab.SIZE["N"]


def size(modules):
    return sum(p.numel() for m in modules for p in m.parameters())


def registered(model):
    return sum(p.numel() for p in model.parameters())


def batch(task="copy", n=6, seed=0):
    return to_batch(task, lab.sample(n, torch.Generator().manual_seed(seed)))


def attention_weights(model, b, breaks=()):
    """The weights of every attention layer in one forward pass, by role: {(stack, layer, kind): (B, H, q, k)}."""
    src_mask, tgt_mask = masks(b.src, b.tgt, breaks)
    model.eval()
    _, cache = run_with_cache(model, b.src, b.tgt, src_mask, tgt_mask, names=["*:weights"], output=False)
    out = {}
    for i in range(len(model.encoder.layers)):
        out["encoder", i, "self"] = cache[attention_name("encoder", i)]
    for i in range(len(model.decoder.layers)):
        out["decoder", i, "self"], out["decoder", i, "cross"] = (cache[attention_name(k, i)] for k in ("decoder", "cross"))
    return out


# ---- tasks ---------------------------------------------------------------------------------------------

def test_tasks_and_padding():
    seqs = [[3, 1, 2, 0], [9, 8, 7, 6, 5]]
    assert lab.answer("copy", seqs[0]) == [3, 1, 2, 0]
    assert lab.answer("reverse", seqs[0]) == [0, 2, 1, 3]
    assert lab.answer("sort", seqs[0]) == [0, 1, 2, 3]
    b = to_batch("reverse", seqs)
    assert b.src.tolist() == [[7, 5, 6, 4, PAD], [13, 12, 11, 10, 9]]
    assert b.tgt_y[0].tolist() == [4, 6, 5, 7, lab.EOS, PAD]  # the answer, </s>, then padding
    drawn = lab.sample(400, torch.Generator().manual_seed(1))
    assert {len(s) for s in drawn} == set(range(lab.MIN_LEN, lab.MAX_LEN + 1))  # lengths vary: batches are padded
    assert not any(lab.held_out(s) for s in drawn)
    held = lab.held_out_set()
    assert len(held) == lab.HELD_OUT and all(lab.held_out(s) for s in held)


# ---- each break changes what it names --------------------------------------------------------------------

def test_plain_list_hides_exactly_the_layers_and_leaves_them_untrained():
    intact, model = build_model(()), build_model(("plain_list",))
    assert isinstance(model.encoder.layers, list) and isinstance(model.decoder.layers, list)
    layers = size(model.encoder.layers) + size(model.decoder.layers)
    held = sum(p.numel() for p in held_parameters(model))
    assert held == registered(intact) == sum(p.numel() for p in held_parameters(intact))
    assert registered(model) == held - layers
    assert not any(k.startswith(("encoder.layers", "decoder.layers")) for k in model.state_dict())
    before = [p.detach().clone() for layer in model.encoder.layers + model.decoder.layers for p in layer.parameters()]
    embedding = model.src_embed[0].lut.weight.detach().clone()
    cfg = Config("copy", ("plain_list",), steps=3, seconds=60).checked()
    trained, _, _ = lab.fit(cfg)
    after = [p for layer in trained.encoder.layers + trained.decoder.layers for p in layer.parameters()]
    # build_model is seeded: the same initial weights; the layers' are unchanged, the registered ones moved
    assert all(torch.equal(a, b) for a, b in zip(before, after))
    assert not torch.equal(trained.src_embed[0].lut.weight, embedding)


def test_shared_layers_are_one_object_with_one_storage():
    intact, model = build_model(()), build_model(("shared_layers",))
    for stack in (model.encoder, model.decoder):
        assert all(layer is stack.layers[0] for layer in stack.layers)
        a, b = stack.layers[0].feed_forward.w_1.weight, stack.layers[1].feed_forward.w_1.weight
        assert a.data_ptr() == b.data_ptr()
    for stack in (intact.encoder, intact.decoder):
        assert stack.layers[0].feed_forward.w_1.weight.data_ptr() != stack.layers[1].feed_forward.w_1.weight.data_ptr()
    one = size([intact.encoder.layers[0]]) + size([intact.decoder.layers[0]])
    assert registered(model) == registered(intact) - (N - 1) * one


def test_no_subsequent_mask_lets_the_decoder_see_later_positions():
    b = batch()
    _, tgt_mask = masks(b.src, b.tgt, ("no_subsequent_mask",))
    _, std = masks(b.src, b.tgt, ())
    assert torch.equal(std, b.tgt_mask)  # intact: exactly Batch's mask
    assert torch.equal(tgt_mask, (b.tgt != PAD).unsqueeze(-2).expand_as(tgt_mask))  # padding only
    future = torch.triu(torch.ones(b.tgt.size(1), b.tgt.size(1), dtype=torch.bool), 1)
    broken = attention_weights(build_model(()), b, ("no_subsequent_mask",))
    intact = attention_weights(build_model(()), b)
    for i in range(N):
        assert broken["decoder", i, "self"][..., future].sum() > 0
        assert intact["decoder", i, "self"][..., future].sum() == 0


def test_no_padding_mask_lets_attention_reach_the_padding():
    b = batch(n=8)
    src_mask, tgt_mask = masks(b.src, b.tgt, ("no_padding_mask",))
    assert src_mask.all()
    assert torch.equal(tgt_mask[0], lab.subsequent_mask(b.tgt.size(1))[0])  # still causal
    pad = (b.src == PAD)[:, None, None, :]  # (B, 1, 1, S)
    assert pad.any()
    broken = attention_weights(build_model(()), b, ("no_padding_mask",))
    intact = attention_weights(build_model(()), b)
    for key in (("encoder", 0, "self"), ("decoder", N - 1, "cross")):
        assert (broken[key] * pad).sum() > 0
        assert (intact[key] * pad).sum() == 0


def test_no_positional_encoding_removes_only_the_addition():
    model, intact = build_model(("no_positional_encoding",)), build_model(())
    assert not any(isinstance(m, PositionalEncoding) for m in model.modules())
    assert model.src_embed[1] is not None and model.src_embed[1].p == intact.src_embed[1].dropout.p
    x = batch().src
    model.eval()
    assert torch.equal(model.src_embed(x), model.src_embed[0](x))  # the scaled embedding, nothing added
    # the encoder no longer knows order: permuting the source permutes its output
    src = torch.tensor([[5, 6, 7, 8, 9]])
    perm = torch.tensor([4, 2, 0, 3, 1])
    mask = torch.ones(1, 1, 5, dtype=torch.bool)
    with torch.no_grad():
        a, p = model.encode(src, mask), model.encode(src[:, perm], mask)
    torch.testing.assert_close(a[:, perm], p)


def test_no_scale_drops_exactly_the_division_by_sqrt_dk():
    b = batch()
    for breaks in ((), ("no_scale",)):
        model = build_model(breaks)
        weights = attention_weights(model, b, breaks)
        layer = model.encoder.layers[0].self_attn
        q_lin = layer.linears[0].linear if breaks else layer.linears[0]  # the original W^Q
        with torch.no_grad():
            x = model.encoder.layers[0].sublayer[0].norm(model.src_embed(b.src))
            q = q_lin(x).view(x.size(0), -1, layer.h, layer.d_k).transpose(1, 2)
            k = layer.linears[1](x).view(x.size(0), -1, layer.h, layer.d_k).transpose(1, 2)
            scores = q @ k.transpose(-2, -1) / (1.0 if breaks else math.sqrt(layer.d_k))
            scores = scores.masked_fill(~masks(b.src, b.tgt, breaks)[0].unsqueeze(1), -1e9)
        torch.testing.assert_close(weights["encoder", 0, "self"], scores.softmax(-1))


def test_rate_breaks():
    intact, flat, high = lr_lambda(()), lr_lambda(("no_warmup",)), lr_lambda(("high_lr",))
    peak = rate(lab.WARMUP, lab.SIZE["d_model"], lab.FACTOR, lab.WARMUP)
    assert max(intact(s) for s in range(1, 3000)) == pytest.approx(peak)
    for s in (1, 10, lab.WARMUP, 1000):
        assert flat(s) == peak
        assert high(s) == pytest.approx(lab.HIGH_LR_FACTOR * intact(s))
    assert intact(1) == pytest.approx(peak / lab.WARMUP)  # the intact schedule rises linearly from near 0


def test_post_norm_puts_the_norm_after_the_residual_sum():
    model = build_model(("post_norm",))
    intact = build_model(())
    sub = model.encoder.layers[0].sublayer[0]
    assert isinstance(sub, lab.PostNormSublayerConnection) and isinstance(sub, SublayerConnection)
    assert isinstance(model.encoder.norm, torch.nn.Identity) and isinstance(model.decoder.norm, torch.nn.Identity)
    assert registered(model) == registered(intact) - 4 * lab.SIZE["d_model"]  # the two final norms' gain, bias
    x = torch.randn(2, 5, lab.SIZE["d_model"])
    f = torch.nn.Linear(lab.SIZE["d_model"], lab.SIZE["d_model"])
    ref = F.layer_norm(x + f(x), (x.size(-1),), sub.norm.a_2, sub.norm.b_2, sub.norm.eps)
    torch.testing.assert_close(sub(x, f), ref)
    torch.testing.assert_close(intact.encoder.layers[0].sublayer[0](x, f), x + f(intact.encoder.layers[0].sublayer[0].norm(x)))


def test_depth_builds_its_layers_in_both_stacks_and_post_norm_at_every_sum():
    for layers in (lab.MIN_LAYERS, 4, lab.DEEP):
        model = build_model((), layers=layers)
        assert len(model.encoder.layers) == len(model.decoder.layers) == layers
        one = size([model.encoder.layers[0]]) + size([model.decoder.layers[0]])
        assert registered(model) == registered(build_model(())) + (layers - N) * one
    deep = build_model(("post_norm",), layers=lab.DEEP)
    x = torch.randn(2, 5, lab.SIZE["d_model"])
    f = torch.nn.Linear(lab.SIZE["d_model"], lab.SIZE["d_model"])
    subs = [sub for stack in (deep.encoder, deep.decoder) for layer in stack.layers for sub in layer.sublayer]
    assert len(subs) == lab.DEEP * (2 + 3)  # every residual sum: two per encoder layer, three per decoder layer
    assert len({id(sub.norm) for sub in subs}) == len(subs)  # each sum its own norm
    for sub in subs:
        assert isinstance(sub, lab.PostNormSublayerConnection)
        ref = F.layer_norm(x + f(x), (x.size(-1),), sub.norm.a_2, sub.norm.b_2, sub.norm.eps)
        torch.testing.assert_close(sub(x, f), ref)


def test_bad_depths_are_refused_and_budgets_scale_with_depth():
    for bad in (1, lab.MAX_LAYERS + 1, -2, 2.5, "6"):
        with pytest.raises(ValueError, match="layers must be a whole number from 2 to 6"):
            Config(layers=bad).checked()
    for task, (steps, seconds) in lab.BUDGET.items():
        assert Config(task).checked().layers == N
        assert (Config(task).checked().steps, Config(task).checked().seconds) == (steps, seconds)
        deep = Config(task, ("post_norm",), layers=6).checked()
        assert (deep.steps, deep.seconds) == (steps, seconds * 6 / N)  # the same steps, the seconds times 6 / 2
        intact = Config(task, layers=6).checked()
        assert (intact.steps, intact.seconds) == (deep.steps, deep.seconds)  # a fair comparison
    assert lab.train(Config("copy", layers=3, steps=2))["layers"] == 3


def test_default_depth_keys_are_unchanged():
    """A run at the Lab's depth keeps the key it was shipped with before depths existed; depths differ."""
    shipped = '{"accum": 1, "breaks": ["no_scale"], "seconds": 600.0, "seed": 0, "smoothing": 0.0, "steps": 700, ' \
              '"task": "reverse"}'
    assert shipped_runs()["reverse/no_scale"]["key"] == shipped
    for layers in (0, N):
        assert Config("reverse", ("no_scale",), seconds=600.0, layers=layers).key() == shipped
    keys = {Config("copy", layers=n).key() for n in range(lab.MIN_LAYERS, lab.MAX_LAYERS + 1)}
    assert len(keys) == lab.MAX_LAYERS - lab.MIN_LAYERS + 1
    assert lab.run_name(Config("copy", ("post_norm",), layers=6)) == "copy/post_norm@6"
    assert lab.run_name(Config("copy", ("post_norm",), layers=N)) == "copy/post_norm"


def test_default_init_is_pytorchs():
    model, intact = build_model(("default_init",)), build_model(())
    w = model.encoder.layers[0].feed_forward.w_1.weight  # kaiming-uniform(a = sqrt 5): U(+-1/sqrt(fan_in))
    bound = 1 / math.sqrt(w.size(1))
    assert w.abs().max() <= bound and w.abs().max() > 0.9 * bound
    xavier = math.sqrt(6 / sum(w.shape))
    assert intact.encoder.layers[0].feed_forward.w_1.weight.abs().max() > bound  # Xavier's wider bound
    assert intact.encoder.layers[0].feed_forward.w_1.weight.abs().max() <= xavier
    emb = model.src_embed[0].lut.weight  # nn.Embedding's N(0, 1), shared with the generator
    assert 0.8 < emb.std().item() < 1.2 and emb is model.generator.proj.weight
    assert intact.src_embed[0].lut.weight.std().item() < 0.5


def test_no_embedding_scale_and_untied():
    model = build_model(("no_embedding_scale",))
    assert isinstance(model.src_embed[0], torch.nn.Embedding) and not isinstance(model.src_embed[0], Embeddings)
    x = batch().src
    torch.testing.assert_close(model.src_embed[0](x), build_model(()).src_embed[0](x) / math.sqrt(lab.SIZE["d_model"]))
    assert model.src_embed[0].weight is model.generator.proj.weight  # still tied
    untied, intact = build_model(("untied",)), build_model(())
    w = [untied.src_embed[0].lut.weight, untied.tgt_embed[0].lut.weight, untied.generator.proj.weight]
    assert len({p.data_ptr() for p in w}) == 3
    assert registered(untied) == registered(intact) + 2 * lab.VOCAB * lab.SIZE["d_model"]


def test_every_break_is_tested_above():
    assert set(BREAKS) == {"shared_layers", "plain_list", "no_subsequent_mask", "no_padding_mask",
                           "no_positional_encoding", "no_scale", "no_warmup", "high_lr", "post_norm", "default_init",
                           "no_embedding_scale", "untied"}


def test_smoothing_and_bad_configurations():
    _, _, _, loss_compute = lab.setup(Config("copy", smoothing=0.2).checked())
    assert loss_compute.criterion.smoothing == 0.2
    for bad, message in ((Config("dance"), "unknown task"), (Config(breaks=("nope",)), "unknown break"),
                         (Config(smoothing=0.5), "smoothing"), (Config(accum=3), "accum")):
        with pytest.raises(ValueError, match=message):
            bad.checked()


# ---- accumulation ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("accum", [2, 8])
def test_accumulated_gradients_equal_one_large_batch(accum):
    check = lab.gradient_check("reverse", accum)
    assert check["max_rel_diff"] < 1e-5, check  # float32 rounding of sums taken in another order
    assert check["activation_bytes_accumulated"] < check["activation_bytes_one_batch"]


# ---- training -------------------------------------------------------------------------------------------

@pytest.mark.slow
def test_intact_copy_reaches_the_target():
    """The task's step budget with the fixed seed (the seconds left generous, so a busy machine cannot cut it)."""
    record = lab.train(Config("copy", seconds=600))
    assert record["steps"] == lab.BUDGET["copy"][0]
    assert record["exact_match"] >= lab.TARGETS["copy"], record["exact_match"]


@pytest.mark.slow
def test_cli_prints_one_json_line():
    out = subprocess.run([sys.executable, "-m", "core.lab", "--task", "sort", "--break", "plain_list", "--break",
                          "no_scale", "--steps", "2", "--json"], cwd=ROOT, capture_output=True, text=True, check=True)
    lines = out.stdout.strip().splitlines()
    assert len(lines) == 1
    r = json.loads(lines[0])
    for key in ("task", "breaks", "steps", "seconds", "train_loss", "exact_match", "params_held", "params_registered",
                "curve"):
        assert key in r
    assert r["breaks"] == ["no_scale", "plain_list"] and r["steps"] == 2 and len(r["curve"]["loss"]) == 2
    assert r["params_registered"] < r["params_held"]
    listing = subprocess.run([sys.executable, "-m", "core.lab", "--list"], cwd=ROOT, capture_output=True, text=True,
                             check=True).stdout
    assert all(name in listing for name in list(BREAKS) + list(lab.TASKS))
    assert "--layers" in listing
    for args in (["--accum", "3"], ["--layers", "9"]):
        bad = subprocess.run([sys.executable, "-m", "core.lab", *args], cwd=ROOT, capture_output=True, text=True)
        assert bad.returncode != 0 and "Traceback" not in bad.stderr
    assert "layers must be" in bad.stderr


@pytest.mark.slow
def test_cli_trains_at_a_depth():
    out = subprocess.run([sys.executable, "-m", "core.lab", "--task", "copy", "--break", "post_norm", "--layers", "6",
                          "--steps", "2", "--json"], cwd=ROOT, capture_output=True, text=True, check=True)
    r = json.loads(out.stdout)
    assert r["layers"] == 6 and r["breaks"] == ["post_norm"] and r["seconds_budget"] == lab.BUDGET["copy"][1] * 3
    assert len(r["attention"]["cross"]) == 6  # one map per decoder layer


# ---- the shipped results (assets/lab.json) ----------------------------------------------------------------

def shipped_runs():
    return json.loads((ROOT / "assets" / "lab.json").read_text())["runs"]


def test_every_single_break_is_shipped_for_every_task():
    runs = shipped_runs()
    for cfg in lab.shipped_configs():
        r = runs[lab.run_name(cfg)]
        layers = cfg.layers or N
        seconds = lab.BUDGET[cfg.task][1] * layers / N * lab.PRECOMPUTE_SECONDS_FACTOR
        assert r["key"] == Config(cfg.task, cfg.breaks, seconds=seconds, layers=cfg.layers).key()  # current settings
        assert r["steps"] == lab.BUDGET[cfg.task][0]  # the step budget, never cut short by the clock
        assert len(r["curve"]["loss"]) <= 125 and r["attention"]["cross"] and r["examples"]
        assert len(r["attention"]["cross"]) == len(r["attention"]["decoder"]) == layers
        assert r.get("layers", N) == layers
    deep = {lab.run_name(c) for c in lab.shipped_configs() if c.layers == lab.DEEP}
    assert deep == {f"{task}/{name}@{lab.DEEP}" for task in lab.TASKS for name in ("intact", "post_norm", "no_warmup")} | \
        {f"{task}/no_warmup+post_norm@{lab.DEEP}" for task in lab.TASKS}
    assert set(READINGS) == set(BREAKS) | {'+'.join(b) for b in lab.EXTRA} | \
        {lab.row_name(b, lab.DEEP) for b in lab.DEEP_RUNS}
    assert len((ROOT / "assets" / "lab.json").read_bytes()) < 450_000  # 54 runs, the deep ones with 6 layers of maps


def test_precompute_retrains_nothing_shipped(monkeypatch, tmp_path):
    path = tmp_path / "lab.json"
    path.write_bytes((ROOT / "assets" / "lab.json").read_bytes())
    monkeypatch.setattr(lab, "train", lambda cfg: pytest.fail(f"retrained {lab.run_name(cfg)}"))
    lab.precompute(path)


def test_the_table_shows_the_deep_runs():
    table = lab_table.table()
    runs = shipped_runs()
    for b in lab.DEEP_RUNS:
        name = lab.row_name(b, lab.DEEP)
        row = next(line for line in table.splitlines() if line.startswith(f"| `{name}` |"))
        for task in lab.TASKS:
            r = runs[f"{task}/{name}"]
            assert f"{r['exact_match']:.1%}, {r['train_loss']:.3f}" in row
        assert READINGS[name] in row


def test_the_docs_table_is_the_one_the_tool_writes_from_the_shipped_runs():
    """docs/lab.md carries python -m tools.lab_table's output as it is: every figure and reading of assets/lab.json."""
    doc = (ROOT / "docs" / "lab.md").read_text(encoding="utf-8")
    assert lab_table.table() in doc


def test_the_three_failures_show_clearly_in_the_shipped_runs():
    runs = shipped_runs()
    for task in lab.TASKS:
        intact = runs[f"{task}/intact"]
        masked = runs[f"{task}/no_subsequent_mask"]  # a low loss under teacher forcing, failing greedy decoding
        assert masked["train_loss"] < 0.1 and masked["held_out_loss"] < intact["held_out_loss"]
        assert masked["exact_match"] < 0.25 < 0.9 < intact["exact_match"]
        plain = runs[f"{task}/plain_list"]  # the layers' parameters never reach the optimizer
        assert plain["params_registered"] < plain["params_held"] == intact["params_held"]
        assert plain["exact_match"] < intact["exact_match"] - 0.3
    for task in ("copy", "reverse"):  # order matters: without positions these fail ...
        assert runs[f"{task}/no_positional_encoding"]["exact_match"] < 0.1
    assert runs["sort/no_positional_encoding"]["exact_match"] > 0.5  # ... sorting does not need it
    assert runs["copy/intact"]["exact_match"] >= lab.TARGETS["copy"]
    assert runs["reverse/intact"]["exact_match"] >= lab.TARGETS["reverse"]


# ---- the Lab tab ---------------------------------------------------------------------------------------------

def test_tab_clamps_what_the_browser_sends():
    from app.tabs import lab as tab
    cfg = tab.config_from("rm -rf", ["no_scale", "<script>", "no_scale"], "9", "7")
    assert (cfg.task, cfg.breaks, cfg.smoothing, cfg.accum) == ("copy", ("no_scale",), 0.3, 4)
    assert tab.config_from("reverse", None, None, None).steps == lab.BUDGET["reverse"][0]
    assert tab.config_from(["copy"], [["no_scale"], {}], [], {}).breaks == ()  # unhashable values are dropped
    assert tab.config_from("copy", [], 0, 1, steps=10**9).steps == lab.BUDGET["copy"][0]  # never above the budget
    assert tab.config_from("copy", [], 0, 1, None).layers == N
    for sent, layers in ((6, 6), ("6", 6), (99, 6), (5, N), (-1, N), ("<b>", N), ([6], N)):
        assert tab.config_from("copy", [], 0, 1, sent).layers == layers, sent
    deep = tab.config_from("sort", ["post_norm"], 0, 1, 6)
    assert (deep.steps, deep.seconds) == lab.budget("sort", 6)


def test_tab_answers_deep_runs_at_once_beside_the_intact_model_at_their_depth(english):
    from app.tabs import lab as tab
    runs = shipped_runs()
    out = tab.lab_view("copy", ["post_norm"], 0.0, 1, 6)
    assert set(out) == {n for v in tab.VIEWS for n in v.outputs}
    run, intact = runs["copy/post_norm@6"], runs["copy/intact@6"]
    assert f"| exact match (500 held-out, greedy) | {run['exact_match']:.1%} | {intact['exact_match']:.1%} |" in out["result"]
    assert READINGS["post_norm@6"] in out["result"] and READINGS["post_norm"] not in out["result"]
    assert len(out["cross"].data) == len(out["decoder"].data) == 6 * lab.SIZE["h"]
    dotted = next(t for t in out["curve"].data if t.name == "intact")
    assert list(dotted.y) == intact["curve"]["loss"]  # the intact model at N = 6, not at N = 2
    updates = list(tab.train_run("copy", ["post_norm"], 0.0, 1, 6))
    assert len(updates) == 1 and updates[0]["training"].record is tab.shipped()["copy/post_norm@6"]  # shipped: no training
    assert tab.lab_view("copy", ["post_norm"], 0.0, 1, 6, updates[0]["training"])["result"] == out["result"]
    assert updates[0]["progress"].startswith("✓ **copy/post_norm@6** was trained already")
    note = tab.lab_view("copy", ["no_scale"], 0.0, 1, 6)["result"]
    assert "has not been trained yet" in note and "45 s" in note and "N = 6" in note
    assert "--layers" in tab.lab_command(tab.config_from("copy", [], 0, 1, 6))


def test_tab_opens_with_the_shipped_results_and_says_what_is_not_trained(english):
    from app.tabs import lab as tab
    out = tab.lab_view("reverse", ["no_positional_encoding"], 0.0, 1)
    run = shipped_runs()["reverse/no_positional_encoding"]
    assert f"{run['exact_match']:.1%}" in out["result"] and READINGS["no_positional_encoding"] in out["result"]
    assert [t.name for t in out["curve"].data] == ["intact", "intact", "this run", "this run"]
    assert "<table" in out["examples"] and len(out["cross"].data) == lab.SIZE["N"] * lab.SIZE["h"]
    # a shipped run's time is the precomputation's, and says so (a run here reports its own)
    assert "trained ahead of time" in out["result"] and f"{run['cpu_seconds']:.1f} s of CPU" in out["result"]
    # layers and heads counted from 0, as every other tab counts them
    titles = [a.text for a in out["cross"].layout.annotations]
    assert "layer 0, head 0" in titles and f"layer {lab.SIZE['N'] - 1}, head {lab.SIZE['h'] - 1}" in titles
    assert not any(f"head {lab.SIZE['h']}" in t for t in titles)
    untrained = tab.lab_view("sort", ["no_scale", "untied"], 0.1, 2)
    assert "has not been trained yet" in untrained["result"] and untrained["examples"] == ""


def test_drawing_outside_an_event_raises():
    """No language was chosen outside an event, so none is assumed: the view, the figures and the Train
    button's steps all refuse to draw."""
    from app.tabs import lab as tab
    run = shipped_runs()["copy/intact"]
    for draw in (lambda: tab.lab_view("copy", [], 0.0, 1), lambda: examples_html(run["examples"]),
                 lambda: next(tab.train_run("copy", [], 0.0, 1)), lambda: reading("no_scale")):
        with pytest.raises(LookupError):
            draw()


@pytest.fixture(scope="module")
def lab_page():
    """The Lab tab alone on a page, as app/ui.py builds it: (the page, its Tab, the Train event)."""
    import gradio as gr

    from app import views
    from app.tabs import lab as tab
    from tests.events import dependency
    with gr.Blocks() as demo:
        page = views.page_state()
        lang = gr.Radio(["en", "zh-CN"], value="en")
        built = tab.build(page, lang)
    return demo, built, dependency(demo, "train_clicked")


def test_the_tab_draws_its_view_by_name_when_opened(lab_page):
    """Opening the tab draws its one view, every output by name; opened again, nothing; a control moved, all of
    them again (they read the same controls); the page's language, all of them in it."""
    from app import views
    from app.tabs.lab import NO_TRAINING
    from tests.events import open_in, selected
    _, built, _ = lab_page
    page = {"open": {views.ROOT: "overview"}, "drawn": {}}
    controls = dict(task="copy", breaks=[], smoothing=0.0, accum=1, layers=N, ins=NO_TRAINING)
    assert built.show(page, "en", tabs=selected(page), **controls) == gr_skip()  # a hidden tab draws nothing
    open_in(page, built.where)  # opened: its select event records it, then its listener draws
    first = built.show(page, "en", tabs=selected(page), **controls)
    assert set(first) == set(built.outputs.values()) and "copy/intact" in first[built.outputs["result"]]
    assert built.show(page, "en", tabs=selected(page), **controls) == gr_skip()
    other = {"open": {views.ROOT: "lab"}, "drawn": {}}  # another page: the view is drawn once per process
    assert built.show(other, "en", tabs=selected(other), **controls)[built.outputs["cross"]] is first[built.outputs["cross"]]
    moved = built.show(page, "en", tabs=selected(page), **dict(controls, breaks=["no_scale"]))
    assert READINGS["no_scale"] in moved[built.outputs["result"]]
    zh = built.show(page, "zh-CN", tabs=selected(page), **dict(controls, breaks=["no_scale"]))
    assert set(zh) == set(built.outputs.values()) and zh[built.outputs["result"]] != moved[built.outputs["result"]]
    assert reading_in("zh-CN", "no_scale") in zh[built.outputs["result"]]


def test_a_break_toggled_during_a_training_draws_the_configuration_chosen(lab_page, monkeypatch):
    """The tab's one listener draws from the controls and the session's Training (the state each point of a run
    sets): a break toggled while a run trains shows the configuration chosen, and the run's next points leave it
    so (they once wrote the curve and the line over it); toggled back, the run's curve so far; at its end, its
    result, the examples and maps with it, and nothing but the curve and its line while it trains."""
    from app.tabs import lab as tab
    from tests.events import call, open_in, selected
    _, built, train = lab_page
    points = [{"step": [20], "loss": [2.5], "lr": [1e-4]}, {"step": [20, 40], "loss": [2.5, 2.0], "lr": [1e-4, 2e-4]}]
    monkeypatch.setenv("EXPLORER_LAB_MAX_STEPS", "40")  # the server's budget: the view and Train agree
    training = dict(task="copy", breaks=["no_warmup", "untied"], smoothing=0.0, accum=1, layers=N)
    cfg = tab.config_from(*training.values())
    record = dict(tab.shipped()["copy/no_warmup"], breaks=list(cfg.breaks), steps=40, steps_budget=40, curve=points[-1])
    monkeypatch.setattr(tab, "run_lab", lambda c: iter([*points, record]))
    monkeypatch.setattr(tab, "RUNS", tab.OrderedDict())  # this test's runs only
    states = [u[built.state] for u in call(train, **training, lang="en")]
    assert [t.curve and t.curve["step"][-1] for t in states] == [None, 20, 40, 40] and states[-1].record is record
    monkeypatch.setattr(tab, "RUNS", tab.OrderedDict())  # as while it trained: not kept yet
    page, toggled = {"drawn": {}}, dict(training, breaks=["no_warmup"])  # copy/no_warmup: shipped
    open_in(page, built.where)

    def show(ins, **controls):
        out = built.show(page, "en", ins, tabs=selected(page), **controls)
        return {} if out == gr_skip() else {name: out[c] for name, c in built.outputs.items() if c in out}
    first = show(states[1], **training)
    assert "Training **copy/no_warmup+untied**: step 20" in first["result"] and "this run" in str(first["curve"])
    chosen = show(states[1], **toggled)
    assert READINGS["no_warmup"] in chosen["result"] and set(chosen) == set(built.outputs)
    later = show(states[2], **toggled)  # the run's next point: the configuration chosen, drawn as before
    assert later["result"] == chosen["result"] and set(later) == {"curve", "result"}
    back = show(states[2], **training)
    assert "Training **copy/no_warmup+untied**: step 40" in back["result"] and "examples" in back
    assert back["examples"] == "" and "this run" in str(back["curve"])
    tab.keep(cfg, record)
    done = show(states[3], **training)
    assert set(done) == set(built.outputs) and "<table" in done["examples"] and "40 steps" in done["result"]
    assert show(states[3], **training) == {}  # drawn: nothing again


def gr_skip():
    import gradio as gr
    return gr.skip()


def reading_in(lang, name):
    with speaking(lang):
        return reading(name)


def test_break_labels_name_the_break_in_both_languages():
    """Each break's checkbox reads "name: what it does" (what core.lab.BREAKS says, in the English table's words),
    and starts with its name in every language: the browser tests click a break's label by its name."""
    from app.i18n import LANGS, i18n
    from app.tabs import lab as tab
    from core.words import say
    labels = tab.break_choices()
    assert [value for _, value in labels] == list(BREAKS)
    shown = i18n().translations
    for label, name in labels:
        assert shown["en"][label.key] == f"{name}: {say(BREAKS[name])}"
        assert all(shown[lang][label.key].startswith(name) for lang in LANGS)
    assert shown["zh-CN"][labels[0][0].key] != shown["en"][labels[0][0].key]
    assert shown["en"][dict((v, k) for k, v in labels)["high_lr"].key] == "high_lr: the Noam schedule at 10 times its rate"


def test_examples_mark_wrong_tokens_and_escape(english):
    out = examples_html([{"input": [1, 2, 3], "target": [1, 2, 3], "output": [1, 5]},
                         {"input": ["<b>"], "target": ["<b>"], "output": ["<b>"]}])
    assert out.count("fde2da") == 2  # the 5, and the missing 3
    assert 'title="expected 2"' in out and 'title="expected 3"' in out and "<b>" not in out


def test_tab_draws_its_words_in_chinese(monkeypatch, lab_page):
    """The Lab's figures, result, examples, readings and the Train button's status lines in the page's language:
    the Train event (called by name, as the browser calls it) runs every one of its steps in it."""
    from app.tabs import lab as tab
    from tests.events import call
    specials = frozenset({"blank", "unk"})  # the toy tasks' own tokens (<blank>, <unk>): data
    for task, breaks, smoothing, accum, layers in (("copy", [], 0.0, 1, N), ("reverse", ["no_positional_encoding"], 0.0, 1, N),
                                                   ("copy", ["post_norm"], 0.0, 1, 6), ("sort", ["no_scale"], 0.1, 2, N)):
        with speaking("zh-CN"):
            values = tab.lab_view(task, breaks, smoothing, accum, layers)
        found = [s for v in values.values() for s in value_strings(v) if english(s, specials)]
        assert found == [], (task, breaks, found)
    for name, en in READINGS.items():
        zh = reading_in("zh-CN", name)
        assert CJK.search(zh) and not english(zh) and zh != en, name
    assert reading_in("en", "intact") is None and reading_in("en", "no_scale") == READINGS["no_scale"]
    # Train, for a run cut off before its result (a stand-in for core.lab's process): every status line in Chinese,
    # the progress line the event's, the curve and the line above it the view's, drawn from each Training it sets
    monkeypatch.setattr(tab, "run_lab", lambda cfg: iter([{"step": [1, 2], "loss": [2.5, 2.0], "lr": [1e-4, 2e-4]}]))
    _, built, train = lab_page
    controls = dict(task="sort", breaks=["no_scale"], smoothing=0.2, accum=2, layers=N)
    updates = call(train, **controls, lang="zh-CN")
    trainings = []
    for update in updates:
        assert set(update) == {built.state, built.more["progress"]}  # the state and the line: no view's output
        trainings.append(update[built.state])
        progress = update[built.more["progress"]]
        assert CJK.search(progress) and not english(progress), progress
        with speaking("zh-CN"):
            drawn = tab.summary_view(update[built.state], **controls)
        assert CJK.search(drawn["result"]) and not any(
            english(s) for v in drawn.values() for s in value_strings(v)), drawn["result"]
    assert len(trainings) == 3 and trainings[-1].stopped and trainings[-1].curve == trainings[1].curve
    with speaking("en"):  # in English as before
        statuses = [tab.summary_view(u["training"], **controls)["result"] for u in tab.train_run(*controls.values())]
    assert statuses[0].startswith("Starting **sort/no_scale**") and statuses[1].startswith("Training **sort/no_scale**: step 2")
    assert statuses[2].startswith("The run stopped without a result")


def test_the_train_events_steps_run_in_its_language_in_any_thread(monkeypatch, lab_page):
    """Gradio may run each step of a generator in another worker thread: each one is in the event's language."""
    from concurrent.futures import ThreadPoolExecutor

    from app.tabs import lab as tab
    from tests.events import by_id, call
    monkeypatch.setattr(tab, "run_lab", lambda cfg: iter([{"step": [1, 2], "loss": [2.5, 2.0], "lr": [1e-4, 2e-4]}]))
    _, _, train = lab_page
    steps = call(train, task="sort", breaks=["no_scale"], smoothing=0.2, accum=2, layers=N, lang="zh-CN")
    with ThreadPoolExecutor(2) as pool:
        updates = [by_id(pool.submit(next, steps).result()) for _ in range(3)]
    assert all(chinese_only(u["lab-progress"]) for u in updates), [u["lab-progress"] for u in updates]


def chinese_only(s):
    return bool(CJK.search(s)) and not english(s)


@pytest.mark.slow
def test_tab_trains_a_run_and_keeps_it(english, monkeypatch):
    from app.tabs import lab as tab
    monkeypatch.setenv("EXPLORER_LAB_MAX_STEPS", "25")  # the server's budget lowered: the view and Train agree
    assert "has not been trained yet" in tab.lab_view("copy", ["no_warmup"], 0.1, 2)["result"]
    controls = dict(task="copy", breaks=["no_warmup"], smoothing=0.1, accum=2, layers=N)
    updates = list(tab.train_run(*controls.values()))
    drawn = [tab.lab_view(**controls, training=u["training"]) for u in updates]
    assert "Starting" in drawn[0]["result"]
    assert any("Training" in d["result"] for d in drawn[1:-1])  # the curve drawn while it trains
    last = updates[-1]
    assert last["training"].record is not None and last["training"].record is tab.cached(tab.config_from(**controls))
    assert last["progress"].startswith("✓ **copy/no_warmup** on the CPU: 25 steps and the evaluation in ")
    assert all(" of 25 steps · " in u["progress"] for u in updates[:-1])  # the line beside the button, each update
    assert "25 steps" in drawn[-1]["result"] and "Gradient accumulation: 2 micro-batches" in drawn[-1]["result"]
    again = list(tab.train_run(*controls.values()))
    assert len(again) == 1 and again[0]["training"].record is last["training"].record  # trained once: at once
    assert tab.lab_view(**controls)["result"] == drawn[-1]["result"]  # the view drawn before, anew


def test_run_clock_says_how_far_a_run_is_and_what_remains(english):
    """The progress line beside Train: steps done, seconds since the click, and the steps left at the rate
    measured between progress lines (before the second one, at the shipped intact run's CPU seconds a step),
    bounded by the run's seconds cap, in both languages."""
    from app.tabs import lab as tab
    NB = "\u00a0"  # a number and its unit are not broken apart
    cfg = tab.config_from("copy", ["no_scale"], 0.0, 1)
    intact = tab.intact_of(cfg)
    t = [100.0]
    clock = tab.RunClock(cfg, intact, now=lambda: t[0])
    before = min(cfg.steps * intact["cpu_seconds"] / intact["steps"], cfg.seconds)  # not yet measured here
    assert clock.line() == (f"**copy/no_scale** on the CPU: 0 of {cfg.steps} steps · 0{NB}s since you pressed Train · "
                            f"{cfg.steps} steps to go (about {before:.0f}{NB}s), then the evaluation")
    t[0] = 104.0
    clock.seen(20)  # the first progress line: the process started, 20 steps done
    t[0] = 105.0
    clock.seen(60)  # 40 steps in 1 s: 0.025 s a step, 1.5 s of training so far
    left = cfg.steps - 60
    assert left * 0.025 < cfg.seconds - 1.5  # the steps end this run, not its seconds cap
    assert f"60 of {cfg.steps} steps · 5{NB}s since" in clock.line()
    assert f"{left} steps to go (about {left * 0.025:.0f}{NB}s)" in clock.line()
    with speaking("zh-CN"):
        zh = clock.line()
    assert f"已完成 60/{cfg.steps} 步" in zh and f"已过 5{NB}s" in zh and f"还剩 {left} 步（约 {left * 0.025:.0f}{NB}s）" in zh
    t[0] = 112.0
    clock.seen(100)  # 80 steps in 8 s since the first line: 0.1 s a step, 10 s of training so far
    cap = cfg.seconds - 10
    assert (cfg.steps - 100) * 0.1 > cap  # now the seconds cap ends it first
    assert f"{round(cap / 0.1)} steps to go (about {cap:.0f}{NB}s)" in clock.line()
    assert clock.stopped() == f"✗ **copy/no_scale**: stopped after 100 of {cfg.steps} steps, 12{NB}s"
    with speaking("zh-CN"):
        done_zh, capped_zh = clock.finished({"steps": cfg.steps}), clock.finished({"steps": 150})
    assert done_zh.startswith(f"✓ **copy/no_scale**（在 CPU 上）：{cfg.steps} 步")
    capped = clock.finished({"steps": 150})  # the seconds cap ended it before its steps
    assert capped.startswith(f"✓ **copy/no_scale** on the CPU: 150 of {cfg.steps} steps (its 15{NB}s cap came first)")
    assert "the evaluation in 12\u00a0s" in capped and "先到了 15\u00a0s 的时间上限" in capped_zh
