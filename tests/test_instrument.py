"""One instrumented run (core/instrument.py): every state under its module's name, checked against the paper's
equations recomputed from the cache in float64; heads switched off as an argument; the fast decoder reporting
its attention under the same names."""
import math

import pytest
import torch

from core.data import EOS, PAD
from core.decode import HalfPrecisionDecoder, IncrementalDecoder, greedy_decode
from core.instrument import KINDS, attention_name, module_at, run_with_cache, state_names
from core.model import make_model, subsequent_mask


def tiny(seed=0):
    torch.manual_seed(seed)
    return make_model(30, 30, N=2, d_model=32, d_ff=48, h=4, dropout=0.0).eval()


def batch(seed=0, B=3, S=7, T=6):
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(4, 30, (B, S), generator=g)
    src[0, -2:] = PAD  # the first sentence is shorter
    tgt = torch.randint(4, 30, (B, T), generator=g)
    src_mask = (src != PAD).unsqueeze(-2)
    return src, tgt, src_mask, subsequent_mask(T)


def ln64(x, gain, bias, eps):
    x, gain, bias = x.double(), gain.double(), bias.double()
    mean = x.mean(-1, keepdim=True)
    return gain * (x - mean) / ((x - mean).pow(2).mean(-1, keepdim=True) + eps).sqrt() + bias


def test_every_state_has_a_name_and_the_names_follow_the_modules():
    model = tiny()
    names = state_names(model)
    assert len(names) == len(set(names))
    # each name's path is a module of the model, found under the name named_modules gives it
    paths = dict(model.named_modules())
    assert all(name.split(":")[0] in paths and module_at(model, name.split(":")[0]) is paths[name.split(":")[0]]
               for name in names)
    _, cache = run_with_cache(model, *batch())
    assert list(cache) == names  # every state, in the order the pass writes them
    B, S, T, D, H = 3, 7, 6, 32, 4
    assert cache["src_embed:out"].shape == (B, S, D) and cache["decoder.layers.1:out"].shape == (B, T, D)
    assert cache["encoder.layers.0.self_attn:q"].shape == (B, H, S, D // H)
    assert cache[attention_name("cross", 1)].shape == (B, H, T, S)
    assert cache["decoder.layers.0.feed_forward:units"].shape == (B, T, 48)
    assert cache["generator:logp"].shape == (B, T, 30)


def test_the_states_are_the_papers_equations_of_one_another():
    """softmax(QK^T / sqrt(d_k)) under the mask, LayerNorm, the residual sums, ReLU units, the output: each
    recomputed in float64 from the cached states it is made of."""
    model = tiny(1)
    src, tgt, src_mask, tgt_mask = batch(1)
    logp, c = run_with_cache(model, src, tgt, src_mask, tgt_mask)
    for kind in KINDS:
        for layer in range(2):
            q, k = (c[attention_name(kind, layer, w)].double() for w in ("q", "k"))
            mask = (src_mask if kind != "decoder" else tgt_mask).unsqueeze(1)
            scores = (q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))).masked_fill(~mask, float("-inf"))
            torch.testing.assert_close(c[attention_name(kind, layer)].double(), scores.softmax(-1), atol=1e-6, rtol=0)
    for name, m in model.named_modules():
        if name.endswith("norm"):
            torch.testing.assert_close(c[f"{name}:out"].double(), ln64(c[f"{name}:in"], m.a_2, m.b_2, m.eps),
                                       atol=1e-5, rtol=0)
    # the stream: x + FFN(LN(x)) after the last sub-layer of encoder layer 0, from the cached units
    ff = model.encoder.layers[0].feed_forward
    x = c["encoder.layers.0.sublayer.0:out"].double()
    units = c["encoder.layers.0.feed_forward:units"].double()
    lin1 = c["encoder.layers.0.sublayer.1.norm:out"].double() @ ff.w_1.weight.double().T + ff.w_1.bias.double()
    torch.testing.assert_close(units, lin1.clamp_min(0), atol=1e-5, rtol=0)
    torch.testing.assert_close(c["encoder.layers.0.sublayer.1:out"].double(),
                               x + units @ ff.w_2.weight.double().T + ff.w_2.bias.double(), atol=1e-5, rtol=0)
    torch.testing.assert_close(c["decoder.norm:in"], c["decoder.layers.1:out"])
    torch.testing.assert_close(c["generator:logp"], logp)
    # recording changes nothing: the plain model's output, and no hook or switch left behind
    plain = model.generator(model(src, tgt, src_mask, tgt_mask))
    torch.testing.assert_close(logp, plain, atol=1e-5, rtol=0)
    assert not any(m._forward_hooks or m._forward_pre_hooks for m in model.modules())


def test_a_run_leaves_the_modules_as_it_found_them():
    """Every attribute of every module is the same object after a recorded run with heads off as before it, no
    hook is left on a module, and none of the process-wide ones either."""
    from torch.nn.modules import module as torch_module
    model = tiny(4)
    before = [(m, dict(vars(m))) for m in model.modules()]
    run_with_cache(model, *batch(4), heads_off=[("encoder", 0, 1), ("cross", 1, 3)])
    for m, attrs in before:
        assert vars(m).keys() == attrs.keys() and all(vars(m)[k] is v for k, v in attrs.items()), type(m).__name__
    assert not any(m._forward_hooks or m._forward_pre_hooks for m in model.modules())
    assert not torch_module._global_forward_hooks and not torch_module._global_forward_pre_hooks


