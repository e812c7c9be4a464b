"""Decoding: cached greedy equals the uncached reference loop; the flat decoder step equals the modules;
the float16 decoder stays close to float32; beam search finds the exact best sequence when the beam
covers every hypothesis; sampling respects top-k."""
import itertools

import torch
import torch.nn.functional as F

from core.data import BOS, EOS
from core.decode import (
    HalfPrecisionDecoder,
    IncrementalDecoder,
    beam_search,
    decoder_weights,
    greedy_decode,
    greedy_decode_uncached,
    length_penalty,
    sample_decode,
)
from core.instrument import attention_name, run_with_cache
from core.model import make_model, subsequent_mask
from tests.conftest import reordered_step


def random_model(vocab=12, seed=0, **choices):
    """A small random model (the config's variants in `choices`)."""
    torch.manual_seed(seed)
    model = make_model(vocab, vocab, N=2, d_model=32, d_ff=64, h=4, dropout=0.0, **choices).eval()
    with torch.no_grad():  # sharpen the output distribution so decoding paths differ
        model.generator.proj.bias.copy_(torch.randn(vocab) * 2)
    return model


def src_batch(vocab=12, B=3, S=6, seed=1):
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(4, vocab, (B, S), generator=g)
    src[0, -2:] = 0  # padding in the first sentence
    return src, (src != 0).unsqueeze(-2)


def test_cached_greedy_equals_uncached_reference():
    outputs = []
    for seed in range(3):
        model = random_model(seed=seed)
        src, mask = src_batch(seed=seed)
        ref = greedy_decode_uncached(model, src, mask, 12)
        assert greedy_decode(model, src, mask, 12) == ref
        outputs += ref
    # among them, rows that end before max_len (</s> then fill) and rows that change token
    assert any(len(r) < 12 for r in outputs) and any(len(set(r)) > 1 for r in outputs)


def test_the_float32_model_is_decoded_with_its_current_weights():
    """Training decodes the model between epochs: a step reads the weights as they are, no stale copy."""
    model = random_model(seed=4)
    src, mask = src_batch(seed=4)
    before = greedy_decode(model, src, mask, 12)
    with torch.no_grad():
        model.generator.proj.bias.copy_(torch.randn(12, generator=torch.Generator().manual_seed(9)) * 2)
        for layer in model.decoder.layers:
            layer.self_attn.linears[1].weight.mul_(-1)
    after = greedy_decode(model, src, mask, 12)
    assert after != before and after == greedy_decode_uncached(model, src, mask, 12)


def test_incremental_decoder_equals_the_modules_teacher_forced():
    """Each flat step gives the decoder's output at that position, as the full masked decode computes it."""
    model = random_model(vocab=30, seed=5)
    src, mask = src_batch(vocab=30, B=3, S=6, seed=6)  # padding in the first sentence
    tgt = torch.randint(4, 30, (3, 7), generator=torch.Generator().manual_seed(7))
    for m, tol in ((model, 1e-5), (HalfPrecisionDecoder(model), 1e-2)):
        with torch.no_grad():
            memory = m.encode(src, mask)
            full = m.decode(memory, mask, tgt, subsequent_mask(7))  # (B, T, D)
            dec = IncrementalDecoder(m, memory, mask, 7)
            steps = torch.stack([dec.step(tgt[:, t]) for t in range(7)], 1)
        torch.testing.assert_close(steps.float(), full.float(), atol=tol, rtol=tol)
    # reordering rows = decoding the reordered batch
    got, full = reordered_step(model, src, mask, tgt, torch.tensor([2, 2, 0]))
    torch.testing.assert_close(got, full, atol=1e-5, rtol=1e-5)


def sequence_logprob(model, src, mask, ids):
    tgt = torch.tensor([[BOS] + ids[:-1]])
    with torch.no_grad():
        out = model.decode(model.encode(src, mask), mask, tgt, subsequent_mask(tgt.size(1)))
        logp = model.generator(out)[0]
    return logp.gather(1, torch.tensor(ids).unsqueeze(1)).sum().item()


