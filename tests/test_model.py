"""Each component of core/model.py against the paper's equations, a float64 reference, or a property."""
import math

import pytest
import torch
import torch.nn as nn

from core.model import (
    Dropout,
    Embeddings,
    LayerNorm,
    MultiHeadedAttention,
    PositionalEncoding,
    attention,
    clones,
    make_model,
    subsequent_mask,
)


def test_clones_are_independent_modules():
    layers = clones(nn.Linear(4, 4), 3)
    assert isinstance(layers, nn.ModuleList) and len(layers) == 3
    assert len({id(l.weight) for l in layers}) == 3
    with torch.no_grad():
        layers[0].weight.fill_(1.0)
    assert not torch.equal(layers[1].weight, layers[0].weight)
    assert len(list(layers.parameters())) == 6  # registered: 3 weights + 3 biases


def test_layernorm_matches_float64_formula():
    ln = LayerNorm(16)
    with torch.no_grad():
        ln.a_2.uniform_(0.5, 1.5)
        ln.b_2.uniform_(-1, 1)
    x = torch.randn(3, 5, 16) * 3 + 1
    x64 = x.double()
    mu = x64.mean(-1, keepdim=True)
    var = ((x64 - mu) ** 2).mean(-1, keepdim=True)
    ref = ln.a_2.double() * (x64 - mu) / torch.sqrt(var + ln.eps) + ln.b_2.double()
    torch.testing.assert_close(ln(x).double(), ref, atol=1e-5, rtol=1e-5)
    assert {n for n, _ in ln.named_parameters()} == {"a_2", "b_2"}


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_dropout_zeroes_with_probability_p_and_scales_the_rest(dtype):
    p, n = 0.1, 400_000
    drop = Dropout(p).train()
    torch.manual_seed(0)
    x = (torch.rand(n) + 0.5).to(dtype).requires_grad_()
    y = drop(x)
    assert y.dtype == dtype
    kept = y != 0
    # kept elements are exactly x / (1 - p), rounded as nn.Dropout rounds them
    assert torch.equal(y[kept], x.detach().mul(1 / (1 - p))[kept])
    # P(keep) = 1 - p: the kept fraction lies within 5 standard deviations of a Binomial(n, 1 - p) mean
    assert abs(kept.double().mean().item() - (1 - p)) < 5 * math.sqrt(p * (1 - p) / n)
    # the gradient passes through the kept elements only, scaled by 1 / (1 - p)
    y.sum().backward()
    grad = torch.full((n,), 1 / (1 - p), dtype=dtype) * kept
    assert torch.equal(x.grad, grad)
    # the same seed gives the same mask; eval mode is the identity; p = 0 and p = 1 are the limits
    torch.manual_seed(1)
    a = drop(x.detach())
    torch.manual_seed(1)
    assert torch.equal(a, drop(x.detach()))
    assert torch.equal(drop.eval()(x.detach()), x.detach())
    assert torch.equal(Dropout(0.0).train()(x.detach()), x.detach())
    assert not Dropout(1.0).train()(x.detach()).any()


def test_model_dropout_is_core_dropout_everywhere():
    model = make_model(50, 50, N=2, d_model=32, d_ff=64, h=4, dropout=0.2)
    drops = [m for m in model.modules() if isinstance(m, nn.Dropout)]
    # positional encodings 2, encoder layers 2 x (2 sub-layers + FFN + attention), decoder 2 x (3 + 1 + 2)
    assert len(drops) == 2 + 2 * 4 + 2 * 6
    assert all(type(m) is Dropout and m.p == 0.2 for m in drops)


def test_subsequent_mask_is_lower_triangular():
    m = subsequent_mask(4)
    assert m.shape == (1, 4, 4) and m.dtype == torch.bool
    expected = torch.tensor([[1, 0, 0, 0], [1, 1, 0, 0], [1, 1, 1, 0], [1, 1, 1, 1]], dtype=torch.bool)
    assert torch.equal(m[0], expected)


def reference_attention(q, k, v, mask=None):
    """softmax(Q K^T / sqrt(d_k)) V in float64, with masked scores removed before the softmax."""
    q, k, v = q.double(), k.double(), v.double()
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    w = torch.softmax(scores, -1)
    return w @ v, w