def test_runs_in_several_threads_at_once_each_get_their_own_states():
    """Three threads record one model at once, each with its own heads off, and two threads two models: each
    run gives what the same run gives alone (a run's recording or switch once leaked into the others')."""
    import threading
    models = [tiny(5), tiny(6)]
    src, tgt, src_mask, tgt_mask = batch(5)
    jobs = [(0, ()), (0, (("cross", 1, 2),)), (0, (("encoder", 0, 0), ("decoder", 1, 3))), (1, ()),
            (1, (("cross", 0, 1),))]

    def one(i):
        model, off = models[jobs[i][0]], jobs[i][1]
        return run_with_cache(model, src, tgt, src_mask, tgt_mask, names=["*:weights", "decoder.norm:out"],
                              heads_off=off)

    alone = [one(i) for i in range(len(jobs))]
    got, errors = {}, []
    start = threading.Barrier(len(jobs))

    def worker(i):
        try:
            start.wait()
            got[i] = [one(i) for _ in range(6)]
        except Exception as e:  # noqa: BLE001 (reported below)
            errors.append(repr(e))

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(len(jobs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for i, (logp, cache) in enumerate(alone):
        for other_logp, other in got[i]:
            torch.testing.assert_close(other_logp, logp, atol=1e-6, rtol=0)
            assert list(other) == list(cache)
            for name in cache:
                torch.testing.assert_close(other[name], cache[name], atol=1e-6, rtol=0)


def test_names_are_chosen_by_pattern_and_an_unknown_one_is_refused():
    model = tiny()
    _, c = run_with_cache(model, *batch(), names=["*:weights"])
    assert sorted(c) == sorted(attention_name(k, i) for k in KINDS for i in range(2))
    _, c = run_with_cache(model, *batch(), names=["decoder.layers.1:out", "generator:logp"], output=False)
    assert list(c) == ["decoder.layers.1:out", "generator:logp"]
    assert run_with_cache(model, *batch(), names=["*:weights"], output=False)[0] is None
    with pytest.raises(KeyError, match="self_atn"):
        run_with_cache(model, *batch(), names=["encoder.layers.0.self_atn:weights"])


def test_a_head_switched_off_in_the_run_leaves_its_weights_and_zeroes_its_share_of_w_o():
    model = tiny(2)
    src, tgt, src_mask, tgt_mask = batch(2)
    _, on = run_with_cache(model, src, tgt, src_mask, tgt_mask)
    logp, off = run_with_cache(model, src, tgt, src_mask, tgt_mask, heads_off=[("cross", 1, 2)])
    name = attention_name("cross", 1)
    torch.testing.assert_close(off[name], on[name])  # computed as usual
    # the sub-layer adds W^O applied to the heads' outputs with head 2's slice zeroed, recomputed in float64
    mha = model.decoder.layers[1].src_attn
    v = (off["encoder.norm:out"].double() @ mha.w_v.weight.double().T + mha.w_v.bias.double())
    v = v.view(3, -1, 4, 8).transpose(1, 2)  # (B, H, S, d_k)
    heads = off[name].double() @ v  # (B, H, T, d_k)
    heads[:, 2] = 0
    concat = heads.transpose(1, 2).reshape(3, 6, 32)
    added = off["decoder.layers.1.sublayer.1:out"].double() - off["decoder.layers.1.sublayer.0:out"].double()
    torch.testing.assert_close(added, concat @ mha.w_o.weight.double().T + mha.w_o.bias.double(), atol=1e-5, rtol=0)
    assert not torch.allclose(logp, run_with_cache(model, src, tgt, src_mask, tgt_mask)[0])
    assert not any(m._forward_pre_hooks for m in model.modules())


@pytest.mark.parametrize("half", [False, True])
def test_the_fast_decoder_reports_its_attention_under_the_same_names(half):
    """Greedy decoding with the key/value cache, recorded step by step, gives the maps a recorded teacher-forced
    run of the modules gives on its output, for the float32 model and its float16-decoder twin."""
    model = tiny(3)
    m = HalfPrecisionDecoder(model).eval() if half else model
    src, _, src_mask, _ = batch(3)
    with torch.no_grad():
        dec = IncrementalDecoder(m, m.encode(src, src_mask), src_mask, 8, record=True)
        ys = [torch.full((3,), 2)]
        for _ in range(8):
            ys.append(m.generator.proj(dec.step(ys[-1])).float().argmax(-1))
    got = dec.attention()
    tgt = torch.stack(ys[:-1], 1)  # the inputs the steps were fed
    _, ref = run_with_cache(m, src, tgt, src_mask, subsequent_mask(8), names=["decoder.*:weights"])
    assert sorted(got) == sorted(ref)
    for name in ref:
        torch.testing.assert_close(got[name], ref[name], atol=2e-3 if half else 1e-5, rtol=0)
    # recording does not change what is decoded
    recorded = [row[:row.index(EOS)] if EOS in row else row for row in torch.stack(ys[1:], 1).tolist()]
    assert greedy_decode(m, src, src_mask, 8) == recorded