def test_beam_search_is_exact_when_the_beam_covers_everything():
    vocab, max_len = 6, 3
    model = random_model(vocab, seed=3)
    src, mask = src_batch(vocab, B=1, S=4, seed=4)
    mask = torch.ones_like(mask)
    for alpha in (0.0, 0.6):
        best, best_seq = float("-inf"), None
        for n in range(max_len):  # every sequence ending in </s> within max_len steps
            for body in itertools.product([t for t in range(vocab) if t != EOS], repeat=n):
                ids = list(body) + [EOS]
                s = sequence_logprob(model, src, mask, ids) / length_penalty(len(ids), alpha)
                if s > best:
                    best, best_seq = s, list(body)
        got = beam_search(model, src, mask, max_len, beam=200, alpha=alpha)[0]
        assert got == best_seq, (alpha, got, best_seq)


def test_beam_of_one_matches_greedy_and_batching_does_not_change_results():
    model = random_model(seed=5)
    src, mask = src_batch(seed=5)
    assert beam_search(model, src, mask, 10, beam=1, alpha=0.0) == greedy_decode(model, src, mask, 10)
    batched = beam_search(model, src, mask, 10, beam=3)
    single = [beam_search(model, src[i:i + 1, :int(mask[i].sum())], mask[i:i + 1, :, :int(mask[i].sum())], 10,
                          beam=3)[0] for i in range(src.size(0))]
    assert batched == single


def test_beam_search_scores_at_least_greedy_on_average():
    """Not guaranteed per sentence, but over many sentences a beam of 4 finds more probable outputs."""
    model = random_model(seed=6)
    wins = 0
    for seed in range(8):
        src, mask = src_batch(B=1, seed=seed)
        g = greedy_decode(model, src, mask, 8)[0] + [EOS]
        b = beam_search(model, src, mask, 8, beam=4, alpha=0.0)[0] + [EOS]
        wins += sequence_logprob(model, src, mask, b) >= sequence_logprob(model, src, mask, g) - 1e-5
    assert wins >= 7


def test_sampling_with_top_k_one_is_greedy_and_seed_is_reproducible():
    model = random_model(seed=7)
    src, mask = src_batch(seed=7)
    assert sample_decode(model, src, mask, 10, top_k=1, seed=0) == greedy_decode(model, src, mask, 10)
    a = sample_decode(model, src, mask, 10, temperature=1.5, seed=42)
    b = sample_decode(model, src, mask, 10, temperature=1.5, seed=42)
    assert a == b and any(sample_decode(model, src, mask, 10, temperature=1.5, seed=s) != a for s in range(3))
    # top-k = 2: every sampled token (and </s>) is one of the two most probable at its step, as a teacher-forced
    # rerun of the output ranks them, and not always the first (it does sample)
    runs = [sample_decode(model, src, mask, 10, top_k=2, seed=s) for s in range(3)]
    second_choices = 0
    for out in runs:
        for i, ids in enumerate(out):
            chosen = ids + [EOS] if len(ids) < 10 else ids
            tgt = torch.tensor([[BOS] + chosen[:-1]])
            with torch.no_grad():
                memory = model.encode(src[i:i + 1], mask[i:i + 1])
                logp = model.generator(model.decode(memory, mask[i:i + 1], tgt, subsequent_mask(tgt.size(1))))[0]
            ranks = [(logp[j] > logp[j, t]).sum().item() for j, t in enumerate(chosen)]
            assert max(ranks) <= 1, ranks
            second_choices += sum(ranks)
    assert second_choices > 0


def test_stacked_qkv_projection_equals_three_linears():
    model = random_model(vocab=30, seed=2)
    sa = model.decoder.layers[1].self_attn
    W, b = decoder_weights(model)["layers"][1]["qkv"]
    assert W.shape == (96, 32) and b.shape == (96,)
    torch.testing.assert_close(W[32:64], sa.linears[1].weight, rtol=0, atol=0)
    torch.testing.assert_close(b[64:], sa.linears[2].bias, rtol=0, atol=0)
    x = torch.randn(2, 5, 32)
    with torch.no_grad():
        torch.testing.assert_close(F.linear(x, W, b), torch.cat([lin(x) for lin in sa.linears[:3]], -1),
                                   atol=1e-6, rtol=1e-6)


