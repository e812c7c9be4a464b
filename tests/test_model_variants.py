"""The model's variants (core.model.make_model's norm, layer_norm_eps, activation, pe_layout, scale_embedding) and the
decoding rules (core.decode.Rules): every path follows them (the cached decoder, the float16 decoder, the recorded
run's names), their defaults keep the shipped model's outputs bit for bit (values recorded from the code before
the variants existed), and the files hold a tensor larger than a shard."""
import hashlib
import json
import math

import pytest
import torch
import torch.nn.functional as F

from core.checkpoint import AssetError, join_rows, load_pretrained, read_config, save_pretrained, split_rows
from core.decode import HalfPrecisionDecoder, Rules, beam_search, greedy_decode, greedy_decode_uncached
from core.instrument import run_with_cache
from core.model import make_model, subsequent_mask
from tests.conftest import needs_shipped
from tests.test_decode import random_model, src_batch

VARIANT = dict(norm="post", layer_norm_eps=1e-5, activation="swish", pe_layout="halves", scale_embedding=False)


def variant_model(seed=0, vocab=16, **choices):
    return random_model(vocab, seed, **{**VARIANT, **choices})


def batch(vocab=16, B=3, S=7, seed=1):
    return src_batch(vocab, B, S, seed)


@pytest.mark.parametrize("choices", [{}, dict(activation="gelu"), dict(norm="pre", activation="relu"),
                                     dict(scale_embedding=True, pe_layout="interleaved")])
def test_the_cached_decoder_follows_the_variant(choices):
    outputs = []
    for seed in range(3):
        model = variant_model(seed, **choices)
        src, mask = batch(seed=seed)
        ref = greedy_decode_uncached(model, src, mask, 12)
        assert greedy_decode(model, src, mask, 12) == ref
        outputs += ref
    assert len({tuple(o) for o in outputs}) > 1


def test_the_float16_decoder_follows_the_variant():
    model = variant_model(3)
    src, mask = batch(seed=3)
    tgt = torch.randint(4, 16, (3, 5), generator=torch.Generator().manual_seed(2))
    half = HalfPrecisionDecoder(model).eval()
    with torch.no_grad():
        memory = model.encode(src, mask)
        full = model.decode(memory, mask, tgt, subsequent_mask(5))
        fast = half.decode(memory, mask, tgt, subsequent_mask(5)).float()
    assert (full - fast).abs().max() < 2e-2


def test_post_norm_reads_as_its_names_say():
    """Post-norm: a sub-layer's norm takes the residual sum and its output is the stream; the stacks' final norm
    is the identity; `units` are the swish's outputs."""
    model = variant_model(4)
    src, mask = batch(seed=4)
    tgt = torch.randint(4, 16, (3, 5), generator=torch.Generator().manual_seed(3))
    _, cache = run_with_cache(model, src, tgt, mask, subsequent_mask(5))
    for side in ("encoder", "decoder"):
        assert isinstance(getattr(model, side).norm, torch.nn.Identity)
        assert torch.equal(cache[f"{side}.norm:in"], cache[f"{side}.norm:out"])
        last = len(getattr(model, side).layers) - 1
        j = 2 if side == "decoder" else 1
        assert torch.equal(cache[f"{side}.layers.{last}.sublayer.{j}:out"], cache[f"{side}.norm:in"])
    sub = model.decoder.layers[0].sublayer[1]
    x = cache["decoder.layers.0.sublayer.0:out"]
    assert torch.equal(cache["decoder.layers.0.sublayer.1.norm:out"], cache["decoder.layers.0.sublayer.1:out"])
    assert torch.allclose(cache["decoder.layers.0.sublayer.1.norm:out"],
                          sub.norm(cache["decoder.layers.0.sublayer.1.norm:in"]), atol=1e-6)
    assert not torch.allclose(cache["decoder.layers.0.sublayer.1.norm:in"], x)  # the sum, not the stream before
    ff = model.decoder.layers[1].feed_forward
    y = cache["decoder.layers.1.sublayer.1:out"]
    assert torch.allclose(cache["decoder.layers.1.feed_forward:units"], F.silu(ff.w_1(y)), atol=1e-6)


def test_the_halves_layout_is_marians_table():
    pe = make_model(8, 8, N=1, d_model=16, d_ff=8, h=2, pe_layout="halves", max_len=50).src_embed[1].pe[0]
    for pos in (0, 1, 7, 49):
        for i in range(8):
            angle = pos / 10000 ** (2 * i / 16)
            assert pe[pos, i].item() == pytest.approx(math.sin(angle), abs=1e-7)
            assert pe[pos, 8 + i].item() == pytest.approx(math.cos(angle), abs=1e-7)