def test_attention_matches_float64_reference_with_mask():
    q, k, v = torch.randn(2, 3, 5, 8), torch.randn(2, 3, 6, 8), torch.randn(2, 3, 6, 8)
    mask = torch.ones(2, 1, 1, 6, dtype=torch.bool)
    mask[0, ..., 4:] = False  # first sentence: last two keys are padding
    out, w = attention(q, k, v, mask)
    ref_out, ref_w = reference_attention(q, k, v, mask)
    torch.testing.assert_close(out.double(), ref_out, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(w.double(), ref_w, atol=1e-6, rtol=1e-5)
    assert torch.all(w[0, :, :, 4:] == 0)  # exactly zero where masked
    torch.testing.assert_close(w.sum(-1), torch.ones(2, 3, 5))


@pytest.mark.parametrize("kind", ["self_causal", "cross_padded"])
def test_fused_and_explicit_multihead_attention_agree(kind):
    mha = MultiHeadedAttention(4, 32, dropout=0.0).eval()
    x = torch.randn(3, 7, 32)
    if kind == "self_causal":
        key = x
        mask = (torch.ones(3, 1, 7, dtype=torch.bool)) & subsequent_mask(7)
    else:
        key = torch.randn(3, 9, 32)
        mask = torch.ones(3, 1, 9, dtype=torch.bool)
        mask[1, :, 5:] = False
    fused = mha(x, key, key, mask)
    q, k, v = (mha._split(t, lin) for t, lin in zip((x, key, key), mha.linears))
    heads, weights = attention(q, k, v, mask=mask.unsqueeze(1))  # the paper's function, head by head
    explicit = mha.w_o(heads.transpose(1, 2).reshape(3, 7, 32))
    torch.testing.assert_close(fused, explicit, atol=1e-5, rtol=1e-5)
    assert weights.shape == (3, 4, 7, key.size(1))


def test_multihead_attention_equals_per_head_float64_computation():
    h, d = 2, 8
    mha = MultiHeadedAttention(h, d, dropout=0.0).eval()
    x = torch.randn(1, 4, d)
    mha.need_weights = True
    out = mha(x, x, x)
    W = [(l.weight.double(), l.bias.double()) for l in mha.linears]
    x64 = x.double()[0]
    heads = []
    for i in range(h):
        sl = slice(i * d // h, (i + 1) * d // h)
        q, k, v = ((x64 @ W[j][0].T + W[j][1])[:, sl] for j in range(3))
        heads.append(reference_attention(q, k, v)[0])
    ref = torch.cat(heads, -1) @ W[3][0].T + W[3][1]
    torch.testing.assert_close(out[0].double(), ref, atol=1e-5, rtol=1e-5)


def test_positional_encoding_values_and_buffer():
    d, n = 16, 50
    pe = PositionalEncoding(d, dropout=0.0, max_len=n)
    ref = torch.zeros(n, d, dtype=torch.float64)
    for pos in range(n):
        for i in range(0, d, 2):
            ref[pos, i] = math.sin(pos / 10000 ** (i / d))
            ref[pos, i + 1] = math.cos(pos / 10000 ** (i / d))
    torch.testing.assert_close(pe.pe[0].double(), ref, atol=1e-5, rtol=1e-5)
    assert "pe" in dict(pe.named_buffers()) and len(list(pe.parameters())) == 0
    x = torch.randn(2, 5, d)
    torch.testing.assert_close(pe(x), x + pe.pe[:, :5])  # added to the embeddings, position by position


def test_embeddings_scaled_by_sqrt_d_model():
    emb = Embeddings(64, 10)
    ids = torch.tensor([[1, 2, 3]])
    torch.testing.assert_close(emb(ids), emb.lut.weight[ids] * 8.0)


def test_make_model_xavier_init_and_weight_tying():
    model = make_model(50, 50, N=2, d_model=32, d_ff=64, h=4)
    shared = model.tgt_embed[0].lut.weight
    assert model.src_embed[0].lut.weight is shared and model.generator.proj.weight is shared
    ff = model.encoder.layers[0].feed_forward.w_1.weight  # (d_ff, d_model)
    bound = math.sqrt(6 / (32 + 64))
    assert ff.abs().max() <= bound and ff.abs().max() > 0.8 * bound
    assert len(model.encoder.layers) == 2 and len(model.decoder.layers) == 2
    untied = make_model(50, 60, N=1, d_model=32, d_ff=64, h=4)
    assert untied.src_embed[0].lut.weight is not untied.tgt_embed[0].lut.weight


def test_each_decoder_position_depends_only_on_its_prefix():
    """With the subsequent mask, decoding y_1..y_t gives the full decode's outputs at positions 1..t: what lets
    a decoder feed one new position per step (core/decode.py's IncrementalDecoder, tested there)."""
    model = make_model(30, 30, N=2, d_model=32, d_ff=64, h=4).eval()
    src = torch.randint(4, 30, (2, 6))
    src_mask = torch.ones(2, 1, 6, dtype=torch.bool)
    src_mask[1, :, 4:] = False
    tgt = torch.randint(4, 30, (2, 5))
    with torch.no_grad():
        memory = model.encode(src, src_mask)
        full = model.decode(memory, src_mask, tgt, subsequent_mask(5))
        for t in range(1, 5):
            prefix = model.decode(memory, src_mask, tgt[:, :t], subsequent_mask(t))
            torch.testing.assert_close(prefix, full[:, :t], atol=1e-5, rtol=1e-5)
        changed = tgt.clone()
        changed[:, 3] = (tgt[:, 3] + 1 - 4) % 26 + 4  # another token at position 4 changes positions 4 and 5 only
        other = model.decode(memory, src_mask, changed, subsequent_mask(5))
    torch.testing.assert_close(other[:, :3], full[:, :3], atol=1e-5, rtol=1e-5)
    assert (other[:, 3:] - full[:, 3:]).abs().amax(-1).min() > 1e-3