def test_half_precision_decoder_shares_the_encoder_and_stays_close_to_float32():
    torch.manual_seed(0)
    model = make_model(40, 40, N=2, d_model=32, d_ff=64, h=4, dropout=0.0).eval()
    half = HalfPrecisionDecoder(model)
    # the encoder and source embedding are the same modules; the decoder is a float16 copy
    assert half.encoder is model.encoder and half.src_embed is model.src_embed
    assert half.decoder.layers[0].feed_forward.w_1.weight.dtype == torch.float16
    assert half.generator.proj.weight is half.tgt_embed[0].lut.weight  # still tied, one matrix
    assert half.generator.proj.weight.dtype == torch.float16 and model.generator.proj.weight.dtype == torch.float32
    # keys and values of the memory are projected in float32, once per sentence
    assert half.decoder.layers[1].src_attn.linears[1].weight.dtype == torch.float32
    # the stacked W^Q W^K W^V a step reads is this copy's, in float16
    W, _ = half.step_weights["layers"][1]["qkv"]
    assert W.dtype == torch.float16 and torch.equal(W[64:], half.decoder.layers[1].self_attn.linears[2].weight)
    src = torch.randint(4, 40, (2, 7))
    src[1, -2:] = 0
    src_mask = (src != 0).unsqueeze(-2)
    tgt = torch.randint(4, 40, (2, 6))
    with torch.no_grad():
        ref = model.generator(model.decode(model.encode(src, src_mask), src_mask, tgt, subsequent_mask(6)))
        memory = half.encode(src, src_mask)
        full = half.generator(half.decode(memory, src_mask, tgt, subsequent_mask(6)))
        dec = IncrementalDecoder(half, memory, src_mask, 6)  # the fused projection and the cached memory keys
        steps = torch.stack([half.generator(dec.step(tgt[:, t])) for t in range(6)], 1)
    assert full.dtype == torch.float32  # log-probabilities in float32
    # float16 activations: within a few 1e-3 of the float32 model, incremental = full in float16 too
    torch.testing.assert_close(full, ref, atol=2e-2, rtol=0)
    torch.testing.assert_close(steps, full, atol=1e-2, rtol=0)
    assert (full - ref).abs().max() > 0  # it did run in half precision


def test_half_precision_decoder_attends_in_float32_on_both_paths():
    """Q, K and V come out of the float16 decoder's projections in float32; the explicit path (kept maps) and
    the fused one agree, and the kept maps are float32 distributions."""
    half = HalfPrecisionDecoder(random_model(vocab=30, seed=8)).eval()
    src, mask = src_batch(vocab=30, seed=8)
    tgt = torch.randint(4, 30, (3, 5), generator=torch.Generator().manual_seed(8))
    sa = half.decoder.layers[0].self_attn
    x = torch.randn(3, 5, 32).half()
    assert sa._split(x, sa.linears[0]).dtype == torch.float32 and sa(x, x, x).dtype == torch.float16
    with torch.no_grad():
        memory = half.encode(src, mask)
        fused = half.decode(memory, mask, tgt, subsequent_mask(5))
    _, cache = run_with_cache(half, src, tgt, mask, subsequent_mask(5), names=["decoder.*:weights"], output=False)
    for name, w in cache.items():
        assert w.dtype == torch.float32
        torch.testing.assert_close(w.sum(-1), torch.ones(w.shape[:-1]))
    explicit = half.decode(memory, mask, tgt, subsequent_mask(5))
    torch.testing.assert_close(explicit, fused, atol=1e-2, rtol=0)
    assert torch.all(cache[attention_name("cross", 1)][0, ..., -2:] == 0)  # the first sentence's padding  # the first sentence's padding


def test_half_precision_decoder_greedy_cached_equals_its_uncached_loop():
    for seed in range(3):
        half = HalfPrecisionDecoder(random_model(seed=seed))
        src, mask = src_batch(seed=seed)
        assert greedy_decode(half, src, mask, 12) == greedy_decode_uncached(half, src, mask, 12)


def test_greedy_tokens_are_the_top_candidates_of_the_teacher_forced_rerun():
    """What Translator.inspect relies on: re-running the chosen output through the modules, with every map kept,
    ranks each chosen token first, for the float32 model and for the float16 decoder."""
    for seed in range(3):
        model = random_model(vocab=30, seed=seed)
        src, mask = src_batch(vocab=30, seed=seed)
        for m in (model, HalfPrecisionDecoder(model)):
            out = greedy_decode(m, src, mask, 10)
            for i, ids in enumerate(out):
                tgt = torch.tensor([[BOS] + ids])
                with torch.no_grad():
                    memory = m.encode(src[i:i + 1], mask[i:i + 1])
                    logp = m.generator(m.decode(memory, mask[i:i + 1], tgt, subsequent_mask(tgt.size(1))))[0]
                chosen = ids + [EOS] if len(ids) < 10 else ids  # </s> unless max_len ended it
                assert logp.argmax(-1)[:len(chosen)].tolist() == chosen