def test_a_config_names_a_variant_it_cannot_build(tmp_path):
    model = variant_model(0)
    config = dict(src_vocab=16, tgt_vocab=16, N=2, d_model=32, d_ff=64, h=4, **VARIANT)
    save_pretrained(model, config, tmp_path, dtype=torch.float32)
    loaded, _ = load_pretrained(tmp_path)
    src, mask = batch()
    assert greedy_decode(loaded, src, mask, 10) == greedy_decode(model, src, mask, 10)
    for key, value in (("norm", "side"), ("activation", "tanh"), ("pe_layout", "spiral"), ("layer_norm_eps", -1)):
        (tmp_path / "config.json").write_text(json.dumps({**config, key: value}))
        with pytest.raises(AssetError, match=key):
            read_config(tmp_path)


def test_a_tensor_larger_than_a_shard_is_cut_into_rows(tmp_path):
    model = make_model(3000, 3000, N=1, d_model=64, d_ff=32, h=2)  # a 3000 x 64 float32 embedding: 768 kB
    save_pretrained(model, dict(src_vocab=3000, tgt_vocab=3000, N=1, d_model=64, d_ff=32, h=2), tmp_path,
                    dtype=torch.float32, max_shard_bytes=200_000)
    assert all(p.stat().st_size < 220_000 for p in tmp_path.glob("*.safetensors"))
    loaded, _ = load_pretrained(tmp_path)
    assert torch.equal(loaded.src_embed[0].lut.weight, model.src_embed[0].lut.weight)
    state = {"a": torch.arange(10.0).view(5, 2), "b": torch.ones(3)}
    assert {k: v.tolist() for k, v in join_rows(split_rows(state, 16)).items()} == {k: v.tolist()
                                                                                     for k, v in state.items()}


def test_the_rules_forbid_and_end_at_the_limit():
    model = variant_model(5)
    src, mask = batch(seed=5)
    plain = greedy_decode(model, src, mask, 9)
    banned = {t for row in plain for t in row}
    rules = Rules(forbidden=tuple(sorted(banned)[:2]), eos_at_limit=True)
    for out in (greedy_decode(model, src, mask, 9, rules=rules), beam_search(model, src, mask, 9, rules=rules),
                beam_search(model, src, mask, 9, rules=Rules(beam="transformers", eos_at_limit=True), alpha=1.0)):
        assert all(len(row) <= 8 for row in out)  # the ninth token can only be </s>
    assert all(t not in rules.forbidden for row in greedy_decode(model, src, mask, 9, rules=rules) for t in row)


# ---- the shipped model, bit for bit ----------------------------------------------------------------------

PROBES = ["Ein kleiner Junge spielt mit einem roten Ball auf der Wiese.",
          "Zwei Frauen sitzen auf einer Bank und trinken Kaffee.",
          "Ein schwarzer Hund springt über einen Holzzaun.",
          "Drei Männer in orangefarbenen Westen arbeiten an einer Baustelle.",
          "Eine Frau mit einem roten Hut liest ein Buch auf einer Parkbank, während ihr Hund neben ihr schläft.",
          "Das ist ein sehr langer und ungewöhnlicher Satz über Quantenphysik und Philosophie."]


def digest(value):
    if isinstance(value, torch.Tensor):
        return hashlib.sha256(value.detach().contiguous().float().numpy().tobytes()).hexdigest()[:16]
    return hashlib.sha256(json.dumps(value, ensure_ascii=False).encode()).hexdigest()[:16]


def shipped_outputs():
    """What the shipped model returns for PROBES, through every path: token ids in full, floats as digests. Uses
    only the API the code had before the variants existed, so that it ran there to record EXPECTED."""
    from core.translate import Translator
    tr, tr32 = Translator.load(), Translator.load(half_rows=0)
    out = {"greedy": tr.translate_ids(PROBES), "greedy_f32": tr32.translate_ids(PROBES),
           "beam": tr.translate_ids(PROBES, method="beam", beam=4),
           "beam_batched": tr.translate_ids(PROBES, method="beam", beam=4, batch_size=6),
           "beam8_alpha0": tr.translate_ids(PROBES, method="beam", beam=8, alpha=0.0),
           "sample": tr.translate_ids(PROBES, method="sample", seed=5, temperature=1.3, top_k=20),
           "heads_off": tr.translate_ids(PROBES, heads_off=[("cross", 1, 2), ("encoder", 0, 5)]),
           "prefix": tr.translate_ids(PROBES[:2], method="beam", prefix="The"),
           "text": tr.translate(PROBES, beam=4)}
    floats = {}
    for i, method in enumerate(("greedy", "beam")):
        ins = tr.inspect(PROBES[i + 3], method=method, beam=4)
        out[f"inspect_{method}_tokens"] = [ins.src_tokens, ins.tgt_tokens, ins.out_tokens]
        floats[f"inspect_{method}"] = [digest(ins.encoder), digest(ins.decoder), digest(ins.cross),
                                       digest(ins.token_probs), digest(ins.topk)]
    floats["score"] = digest(tr.score(PROBES[:2], ["A little boy plays with a red ball.", "Two women drink coffee."]))
    src = torch.tensor([tr.encode_source(PROBES[1])[0]])
    tgt = torch.tensor([[2] + out["greedy"][1]])
    logp, cache = run_with_cache(tr.model, src, tgt, src != 0, subsequent_mask(tgt.size(1)))
    floats["states"] = digest([digest(v) for v in cache.values()] + [digest(logp)])
    floats["state_names"] = digest(list(cache))
    return out, floats


# recorded with the code of b03d383 (before the variants, with the model it ships), one thread, torch 2.13.0+cpu on an
# AVX2 CPU
EXPECTED_TORCH = ("2.13.0+cpu", "AVX2")
EXPECTED_IDS_DIGEST = "a9752da680dcd117"  # digest of the token ids, pieces and texts
EXPECTED_FLOATS = {
    "inspect_greedy": ["77ac6f952346df60", "f588111be6fdafef", "d461b9733f46b765", "a4f1d6ae64d8991c", "e6d0fc18a5440103"],
    "inspect_beam": ["2a9b14a219593611", "510e71829f0609e8", "cb2c40ec1e205910", "474708fcef20eb9e", "c50679b35b1cb5de"],
    "score": "8e6af7c21b04ffbb",
    "states": "f9cf9a3b492544fa",
    "state_names": "245c987d53bde787",
}


@needs_shipped
@pytest.mark.slow  # about 8 s: the shipped model through every path
def test_the_shipped_model_keeps_every_output():
    out, floats = shipped_outputs()
    assert digest(out) == EXPECTED_IDS_DIGEST, json.dumps(out, ensure_ascii=False)[:2000]
    if (torch.__version__, torch.backends.cpu.get_cpu_capability()) != EXPECTED_TORCH:
        pytest.skip(f"the floats' bits were recorded with torch {EXPECTED_TORCH}: the token ids matched")
    assert floats == EXPECTED_FLOATS


def test_the_papers_classes_take_the_papers_arguments_and_a_variant_is_a_class_of_its_own():
    """The classes a learner reads have the Annotated Transformer's signatures (no switch for another model);
    make_model picks the variant classes from the config."""
    import inspect

    from core import model as m
    papers = {m.SublayerConnection: ["size", "dropout"], m.PositionwiseFeedForward: ["d_model", "d_ff", "dropout"],
              m.EncoderLayer: ["size", "self_attn", "feed_forward", "dropout"],
              m.DecoderLayer: ["size", "self_attn", "src_attn", "feed_forward", "dropout"],
              m.Encoder: ["layer", "N"], m.Decoder: ["layer", "N"], m.Embeddings: ["d_model", "vocab"],
              m.PositionalEncoding: ["d_model", "dropout", "max_len"]}
    for cls, args in papers.items():
        assert list(inspect.signature(cls.__init__).parameters)[1:] == args, cls.__name__
    plain, variant = make_model(16, 16, N=1, d_model=8, d_ff=8, h=2), variant_model()
    assert type(plain.encoder.layers[0].sublayer[0]) is m.SublayerConnection
    assert type(plain.decoder.norm) is m.LayerNorm and type(plain.src_embed[0]) is m.Embeddings
    assert type(variant.encoder.layers[0].sublayer[0]) is m.PostNormSublayerConnection
    assert isinstance(variant.decoder.norm, torch.nn.Identity)
    assert type(variant.decoder.layers[0].feed_forward) is m.SwishFeedForward
    assert type(variant.tgt_embed[0]) is m.UnscaledEmbeddings and type(variant.tgt_embed[1]) is m.HalvesPositionalEncoding
    assert all(n.eps == 1e-5 for n in variant.modules() if isinstance(n, m.LayerNorm))
